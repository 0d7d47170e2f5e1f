-- bitemporal: a knowledge time's microseconds inlined into their callers
-- (issue 15; migration 0039).
--
-- bitemporal_internal.knowledge_micros (settled.v1.sql) turns a knowledge
-- time into the microseconds that key the advisory locks announcing writes.
-- Every write calls it: bitemporal_internal.announce_knowledge computes it
-- for the write's knowledge time and again in the trigger of each version
-- the write inserts or closes (four calls for an interior change). It was a
-- SQL function with a pinned search_path (a SET clause), which PostgreSQL
-- never inlines: each call ran its body as a query of its own, through the
-- SET clause, and each transaction read that body back and planned it again
-- (PL/pgSQL keeps an expression's state for one transaction only).
--
-- Version 2 is inlined into each caller's expression, so the plans PL/pgSQL
-- keeps across transactions hold the arithmetic itself. Two things kept it
-- from that:
--   * the SET clause. A standard body (RETURN ...) is bound to functions and
--     operators by OID when it is created, so it needs no pinned path
--     (search_path.v1.sql); the migration loads this file under
--     search_path = pg_catalog, pg_temp, and every name is qualified anyway;
--   * the body's volatility. An IMMUTABLE function is inlined only if its
--     body is immutable, and extract(epoch from timestamptz) is only STABLE.
--     The same microseconds are the epoch of an interval, which is
--     immutable: t minus 0001-01-01 00:00 UTC, an interval of days and time
--     with no months, whose epoch is exact. The result is version 1's for
--     every time and in every session time zone
--     (tests/integration/test_knowledge_micros.py).
--
-- Measured by hand on PostgreSQL 15 (2026-12-06, a scratch store of 2,000
-- keys, a backend recording interior changes, each its own transaction):
-- perf put 4% of its time in running version 1's body, and none in version
-- 2. The other figures: docs/performance.md.

CREATE OR REPLACE FUNCTION bitemporal_internal.knowledge_micros(t timestamptz)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (pg_catalog.extract('epoch', t OPERATOR(pg_catalog.-) timestamptz '0001-01-01 00:00:00+00') * 1000000)::bigint;
COMMENT ON FUNCTION bitemporal_internal.knowledge_micros(timestamptz) IS
    'Microseconds from 0001-01-01 00:00 UTC to t: how knowledge times are kept in bitemporal.knowledge_floor and in the keys of the advisory locks that announce writes. Inlined into its callers (version 2, settled.v2.sql).';
