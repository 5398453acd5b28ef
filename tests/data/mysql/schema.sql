-- esbulk-mysql test tables, in the current database. @rows: rows of
-- `mixed`, @comp_rows: rows of `comp` (set before sourcing).
DROP TABLE IF EXISTS mixed, comp, bad;
SET SESSION sql_mode = '';  -- allows the zero dates of day0
-- every type of the mapping, NULLs and Unicode
CREATE TABLE mixed (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  name VARCHAR(64) NULL,
  amount DECIMAL(12,2) NULL,
  score DOUBLE NULL,
  flag TINYINT(1) NULL,
  small SMALLINT NULL,
  big BIGINT NULL,
  bits BIT(5) NULL,
  status ENUM('new','paid','shipped') NULL,
  tags SET('a','b','c') NULL,
  doc JSON NULL,
  data BLOB NULL,
  created DATETIME(3) NULL,
  day DATE NULL,
  day0 DATE NULL,
  ts TIMESTAMP NULL DEFAULT NULL,
  yr YEAR NULL,
  note TEXT NULL
) ENGINE=InnoDB;
INSERT INTO mixed
SELECT seq,
  IF(seq % 11 = 0, NULL, CONCAT('name ', seq, IF(seq % 3 = 0, ' Grüße 東京 😀', ''), IF(seq % 7 = 0, ' "quoted" \\ tab\there', ''))),
  IF(seq % 13 = 0, NULL, (seq * 37 % 1000000) / 100 - 4000),
  IF(seq % 17 = 0, NULL, seq / 7.0e3),
  IF(seq % 19 = 0, NULL, seq % 2),
  (seq % 65535) - 32768,
  IF(seq % 5 = 0, -seq * 1000003, seq * 1000003),
  IF(seq % 23 = 0, NULL, seq % 32),
  IF(seq % 29 = 0, NULL, ELT(seq % 3 + 1, 'new', 'paid', 'shipped')),
  IF(seq % 31 = 0, NULL, MAKE_SET(seq % 8, 'a', 'b', 'c')),
  IF(seq % 37 = 0, NULL, JSON_OBJECT('n', seq, 's', CONCAT('v', seq), 'a', JSON_ARRAY(seq % 3, seq % 5), 'o', JSON_OBJECT('deep', seq % 2 = 0))),
  IF(seq % 41 = 0, NULL, UNHEX(SHA2(seq, 256 - (seq % 2) * 32))),
  IF(seq % 43 = 0, NULL, TIMESTAMPADD(SECOND, seq * 17, '2020-01-01 00:00:00.123') + INTERVAL (seq % 1000) * 1000 MICROSECOND),
  IF(seq % 47 = 0, NULL, DATE('2000-01-01') + INTERVAL (seq % 9000) DAY),
  IF(seq % 53 = 0, '0000-00-00', IF(seq % 59 = 0, NULL, DATE('1990-06-15') + INTERVAL (seq % 300) DAY)),
  IF(seq % 61 = 0, NULL, FROM_UNIXTIME(1600000000 + seq * 13)),
  IF(seq % 67 = 0, NULL, 1990 + seq % 100),
  IF(seq % 71 = 0, NULL, REPEAT(CONCAT('line ', seq, '\n'), 1 + seq % 3))
FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_200000) s WHERE seq <= @rows;
-- a composite key whose parts hold the _id's separator and escape
CREATE TABLE comp (
  a INT NOT NULL,
  b VARCHAR(32) NOT NULL,
  v VARCHAR(32) NULL,
  PRIMARY KEY (a, b)
) ENGINE=InnoDB;
INSERT INTO comp
SELECT seq DIV 4, ELT(seq % 4 + 1, CONCAT('k', seq), CONCAT('x|', seq), CONCAT('y\\', seq), CONCAT('|\\|', seq)), CONCAT('v', seq)
FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_200000) s WHERE seq <= @comp_rows;
