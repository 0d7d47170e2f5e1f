-- bitemporal: erasure of fact values (version 1, migration 0012).
--
-- History that nothing can delete collides with a data subject's right to
-- erasure (GDPR art. 17): some values must go, while an auditor can still see
-- that something was recorded, when, by whom, and that it was erased, when
-- and why. bitemporal.erase(entity, attribute, reason) (every version of one
-- key) and bitemporal.erase_entity(entity, reason) (every version of every
-- attribute of an entity):
--   * replace the value of each version with nothing (fact_version.value
--     becomes NULL, erasure_id and erased_at say by which erasure and when);
--     the versions keep their ids, sources, both periods, recorded_by and
--     carried_from: the timeline's shape stays auditable;
--   * record the erasure in bitemporal.erasures (append-only for everyone,
--     the owner included): key, versions, reason, who (session_user, the real
--     caller, not the function's owner) and when (the transaction time);
--   * delete the evidence passages (and so their embeddings) of those
--     versions, and clear the value of the key's idempotency records;
--   * announce each erased version on bitemporal_invalidation (ids only:
--     {"version_id", "change": "erased", "known_at": <erased_at>, "by": []}),
--     and bitemporal.stale lists the artifacts derived from it with the
--     cause 'erased'.
-- An erasure is not a knowledge event: the known periods stay as they were,
-- so an erased version answers every question it answered before, with no
-- value. Asked about a time an erased version covers, resolve says 'erased'
-- when every eligible version is erased; when versions that are not erased
-- (recorded later, or by another source) are eligible too, the status comes
-- from their values alone (an erased value is gone; it neither conflicts nor
-- agrees with anything). Erasure is the one change an answer at a settled
-- knowledge time can still see.
--
-- Erasure is idempotent: the versions already erased are left alone, and an
-- erasure with nothing left to erase records nothing and returns no row. It
-- takes the keys' row locks in bitemporal.fact_key (as the write functions
-- do), so it serialises with writers of the same keys. A write after an
-- erasure that cuts an erased version re-records its remainders erased too
-- (they carry nothing to carry).
--
-- How the append-only guard lets an erasure through, and nothing else: an
-- UPDATE of a version that clears its value is allowed only if it changes
-- nothing else but setting erasure_id and erased_at, and only when the row of
-- bitemporal.erasures it names was inserted by the same transaction, is about
-- the version's key and lists the version. So nobody, the owner included,
-- clears a value without leaving an append-only erasure record; a value is
-- never changed to another. Only the role bitemporal_eraser (granted by
-- bitemporal.grant_roles: EXECUTE on the functions named erase*, which the
-- writer is not given) may call the erase functions.
--
-- Errors (SQLSTATE): BT004 unknown key or entity, BT005 malformed entity or
-- attribute, BT009 blank reason, 42501 without the eraser's grant; BT006 for
-- anything that would clear a value otherwise.

ALTER TYPE bitemporal.answer_status ADD VALUE 'erased';
COMMENT ON TYPE bitemporal.answer_status IS
    'missing: no eligible version (unknown, not zero); supported: one distinct value among eligible versions (the sources agree, not certified truth); conflict: several distinct values (never averaged, never settled by ingestion order); erased: every eligible version was erased (the store knew, and was made to forget).';
ALTER TYPE bitemporal.interpretation ADD VALUE 'erased';
COMMENT ON TYPE bitemporal.interpretation IS
    'How to read an answer relative to the present: current (valid_at = known_at = now), known_then (what the store said then), historical (unchanged since), retrospective (later knowledge changed the answer for that time), announced_future (valid after the knowledge time: announced, not in force), missing, erased (the values eligible were erased).';
ALTER TYPE bitemporal.stale_cause ADD VALUE 'erased';
COMMENT ON TYPE bitemporal.stale_cause IS
    'Why an artifact is stale: an input version was superseded, retracted, discarded (replaced inside the transaction that created it) or erased, or an input artifact was retired.';

-- The record of erasures.
CREATE TABLE bitemporal.erasures (
    erasure_id   bigint      GENERATED ALWAYS AS IDENTITY,
    erased_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    erased_by    name        NOT NULL DEFAULT session_user,
    reason       text        NOT NULL,
    scope        text        NOT NULL,
    relation     text,
    entity       text,
    attribute    text,
    key          jsonb,
    version_ids  bigint[]    NOT NULL,
    policy       text,
    -- Top-level transaction that inserted the row (forced by a trigger): the
    -- append-only guard of fact_version accepts an erasure's UPDATE only from it.
    recorded_in  xid8        NOT NULL DEFAULT pg_catalog.pg_current_xact_id(),
    CONSTRAINT erasures_pkey PRIMARY KEY (erasure_id),
    CONSTRAINT erasures_reason_not_blank CHECK (pg_catalog.btrim(reason) <> ''),
    CONSTRAINT erasures_scope_not_blank CHECK (pg_catalog.btrim(scope) <> ''),
    CONSTRAINT erasures_fact_scope CHECK (
        scope <> 'fact' OR (entity IS NOT NULL AND relation IS NULL AND key IS NULL))
);
COMMENT ON TABLE bitemporal.erasures IS
    'Append-only record of erasures: what was erased (a fact key or entity, or an application table''s key), which versions, why, by whom and when. The values are gone; this record stays. Write through bitemporal.erase and bitemporal.erase_entity (role bitemporal_eraser).';
COMMENT ON TYPE bitemporal.erasures IS
    'Row type of bitemporal.erasures, returned by bitemporal.erase and bitemporal.erase_entity.';
COMMENT ON COLUMN bitemporal.erasures.erasure_id IS
    'Identity of the erasure; fact_version.erasure_id of the versions it erased.';
COMMENT ON COLUMN bitemporal.erasures.erased_at IS
    'When (transaction time of the erasing transaction, forced by a trigger).';
COMMENT ON COLUMN bitemporal.erasures.erased_by IS
    'Who: session_user of the erasing session (the role that logged in, not the owner of the erase functions), forced by a trigger.';
COMMENT ON COLUMN bitemporal.erasures.reason IS
    'Why, in the eraser''s words (a request reference, the legal ground): not blank.';
COMMENT ON COLUMN bitemporal.erasures.scope IS
    'What kind of thing was erased: fact (versions of bitemporal.fact_version), or another scope for application tables and retention.';
COMMENT ON COLUMN bitemporal.erasures.relation IS
    'For an application table''s erasure: the table; NULL for the fact store.';
COMMENT ON COLUMN bitemporal.erasures.entity IS
    'For scope fact: the entity whose versions were erased.';
COMMENT ON COLUMN bitemporal.erasures.attribute IS
    'For scope fact: the attribute whose versions were erased; NULL: every attribute of the entity (bitemporal.erase_entity).';
