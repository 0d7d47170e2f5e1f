-- bitemporal: the answer object for an agent (version 1).
--
-- bitemporal.explain answers (valid_at, known_at) like bitemporal.resolve and
-- returns everything a model needs to repeat the answer without distorting
-- it, as one jsonb object:
--   entity, attribute, status, interpretation, value (when supported, else
--   null), alternatives (per distinct value: the value, the uninterrupted
--   valid period around valid_at over which the store holds it, its sources
--   and versions), valid_at, known_at, now (the question and the present it
--   is read against), snapshot (the knowledge time used and the latest change
--   to the key known by then), sources, versions (every eligible version
--   with source, both periods and its evidence passages), qualifications
--   (each a code, a text and its data), status_note.
-- Qualifications, in this order, each only where it applies:
--   unknown      missing: "nothing recorded for <valid_at>: unknown, not zero"
--   conflict     "sources disagree, none is preferred: <source> says <value> (<period>), ..."
--   announced    valid period starts after known_at:
--                "announced, in force from <start> (not yet in force on <known_at>; recorded on <t>)"
--   effective    "in force from <start> [until <end>]", or "applied from ... until ..."
--                when the period ended by known_at
--   followed_by  the period ends: "followed by <value> from <end>" or "nothing recorded from <end>"
--   projected    valid_at later than known_at for a value already in force:
--                "projected: as known on <known_at>, nothing recorded changes it before <valid_at>"
--   corrected    retrospective: "corrected on <t>: on <valid_at> the store said <old>"
--   as_recorded  known_at earlier than now: "as recorded on <known_at>; corrected on <t> (as of <now>: <value>)"
--                or "as recorded on <known_at>, unchanged as of <now>"
--   source       supported: "source: <source>" or "sources: a, b (they agree, which is not certification)"
-- bitemporal.explain_sentence renders the object as one plain sentence that
-- keeps every qualification; the Python package renders it identically.

CREATE FUNCTION bitemporal.explain_version(v bitemporal.versions)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'version_id', v.version_id,
        'source', v.source,
        'value', v.value,
        'valid_from', bitemporal.iso_time(lower(v.valid_period)),
        'valid_to', bitemporal.iso_time(upper(v.valid_period)),
        'known_from', bitemporal.iso_time(lower(v.known_period)),
        'known_to', bitemporal.iso_time(upper(v.known_period)),
        'recorded_by', v.recorded_by,
        'carried_from', v.carried_from,
        'evidence', coalesce(
            (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                        'evidence_id', e.evidence_id, 'document', e.document, 'passage', e.passage)
                    ORDER BY e.evidence_id)
               FROM bitemporal.evidence e
              WHERE e.version_id IN (v.version_id, v.carried_from)),
            '[]'))
$$;
COMMENT ON FUNCTION bitemporal.explain_version(bitemporal.versions) IS
    'A version as JSON for bitemporal.explain: id, source, value, both periods as ISO times (null = open), recorded_by, carried_from and its evidence passages.';

CREATE FUNCTION bitemporal.knowledge_edges(entity text, attribute text, valid_at timestamptz)
RETURNS SETOF timestamptz
LANGUAGE sql STABLE
AS $$
    SELECT DISTINCT b.t
      FROM bitemporal.fact_version v
     CROSS JOIN LATERAL (VALUES (lower(v.known_period)), (upper(v.known_period))) AS b(t)
     WHERE v.entity = knowledge_edges.entity AND v.attribute = knowledge_edges.attribute
       AND v.valid_period @> knowledge_edges.valid_at AND b.t IS NOT NULL
     ORDER BY b.t
$$;
COMMENT ON FUNCTION bitemporal.knowledge_edges(text, text, timestamptz) IS
    'The knowledge times at which the answer for (entity, attribute) at valid_at can change: the bounds of the known periods of the versions valid then.';

