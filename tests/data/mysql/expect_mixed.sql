-- What every document of esm_test.mixed must be: "_id<TAB>JSON", built with
-- the server's own functions (tests/mysql_compare.py compares).
SELECT id, JSON_OBJECT(
  'id', id,
  'name', name,
  'amount', CAST(amount AS CHAR),
  'score', score,
  'flag', JSON_EXTRACT(IF(flag IS NULL, 'null', IF(flag, 'true', 'false')), '$'),
  'small', small,
  'big', big,
  'bits', CAST(bits AS UNSIGNED),
  'status', status,
  'tags', JSON_EXTRACT(IF(tags IS NULL, 'null', IF(tags = '', '[]', CONCAT('["', REPLACE(tags, ',', '","'), '"]'))), '$'),
  'doc', JSON_EXTRACT(doc, '$'),
  'data', REPLACE(TO_BASE64(data), '\n', ''),
  'created', CONCAT(REPLACE(CAST(created AS CHAR), ' ', 'T'), '+00:00'),
  'day', CAST(day AS CHAR),
  'day0', IF(MONTH(day0) = 0 OR DAYOFMONTH(day0) = 0, NULL, CAST(day0 AS CHAR)),
  'ts', CONCAT(REPLACE(CAST(ts AS CHAR), ' ', 'T'), '+00:00'),
  'yr', yr,
  'note', note)
FROM mixed ORDER BY id;