COMMENT ON COLUMN bitemporal.erasures.key IS
    'For an application table''s erasure: the key erased, as JSON; NULL for the fact store.';
COMMENT ON COLUMN bitemporal.erasures.version_ids IS
    'The versions whose values this erasure removed (those already erased before are not listed again).';
COMMENT ON COLUMN bitemporal.erasures.policy IS
    'For an erasure made by a retention policy: its name; NULL for an erasure on request.';
COMMENT ON COLUMN bitemporal.erasures.recorded_in IS
    'Top-level transaction that recorded the erasure (forced): only it may clear the values the erasure lists.';
COMMENT ON CONSTRAINT erasures_reason_not_blank ON bitemporal.erasures IS
    'An erasure says why.';
COMMENT ON CONSTRAINT erasures_scope_not_blank ON bitemporal.erasures IS
    'An erasure says what kind of thing it erased.';
COMMENT ON CONSTRAINT erasures_fact_scope ON bitemporal.erasures IS
    'An erasure in the fact store names an entity (and an attribute, or NULL for all), no table and no table key.';
COMMENT ON INDEX bitemporal.erasures_pkey IS
    'Erasures by id: what a version''s erasure_id refers to.';

CREATE INDEX erasures_entity_idx ON bitemporal.erasures (entity, attribute) WHERE entity IS NOT NULL;
COMMENT ON INDEX bitemporal.erasures_entity_idx IS
    'The erasures of an entity or key: what an auditor asks about a data subject.';

CREATE FUNCTION bitemporal_internal.erasures_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- Who and when are facts about the erasure, not the caller's choice.
        NEW.erased_at := pg_catalog.transaction_timestamp();
        NEW.erased_by := session_user;
        NEW.recorded_in := pg_catalog.pg_current_xact_id();
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'bitemporal.erasures is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'BT006',
              HINT = 'The record of an erasure stays, like the history it erased from.';
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.erasures_guard() IS
    'Trigger on bitemporal.erasures: stamps erased_at (transaction time), erased_by (session_user) and recorded_in on insert, and refuses UPDATE, DELETE and TRUNCATE for every role, the owner included (SQLSTATE BT006).';

CREATE TRIGGER erasures_append_only
    BEFORE INSERT OR UPDATE OR DELETE ON bitemporal.erasures
    FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.erasures_guard();
CREATE TRIGGER erasures_no_truncate
    BEFORE TRUNCATE ON bitemporal.erasures
    FOR EACH STATEMENT EXECUTE FUNCTION bitemporal_internal.erasures_guard();
COMMENT ON TRIGGER erasures_append_only ON bitemporal.erasures IS
    'Erasures are recorded once and never changed or deleted: see bitemporal_internal.erasures_guard().';
COMMENT ON TRIGGER erasures_no_truncate ON bitemporal.erasures IS
    'Erasures are never truncated: see bitemporal_internal.erasures_guard().';

-- The erased marker on versions. A value is NULL exactly when the version is
-- erased (the CHECK value <> 'null' still refuses a JSON null).
ALTER TABLE bitemporal.fact_version
    ALTER COLUMN value DROP NOT NULL,
    ADD COLUMN erased_at timestamptz,
    ADD COLUMN erasure_id bigint,
    ADD CONSTRAINT fact_version_erased CHECK (
        (value IS NULL) = (erasure_id IS NOT NULL) AND (erasure_id IS NULL) = (erased_at IS NULL));
COMMENT ON COLUMN bitemporal.fact_version.value IS
    'The value (JSON, never JSON null); NULL only for an erased version (erasure_id set).';
COMMENT ON COLUMN bitemporal.fact_version.erased_at IS
    'When the version''s value was erased (bitemporal.erasures.erased_at); NULL: not erased.';
COMMENT ON COLUMN bitemporal.fact_version.erasure_id IS
    'The erasure that removed the value (bitemporal.erasures); NULL: not erased.';
COMMENT ON CONSTRAINT fact_version_erased ON bitemporal.fact_version IS
    'A version has no value exactly when it is erased, and an erased version says by which erasure and when.';

-- Idempotency records keep the request's value; an erasure clears it.
ALTER TABLE bitemporal.fact_request ALTER COLUMN value DROP NOT NULL;
COMMENT ON COLUMN bitemporal.fact_request.value IS
    'The value requested; NULL once the key was erased (a retry of the request is then refused, BT008).';

