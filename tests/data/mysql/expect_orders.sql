SELECT id, JSON_OBJECT('id', id, 'customer', customer, 'amount', CAST(amount AS CHAR),
  'status', status, 'note', note,
  'updated', CONCAT(REPLACE(CAST(updated AS CHAR), ' ', 'T'), '+00:00'))
FROM orders ORDER BY id;
