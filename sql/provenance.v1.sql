-- bitemporal: provenance of derived artifacts, and invalidation (version 1).
--
-- An artifact is anything derived from facts: a chunk, an embedding, a
-- summary, a cached answer (kind is free-form). It records the exact fact
-- versions and the other artifacts it was derived from, many-to-many; since
-- an artifact's inputs must exist before it, the graph has no cycles.
-- (kind, ref) names the thing the caller keeps (a cache key, a document
-- section): recording it again retires the previous artifact of that name.
--
-- An artifact is stale at a knowledge time t when any of its inputs, directly
-- or through other artifacts, is no longer current knowledge at t:
--   superseded     an input version's knowledge ended at or before t and the
--                  same source asserted a new value for it (see
--                  changes.v1.sql for the classification);
--   retracted      an input version's knowledge ended at or before t with no
--                  new value;
--   discarded      an input version no longer exists: it was replaced inside
--                  the transaction that recorded it, so nobody else ever saw
--                  it (such versions are not kept);
--   input_retired  an input artifact was retired (or replaced under its
--                  name) at or before t.
-- bitemporal.stale(t) lists them all, with the reason; retire an artifact
-- once it has been rebuilt or thrown away and it leaves the list.
--
-- Live invalidation: when a version's knowledge is closed (a supersession or
-- a retraction), the committing transaction sends a NOTIFY on the channel
-- bitemporal_invalidation (bitemporal.invalidation_channel()) with a JSON
-- payload {"entity", "attribute", "source", "version_id", "change"
-- (superseded | retracted), "known_at", "by"}. The trigger is deferred to
-- the end of the transaction, so it sees the write that closed the version
-- complete, and nothing is sent for a transaction that rolls back. A payload
-- that would exceed PostgreSQL's 8000-byte limit (very long keys) is sent
-- without entity, attribute and source, with "truncated": true.
--
-- Errors (SQLSTATE):
--   BT003 a derivation or retirement time later than the present
--   BT205 unknown fact version   BT206 unknown artifact
--   BT207 invalid artifact (empty kind or ref, no inputs, derived before an
--         input was known or before the artifact it replaces)

CREATE TYPE bitemporal.stale_cause AS ENUM ('superseded', 'retracted', 'discarded', 'input_retired');
COMMENT ON TYPE bitemporal.stale_cause IS
    'Why an artifact is stale: an input version was superseded, retracted, or discarded (replaced inside the transaction that created it), or an input artifact was retired.';

CREATE TABLE bitemporal.artifact (
    artifact_id  bigint      GENERATED ALWAYS AS IDENTITY,
    kind         text        NOT NULL,
    ref          text        NOT NULL,
    detail       jsonb,
    derived_at   timestamptz NOT NULL,
    retired_at   timestamptz,
    recorded_by  text,
    CONSTRAINT artifact_pkey PRIMARY KEY (artifact_id),
    CONSTRAINT artifact_kind_valid CHECK (kind <> '' AND octet_length(kind) <= 1024),
    CONSTRAINT artifact_ref_valid CHECK (ref <> '' AND octet_length(ref) <= 1024),
    CONSTRAINT artifact_retired_after_derived CHECK (retired_at >= derived_at)
);
COMMENT ON TABLE bitemporal.artifact IS
    'Derived artifacts (chunk, embedding, summary, cached answer, ...): what was derived, when, and when it was retired. Write through bitemporal.record_artifact and bitemporal.retire_artifact; find the stale ones with bitemporal.stale.';
COMMENT ON TYPE bitemporal.artifact IS
    'Row type of bitemporal.artifact, returned by bitemporal.dependents.';
COMMENT ON COLUMN bitemporal.artifact.kind IS
    'What the artifact is, free-form: chunk, embedding, summary, cached_answer, ...';
COMMENT ON COLUMN bitemporal.artifact.ref IS
    'The caller''s name for it (a cache key, a document section). At most one artifact per (kind, ref) is not retired.';