-- bitemporal_internal.fact_version_stamp_insert, as table_knowledge.v1.sql
-- defines it, and: a fact version inserted without a value is the remainder
-- of an erased version (bitemporal_internal.cut and bitemporal.record_many
-- re-record remainders with their original's value) and carries its
-- erasure; nothing else may be inserted without a value, or erased.
CREATE OR REPLACE FUNCTION bitemporal_internal.fact_version_stamp_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col      name;
    original record;
BEGIN
    NEW.recorded_in := pg_catalog.pg_current_xact_id();
    IF TG_TABLE_SCHEMA = 'bitemporal' AND TG_TABLE_NAME LIKE 'fact\_version%' THEN
        -- The fact store (or one of its partitions): one jsonb column; its
        -- knowledge is checked by fact_version_knowledge (append_only.v2.sql).
        PERFORM bitemporal_internal.check_json_value('value', NEW.value);
        IF NEW.value IS NULL OR NEW.erasure_id IS NOT NULL OR NEW.erased_at IS NOT NULL THEN
            SELECT o.erasure_id, o.erased_at INTO original
              FROM bitemporal.fact_version o
             WHERE o.version_id = NEW.carried_from AND o.entity = NEW.entity AND o.attribute = NEW.attribute
               AND o.erasure_id IS NOT NULL;
            IF NEW.value IS NOT NULL OR NOT FOUND THEN
                RAISE EXCEPTION 'a version of (%, %) is inserted without a value only as the remainder of an erased version',
                        NEW.entity, NEW.attribute
                    USING ERRCODE = 'BT006',
                          HINT = 'Values are erased by bitemporal.erase() and bitemporal.erase_entity().';
            END IF;
            NEW.erasure_id := original.erasure_id;
            NEW.erased_at := original.erased_at;
        END IF;
        RETURN NEW;
    END IF;
    -- An application table: each of its jsonb columns, and the knowledge event.
    FOR col IN
        SELECT a.attname FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = TG_RELID AND a.attnum > 0 AND NOT a.attisdropped
           AND a.atttypid = 'pg_catalog.jsonb'::pg_catalog.regtype
    LOOP
        PERFORM bitemporal_internal.check_json_value(pg_catalog.format('column %I', col), pg_catalog.to_jsonb(NEW) -> col);
    END LOOP;
    PERFORM bitemporal_internal.table_knowledge_event(
        TG_TABLE_SCHEMA, TG_TABLE_NAME, NEW, lower(NEW.known_period),
        CASE WHEN upper_inf(NEW.known_period) THEN lower(NEW.known_period) ELSE upper(NEW.known_period) END);
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.fact_version_stamp_insert() IS
    'Trigger on bitemporal.fact_version and every application table: stamps a new version with the inserting top-level transaction, which the append-only rule relies on, and refuses jsonb values Python cannot read back (bitemporal_internal.check_json_value, BT007); on bitemporal.fact_version, a version without a value unless it is the remainder of an erased version, whose erasure it then carries (BT006); on an application table, also a version known from before its key''s latest knowledge (bitemporal_internal.table_knowledge_event, BT006).';

-- bitemporal_internal.fact_version_guard, as surface.v1.sql defines it, and
-- the erasure of a value (see the top of this file).
CREATE OR REPLACE FUNCTION bitemporal_internal.fact_version_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'bitemporal.fact_version is append-only: TRUNCATE is not allowed'
            USING ERRCODE = 'BT006';
    ELSIF TG_OP = 'DELETE' THEN
        IF OLD.recorded_in = pg_catalog.pg_current_xact_id() THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'bitemporal.fact_version is append-only: version % cannot be deleted', OLD.version_id
            USING ERRCODE = 'BT006',
                  HINT = 'Retract the valid period with bitemporal.retract(); history stays.';
    END IF;

    -- UPDATE that erases: the value cleared, the erasure named, nothing else
    -- changed, and the erasure recorded by this transaction for this version.
    IF OLD.erasure_id IS NULL AND (NEW.erasure_id IS NOT NULL OR NEW.value IS NULL) THEN
        IF NEW.value IS NOT NULL OR NEW.erasure_id IS NULL
           OR (NEW.version_id, NEW.entity, NEW.attribute, NEW.source, NEW.valid_period, NEW.known_period,
               NEW.recorded_by, NEW.carried_from, NEW.recorded_in, NEW.recorded_at, NEW.closed_at)
              IS DISTINCT FROM
              (OLD.version_id, OLD.entity, OLD.attribute, OLD.source, OLD.valid_period, OLD.known_period,
               OLD.recorded_by, OLD.carried_from, OLD.recorded_in, OLD.recorded_at, OLD.closed_at)
           OR NOT EXISTS (
               SELECT FROM bitemporal.erasures e
                WHERE e.erasure_id = NEW.erasure_id
                  AND e.scope = 'fact'
                  AND e.recorded_in = pg_catalog.pg_current_xact_id()
                  AND e.erased_at = NEW.erased_at
                  AND e.entity = OLD.entity
                  AND (e.attribute IS NULL OR e.attribute = OLD.attribute)
                  AND OLD.version_id = ANY (e.version_ids)) THEN
            RAISE EXCEPTION 'version % can only have its value erased, by bitemporal.erase(), which records the erasure',
                    OLD.version_id
                USING ERRCODE = 'BT006',
                      HINT = 'Erase with bitemporal.erase() or bitemporal.erase_entity() (role bitemporal_eraser).';
        END IF;
        RETURN NEW;
    END IF;

    -- UPDATE: only closing an open knowledge period, once.
    IF NOT upper_inf(OLD.known_period) THEN
        RAISE EXCEPTION 'version % is already closed (known %): committed history cannot change',
                OLD.version_id, OLD.known_period
            USING ERRCODE = 'BT006';
    END IF;
    IF (NEW.version_id, NEW.entity, NEW.attribute, NEW.source, NEW.value, NEW.valid_period,
        NEW.recorded_by, NEW.carried_from, NEW.recorded_in, NEW.erasure_id, NEW.erased_at)
       IS DISTINCT FROM
       (OLD.version_id, OLD.entity, OLD.attribute, OLD.source, OLD.value, OLD.valid_period,
        OLD.recorded_by, OLD.carried_from, OLD.recorded_in, OLD.erasure_id, OLD.erased_at)
       OR lower(NEW.known_period) IS DISTINCT FROM lower(OLD.known_period)
       OR upper_inf(NEW.known_period)
       OR upper(NEW.known_period) > pg_catalog.clock_timestamp() THEN
        RAISE EXCEPTION 'version % can only have its open knowledge period closed, at a time not later than now',
                OLD.version_id
            USING ERRCODE = 'BT006',
                  HINT = 'Write through bitemporal.record() or bitemporal.retract().';
    END IF;
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.fact_version_guard() IS
    'Trigger: refuses TRUNCATE, DELETE of committed versions and any UPDATE other than closing an open knowledge period once, or erasing a value: clearing it and naming the erasure, which the same transaction recorded in bitemporal.erasures for that version (SQLSTATE BT006).';

-- bitemporal.conflicts_now, as audit.v1.sql defines it: an erased value
-- takes no part. (bitemporal.versions, bitemporal.facts_now and
-- bitemporal.as_of keep their columns: an erased version is the one with
-- value NULL; bitemporal.history gives when and by which erasure.)
CREATE OR REPLACE VIEW bitemporal.conflicts_now AS
SELECT f.entity, f.attribute,
       jsonb_agg(DISTINCT f.value ORDER BY f.value) FILTER (WHERE f.value IS NOT NULL) AS "values",
       array_agg(DISTINCT f.source ORDER BY f.source) FILTER (WHERE f.value IS NOT NULL) AS sources,
       array_agg(f.version_id ORDER BY f.version_id) FILTER (WHERE f.value IS NOT NULL) AS version_ids
  FROM bitemporal.facts_now f
 GROUP BY f.entity, f.attribute
HAVING count(DISTINCT f.value) > 1;

-- bitemporal_internal.distinct_values, as search_path.v1.sql defines it: an
-- erased version has no value to count.
CREATE OR REPLACE FUNCTION bitemporal_internal.distinct_values(
    entity text, attribute text, valid_at timestamptz, known_at timestamptz)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value), '[]'::jsonb)
      FROM bitemporal.as_of(entity, attribute, valid_at, known_at) v
     WHERE v.value IS NOT NULL;
END;

-- bitemporal_internal.explain_version, as search_path.v1.sql defines it, and erased_at.
CREATE OR REPLACE FUNCTION bitemporal_internal.explain_version(v bitemporal.versions)
RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT pg_catalog.jsonb_build_object(
        'version_id', v.version_id,
        'source', v.source,
        'value', v.value,
        'valid_from', bitemporal_internal.iso_time(lower(v.valid_period)),
        'valid_to', bitemporal_internal.iso_time(upper(v.valid_period)),
        'known_from', bitemporal_internal.iso_time(lower(v.known_period)),
        'known_to', bitemporal_internal.iso_time(upper(v.known_period)),
        'recorded_by', v.recorded_by,
        'carried_from', v.carried_from,
        'erased_at', bitemporal_internal.iso_time(
            (SELECT w.erased_at FROM bitemporal.fact_version w
              WHERE w.version_id = v.version_id AND w.entity = v.entity)),
        'evidence', coalesce(
            (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                        'evidence_id', e.evidence_id, 'document', e.document, 'passage', e.passage)
                    ORDER BY e.evidence_id)
               FROM bitemporal.evidence e
              WHERE e.version_id IN (v.version_id, v.carried_from)),
            '[]'));
