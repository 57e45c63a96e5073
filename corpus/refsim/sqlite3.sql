-- refsim's sqlite3 input (tests/tools/corpus_oracle.sh): the workload's
-- first statements (its schema.sql) on 100 customers and 600 orders in a
-- database in memory; small, for Valgrind lackey's address stream.
CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, city TEXT, score REAL);
CREATE TABLE orders(id INTEGER PRIMARY KEY, cust INTEGER NOT NULL REFERENCES customer(id),
                    item TEXT, qty INTEGER CHECK (qty > 0), price REAL, note TEXT);
BEGIN;
WITH RECURSIVE r(i, x) AS (SELECT 1, 12345 UNION ALL SELECT i + 1, (x * 16807) % 2147483647 FROM r WHERE i < 100)
INSERT INTO customer SELECT i, printf('cust%05d', i),
  substr('OsloRomeLimaNiceBernKielBonnPisaLyonGent', 1 + (x % 10) * 4, 4), (x % 10000) / 100.0 FROM r;
WITH RECURSIVE r(i, x) AS (SELECT 1, 777 UNION ALL SELECT i + 1, (x * 16807) % 2147483647 FROM r WHERE i < 600)
INSERT INTO orders SELECT i, 1 + x % 100, 'item' || (x % 97), 1 + (x / 7) % 20, ((x / 11) % 50000) / 100.0,
  CASE WHEN x % 5 = 0 THEN NULL ELSE hex(x) END FROM r;
COMMIT;
CREATE INDEX orders_cust ON orders(cust);
CREATE INDEX orders_item ON orders(item, qty);
SELECT count(*), sum(qty), min(note), max(note) FROM orders;
SELECT c.city, count(*) AS n, sum(o.qty) FROM orders o JOIN customer c ON c.id = o.cust GROUP BY c.city ORDER BY 3 DESC;
SELECT item, count(*) AS n FROM orders GROUP BY item ORDER BY n DESC, item LIMIT 5;
