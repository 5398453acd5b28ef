-- What every document of esm_snap.comp must be: _id is a and b joined by
-- "|", each with "\" and "|" escaped by "\".
SELECT CONCAT(a, '|', REPLACE(REPLACE(b, '\\', '\\\\'), '|', '\\|')),
  JSON_OBJECT('a', a, 'b', b, 'value', v)
FROM comp ORDER BY a, b;