CREATE FUNCTION bitemporal.answer_since(entity text, attribute text, valid_at timestamptz, known_at timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    answer jsonb := bitemporal.distinct_values(entity, attribute, valid_at, known_at);
    since  timestamptz;
    t      timestamptz;
BEGIN
    FOR t IN SELECT e FROM bitemporal.knowledge_edges(entity, attribute, valid_at) e
              WHERE e <= known_at ORDER BY e DESC
    LOOP
        EXIT WHEN bitemporal.distinct_values(entity, attribute, valid_at, t) <> answer;
        since := t;
    END LOOP;
    RETURN since;
END;
$$;
COMMENT ON FUNCTION bitemporal.answer_since(text, text, timestamptz, timestamptz) IS
    'Since when (knowledge time) the store has given, up to known_at, the answer it gives at known_at for (entity, attribute) at valid_at; NULL if it never gave another.';

CREATE FUNCTION bitemporal.answer_corrected(
    entity text, attribute text, valid_at timestamptz, known_at timestamptz, present timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    answer jsonb := bitemporal.distinct_values(entity, attribute, valid_at, known_at);
    t      timestamptz;
BEGIN
    FOR t IN SELECT e FROM bitemporal.knowledge_edges(entity, attribute, valid_at) e
              WHERE e > known_at AND e <= present ORDER BY e
    LOOP
        IF bitemporal.distinct_values(entity, attribute, valid_at, t) <> answer THEN
            RETURN t;
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal.answer_corrected(text, text, timestamptz, timestamptz, timestamptz) IS
    'The first knowledge time after known_at, up to present, at which the answer for (entity, attribute) at valid_at changed; NULL if it did not.';

CREATE FUNCTION bitemporal.value_run(
    entity text, attribute text, value jsonb, valid_at timestamptz, known_at timestamptz)
RETURNS tstzrange
LANGUAGE sql STABLE
AS $$
    SELECT r
      FROM unnest((SELECT pg_catalog.range_agg(v.valid_period)
                     FROM bitemporal.fact_version v
                    WHERE v.entity = value_run.entity AND v.attribute = value_run.attribute
                      AND v.known_period @> value_run.known_at AND v.value = value_run.value)) AS r
     WHERE r @> value_run.valid_at
$$;
COMMENT ON FUNCTION bitemporal.value_run(text, text, jsonb, timestamptz, timestamptz) IS
    'The uninterrupted valid period around valid_at over which, as known at known_at, some source holds value for (entity, attribute): adjacent versions and remainders are merged.';

CREATE FUNCTION bitemporal.explain(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL,
    present   timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
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
BEGIN
    a := bitemporal.resolve(entity, attribute, valid_at, known_at, present);

    SELECT coalesce(pg_catalog.jsonb_agg(bitemporal.explain_version(v) ORDER BY v.version_id), '[]'),
           coalesce(pg_catalog.jsonb_agg(DISTINCT v.source ORDER BY v.source), '[]')
      INTO versions, sources
      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v;

    SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'value', x.value,
               'valid_from', bitemporal.iso_time(lower(x.run)),
               'valid_to', bitemporal.iso_time(upper(x.run)),
               'sources', x.sources,
               'version_ids', x.ids) ORDER BY x.value), '[]')
      INTO alternatives
      FROM (SELECT g.value, g.sources, g.ids,
                   bitemporal.value_run(entity, attribute, g.value, a.valid_at, a.known_at) AS run
              FROM (SELECT v.value,
                           pg_catalog.jsonb_agg(DISTINCT v.source ORDER BY v.source) AS sources,
                           pg_catalog.jsonb_agg(v.version_id ORDER BY v.version_id) AS ids
                      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v
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
        t := pg_catalog.format('nothing recorded for %s: unknown, not zero', bitemporal.human_time(a.valid_at));
        IF prev_end IS NOT NULL OR next_start IS NOT NULL THEN
            t := t || ' (' || pg_catalog.concat_ws(' and ',
                     'the last recorded value applied until ' || bitemporal.human_time(prev_end),
                     'values are recorded from ' || bitemporal.human_time(next_start)) || ')';
        END IF;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'unknown', 'text', t,
            'recorded_until', bitemporal.iso_time(prev_end),
            'recorded_from', bitemporal.iso_time(next_start)));

    ELSIF a.status = 'conflict' THEN
        SELECT 'sources disagree, none is preferred: ' || pg_catalog.string_agg(pg_catalog.format('%s says %s (%s)',
                   (SELECT pg_catalog.string_agg(s, ' and ' ORDER BY n)
                      FROM pg_catalog.jsonb_array_elements_text(x.alt -> 'sources') WITH ORDINALITY AS y(s, n)),
                   bitemporal.human_value(x.alt -> 'value'),
                   bitemporal.human_period(pg_catalog.tstzrange((x.alt ->> 'valid_from')::timestamptz,
                                                               (x.alt ->> 'valid_to')::timestamptz, '[)'))),
                   ', ' ORDER BY x.n)
          INTO t
          FROM pg_catalog.jsonb_array_elements(alternatives) WITH ORDINALITY AS x(alt, n);
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'conflict', 'text', t, 'values', a."values", 'sources', sources));

    ELSE
        run := bitemporal.value_run(entity, attribute, a.value, a.valid_at, a.known_at);
        IF lower(run) > a.known_at THEN
            since := bitemporal.answer_since(entity, attribute, a.valid_at, a.known_at);
            t := pg_catalog.format('announced, in force %s (not yet in force on %s; recorded on %s)',
                     bitemporal.human_period(run), bitemporal.human_time(a.known_at),
                     bitemporal.human_time(since));
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'announced', 'text', t,
                'valid_from', bitemporal.iso_time(lower(run)), 'valid_to', bitemporal.iso_time(upper(run)),
                'recorded_on', bitemporal.iso_time(since)));
        ELSE
            t := CASE WHEN upper(run) <= a.known_at THEN 'applied ' ELSE 'in force ' END
                 || bitemporal.human_period(run);
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'effective', 'text', t,
                'valid_from', bitemporal.iso_time(lower(run)), 'valid_to', bitemporal.iso_time(upper(run))));
        END IF;

        IF NOT upper_inf(run) THEN
            vals := bitemporal.distinct_values(entity, attribute, upper(run), a.known_at);
            t := CASE pg_catalog.jsonb_array_length(vals)
                     WHEN 0 THEN pg_catalog.format('nothing recorded from %s', bitemporal.human_time(upper(run)))
                     WHEN 1 THEN pg_catalog.format('followed by %s from %s', bitemporal.human_values(vals),
                                                   bitemporal.human_time(upper(run)))
                     ELSE pg_catalog.format('followed by %s (sources disagree) from %s',
                                            bitemporal.human_values(vals), bitemporal.human_time(upper(run)))
                 END;
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'followed_by', 'text', t,
                'from', bitemporal.iso_time(upper(run)), 'values', vals));
        END IF;

        IF a.valid_at > a.known_at AND NOT coalesce(lower(run) > a.known_at, false) THEN
            t := pg_catalog.format('projected: as known on %s, nothing recorded changes it before %s',
                     bitemporal.human_time(a.known_at), bitemporal.human_time(a.valid_at));
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'projected', 'text', t));
        END IF;
    END IF;

    IF a.interpretation = 'retrospective' THEN
        vals := bitemporal.distinct_values(entity, attribute, a.valid_at, a.valid_at);
        since := bitemporal.answer_since(entity, attribute, a.valid_at, a.known_at);
        t := CASE WHEN pg_catalog.jsonb_array_length(vals) = 0
                  THEN pg_catalog.format('learned later, on %s: on %s the store had nothing recorded for that time',
                           bitemporal.human_time(since), bitemporal.human_time(a.valid_at))
                  ELSE pg_catalog.format('corrected on %s: on %s the store said %s',
                           bitemporal.human_time(since), bitemporal.human_time(a.valid_at),
                           bitemporal.human_values(vals)) END;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'corrected', 'text', t,
            'corrected_on', bitemporal.iso_time(since), 'then_values', vals));
    END IF;

    IF a.known_at < a.present THEN
        changed := bitemporal.answer_corrected(entity, attribute, a.valid_at, a.known_at, a.present);
        vals := bitemporal.distinct_values(entity, attribute, a.valid_at, a.present);
        t := pg_catalog.format('as recorded on %s', bitemporal.human_time(a.known_at))
             || CASE WHEN changed IS NULL
                     THEN pg_catalog.format(', unchanged as of %s', bitemporal.human_time(a.present))
                     ELSE pg_catalog.format('; corrected on %s (as of %s: %s)',
                              bitemporal.human_time(changed), bitemporal.human_time(a.present),
                              CASE WHEN pg_catalog.jsonb_array_length(vals) = 0 THEN 'nothing recorded'
                                   ELSE bitemporal.human_values(vals) END) END;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'as_recorded', 'text', t,
            'recorded_on', bitemporal.iso_time(a.known_at),
            'corrected_on', bitemporal.iso_time(changed), 'now_values', vals));
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
        'valid_at', bitemporal.iso_time(a.valid_at),
        'known_at', bitemporal.iso_time(a.known_at),
        'now', bitemporal.iso_time(a.present),
        'snapshot', pg_catalog.jsonb_build_object(
            'known_at', bitemporal.iso_time(a.known_at),
            'latest_change', bitemporal.iso_time(latest)),
        'sources', sources,
        'versions', versions,
        'qualifications', quals,
        'status_note', CASE a.status
            WHEN 'supported' THEN 'supported means the available sources agree on this value; it does not certify that the value is true, and copies of one source are not independent confirmation'
            WHEN 'missing' THEN 'missing means nothing eligible is recorded: unknown, which is not zero, false or "does not apply"'
            ELSE 'conflict means the sources disagree: the values are never averaged and never settled by which was recorded later'
        END);
