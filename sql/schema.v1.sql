-- bitemporal: the fact store's tables (schema version 1).
--
-- Every fact version carries two half-open [start, end) periods:
--   valid_period  when the value applies in the world;
--   known_period  when the store held this version (its knowledge, or
--                 transaction, time).
-- An unbounded upper end means "end not known". Rows are never deleted once
-- committed and the only change allowed to a committed row is closing its
-- open known_period, once (see append_only.v1.sql).

CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE SCHEMA IF NOT EXISTS bitemporal;
COMMENT ON SCHEMA bitemporal IS
    'Bitemporal fact store: values with a valid period (when they apply) and a known period (when the store held them).';

CREATE TYPE bitemporal.answer_status AS ENUM ('missing', 'supported', 'conflict');
COMMENT ON TYPE bitemporal.answer_status IS
    'missing: no eligible version (unknown, not zero); supported: one distinct value among eligible versions (the sources agree, not certified truth); conflict: several distinct values (never averaged, never settled by ingestion order).';

CREATE TYPE bitemporal.interpretation AS ENUM (
    'current', 'known_then', 'historical', 'retrospective', 'announced_future', 'missing');
COMMENT ON TYPE bitemporal.interpretation IS
    'How to read an answer relative to the present: current (valid_at = known_at = now), known_then (what the store said then), historical (unchanged since), retrospective (later knowledge changed the answer for that time), announced_future (valid after the knowledge time: announced, not in force), missing.';

-- One row per key ever written. It carries the per-key lock that serialises
-- writers and the latest knowledge time recorded, which keeps knowledge
-- monotonic per key without scanning the key's history.
CREATE TABLE bitemporal.fact_key (
    entity          text        NOT NULL,
    attribute       text        NOT NULL,
    first_known_at  timestamptz NOT NULL,
    last_known_at   timestamptz NOT NULL,
    -- Top-level transaction that wrote last_known_at: a later write in the same
    -- transaction may reuse that knowledge time, another transaction may not.
    last_txid       xid8        NOT NULL,
    CONSTRAINT fact_key_pkey PRIMARY KEY (entity, attribute),
    CONSTRAINT fact_key_not_blank CHECK (entity <> '' AND attribute <> ''),
    CONSTRAINT fact_key_known_order CHECK (first_known_at <= last_known_at)
);
COMMENT ON TABLE bitemporal.fact_key IS
    'Every (entity, attribute) key the store has recorded, with its first and latest knowledge time. Its row lock serialises writers of one key.';

CREATE TABLE bitemporal.fact_version (
    version_id    bigint      GENERATED ALWAYS AS IDENTITY,
    entity        text        NOT NULL,
    attribute     text        NOT NULL,
    source        text        NOT NULL,
    value         jsonb       NOT NULL,
    valid_period  tstzrange   NOT NULL,
    known_period  tstzrange   NOT NULL,
    recorded_by   text,
    -- For a remainder re-recorded when a write cut an older version: the
    -- version whose assertion it carries forward (NULL: asserted by this row).
    carried_from  bigint,
    -- Top-level transaction that inserted the row (forced by a trigger). A
    -- version superseded by the transaction that created it was never visible
    -- to anyone and may be removed instead of getting an empty known period.
    recorded_in   xid8        NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT fact_version_pkey PRIMARY KEY (version_id),
    CONSTRAINT fact_version_key_fkey FOREIGN KEY (entity, attribute)
        REFERENCES bitemporal.fact_key (entity, attribute),
    CONSTRAINT fact_version_source_not_blank CHECK (source <> ''),
    CONSTRAINT fact_version_value_not_null CHECK (value <> 'null'::jsonb),
    -- [start, end), start inclusive or unbounded, ends never +-infinity
    -- (an open end is stored as unbounded, shown as open).
    CONSTRAINT fact_version_valid_period_half_open CHECK (
        NOT isempty(valid_period)
        AND (lower_inc(valid_period) OR lower_inf(valid_period))
        AND NOT upper_inc(valid_period)
        AND (lower_inf(valid_period) OR isfinite(lower(valid_period)))
        AND (upper_inf(valid_period) OR isfinite(upper(valid_period)))),
    -- Knowledge always has a finite start.
    CONSTRAINT fact_version_known_period_half_open CHECK (
        NOT isempty(known_period)
        AND lower_inc(known_period)
        AND isfinite(lower(known_period))
        AND NOT upper_inc(known_period)
        AND (upper_inf(known_period) OR isfinite(upper(known_period)))),
    -- One source never holds two overlapping valid periods for one key
    -- within the same knowledge period. Different sources may disagree:
    -- that is a conflict to report, not to prevent.
    CONSTRAINT fact_version_no_overlap EXCLUDE USING gist (
        entity WITH =, attribute WITH =, source WITH =,
        valid_period WITH &&, known_period WITH &&)
);
COMMENT ON TABLE bitemporal.fact_version IS
    'Append-only fact versions. Write through bitemporal.record / bitemporal.retract; read through bitemporal.as_of, bitemporal.resolve, bitemporal.history.';
COMMENT ON COLUMN bitemporal.fact_version.valid_period IS
    'When the value applies in the world: [start, end), unbounded end = end not known.';
COMMENT ON COLUMN bitemporal.fact_version.known_period IS
    'When the store held this version: [recorded, superseded), unbounded end = still held.';
COMMENT ON COLUMN bitemporal.fact_version.carried_from IS
    'For a remainder re-recorded when a write cut an older version: the version whose assertion it carries forward.';

-- Requests made with an idempotency key, so that a retried record() is applied once.
CREATE TABLE bitemporal.fact_request (
    idempotency_key text        NOT NULL,
    entity          text        NOT NULL,
    attribute       text        NOT NULL,
    source          text        NOT NULL,
    value           jsonb       NOT NULL,
    valid_period    tstzrange   NOT NULL,
    known_at        timestamptz,
    result          jsonb,
    requested_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT fact_request_pkey PRIMARY KEY (idempotency_key),
    CONSTRAINT fact_request_key_valid CHECK (idempotency_key <> '' AND octet_length(idempotency_key) <= 1024)
);
COMMENT ON TABLE bitemporal.fact_request IS
    'Requests made to bitemporal.record with an idempotency key, and their result: a retry with the same key gets the same result and writes nothing.';

-- The versions the store holds now (open knowledge), by key and source: what
-- every write reads (the versions it may cut, the no-op check). The exclusion
-- index also holds every closed version, which a write would otherwise wade
-- through: on a key with a long history that cost grows with the history.
CREATE INDEX fact_version_current_idx ON bitemporal.fact_version
    USING gist (entity, attribute, source, valid_period)
    WHERE upper_inf(known_period);
COMMENT ON INDEX bitemporal.fact_version_current_idx IS
    'Current versions (open knowledge) by key, source and valid period: what record() and retract() read, whatever the length of the history.';