COMMENT ON COLUMN bitemporal.artifact.detail IS
    'Free-form JSON the caller keeps with the artifact (model, prompt hash, ...).';
COMMENT ON COLUMN bitemporal.artifact.derived_at IS
    'When it was derived, on the knowledge time axis: its inputs were current knowledge then.';
COMMENT ON COLUMN bitemporal.artifact.retired_at IS
    'When it was thrown away or replaced under its (kind, ref); NULL while in use.';

CREATE UNIQUE INDEX artifact_current_ref_key ON bitemporal.artifact (kind, ref) WHERE retired_at IS NULL;
COMMENT ON INDEX bitemporal.artifact_current_ref_key IS
    'At most one artifact in use per (kind, ref).';

CREATE TABLE bitemporal.artifact_input (
    artifact_id     bigint NOT NULL,
    -- No foreign key to fact_version: a version replaced inside the
    -- transaction that created it is deleted (never visible), and must not
    -- make that write fail; its artifacts become stale ("discarded").
    input_version   bigint,
    input_artifact  bigint,
    CONSTRAINT artifact_input_artifact_fkey FOREIGN KEY (artifact_id)
        REFERENCES bitemporal.artifact (artifact_id),
    CONSTRAINT artifact_input_input_artifact_fkey FOREIGN KEY (input_artifact)
        REFERENCES bitemporal.artifact (artifact_id),
    CONSTRAINT artifact_input_exactly_one CHECK (num_nonnulls(input_version, input_artifact) = 1),
    -- Inputs exist before what is derived from them: no cycles.
    CONSTRAINT artifact_input_older CHECK (input_artifact < artifact_id)
);
COMMENT ON TABLE bitemporal.artifact_input IS
    'What each artifact was derived from: exact fact versions and other artifacts (many-to-many, transitive through artifacts).';
COMMENT ON TYPE bitemporal.artifact_input IS
    'Row type of bitemporal.artifact_input.';

CREATE UNIQUE INDEX artifact_input_version_key ON bitemporal.artifact_input (artifact_id, input_version)
    WHERE input_version IS NOT NULL;
COMMENT ON INDEX bitemporal.artifact_input_version_key IS
    'Each input version once per artifact; the inputs of an artifact.';
CREATE UNIQUE INDEX artifact_input_artifact_key ON bitemporal.artifact_input (artifact_id, input_artifact)
    WHERE input_artifact IS NOT NULL;
COMMENT ON INDEX bitemporal.artifact_input_artifact_key IS
    'Each input artifact once per artifact; the artifact inputs of an artifact.';
CREATE INDEX artifact_input_by_version_idx ON bitemporal.artifact_input (input_version)
    WHERE input_version IS NOT NULL;
COMMENT ON INDEX bitemporal.artifact_input_by_version_idx IS
    'The artifacts derived from a version (bitemporal.dependents).';
CREATE INDEX artifact_input_by_artifact_idx ON bitemporal.artifact_input (input_artifact)
    WHERE input_artifact IS NOT NULL;
COMMENT ON INDEX bitemporal.artifact_input_by_artifact_idx IS
    'The artifacts derived from an artifact (bitemporal.dependents).';