END;

-- bitemporal.resolve, as surface.v1.sql defines it, and the status erased.
CREATE OR REPLACE FUNCTION bitemporal.resolve(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL,
    present   timestamptz DEFAULT NULL)
RETURNS bitemporal.answer
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    a      bitemporal.answer;
    erased boolean;
BEGIN
    PERFORM bitemporal_internal.require_key(entity, attribute);
    a.present  := coalesce(present, pg_catalog.now());
    a.valid_at := coalesce(valid_at, a.present);
    a.known_at := coalesce(known_at, a.present);
    IF a.known_at > a.present THEN
        RAISE EXCEPTION 'knowledge time % is later than the present (%)', a.known_at, a.present
            USING ERRCODE = 'BT003',
                  HINT = 'Nobody can say today what the store will know later; ask with known_at <= present.';
    END IF;
    IF NOT (isfinite(a.valid_at) AND isfinite(a.known_at)) THEN
        RAISE EXCEPTION 'question times must be finite (valid_at %, known_at %)', a.valid_at, a.known_at
            USING ERRCODE = 'BT001';
    END IF;
    PERFORM bitemporal_internal.check_instant('valid_at', a.valid_at);
    PERFORM bitemporal_internal.check_instant('known_at', a.known_at);

    -- Erased versions stay eligible (the answer rests on them too) but have
    -- no value: the status comes from the values left, and is erased only
    -- when every eligible version is erased.
    SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value) FILTER (WHERE v.value IS NOT NULL), '[]'::jsonb),
           coalesce(array_agg(v.version_id ORDER BY v.version_id), '{}'),
           coalesce(bool_or(v.value IS NULL), false)
      INTO a."values", a.version_ids, erased
      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v;

    a.status := CASE jsonb_array_length(a."values")
                    WHEN 0 THEN CASE WHEN erased THEN 'erased' ELSE 'missing' END
                    WHEN 1 THEN 'supported'
                    ELSE 'conflict' END;
    a.value := CASE WHEN a.status = 'supported' THEN a."values" -> 0 END;
    a.interpretation := CASE
        WHEN a.status = 'missing' THEN 'missing'
        WHEN a.status = 'erased' THEN 'erased'
        WHEN a.valid_at > a.known_at THEN 'announced_future'
        WHEN a.valid_at = a.known_at AND a.known_at = a.present THEN 'current'
        WHEN a.valid_at = a.known_at THEN 'known_then'
        -- valid_at < known_at: did later knowledge change the answer for that time?
        WHEN a."values" = bitemporal_internal.distinct_values(entity, attribute, a.valid_at, a.valid_at)
            THEN 'historical'
        ELSE 'retrospective' END;
    RETURN a;
END;
$$;
COMMENT ON FUNCTION bitemporal.resolve(text, text, timestamptz, timestamptz, timestamptz) IS
    'Answers (valid_at, known_at) for a key (NULL = present, which defaults to now()): status missing / supported / conflict from the distinct eligible values that are not erased (erased when every eligible version is erased), the value when supported, the versions it rests on (erased ones included) and its interpretation (current, known_then, historical, retrospective, announced_future, missing, erased). Errors: BT003 known_at after present, BT004 unknown key.';

-- bitemporal.history, as surface.v1.sql defines it, with when each version was
-- really written and closed and its erasure: a reader, who may not read
-- bitemporal.fact_version, gets them too. A new result type, so a new function.
CREATE TYPE bitemporal.history_version AS (
    version_id    bigint,
    entity        text,
    attribute     text,
    source        text,
    value         jsonb,
    valid_period  tstzrange,
    known_period  tstzrange,
    recorded_by   text,
    carried_from  bigint,
    recorded_at   timestamptz,
    closed_at     timestamptz,
    erased_at     timestamptz,
    erasure_id    bigint);
COMMENT ON TYPE bitemporal.history_version IS
    'One row of bitemporal.history: a version with both periods, when it was really written and closed, and its erasure (value NULL, erased_at and erasure_id set).';

DROP FUNCTION bitemporal.history(text, text);
CREATE FUNCTION bitemporal.history(entity text, attribute text)
RETURNS SETOF bitemporal.history_version
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM bitemporal_internal.require_key(entity, attribute);
    RETURN QUERY
        SELECT v.version_id, v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
               v.recorded_by, v.carried_from, v.recorded_at, v.closed_at, v.erased_at, v.erasure_id
          FROM bitemporal.fact_version v
         WHERE v.entity = history.entity AND v.attribute = history.attribute
         ORDER BY v.version_id;
END;
$$;
COMMENT ON FUNCTION bitemporal.history(text, text) IS
    'Every version of a key, superseded ones included, with both periods, when it was really written and closed (recorded_at, closed_at: see bitemporal.fact_version) and its erasure (value NULL, erased_at and erasure_id set), ORDER BY version_id. Raises BT004 for a key never recorded.';

-- bitemporal.explain_sentence, as explain.v1.sql defines it, and erased.
CREATE OR REPLACE FUNCTION bitemporal.explain_sentence(explanation jsonb)
RETURNS text
LANGUAGE sql STABLE
RETURN pg_catalog.format('%s/%s for %s, as known on %s: %s (%s)',
           explanation ->> 'entity', explanation ->> 'attribute',
           bitemporal_internal.human_time((explanation ->> 'valid_at')::timestamptz),
           bitemporal_internal.human_time((explanation ->> 'known_at')::timestamptz),
           CASE explanation ->> 'status'
               WHEN 'supported' THEN bitemporal_internal.human_value(explanation -> 'value')
               WHEN 'missing' THEN 'unknown'
               WHEN 'erased' THEN 'no value'
               ELSE (SELECT pg_catalog.string_agg(bitemporal_internal.human_value(x.alt -> 'value'), ' or ' ORDER BY x.n)
                       FROM pg_catalog.jsonb_array_elements(explanation -> 'alternatives') WITH ORDINALITY AS x(alt, n))
           END,
           explanation ->> 'status')
       || coalesce((SELECT pg_catalog.string_agg('; ' || (q.item ->> 'text'), '' ORDER BY q.n)
                      FROM pg_catalog.jsonb_array_elements(explanation -> 'qualifications') WITH ORDINALITY AS q(item, n)), '')
       || '.';
COMMENT ON FUNCTION bitemporal.explain_sentence(jsonb) IS
    'One plain sentence for an answer object of bitemporal.explain, keeping every qualification: "<entity>/<attribute> for <valid_at>, as known on <known_at>: <answer> (<status>); <qualification>; ...".';

