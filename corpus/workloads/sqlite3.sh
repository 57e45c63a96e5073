#!/usr/bin/env bash
# sqlite3 shell workload: builds a database from a recursive CTE (fixed-seed
# LCG), indexes, joins, aggregates, window functions, JSON, FTS5, R*Tree,
# math functions, triggers, views, transactions with constraint errors,
# dump/CSV import+export, VACUUM and integrity_check. The database file itself
# is compared too.
# Usage: sqlite3.sh BINARY   (cwd: an empty scratch directory)
. "$(dirname "$0")/_common.sh"
B=$1

cat >schema.sql <<'SQL'
PRAGMA page_size = 4096;
PRAGMA journal_mode = DELETE;
CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, city TEXT, score REAL);
CREATE TABLE orders(id INTEGER PRIMARY KEY, cust INTEGER NOT NULL REFERENCES customer(id),
                    item TEXT, qty INTEGER CHECK (qty > 0), price REAL, note TEXT);
CREATE TABLE audit(id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT);
CREATE TRIGGER orders_big AFTER INSERT ON orders WHEN new.qty * new.price > 9900
  BEGIN INSERT INTO audit(what) VALUES ('big order ' || new.id); END;
CREATE VIEW revenue AS
  SELECT c.city, count(*) AS n, sum(o.qty * o.price) AS total
  FROM orders o JOIN customer c ON c.id = o.cust GROUP BY c.city;

BEGIN;
WITH RECURSIVE r(i, x) AS (SELECT 1, 12345 UNION ALL SELECT i + 1, (x * 16807) % 2147483647 FROM r WHERE i < 4000)
INSERT INTO customer SELECT i, printf('cust%05d', i),
  substr('OsloRomeLimaNiceBernKielBonnPisaLyonGent', 1 + (x % 10) * 4, 4), (x % 10000) / 100.0 FROM r;
WITH RECURSIVE r(i, x) AS (SELECT 1, 777 UNION ALL SELECT i + 1, (x * 16807) % 2147483647 FROM r WHERE i < 60000)
INSERT INTO orders SELECT i, 1 + x % 4000, 'item' || (x % 97), 1 + (x / 7) % 20, ((x / 11) % 50000) / 100.0,
  CASE WHEN x % 5 = 0 THEN NULL ELSE hex(x) END FROM r;
COMMIT;
CREATE INDEX orders_cust ON orders(cust);
CREATE INDEX orders_item ON orders(item, qty);
ANALYZE;
SQL

cat >queries.sql <<'SQL'
.headers on
.mode list
.nullvalue NULL
SELECT count(*), sum(qty), round(avg(price), 4), min(note), max(note) FROM orders;
SELECT city, n, round(total, 2) AS total FROM revenue ORDER BY total DESC;
SELECT item, count(*) AS n, sum(qty) AS q FROM orders GROUP BY item HAVING n > 640 ORDER BY q DESC, item LIMIT 8;
SELECT c.name, count(o.id) AS n, round(sum(o.qty * o.price), 2) AS spent
  FROM customer c LEFT JOIN orders o ON o.cust = c.id
  GROUP BY c.id ORDER BY spent DESC, c.name LIMIT 5;
SELECT name, city, score, rank() OVER w AS rk, round(avg(score) OVER w, 3) AS city_avg,
       lag(name) OVER w AS prev, ntile(4) OVER w AS quartile
  FROM customer WINDOW w AS (PARTITION BY city ORDER BY score DESC, name)
  ORDER BY city, rk LIMIT 12;
SELECT cust, sum(qty) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS running
  FROM orders WHERE cust < 20 ORDER BY id LIMIT 10;
WITH RECURSIVE fib(a, b, n) AS (SELECT 0, 1, 0 UNION ALL SELECT b, a + b, n + 1 FROM fib WHERE n < 80)
  SELECT max(a), count(*) FROM fib;
SELECT json_group_array(json_object('id', id, 'item', item, 'qty', qty)) FROM (SELECT * FROM orders ORDER BY id LIMIT 4);
SELECT json_extract('{"a":[1,2,{"b":"x"}]}', '$.a[2].b'), json_array_length('[1,2,3,4]'),
       (SELECT group_concat(key || '=' || value, ';') FROM json_each('{"p":1,"q":[2],"r":null}'));
SELECT printf('%08.3f|%-6s|%x|%e|%q|%w', 3.14159, 'ab', 255, 12345.678, 'it''s', 'x"y'),
       upper('abc'), length('héllo'), unicode('€'), char(72, 105), instr('haystack', 'st'),
       replace('aaa', 'a', 'bc'), trim('  x  '), soundex('Robert'), quote(x'00ff'), typeof(1.0), 10 / 3, 10 % 3;
SELECT round(sqrt(2), 10), round(ln(10), 10), round(pow(2, 0.5), 10), ceil(1.2), floor(-1.2), round(pi(), 12),
       round(degrees(1), 8), mod(17, 5), abs(-9223372036854775807), sign(-3);
SELECT date('2001-02-03', '+1 month', 'start of month'), datetime(981173106, 'unixepoch'),
       strftime('%Y-%j %H:%M:%f', '2020-02-29 12:34:56.789'), julianday('2000-01-01 12:00:00'),
       time('12:00', '+90 minutes');
