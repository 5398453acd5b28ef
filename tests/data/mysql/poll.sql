-- The table and writer of tests/mysql_poll.test (esbulk-mysql --poll-column).
-- @items: initial rows, 50 to each second of `updated` (DATETIME, whole
-- seconds: many rows share a value); a composite key (a, b).
DROP TABLE IF EXISTS items;
DROP PROCEDURE IF EXISTS pwrite;
CREATE TABLE items (
  a INT NOT NULL,
  b VARCHAR(8) NOT NULL,
  v VARCHAR(40) NULL,
  n INT NOT NULL DEFAULT 0,
  updated DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (a, b),
  KEY (updated)
) ENGINE=InnoDB;
INSERT INTO items
SELECT seq DIV 2, IF(seq % 2, 'x', 'y'), CONCAT('v', seq), 0,
  '2024-01-01 00:00:00' + INTERVAL (seq DIV 50) SECOND
FROM seq_1_to_1000000 WHERE seq <= @items;
DELIMITER //
-- cnt changes (or as many as secs seconds allow), each its own transaction:
-- inserts of new keys (a >= base) and updates of random rows (by key), which
-- set `updated` to the statement's time
CREATE PROCEDURE pwrite(IN cnt INT, IN base INT, IN maxa INT, IN secs INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  DECLARE x INT;
  DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL secs SECOND;
  WHILE i < cnt AND NOW(6) < t_end DO
    SET x = FLOOR(RAND() * maxa);
    IF RAND() < 0.5 THEN
      INSERT INTO items (a, b, v) VALUES (base + i, IF(x % 2, 'x', 'z'), CONCAT('ins ', i));
    ELSE
      UPDATE items SET v = CONCAT('upd ', i), n = n + 1 WHERE a = x;
    END IF;
    SET i = i + 1;
    IF i % 10 = 0 THEN
      DO SLEEP(0.02); -- at most ~500 changes/s: the job keeps up
    END IF;
  END WHILE;
END //
DELIMITER ;