END;
$$;
COMMENT ON FUNCTION bitemporal.explain(text, text, timestamptz, timestamptz, timestamptz) IS
    'The answer object for an agent, as jsonb: the answer of bitemporal.resolve (NULL times = present, default now()) with its alternatives, every eligible version with source, periods and evidence, the question, the knowledge snapshot, explicit qualifications (unknown, conflict, announced, effective, followed_by, projected, corrected, as_recorded, source) and a note on what the status means. Render it with bitemporal.explain_sentence. Errors as bitemporal.resolve: BT001, BT003, BT004, BT005.';

CREATE FUNCTION bitemporal.explain_sentence(explanation jsonb)
RETURNS text
LANGUAGE sql STABLE
RETURN pg_catalog.format('%s/%s for %s, as known on %s: %s (%s)',
           explanation ->> 'entity', explanation ->> 'attribute',
           bitemporal.human_time((explanation ->> 'valid_at')::timestamptz),
           bitemporal.human_time((explanation ->> 'known_at')::timestamptz),
           CASE explanation ->> 'status'
               WHEN 'supported' THEN bitemporal.human_value(explanation -> 'value')
               WHEN 'missing' THEN 'unknown'
               ELSE (SELECT pg_catalog.string_agg(bitemporal.human_value(x.alt -> 'value'), ' or ' ORDER BY x.n)
                       FROM pg_catalog.jsonb_array_elements(explanation -> 'alternatives') WITH ORDINALITY AS x(alt, n))
           END,
           explanation ->> 'status')
       || coalesce((SELECT pg_catalog.string_agg('; ' || (q.item ->> 'text'), '' ORDER BY q.n)
                      FROM pg_catalog.jsonb_array_elements(explanation -> 'qualifications') WITH ORDINALITY AS q(item, n)), '')
       || '.';
COMMENT ON FUNCTION bitemporal.explain_sentence(jsonb) IS
    'One plain sentence for an answer object of bitemporal.explain, keeping every qualification: "<entity>/<attribute> for <valid_at>, as known on <known_at>: <answer> (<status>); <qualification>; ...".';