SELECT name FROM customer WHERE name LIKE 'cust0001_' ORDER BY name DESC LIMIT 3;
SELECT count(*) FROM orders WHERE note GLOB '*A*B*';
SELECT (SELECT count(*) FROM audit) AS big_orders, (SELECT max(id) FROM audit) AS last_audit_id;
SELECT item, qty, count(*) FROM orders INDEXED BY orders_item WHERE item = 'item42' AND qty BETWEEN 3 AND 5 GROUP BY qty;
EXPLAIN QUERY PLAN SELECT * FROM orders WHERE cust = 17 ORDER BY item;
SELECT cust, total FROM (SELECT cust, sum(qty * price) AS total FROM orders GROUP BY cust)
  WHERE total > (SELECT avg(t) * 1.8 FROM (SELECT sum(qty * price) AS t FROM orders GROUP BY cust)) ORDER BY total DESC LIMIT 5;
SELECT id FROM orders EXCEPT SELECT id FROM orders WHERE qty > 1 ORDER BY id LIMIT 5;
SELECT city FROM customer UNION SELECT 'Zzz' ORDER BY 1;
UPDATE customer SET score = score * 1.1 WHERE city = 'Oslo' AND id < 60 RETURNING id, round(score, 4);
DELETE FROM orders WHERE qty = 20 AND price > 450;
SELECT changes(), total_changes() > 0;
-- FTS5 and R*Tree virtual tables
CREATE VIRTUAL TABLE docs USING fts5(body);
INSERT INTO docs(rowid, body) SELECT orders.id, item || ' ' || coalesce(note, 'none') || ' ' || name
  FROM orders JOIN customer ON customer.id = orders.cust WHERE orders.id <= 6000;
SELECT count(*) FROM docs WHERE docs MATCH 'item7 NOT none';
SELECT rowid, highlight(docs, 0, '[', ']') FROM docs WHERE docs MATCH 'cust00042' ORDER BY rank, rowid LIMIT 3;
CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1, y0, y1);
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3000)
  INSERT INTO boxes SELECT i, i % 97, i % 97 + 5, i % 89, i % 89 + 3 FROM r;
SELECT count(*) FROM boxes WHERE x0 >= 10 AND x1 <= 40 AND y0 >= 20 AND y1 <= 30;
-- errors (reported on stderr, the shell goes on)
INSERT INTO customer(id, name) VALUES (1, 'duplicate id');
INSERT INTO customer(name) VALUES ('cust00001');
INSERT INTO orders(cust, qty) VALUES (1, 0);
SELECT * FROM no_such_table;
SELEKT 1;
SELECT json_extract('{bad json', '$');
BEGIN; INSERT INTO audit(what) VALUES ('rolled back'); ROLLBACK;
SAVEPOINT sp; DELETE FROM customer WHERE id < 100; ROLLBACK TO sp; RELEASE sp;
SELECT count(*) FROM customer;
PRAGMA integrity_check;
PRAGMA foreign_key_check;
.mode csv
.once orders-sample.csv
SELECT * FROM orders WHERE id % 500 = 0 ORDER BY id;
.mode box
SELECT city, count(*) AS n FROM customer GROUP BY city ORDER BY city LIMIT 4;
.mode json
SELECT id, name, score FROM customer ORDER BY id LIMIT 3;
.mode insert audit
SELECT * FROM audit ORDER BY id LIMIT 2;
.schema customer
.tables
.indexes orders
SQL

cat >import.sql <<'SQL'
.mode csv
CREATE TABLE sample(id INTEGER, cust INTEGER, item TEXT, qty INTEGER, price REAL, note TEXT);
.import orders-sample.csv sample
.mode list
SELECT count(*), sum(qty), round(sum(price), 2) FROM sample;
VACUUM;
PRAGMA integrity_check;
.output dump.sql
.dump customer audit sample
.output stdout
SELECT 'done';
SQL

# synchronous=OFF: no fsync, so the run time does not depend on the disk
NOSYNC=(-cmd "PRAGMA synchronous = OFF")
run "schema" "$B" "${NOSYNC[@]}" -bail test.db <schema.sql
run "queries" "$B" "${NOSYNC[@]}" test.db <queries.sql
run "import" "$B" "${NOSYNC[@]}" test.db <import.sql
run "readonly" "$B" -readonly test.db 'INSERT INTO audit(what) VALUES (1)'
run "cmdline" "$B" -header -column test.db 'SELECT city, count(*) FROM customer GROUP BY city ORDER BY 2 DESC, 1 LIMIT 3' 'SELECT sqlite_version() IS NOT NULL'
run "memory db" "$B" :memory: 'CREATE TABLE t(x); INSERT INTO t VALUES (1), (2); SELECT sum(x) FROM t'
run "restore" "$B" "${NOSYNC[@]}" copy.db <dump.sql
run "copy check" "$B" copy.db 'SELECT count(*) FROM customer; PRAGMA integrity_check'
printf 'not a database, just some text\n%.0s' $(seq 200) >garbage.db
run "not a db" "$B" garbage.db 'SELECT * FROM sqlite_master'
run "bad option" "$B" -no-such-option
