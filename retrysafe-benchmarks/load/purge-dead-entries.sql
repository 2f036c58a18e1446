-- What a purge batch reads once earlier batches have deleted rows and no vacuum has run since:
-- a table with the record table's primary key and expires_at index, a million expired rows, the
-- purge's batch (of 1,000) explained on the fresh table, then after the oldest half is deleted: twice from
-- the oldest entry, and once from where the deleted half ended.
--   psql -h 127.0.0.1 -U postgres -d test -f retrysafe-benchmarks/load/purge-dead-entries.sql
-- Compare the Buffers line under the expires_at index scan in the four plans.
\set ON_ERROR_STOP on
DROP TABLE IF EXISTS rs_dead_entries_probe;
CREATE TABLE rs_dead_entries_probe (scope text, idem_key text, expires_at timestamptz NOT NULL, body bytea,
    PRIMARY KEY (scope, idem_key)) WITH (autovacuum_enabled = false);
CREATE INDEX ON rs_dead_entries_probe (expires_at);
INSERT INTO rs_dead_entries_probe SELECT 'u' || (g % 1000), 'k-' || g,
    now() - interval '10 days' + g * interval '1 ms', convert_to(repeat('x', 90), 'UTF8')
    FROM generate_series(1, 1000000) g;
ANALYZE rs_dead_entries_probe;
\set batch 'EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) DELETE FROM rs_dead_entries_probe WHERE (scope, idem_key) IN (SELECT scope, idem_key FROM rs_dead_entries_probe WHERE expires_at <= now() ORDER BY expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED);'

\echo 'fresh table'
BEGIN;
:batch
ROLLBACK;

SELECT min(expires_at) + interval '500000 ms' AS cut FROM rs_dead_entries_probe \gset
DELETE FROM rs_dead_entries_probe WHERE expires_at <= :'cut';

\echo 'after deleting the oldest half, first batch (it marks the dead index entries)'
BEGIN;
:batch
ROLLBACK;

\echo 'the next batch'
BEGIN;
:batch
ROLLBACK;

\echo 'the next batch, started where the deleted half ended, as the purge starts each batch'
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) DELETE FROM rs_dead_entries_probe WHERE (scope, idem_key) IN
    (SELECT scope, idem_key FROM rs_dead_entries_probe WHERE expires_at <= now() AND expires_at >= :'cut'
     ORDER BY expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED);
ROLLBACK;

DROP TABLE rs_dead_entries_probe;
