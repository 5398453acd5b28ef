SELECT CONCAT(a, '|', b), JSON_OBJECT('a', a, 'b', b, 'v', v, 'n', n,
  'updated', CONCAT(REPLACE(CAST(updated AS CHAR), ' ', 'T'), '+00:00'))
FROM items ORDER BY a, b;