-- bitemporal.stale, as search_path.v1.sql defines it, and the cause erased:
-- an input version erased by the time asked (before any other cause). The
-- new enum label is spelt as text and cast when the function runs: this
-- transaction adds it, and may not use it.
CREATE OR REPLACE FUNCTION bitemporal.stale(known_at timestamptz DEFAULT NULL)
RETURNS SETOF bitemporal.stale_input
LANGUAGE sql STABLE
BEGIN ATOMIC
    WITH RECURSIVE
    asked AS (
        SELECT coalesce(stale.known_at, pg_catalog.now()) AS t
    ),
    live AS (
        SELECT a.* FROM bitemporal.artifact a, asked
         WHERE a.derived_at <= asked.t AND (a.retired_at IS NULL OR a.retired_at > asked.t)
    ),
    reach (root, node) AS (
        SELECT l.artifact_id, l.artifact_id FROM live l
        UNION
        SELECT r.root, i.input_artifact
          FROM reach r JOIN bitemporal.artifact_input i ON i.artifact_id = r.node
         WHERE i.input_artifact IS NOT NULL
    ),
    causes AS (
        SELECT r.root, r.node,
               (CASE WHEN v.version_id IS NULL THEN 'discarded'
                     WHEN v.erased_at <= asked.t THEN 'erased'
                     WHEN pg_catalog.cardinality(s.by_ids) > 0 THEN 'superseded'
                     ELSE 'retracted' END)::text::bitemporal.stale_cause AS cause,
               CASE WHEN v.erased_at <= asked.t THEN v.erased_at ELSE upper(v.known_period) END AS changed_at,
               i.input_version AS version_id,
               v.entity, v.attribute, v.source, v.value, NULL::bigint AS input_artifact,
               CASE WHEN v.erased_at <= asked.t THEN '{}'::bigint[] ELSE s.by_ids END AS by_ids
          FROM reach r
          JOIN bitemporal.artifact_input i ON i.artifact_id = r.node AND i.input_version IS NOT NULL
          LEFT JOIN bitemporal.fact_version v ON v.version_id = i.input_version
          CROSS JOIN asked
          CROSS JOIN LATERAL (
                SELECT bitemporal_internal.superseding_versions(v.entity, v.attribute, v.source,
                                                       v.valid_period, upper(v.known_period)) AS by_ids) s
         WHERE v.version_id IS NULL
            OR v.erased_at <= asked.t
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
    firsts AS (
        SELECT DISTINCT ON (c.root, c.version_id, c.input_artifact) c.*
          FROM causes c
         ORDER BY c.root, c.version_id, c.input_artifact, (c.node = c.root) DESC, c.node
    )
    SELECT f.root, l.kind, l.ref, l.derived_at, f.cause, f.changed_at, f.version_id,
           f.entity, f.attribute, f.source, f.value, f.input_artifact, f.node, f.by_ids,
           CASE f.cause::text
               WHEN 'erased' THEN pg_catalog.format(
                   'version %s (%s/%s, source %s) erased on %s',
                   f.version_id, f.entity, f.attribute, f.source,
                   bitemporal_internal.human_time(f.changed_at))
               WHEN 'superseded' THEN pg_catalog.format(
                   'version %s (%s/%s, source %s: %s) superseded on %s by %s',
                   f.version_id, f.entity, f.attribute, f.source, bitemporal_internal.human_value(f.value),
                   bitemporal_internal.human_time(f.changed_at),
                   (SELECT pg_catalog.string_agg(pg_catalog.format('version %s (%s)', w.version_id,
                                                                   coalesce(bitemporal_internal.human_value(w.value), 'erased')),
                                                 ', ' ORDER BY w.version_id)
                      FROM bitemporal.fact_version w WHERE w.version_id = ANY (f.by_ids)))
               WHEN 'retracted' THEN pg_catalog.format(
                   'version %s (%s/%s, source %s: %s) retracted on %s',
                   f.version_id, f.entity, f.attribute, f.source, bitemporal_internal.human_value(f.value),
                   bitemporal_internal.human_time(f.changed_at))
               WHEN 'discarded' THEN pg_catalog.format(
                   'version %s no longer exists: it was replaced inside the transaction that recorded it',
                   f.version_id)
               ELSE pg_catalog.format(
                   'input artifact %s (%s %s) retired on %s',
                   f.input_artifact, ia.kind, ia.ref, bitemporal_internal.human_time(f.changed_at))
           END
           || CASE WHEN f.node <> f.root
                   THEN pg_catalog.format(', through artifact %s (%s %s)', f.node, via.kind, via.ref)
                   ELSE '' END
      FROM firsts f
      JOIN live l ON l.artifact_id = f.root
      JOIN bitemporal.artifact via ON via.artifact_id = f.node
      LEFT JOIN bitemporal.artifact ia ON ia.artifact_id = f.input_artifact
     ORDER BY f.root, f.changed_at NULLS FIRST, f.version_id, f.input_artifact;
END;
COMMENT ON FUNCTION bitemporal.stale(timestamptz) IS
    'The invalidation list at known_at (default now): every artifact derived by then and not retired whose inputs, directly or through other artifacts (a recursive walk), include a version erased, superseded, retracted or discarded by then, or an artifact retired by then. One row per stale artifact and cause, with the reason; ORDER BY artifact_id, changed_at.';

-- The erasure itself: of every version of the key(s), or (only_versions, for
-- retention, retention.v1.sql) of the listed ones, with the policy recorded.
CREATE FUNCTION bitemporal_internal.erase_versions(
    entity text, attribute text, reason text, only_versions bigint[] DEFAULT NULL, policy text DEFAULT NULL)
RETURNS SETOF bitemporal.erasures
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ids bigint[];
    e   bitemporal.erasures;
    id  bigint;
BEGIN
    PERFORM bitemporal_internal.check_key_part('entity', entity);
    IF attribute IS NOT NULL THEN
        PERFORM bitemporal_internal.check_key_part('attribute', attribute);
    END IF;
    IF reason IS NULL OR pg_catalog.btrim(reason) = '' THEN
        RAISE EXCEPTION 'an erasure needs a reason'
            USING ERRCODE = 'BT009',
                  HINT = 'Say why: the request or the legal ground; the reason stays in bitemporal.erasures.';
    END IF;
    -- The keys' row locks, as the write functions take them (an entity's keys
    -- in attribute order): a write to the key in flight finishes first, and
    -- the versions read below include it; a later write waits for this one.
    PERFORM FROM bitemporal.fact_key k
      WHERE k.entity = entity AND (attribute IS NULL OR k.attribute = attribute)
      ORDER BY k.attribute
        FOR UPDATE;
    IF NOT FOUND THEN
        IF attribute IS NULL THEN
            RAISE EXCEPTION 'unknown entity %: nothing was ever recorded for it', entity
                USING ERRCODE = 'BT004',
                      HINT = 'Check the spelling of the entity.';
        END IF;
        RAISE EXCEPTION 'unknown key (%, %): nothing was ever recorded for it', entity, attribute
            USING ERRCODE = 'BT004',
                  HINT = 'Check the spelling of entity and attribute.';
    END IF;

    SELECT coalesce(pg_catalog.array_agg(v.version_id ORDER BY v.version_id), '{}') INTO ids
      FROM bitemporal.fact_version v
     WHERE v.entity = entity AND (attribute IS NULL OR v.attribute = attribute)
       AND (only_versions IS NULL OR v.version_id = ANY (only_versions))
       AND v.erasure_id IS NULL;
    IF pg_catalog.cardinality(ids) = 0 THEN
        RETURN;  -- already erased: nothing new to record
    END IF;

    INSERT INTO bitemporal.erasures (scope, entity, attribute, reason, version_ids, policy)
    VALUES ('fact', entity, attribute, reason, ids, policy)
    RETURNING * INTO e;
    UPDATE bitemporal.fact_version v
       SET value = NULL, erasure_id = e.erasure_id, erased_at = e.erased_at
     WHERE v.entity = entity AND v.version_id = ANY (ids);
    -- Passages quote the value; their embeddings go with them (ON DELETE CASCADE).
    DELETE FROM bitemporal.evidence x WHERE x.version_id = ANY (ids);
    -- The idempotency records of the key(s); of some versions, those of the
    -- requests that wrote them.
    UPDATE bitemporal.fact_request r SET value = NULL
     WHERE r.entity = entity AND (attribute IS NULL OR r.attribute = attribute) AND r.value IS NOT NULL
       AND (only_versions IS NULL OR (r.result ->> 'version_id')::bigint = ANY (ids));
    FOREACH id IN ARRAY ids LOOP
        PERFORM pg_catalog.pg_notify(
            bitemporal_internal.invalidation_channel(),
            pg_catalog.jsonb_build_object(
                'version_id', id, 'change', 'erased',
                'known_at', bitemporal_internal.iso_time(e.erased_at), 'by', '[]'::jsonb)::text);
    END LOOP;
    RETURN NEXT e;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.erase_versions(text, text, text, bigint[], text) IS
    'Erases the values of the versions of (entity, attribute), or of every attribute of entity when attribute is NULL, not yet erased (with only_versions, only those listed: bitemporal.apply_retention, which passes its policy): records the erasure (with the policy), clears the values, deletes their evidence and the idempotency values of the keys (with only_versions, of the requests that wrote those versions), and announces each version on bitemporal_invalidation. Returns the erasure, or no row when nothing was left to erase. Takes the keys'' locks. Errors: BT004, BT005, BT009.';

