-- An orders-like table and a writer (tests/mysql_binlog.test, bench).
-- @orders: initial rows.
DROP TABLE IF EXISTS orders;
DROP PROCEDURE IF EXISTS churn;
DROP PROCEDURE IF EXISTS churn_rate;
CREATE TABLE orders (
  id INT NOT NULL PRIMARY KEY,
  customer INT NOT NULL,
  amount DECIMAL(10,2) NULL,
  status ENUM('new','paid','shipped') NOT NULL,
  note VARCHAR(64) NULL,
  updated DATETIME(6) NOT NULL,
  KEY (customer)
) ENGINE=InnoDB;
INSERT INTO orders
SELECT seq, seq % 977, (seq % 10000) / 7, ELT(seq % 3 + 1, 'new', 'paid', 'shipped'),
  CONCAT('order ', seq), '2024-01-01 00:00:00' + INTERVAL seq SECOND
FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_10000000) s WHERE seq <= @orders;
DELIMITER //
-- n changes (or as many as secs seconds allow), each its own transaction:
-- inserts, updates, deletes, key changes, a multi-row update, a
-- two-statement transaction
CREATE PROCEDURE churn(IN n INT, IN base INT, IN maxid INT, IN secs INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  DECLARE r INT;
  DECLARE x INT;
  DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL secs SECOND;
  WHILE i < n AND NOW(6) < t_end DO
    SET r = FLOOR(RAND() * 20);
    SET x = 1 + FLOOR(RAND() * maxid);
    IF r < 6 THEN
      INSERT INTO orders VALUES (base + i, x % 977, x / 10, 'new', CONCAT('ins ', i), NOW(6))
        ON DUPLICATE KEY UPDATE note = CONCAT('dup ', i);
    ELSEIF r < 12 THEN
      UPDATE orders SET amount = amount + 1, status = 'paid', note = CONCAT('upd ', i),
        updated = NOW(6) WHERE id = x;
    ELSEIF r < 15 THEN
      DELETE FROM orders WHERE id = x;
    ELSEIF r < 18 THEN
      UPDATE IGNORE orders SET id = id + 5000000 WHERE id = x;
    ELSEIF r < 19 THEN
      UPDATE orders SET note = CONCAT('bulk ', i) WHERE id BETWEEN x AND x + 20;
    ELSE
      START TRANSACTION;
      UPDATE orders SET status = 'shipped' WHERE id = x;
      DELETE FROM orders WHERE id = x + 1;
      COMMIT;
    END IF;
    SET i = i + 1;
  END WHILE;
END //
-- a steady rate: about `rate` changes per second for secs seconds
CREATE PROCEDURE churn_rate(IN rate INT, IN secs INT, IN base INT, IN maxid INT)
BEGIN
  DECLARE t0 DATETIME(6) DEFAULT SYSDATE(6);
  DECLARE n INT DEFAULT 0;
  WHILE TIMESTAMPDIFF(MICROSECOND, t0, SYSDATE(6)) < secs * 1000000 DO
    IF n < TIMESTAMPDIFF(MICROSECOND, t0, SYSDATE(6)) * rate / 1000000 THEN
      CALL churn(10, base + n, maxid, 600);
      SET n = n + 10;
    ELSE
      DO SLEEP(0.002);
    END IF;
  END WHILE;
END //
DELIMITER ;