CREATE FUNCTION bitemporal.check_artifact_time(what text, t timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF t > pg_catalog.clock_timestamp() OR t IN ('infinity', '-infinity') THEN
        RAISE EXCEPTION '% time % is % the present (%)', what, t,
                CASE WHEN t = '-infinity' THEN 'not a time before' ELSE 'later than' END,
                pg_catalog.clock_timestamp()
            USING ERRCODE = 'BT003',
                  HINT = 'Omit it to use the transaction time.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.check_artifact_time(text, timestamptz) IS
    'Raises BT003 for a derivation or retirement time later than the present, or infinite.';

CREATE FUNCTION bitemporal.record_artifact(
    kind         text,
    ref          text,
    version_ids  bigint[]    DEFAULT '{}',
    artifact_ids bigint[]    DEFAULT '{}',
    detail       jsonb       DEFAULT NULL,
    derived_at   timestamptz DEFAULT NULL,
    recorded_by  text        DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    t        timestamptz := coalesce(derived_at, pg_catalog.now());
    id       bigint;
    bad      record;
    previous timestamptz;
BEGIN
    IF kind IS NULL OR kind = '' OR octet_length(kind) > 1024
       OR ref IS NULL OR ref = '' OR octet_length(ref) > 1024 THEN
        RAISE EXCEPTION 'an artifact needs a kind and a ref of 1 to 1024 bytes'
            USING ERRCODE = 'BT207';
    END IF;
    version_ids := coalesce(version_ids, '{}');
    artifact_ids := coalesce(artifact_ids, '{}');
    IF pg_catalog.array_position(version_ids, NULL) IS NOT NULL
       OR pg_catalog.array_position(artifact_ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'input ids must not be NULL' USING ERRCODE = 'BT207';
    END IF;
    IF pg_catalog.cardinality(version_ids) + pg_catalog.cardinality(artifact_ids) = 0 THEN
        RAISE EXCEPTION 'artifact (%, %) has no inputs: nothing could ever make it stale', kind, ref
            USING ERRCODE = 'BT207',
                  HINT = 'Name the fact versions and/or artifacts it was derived from.';
    END IF;
    PERFORM bitemporal.check_artifact_time('derivation', t);

    SELECT g.id INTO bad FROM unnest(version_ids) g(id)
     WHERE NOT EXISTS (SELECT FROM bitemporal.fact_version v WHERE v.version_id = g.id) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'unknown fact version %', bad.id USING ERRCODE = 'BT205';
    END IF;
    SELECT v.version_id, lower(v.known_period) AS known_from INTO bad
      FROM bitemporal.fact_version v
     WHERE v.version_id = ANY (version_ids) AND lower(v.known_period) > t
     ORDER BY v.version_id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'artifact derived at % from version %, which the store only knew from %',
                t, bad.version_id, bad.known_from
            USING ERRCODE = 'BT207';
    END IF;
    SELECT g.id INTO bad FROM unnest(artifact_ids) g(id)
     WHERE NOT EXISTS (SELECT FROM bitemporal.artifact a WHERE a.artifact_id = g.id) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'unknown artifact %', bad.id USING ERRCODE = 'BT206';
    END IF;
    SELECT a.artifact_id, a.derived_at INTO bad
      FROM bitemporal.artifact a
     WHERE a.artifact_id = ANY (artifact_ids) AND a.derived_at > t
     ORDER BY a.artifact_id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'artifact derived at % from artifact %, which was only derived at %',
                t, bad.artifact_id, bad.derived_at
            USING ERRCODE = 'BT207';
    END IF;

    -- One writer per name at a time, so that the replaced artifact is found.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('bitemporal.artifact'),
                                             pg_catalog.hashtext(kind || '/' || ref));
    SELECT a.derived_at INTO previous FROM bitemporal.artifact a
     WHERE a.kind = kind AND a.ref = ref AND a.retired_at IS NULL;
    IF previous > t THEN
        RAISE EXCEPTION 'artifact (%, %) derived at % would replace one derived later, at %',
                kind, ref, t, previous
            USING ERRCODE = 'BT207';
    END IF;
    UPDATE bitemporal.artifact a SET retired_at = t
     WHERE a.kind = kind AND a.ref = ref AND a.retired_at IS NULL;

    INSERT INTO bitemporal.artifact (kind, ref, detail, derived_at, recorded_by)
    VALUES (kind, ref, detail, t, recorded_by)
    RETURNING artifact.artifact_id INTO id;
    INSERT INTO bitemporal.artifact_input (artifact_id, input_version)
    SELECT DISTINCT id, g.v FROM unnest(version_ids) g(v);
    INSERT INTO bitemporal.artifact_input (artifact_id, input_artifact)
    SELECT DISTINCT id, g.a FROM unnest(artifact_ids) g(a);
    RETURN id;
END;
$$;
COMMENT ON FUNCTION bitemporal.record_artifact(text, text, bigint[], bigint[], jsonb, timestamptz, text) IS
    'Records an artifact derived at derived_at (default: the transaction time) from exact fact versions and/or other artifacts, retiring the artifact previously recorded under the same (kind, ref). Returns its id. Errors: BT003 derived_at later than now, BT205 unknown version, BT206 unknown artifact, BT207 invalid (empty kind/ref, no inputs, derived before an input existed).';

CREATE FUNCTION bitemporal.retire_artifact(artifact_id bigint, retired_at timestamptz DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    t timestamptz := coalesce(retired_at, pg_catalog.now());
    a bitemporal.artifact;
BEGIN
    PERFORM bitemporal.check_artifact_time('retirement', t);
    SELECT * INTO a FROM bitemporal.artifact x WHERE x.artifact_id = artifact_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown artifact %', artifact_id USING ERRCODE = 'BT206';
    END IF;
    IF a.retired_at IS NOT NULL THEN
        RETURN false;
    END IF;
    IF t < a.derived_at THEN
        RAISE EXCEPTION 'artifact % cannot be retired at %, before it was derived (%)', artifact_id, t, a.derived_at
            USING ERRCODE = 'BT207';
    END IF;
    UPDATE bitemporal.artifact x SET retired_at = t WHERE x.artifact_id = artifact_id;
    RETURN true;
END;
$$;
COMMENT ON FUNCTION bitemporal.retire_artifact(bigint, timestamptz) IS
    'Marks an artifact as thrown away or rebuilt at retired_at (default: the transaction time), so that it leaves the stale list; returns false if it already was. Errors: BT003, BT206 unknown artifact, BT207 retired before derived.';

CREATE TYPE bitemporal.stale_input AS (
    artifact_id     bigint,
    kind            text,
    ref             text,
    derived_at      timestamptz,
    cause           bitemporal.stale_cause,
    changed_at      timestamptz,
    version_id      bigint,
    entity          text,
    attribute       text,
    source          text,
    value           jsonb,
    input_artifact  bigint,
    via_artifact    bigint,
    by_version_ids  bigint[],
    reason          text
);
COMMENT ON TYPE bitemporal.stale_input IS
    'One row of bitemporal.stale: a stale artifact, one input that is no longer current (a version, or an input artifact), when it changed, the artifact that used it directly (via_artifact = artifact_id when direct), the superseding versions, and the reason in words.';

CREATE FUNCTION bitemporal.stale(known_at timestamptz DEFAULT NULL)
RETURNS SETOF bitemporal.stale_input
LANGUAGE sql STABLE
AS $$
    WITH RECURSIVE
    asked AS (
        SELECT coalesce(stale.known_at, pg_catalog.now()) AS t
    ),
    live AS (
        SELECT a.* FROM bitemporal.artifact a, asked
         WHERE a.derived_at <= asked.t AND (a.retired_at IS NULL OR a.retired_at > asked.t)
    ),
    -- Every artifact each live artifact depends on, itself included. UNION
    -- (not ALL) keeps one row per pair however many paths lead there.
    reach (root, node) AS (
        SELECT l.artifact_id, l.artifact_id FROM live l
        UNION
        SELECT r.root, i.input_artifact
          FROM reach r JOIN bitemporal.artifact_input i ON i.artifact_id = r.node
         WHERE i.input_artifact IS NOT NULL
    ),
    causes AS (
        SELECT r.root, r.node,
               CASE WHEN v.version_id IS NULL THEN 'discarded'
                    WHEN pg_catalog.cardinality(s.by_ids) > 0 THEN 'superseded'
                    ELSE 'retracted' END::bitemporal.stale_cause AS cause,
               upper(v.known_period) AS changed_at, i.input_version AS version_id,
               v.entity, v.attribute, v.source, v.value, NULL::bigint AS input_artifact,
               s.by_ids
          FROM reach r
          JOIN bitemporal.artifact_input i ON i.artifact_id = r.node AND i.input_version IS NOT NULL
          LEFT JOIN bitemporal.fact_version v ON v.version_id = i.input_version
          CROSS JOIN asked
          CROSS JOIN LATERAL (
                SELECT bitemporal.superseding_versions(v.entity, v.attribute, v.source,
                                                       v.valid_period, upper(v.known_period)) AS by_ids) s
         WHERE v.version_id IS NULL
            OR (NOT upper_inf(v.known_period) AND upper(v.known_period) <= asked.t)
        UNION ALL
        SELECT r.root, r.node, 'input_retired', a.retired_at, NULL, NULL, NULL, NULL, NULL,
               a.artifact_id, '{}'::bigint[]
          FROM reach r
          JOIN bitemporal.artifact_input i ON i.artifact_id = r.node AND i.input_artifact IS NOT NULL
          JOIN bitemporal.artifact a ON a.artifact_id = i.input_artifact
          CROSS JOIN asked
         WHERE a.retired_at <= asked.t
    ),
    -- Each cause once per stale artifact, through the most direct path.
    firsts AS (
        SELECT DISTINCT ON (c.root, c.version_id, c.input_artifact) c.*
          FROM causes c
         ORDER BY c.root, c.version_id, c.input_artifact, (c.node = c.root) DESC, c.node
    )
    SELECT f.root, l.kind, l.ref, l.derived_at, f.cause, f.changed_at, f.version_id,
           f.entity, f.attribute, f.source, f.value, f.input_artifact, f.node, f.by_ids,
           CASE f.cause
               WHEN 'superseded' THEN pg_catalog.format(
                   'version %s (%s/%s, source %s: %s) superseded on %s by %s',
                   f.version_id, f.entity, f.attribute, f.source, bitemporal.human_value(f.value),
                   bitemporal.human_time(f.changed_at),
                   (SELECT pg_catalog.string_agg(pg_catalog.format('version %s (%s)', w.version_id,
                                                                   bitemporal.human_value(w.value)),
                                                 ', ' ORDER BY w.version_id)
                      FROM bitemporal.fact_version w WHERE w.version_id = ANY (f.by_ids)))
               WHEN 'retracted' THEN pg_catalog.format(
                   'version %s (%s/%s, source %s: %s) retracted on %s',
                   f.version_id, f.entity, f.attribute, f.source, bitemporal.human_value(f.value),
                   bitemporal.human_time(f.changed_at))
               WHEN 'discarded' THEN pg_catalog.format(
                   'version %s no longer exists: it was replaced inside the transaction that recorded it',
                   f.version_id)
               ELSE pg_catalog.format(
                   'input artifact %s (%s %s) retired on %s',
                   f.input_artifact, ia.kind, ia.ref, bitemporal.human_time(f.changed_at))
           END
           || CASE WHEN f.node <> f.root
                   THEN pg_catalog.format(', through artifact %s (%s %s)', f.node, via.kind, via.ref)
                   ELSE '' END
      FROM firsts f
      JOIN live l ON l.artifact_id = f.root
      JOIN bitemporal.artifact via ON via.artifact_id = f.node
      LEFT JOIN bitemporal.artifact ia ON ia.artifact_id = f.input_artifact
     ORDER BY f.root, f.changed_at NULLS FIRST, f.version_id, f.input_artifact
$$;
COMMENT ON FUNCTION bitemporal.stale(timestamptz) IS
    'The invalidation list at known_at (default now): every artifact derived by then and not retired whose inputs, directly or through other artifacts (a recursive walk), include a version superseded, retracted or discarded by then, or an artifact retired by then. One row per stale artifact and cause, with the reason; ORDER BY artifact_id, changed_at.';

CREATE FUNCTION bitemporal.dependents(
    version_ids  bigint[] DEFAULT '{}',
    artifact_ids bigint[] DEFAULT '{}')
RETURNS SETOF bitemporal.artifact
LANGUAGE sql STABLE
AS $$
    WITH RECURSIVE down (artifact_id) AS (
        SELECT i.artifact_id FROM bitemporal.artifact_input i
         WHERE i.input_version = ANY (coalesce(dependents.version_ids, '{}'))
            OR i.input_artifact = ANY (coalesce(dependents.artifact_ids, '{}'))
        UNION
        SELECT i.artifact_id FROM down d JOIN bitemporal.artifact_input i ON i.input_artifact = d.artifact_id
    )
    SELECT a.* FROM bitemporal.artifact a
     WHERE a.artifact_id IN (SELECT d.artifact_id FROM down d) AND a.retired_at IS NULL
     ORDER BY a.artifact_id
$$;
COMMENT ON FUNCTION bitemporal.dependents(bigint[], bigint[]) IS
    'The artifacts in use (not retired) derived, directly or transitively, from any of the given versions or artifacts: what to rebuild when a notification on bitemporal_invalidation names a version.';

CREATE FUNCTION bitemporal.invalidation_channel()
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 'bitemporal_invalidation';
COMMENT ON FUNCTION bitemporal.invalidation_channel() IS
    'The NOTIFY channel on which a supersession or retraction is announced at commit: LISTEN bitemporal_invalidation.';

-- The trigger fires at commit, as the session's role, which may write only
-- through SECURITY DEFINER entry points and so may not read fact_version
-- itself: the function runs with its owner's rights instead (search_path
-- pinned, everything schema-qualified).
CREATE FUNCTION bitemporal.fact_version_notify_closed()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    by_ids  bigint[];
    change  text;
    payload text;
BEGIN
    -- The rule of bitemporal.superseding_versions, written out here so that
    -- PL/pgSQL keeps its plan: every closed version runs it at commit.
    SELECT coalesce(pg_catalog.array_agg(w.version_id ORDER BY w.version_id), '{}')
      INTO by_ids
      FROM bitemporal.fact_version w
     WHERE w.entity = NEW.entity AND w.attribute = NEW.attribute AND w.source = NEW.source
       AND w.valid_period OPERATOR(pg_catalog.&&) NEW.valid_period
       AND w.known_period OPERATOR(pg_catalog.@>) upper(NEW.known_period)
       AND lower(w.known_period) = upper(NEW.known_period)
       AND w.carried_from IS NULL;
    change := CASE WHEN pg_catalog.cardinality(by_ids) > 0 THEN 'superseded' ELSE 'retracted' END;
    payload := pg_catalog.jsonb_build_object(
        'entity', NEW.entity, 'attribute', NEW.attribute, 'source', NEW.source,
        'version_id', NEW.version_id, 'change', change,
        'known_at', bitemporal.iso_time(upper(NEW.known_period)), 'by', pg_catalog.to_jsonb(by_ids))::text;
    IF octet_length(payload) >= 8000 THEN
        payload := pg_catalog.jsonb_build_object(
            'version_id', NEW.version_id, 'change', change,
            'known_at', bitemporal.iso_time(upper(NEW.known_period)), 'by', pg_catalog.to_jsonb(by_ids),
            'truncated', true)::text;
    END IF;
    PERFORM pg_catalog.pg_notify(bitemporal.invalidation_channel(), payload);
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION bitemporal.fact_version_notify_closed() FROM PUBLIC;
COMMENT ON FUNCTION bitemporal.fact_version_notify_closed() IS
    'Trigger (deferred to commit): announces on bitemporal_invalidation that a version''s knowledge was closed, with its key, source, id, change (superseded or retracted), knowledge time and superseding versions, as JSON.';

CREATE CONSTRAINT TRIGGER fact_version_notify_closed
    AFTER UPDATE ON bitemporal.fact_version
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (upper_inf(OLD.known_period) AND NOT upper_inf(NEW.known_period))
    EXECUTE FUNCTION bitemporal.fact_version_notify_closed();
COMMENT ON TRIGGER fact_version_notify_closed ON bitemporal.fact_version IS
    'NOTIFY bitemporal_invalidation at commit for every version whose knowledge a transaction closed.';