CREATE FUNCTION bitemporal.erase(entity text, attribute text, reason text)
RETURNS SETOF bitemporal.erasures
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
BEGIN
    -- An entity-wide erasure is asked for by name (erase_entity), never by a NULL.
    PERFORM bitemporal_internal.check_key_part('attribute', attribute);
    RETURN QUERY SELECT * FROM bitemporal_internal.erase_versions(entity, attribute, reason);
END;
$$;
REVOKE ALL ON FUNCTION bitemporal.erase(text, text, text) FROM PUBLIC;
COMMENT ON FUNCTION bitemporal.erase(text, text, text) IS
    'Erases the value of every version of a key (GDPR art. 17): the versions keep their ids, sources and periods, their values become NULL, their evidence is deleted, and the erasure (key, versions, reason, session_user, time) is recorded in bitemporal.erasures. Returns the erasure, or no row if every version was already erased (idempotent). Serialises with writers of the key. Only for the role bitemporal_eraser. Errors: BT004 unknown key, BT005 malformed key, BT009 blank reason.';

CREATE FUNCTION bitemporal.erase_entity(entity text, reason text)
RETURNS SETOF bitemporal.erasures
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
BEGIN
    RETURN QUERY SELECT * FROM bitemporal_internal.erase_versions(entity, NULL, reason);
END;
$$;
REVOKE ALL ON FUNCTION bitemporal.erase_entity(text, text) FROM PUBLIC;
COMMENT ON FUNCTION bitemporal.erase_entity(text, text) IS
    'Erases the value of every version of every attribute of an entity, as bitemporal.erase does for one key, in one erasure (attribute NULL). Returns the erasure, or no row if nothing was left to erase. Only for the role bitemporal_eraser. Errors: BT004 unknown entity, BT005 malformed entity, BT009 blank reason.';

-- bitemporal.grant_roles and revoke_roles, as surface.v1.sql defines them,
-- and a fourth role: the eraser, which alone may call the functions named
-- erase* (SECURITY DEFINER like the write functions, which the writer gets).
DROP FUNCTION bitemporal.grant_roles(text, text, text);
DROP FUNCTION bitemporal.revoke_roles(text, text, text);

CREATE FUNCTION bitemporal.grant_roles(
    reader  text DEFAULT 'bitemporal_reader',
    writer  text DEFAULT 'bitemporal_writer',
    auditor text DEFAULT 'bitemporal_auditor',
    eraser  text DEFAULT 'bitemporal_eraser')
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    role_name  text;
    may_create boolean;
    granted    text[] := '{}';
    obj        record;
BEGIN
    SELECT r.rolcreaterole OR r.rolsuper INTO may_create FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
    FOREACH role_name IN ARRAY ARRAY[reader, writer, auditor, eraser] LOOP
        CONTINUE WHEN role_name IS NULL;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = role_name) THEN
            IF NOT may_create THEN
                RAISE NOTICE 'role % does not exist and % may not create it; skipped (grant to existing roles with bitemporal.grant_roles(reader, writer, auditor, eraser))',
                    role_name, current_user;
                CONTINUE;
            END IF;
            EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
        END IF;
        EXECUTE format('GRANT USAGE ON SCHEMA bitemporal TO %I', role_name);
        granted := granted || role_name;
    END LOOP;

    IF reader = ANY (granted) THEN
        FOR obj IN
            SELECT c.oid::regclass AS rel FROM pg_catalog.pg_class c
             WHERE c.relnamespace = 'bitemporal'::regnamespace AND c.relkind IN ('r', 'v', 'p')
               AND c.relname NOT IN ('memory_log', 'fact_request', 'erasures', 'alembic_version')
        LOOP
            EXECUTE format('GRANT SELECT ON %s TO %I', obj.rel, reader);
        END LOOP;
    END IF;
    IF writer = ANY (granted) THEN
        FOR obj IN
            SELECT p.oid::regprocedure AS fn FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = 'bitemporal'::regnamespace AND p.prosecdef
               AND p.proname NOT LIKE 'erase%'
        LOOP
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', obj.fn, writer);
        END LOOP;
    END IF;
    IF auditor = ANY (granted) THEN
        EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA bitemporal TO %I', auditor);
    END IF;
    IF eraser = ANY (granted) THEN
        FOR obj IN
            SELECT p.oid::regprocedure AS fn FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = 'bitemporal'::regnamespace AND p.prosecdef
               AND p.proname LIKE 'erase%'
        LOOP
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', obj.fn, eraser);
        END LOOP;
        EXECUTE format('GRANT SELECT ON bitemporal.erasures TO %I', eraser);
    END IF;
    RETURN granted;
END;
$$;
COMMENT ON FUNCTION bitemporal.grant_roles(text, text, text, text) IS
    'Creates the reader, writer, auditor and eraser roles if missing (and allowed) and grants them their privileges (the eraser: EXECUTE on the erase functions, which no other role gets, and SELECT on bitemporal.erasures); pass existing role names to grant to those instead, NULL to skip one. Idempotent. Returns the roles granted to.';

CREATE FUNCTION bitemporal.revoke_roles(
    reader  text DEFAULT 'bitemporal_reader',
    writer  text DEFAULT 'bitemporal_writer',
    auditor text DEFAULT 'bitemporal_auditor',
    eraser  text DEFAULT 'bitemporal_eraser')
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY[reader, writer, auditor, eraser] LOOP
        CONTINUE WHEN role_name IS NULL
                   OR NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = role_name);
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA bitemporal FROM %I', role_name);
        EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA bitemporal FROM %I', role_name);
        EXECUTE format('REVOKE ALL ON SCHEMA bitemporal FROM %I', role_name);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION bitemporal.revoke_roles(text, text, text, text) IS
    'Revokes what bitemporal.grant_roles granted (the roles themselves stay: they are cluster-wide and may serve other databases).';

-- bitemporal.explain, as surface.v1.sql defines it, and the status erased:
-- alternatives and sources leave erased versions out; an erased answer says when.
CREATE OR REPLACE FUNCTION bitemporal.explain(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL,
    present   timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    a            bitemporal.answer;
    versions     jsonb;
    sources      jsonb;
    alternatives jsonb;
    quals        jsonb := '[]';
    run          tstzrange;
    since        timestamptz;
    changed      timestamptz;
    vals         jsonb;
    latest       timestamptz;
    prev_end     timestamptz;
    next_start   timestamptz;
    t            text;
    erased_on    timestamptz;
BEGIN
    a := bitemporal.resolve(entity, attribute, valid_at, known_at, present);

    -- Every eligible version (an erased one without its value); the sources
    -- of those the status rests on: the versions not erased, or, for the
    -- status erased, the erased ones.
    SELECT coalesce(pg_catalog.jsonb_agg(bitemporal_internal.explain_version(v) ORDER BY v.version_id), '[]'),
           coalesce(pg_catalog.jsonb_agg(DISTINCT v.source ORDER BY v.source)
                        FILTER (WHERE (v.value IS NULL) = (a.status = 'erased')), '[]')
      INTO versions, sources
      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v;

    SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'value', x.value,
               'valid_from', bitemporal_internal.iso_time(lower(x.run)),
               'valid_to', bitemporal_internal.iso_time(upper(x.run)),
               'sources', x.sources,
               'version_ids', x.ids) ORDER BY x.value), '[]')
      INTO alternatives
      FROM (SELECT g.value, g.sources, g.ids,
                   bitemporal_internal.value_run(entity, attribute, g.value, a.valid_at, a.known_at) AS run
              FROM (SELECT v.value,
                           pg_catalog.jsonb_agg(DISTINCT v.source ORDER BY v.source) AS sources,
                           pg_catalog.jsonb_agg(v.version_id ORDER BY v.version_id) AS ids
                      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v
                     WHERE v.value IS NOT NULL
                     GROUP BY v.value) g) x;

    -- The knowledge snapshot: the latest change to the key the store knew by known_at.
    SELECT max(greatest(lower(v.known_period),
                        CASE WHEN upper(v.known_period) <= a.known_at THEN upper(v.known_period) END))
      INTO latest
      FROM bitemporal.fact_version v
     WHERE v.entity = entity AND v.attribute = attribute AND lower(v.known_period) <= a.known_at;

    IF a.status = 'missing' THEN
        SELECT max(upper(v.valid_period)) INTO prev_end
          FROM bitemporal.fact_version v
         WHERE v.entity = entity AND v.attribute = attribute
           AND v.known_period @> a.known_at AND upper(v.valid_period) <= a.valid_at;
        SELECT min(lower(v.valid_period)) INTO next_start
          FROM bitemporal.fact_version v
         WHERE v.entity = entity AND v.attribute = attribute
           AND v.known_period @> a.known_at AND lower(v.valid_period) > a.valid_at;
        t := pg_catalog.format('nothing recorded for %s: unknown, not zero', bitemporal_internal.human_time(a.valid_at));
        IF prev_end IS NOT NULL OR next_start IS NOT NULL THEN
            t := t || ' (' || pg_catalog.concat_ws(' and ',
                     'the last recorded value applied until ' || bitemporal_internal.human_time(prev_end),
                     'values are recorded from ' || bitemporal_internal.human_time(next_start)) || ')';
        END IF;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'unknown', 'text', t,
            'recorded_until', bitemporal_internal.iso_time(prev_end),
            'recorded_from', bitemporal_internal.iso_time(next_start)));

    ELSIF a.status = 'conflict' THEN
        SELECT 'sources disagree, none is preferred: ' || pg_catalog.string_agg(pg_catalog.format('%s says %s (%s)',
                   (SELECT pg_catalog.string_agg(s, ' and ' ORDER BY n)
                      FROM pg_catalog.jsonb_array_elements_text(x.alt -> 'sources') WITH ORDINALITY AS y(s, n)),
                   bitemporal_internal.human_value(x.alt -> 'value'),
                   bitemporal_internal.human_period(pg_catalog.tstzrange((x.alt ->> 'valid_from')::timestamptz,
                                                               (x.alt ->> 'valid_to')::timestamptz, '[)'))),
                   ', ' ORDER BY x.n)
          INTO t
          FROM pg_catalog.jsonb_array_elements(alternatives) WITH ORDINALITY AS x(alt, n);
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'conflict', 'text', t, 'values', a."values", 'sources', sources));

    ELSIF a.status = 'erased' THEN
        SELECT max(w.erased_at) INTO erased_on
          FROM bitemporal.fact_version w
         WHERE w.entity = entity AND w.attribute = attribute AND w.version_id = ANY (a.version_ids);
        t := pg_catalog.format('erased on %s: a value was recorded for %s and has been erased; what it was is not kept',
                 bitemporal_internal.human_time(erased_on), bitemporal_internal.human_time(a.valid_at));
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'erased', 'text', t, 'erased_on', bitemporal_internal.iso_time(erased_on)));

    ELSE
        run := bitemporal_internal.value_run(entity, attribute, a.value, a.valid_at, a.known_at);
        IF lower(run) > a.known_at THEN
            since := bitemporal_internal.answer_since(entity, attribute, a.valid_at, a.known_at);
            t := pg_catalog.format('announced, in force %s (not yet in force on %s; recorded on %s)',
                     bitemporal_internal.human_period(run), bitemporal_internal.human_time(a.known_at),
                     bitemporal_internal.human_time(since));
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'announced', 'text', t,
                'valid_from', bitemporal_internal.iso_time(lower(run)), 'valid_to', bitemporal_internal.iso_time(upper(run)),
                'recorded_on', bitemporal_internal.iso_time(since)));
        ELSE
            t := CASE WHEN upper(run) <= a.known_at THEN 'applied ' ELSE 'in force ' END
                 || bitemporal_internal.human_period(run);
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'effective', 'text', t,
                'valid_from', bitemporal_internal.iso_time(lower(run)), 'valid_to', bitemporal_internal.iso_time(upper(run))));
        END IF;

        IF NOT upper_inf(run) THEN
            vals := bitemporal_internal.distinct_values(entity, attribute, upper(run), a.known_at);
            t := CASE pg_catalog.jsonb_array_length(vals)
                     WHEN 0 THEN pg_catalog.format('nothing recorded from %s', bitemporal_internal.human_time(upper(run)))
                     WHEN 1 THEN pg_catalog.format('followed by %s from %s', bitemporal_internal.human_values(vals),
                                                   bitemporal_internal.human_time(upper(run)))
                     ELSE pg_catalog.format('followed by %s (sources disagree) from %s',
                                            bitemporal_internal.human_values(vals), bitemporal_internal.human_time(upper(run)))
                 END;
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'followed_by', 'text', t,
                'from', bitemporal_internal.iso_time(upper(run)), 'values', vals));
        END IF;

        IF a.valid_at > a.known_at AND NOT coalesce(lower(run) > a.known_at, false) THEN
            t := pg_catalog.format('projected: as known on %s, nothing recorded changes it before %s',
                     bitemporal_internal.human_time(a.known_at), bitemporal_internal.human_time(a.valid_at));
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'projected', 'text', t));
        END IF;
    END IF;

    IF a.interpretation = 'retrospective' THEN
        vals := bitemporal_internal.distinct_values(entity, attribute, a.valid_at, a.valid_at);
        since := bitemporal_internal.answer_since(entity, attribute, a.valid_at, a.known_at);
        t := CASE WHEN pg_catalog.jsonb_array_length(vals) = 0
                  THEN pg_catalog.format('learned later, on %s: on %s the store had nothing recorded for that time',
                           bitemporal_internal.human_time(since), bitemporal_internal.human_time(a.valid_at))
                  ELSE pg_catalog.format('corrected on %s: on %s the store said %s',
                           bitemporal_internal.human_time(since), bitemporal_internal.human_time(a.valid_at),
                           bitemporal_internal.human_values(vals)) END;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'corrected', 'text', t,
            'corrected_on', bitemporal_internal.iso_time(since), 'then_values', vals));
    END IF;

    IF a.known_at < a.present THEN
        changed := bitemporal_internal.answer_corrected(entity, attribute, a.valid_at, a.known_at, a.present);
        vals := bitemporal_internal.distinct_values(entity, attribute, a.valid_at, a.present);
        t := pg_catalog.format('as recorded on %s', bitemporal_internal.human_time(a.known_at))
             || CASE WHEN changed IS NULL
                     THEN pg_catalog.format(', unchanged as of %s', bitemporal_internal.human_time(a.present))
                     ELSE pg_catalog.format('; corrected on %s (as of %s: %s)',
                              bitemporal_internal.human_time(changed), bitemporal_internal.human_time(a.present),
                              CASE WHEN pg_catalog.jsonb_array_length(vals) = 0 THEN 'nothing recorded'
                                   ELSE bitemporal_internal.human_values(vals) END) END;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'as_recorded', 'text', t,
            'recorded_on', bitemporal_internal.iso_time(a.known_at),
            'corrected_on', bitemporal_internal.iso_time(changed), 'now_values', vals));
    END IF;

    IF a.status = 'supported' THEN
        t := CASE WHEN pg_catalog.jsonb_array_length(sources) = 1 THEN 'source: ' || (sources ->> 0)
                  ELSE 'sources: ' || (SELECT pg_catalog.string_agg(s, ', ' ORDER BY n)
                                         FROM pg_catalog.jsonb_array_elements_text(sources) WITH ORDINALITY AS y(s, n))
                       || ' (they agree, which is not certification)' END;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'source', 'text', t, 'sources', sources));
    END IF;

    RETURN pg_catalog.jsonb_build_object(
        'entity', entity,
        'attribute', attribute,
        'status', a.status,
        'interpretation', a.interpretation,
        'value', a.value,
        'alternatives', alternatives,
        'valid_at', bitemporal_internal.iso_time(a.valid_at),
        'known_at', bitemporal_internal.iso_time(a.known_at),
        'now', bitemporal_internal.iso_time(a.present),
        'snapshot', pg_catalog.jsonb_build_object(
            'known_at', bitemporal_internal.iso_time(a.known_at),
            'latest_change', bitemporal_internal.iso_time(latest)),
        'sources', sources,
        'versions', versions,
        'qualifications', quals,
        'status_note', CASE a.status
            WHEN 'supported' THEN 'supported means the available sources agree on this value; it does not certify that the value is true, and copies of one source are not independent confirmation'
            WHEN 'missing' THEN 'missing means nothing eligible is recorded: unknown, which is not zero, false or "does not apply"'
            WHEN 'erased' THEN 'erased means a value was recorded here and has been erased (bitemporal.erasures): the store knew and was made to forget; it is not missing, and not zero'
            ELSE 'conflict means the sources disagree: the values are never averaged and never settled by which was recorded later'
        END);
END;
$$;
COMMENT ON FUNCTION bitemporal.explain(text, text, timestamptz, timestamptz, timestamptz) IS
    'The answer object for an agent, as jsonb: the answer of bitemporal.resolve (NULL times = present, default now()) with its alternatives, every eligible version with source, periods and evidence, the question, the knowledge snapshot, explicit qualifications (unknown, erased, conflict, announced, effective, followed_by, projected, corrected, as_recorded, source) and a note on what the status means. Render it with bitemporal.explain_sentence. Errors as bitemporal.resolve: BT001, BT003, BT004, BT005.';

