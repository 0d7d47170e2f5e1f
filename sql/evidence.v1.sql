-- bitemporal: evidence text, and retrieval that filters before it ranks
-- (version 1).
--
-- A fact version can carry the passages it came from (bitemporal.evidence):
-- the text, a reference to the document it is quoted from, and the text
-- search configuration (language) its tsvector is built with. Evidence belongs
-- to the assertion, not to one row: when a write cuts a version and
-- re-records its remainders (carried_from), the remainders keep their
-- original's passages.
--
-- Retrieval first keeps the versions eligible at (valid_at, known_at) (the
-- same rule as bitemporal.as_of, across keys), then ranks only their passages
-- and takes the first `lim`. It never takes the top of all passages and
-- filters afterwards: a relevant but ineligible passage (next month's rule,
-- last quarter's) can never push an eligible one out of the result, so while
-- an eligible passage matches, the result is not empty. Rank ties are broken
-- by version id, then evidence id, so results are reproducible. Three rankers
-- share that rule:
--   bitemporal.search_evidence   full-text search (tsvector), on every server;
--   bitemporal.rank_versions     relevance scores computed by the caller with
--                                any external engine, one per version;
--   bitemporal.nearest_evidence  cosine similarity of embeddings (pgvector).
--
-- pgvector is optional and not needed by this migration, so the schema is the
-- same on every server. bitemporal.enable_vector(dimensions) creates the
-- extension (where the server has it) and the table of embeddings on demand.
-- Vector retrieval is exact: similarity is computed for every eligible
-- passage, never through an approximate index scan filtered afterwards, which
-- could miss the eligible passages (the failure this file exists to prevent).
--
-- Errors (SQLSTATE):
--   BT001 infinite question time      BT003 known_at later than the present
--   BT201 pgvector is not available on this server (or may not be created)
--   BT202 vector retrieval is not enabled in this database
--   BT203 invalid embedding or dimensions
--   BT204 invalid search arguments (scores, limit, language)
--   BT205 unknown fact version        BT208 invalid evidence

CREATE TABLE bitemporal.evidence (
    evidence_id    bigint      GENERATED ALWAYS AS IDENTITY,
    version_id     bigint      NOT NULL,
    passage        text        NOT NULL,
    document       text,
    language       regconfig   NOT NULL DEFAULT 'english',
    search_vector  tsvector    GENERATED ALWAYS AS (to_tsvector(language, passage)) STORED,
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    recorded_by    text,
    CONSTRAINT evidence_pkey PRIMARY KEY (evidence_id),
    -- A version removed inside the transaction that created it (never
    -- visible, see facts_write.v1.sql) takes its passages with it.
    CONSTRAINT evidence_version_fkey FOREIGN KEY (version_id)
        REFERENCES bitemporal.fact_version (version_id) ON DELETE CASCADE,
    CONSTRAINT evidence_passage_not_blank CHECK (btrim(passage) <> ''),
    CONSTRAINT evidence_document_not_blank CHECK (document <> '')
);
COMMENT ON TABLE bitemporal.evidence IS
    'Passages fact versions came from: text, document reference and text search configuration. Write through bitemporal.add_evidence; search through bitemporal.search_evidence, bitemporal.rank_versions, bitemporal.nearest_evidence.';
COMMENT ON TYPE bitemporal.evidence IS
    'Row type of bitemporal.evidence.';
COMMENT ON COLUMN bitemporal.evidence.version_id IS
    'The version the passage supports; it also supports the remainders re-recorded from that version (carried_from).';
COMMENT ON COLUMN bitemporal.evidence.document IS
    'Where the passage comes from: a URL, a file and section, a message id (free-form; NULL: not given).';
COMMENT ON COLUMN bitemporal.evidence.language IS
    'The text search configuration the passage is indexed with (english, german, simple, ...).';
COMMENT ON COLUMN bitemporal.evidence.search_vector IS
    'to_tsvector(language, passage), maintained by PostgreSQL.';

CREATE INDEX evidence_version_idx ON bitemporal.evidence (version_id);
COMMENT ON INDEX bitemporal.evidence_version_idx IS
    'The passages of a version (and of the remainders carried from it).';
CREATE INDEX evidence_search_idx ON bitemporal.evidence USING gin (search_vector);
COMMENT ON INDEX bitemporal.evidence_search_idx IS
    'Full-text matches: exact, so the planner may start from it and still filter before ranking.';

CREATE TYPE bitemporal.evidence_hit AS (
    rank          integer,
    score         double precision,
    version_id    bigint,
    entity        text,
    attribute     text,
    source        text,
    value         jsonb,
    valid_period  tstzrange,
    known_period  tstzrange,
    recorded_by   text,
    carried_from  bigint,
    evidence_id   bigint,
    passage       text,
    document      text
);
COMMENT ON TYPE bitemporal.evidence_hit IS
    'One retrieval result: its rank (1 = best) and score, the eligible version (all its columns), and the passage (NULL for a version ranked by caller scores that has no passage).';

CREATE FUNCTION bitemporal.text_search_config(name text, errcode text)
RETURNS regconfig
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'text search configuration must be a non-empty name'
            USING ERRCODE = errcode;
    END IF;
    RETURN name::regconfig;
EXCEPTION WHEN undefined_object OR invalid_name OR syntax_error THEN
    RAISE EXCEPTION 'text search configuration "%" does not exist', name
        USING ERRCODE = errcode,
              HINT = 'SELECT cfgname FROM pg_ts_config lists them (english, german, simple, ...).';
END;
$$;
COMMENT ON FUNCTION bitemporal.text_search_config(text, text) IS
    'The text search configuration called name, or raises SQLSTATE errcode (BT204 when searching, BT208 when adding evidence) if there is none.';

CREATE FUNCTION bitemporal.check_question(valid_at timestamptz, known_at timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF known_at > pg_catalog.now() THEN
        RAISE EXCEPTION 'knowledge time % is later than the present (%)', known_at, pg_catalog.now()
            USING ERRCODE = 'BT003',
                  HINT = 'Nobody can say today what the store will know later.';
    END IF;
    IF valid_at IN ('infinity', '-infinity') OR known_at = '-infinity' THEN
        RAISE EXCEPTION 'question times must be finite (valid_at %, known_at %)', valid_at, known_at
            USING ERRCODE = 'BT001';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.check_question(timestamptz, timestamptz) IS
    'Raises BT003 if known_at is later than now(), BT001 if a question time is infinite (NULL = now, accepted).';

CREATE FUNCTION bitemporal.check_limit(lim integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF lim < 0 THEN
        RAISE EXCEPTION 'limit must be zero or more, not %', lim
            USING ERRCODE = 'BT204', HINT = 'Pass NULL for no limit.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.check_limit(integer) IS
    'Raises BT204 for a negative result limit (NULL = no limit).';

CREATE FUNCTION bitemporal.eligible(
    valid_at   timestamptz DEFAULT NULL,
    known_at   timestamptz DEFAULT NULL,
    entity     text        DEFAULT NULL,
    attribute  text        DEFAULT NULL)
RETURNS SETOF bitemporal.versions
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT v.version_id, v.entity, v.attribute, v.source, v.value,
           v.valid_period, v.known_period, v.recorded_by, v.carried_from
      FROM bitemporal.fact_version v
     WHERE v.valid_period @> coalesce(eligible.valid_at, pg_catalog.now())
       AND v.known_period @> coalesce(eligible.known_at, pg_catalog.now())
       AND (eligible.entity IS NULL OR v.entity = eligible.entity)
       AND (eligible.attribute IS NULL OR v.attribute = eligible.attribute)
$$;
COMMENT ON FUNCTION bitemporal.eligible(timestamptz, timestamptz, text, text) IS
    'Every version eligible at (valid_at, known_at) (NULL = now), across keys or for one entity and/or attribute: the filter every retrieval applies before ranking.';

CREATE FUNCTION bitemporal.search_evidence(
    query      text,
    valid_at   timestamptz DEFAULT NULL,
    known_at   timestamptz DEFAULT NULL,
    lim        integer     DEFAULT 10,
    language   text        DEFAULT NULL,
    entity     text        DEFAULT NULL,
    attribute  text        DEFAULT NULL)
RETURNS SETOF bitemporal.evidence_hit
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    config regconfig;
BEGIN
    PERFORM bitemporal.check_question(valid_at, known_at);
    PERFORM bitemporal.check_limit(lim);
    IF query IS NULL THEN
        RAISE EXCEPTION 'query must not be NULL' USING ERRCODE = 'BT204';
    END IF;
    IF language IS NOT NULL THEN
        config := bitemporal.text_search_config(language, 'BT204');
    END IF;
    RETURN QUERY
    SELECT (pg_catalog.row_number() OVER (ORDER BY s.score DESC, s.version_id, s.evidence_id))::integer,
           s.score, s.version_id, s.entity, s.attribute, s.source, s.value, s.valid_period,
           s.known_period, s.recorded_by, s.carried_from, s.evidence_id, s.passage, s.document
      FROM (SELECT v.*, e.evidence_id, e.passage, e.document,
                   pg_catalog.ts_rank_cd(e.search_vector,
                                         pg_catalog.websearch_to_tsquery(e.language, query))::float8 AS score
              FROM bitemporal.eligible(valid_at, known_at, entity, attribute) v
              JOIN bitemporal.evidence e ON e.version_id IN (v.version_id, v.carried_from)
             WHERE (config IS NULL OR e.language = config)
               AND e.search_vector @@ pg_catalog.websearch_to_tsquery(e.language, query)) s
     ORDER BY s.score DESC, s.version_id, s.evidence_id
     LIMIT lim;
END;
$$;
COMMENT ON FUNCTION bitemporal.search_evidence(text, timestamptz, timestamptz, integer, text, text, text) IS
    'Full-text retrieval that filters before it ranks: the passages of versions eligible at (valid_at, known_at) (NULL = now) matching query (web search syntax, parsed with each passage''s language, or only passages in language if given), ranked by ts_rank_cd, ties by version id then evidence id, first lim (NULL = all). Errors: BT001, BT003, BT204.';

CREATE FUNCTION bitemporal.rank_versions(
    version_ids  bigint[],
    scores       double precision[],
    valid_at     timestamptz DEFAULT NULL,
    known_at     timestamptz DEFAULT NULL,
    lim          integer     DEFAULT 10,
    entity       text        DEFAULT NULL,
    attribute    text        DEFAULT NULL)
RETURNS SETOF bitemporal.evidence_hit
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
BEGIN
    PERFORM bitemporal.check_question(valid_at, known_at);
    PERFORM bitemporal.check_limit(lim);
    IF version_ids IS NULL OR scores IS NULL
       OR pg_catalog.cardinality(version_ids) <> pg_catalog.cardinality(scores) THEN
        RAISE EXCEPTION 'version_ids and scores must be arrays of the same length (% and %)',
                pg_catalog.cardinality(version_ids), pg_catalog.cardinality(scores)
            USING ERRCODE = 'BT204';
    END IF;
    IF EXISTS (SELECT FROM unnest(version_ids, scores) g(id, score)
                WHERE g.id IS NULL OR g.score IS NULL
                   OR g.score IN ('NaN', 'Infinity', '-Infinity')) THEN
        RAISE EXCEPTION 'scores must be finite numbers for non-NULL version ids'
            USING ERRCODE = 'BT204',
                  HINT = 'NaN would sort above every real score.';
    END IF;
    IF (SELECT count(DISTINCT g.id) FROM unnest(version_ids) g(id)) <> pg_catalog.cardinality(version_ids) THEN
        RAISE EXCEPTION 'a version id appears more than once in version_ids'
            USING ERRCODE = 'BT204';
    END IF;
    RETURN QUERY
    WITH given AS (
        SELECT g.id, g.score FROM unnest(version_ids, scores) g(id, score)
    ), scored AS (
        -- A score given for a version applies to the remainders carried from
        -- it; one given for the remainder itself takes precedence.
        SELECT DISTINCT ON (v.version_id) v.*, g.score
          FROM bitemporal.eligible(valid_at, known_at, entity, attribute) v
          JOIN given g ON g.id IN (v.version_id, v.carried_from)
         ORDER BY v.version_id, (g.id = v.version_id) DESC
    )
    SELECT (pg_catalog.row_number() OVER (ORDER BY s.score DESC, s.version_id))::integer,
           s.score, s.version_id, s.entity, s.attribute, s.source, s.value, s.valid_period,
           s.known_period, s.recorded_by, s.carried_from, p.evidence_id, p.passage, p.document
      FROM scored s
      LEFT JOIN LATERAL (
            SELECT e.evidence_id, e.passage, e.document
              FROM bitemporal.evidence e
             WHERE e.version_id IN (s.version_id, s.carried_from)
             ORDER BY (e.version_id = s.version_id) DESC, e.evidence_id
             LIMIT 1) p ON true
     ORDER BY s.score DESC, s.version_id
     LIMIT lim;
END;
$$;
COMMENT ON FUNCTION bitemporal.rank_versions(bigint[], double precision[], timestamptz, timestamptz, integer, text, text) IS
    'Caller-scored retrieval that filters before it ranks: scores[i] is the relevance of version_ids[i] from any external engine (a score for a version also applies to its remainders); keeps the versions eligible at (valid_at, known_at) (NULL = now), ranks them by score, ties by version id, first lim (NULL = all), each with its first passage if it has one. Ids of versions that do not exist are ignored. Errors: BT001, BT003, BT204.';

-- pgvector, on demand.

CREATE FUNCTION bitemporal.vector_available()
RETURNS boolean
LANGUAGE sql STABLE
RETURN EXISTS (SELECT FROM pg_catalog.pg_available_extensions WHERE name = 'vector');
COMMENT ON FUNCTION bitemporal.vector_available() IS
    'Whether this server has the pgvector extension ("vector") installed, so that bitemporal.enable_vector can work.';

CREATE FUNCTION bitemporal.vector_dimensions()
RETURNS integer
LANGUAGE sql STABLE
RETURN (SELECT a.atttypmod
          FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = pg_catalog.to_regclass('bitemporal.evidence_embedding')
           AND a.attname = 'embedding' AND NOT a.attisdropped);
COMMENT ON FUNCTION bitemporal.vector_dimensions() IS
    'The number of dimensions of evidence embeddings, or NULL while vector retrieval is not enabled in this database (bitemporal.enable_vector).';

CREATE FUNCTION bitemporal.require_vector()
RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    schema_name text;
BEGIN
    IF NOT bitemporal.vector_available() THEN
        RAISE EXCEPTION 'vector similarity is unavailable: this server (PostgreSQL %) does not have the pgvector extension',
                pg_catalog.current_setting('server_version_num')::integer / 10000
            USING ERRCODE = 'BT201',
                  HINT = 'Install pgvector on the server to use embeddings; full-text search (bitemporal.search_evidence) and caller-supplied scores (bitemporal.rank_versions) work without it.';
    END IF;
    SELECT n.nspname INTO schema_name
      FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace
     WHERE x.extname = 'vector';
    IF schema_name IS NULL OR bitemporal.vector_dimensions() IS NULL THEN
        RAISE EXCEPTION 'vector retrieval is not enabled in this database'
            USING ERRCODE = 'BT202',
                  HINT = 'Run SELECT bitemporal.enable_vector(<dimensions of your embeddings>) once.';
    END IF;
    RETURN schema_name;
END;
$$;
COMMENT ON FUNCTION bitemporal.require_vector() IS
    'The schema of the pgvector extension, or raises BT201 (the server lacks pgvector) or BT202 (not enabled in this database: call bitemporal.enable_vector).';

CREATE FUNCTION bitemporal.check_embedding(embedding real[], dimensions integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF embedding IS NULL OR pg_catalog.array_ndims(embedding) IS DISTINCT FROM 1
       OR pg_catalog.cardinality(embedding) <> dimensions THEN
        RAISE EXCEPTION 'an embedding must be a one-dimensional array of % numbers, not %',
                dimensions, coalesce(pg_catalog.cardinality(embedding)::text || ' numbers', 'NULL')
            USING ERRCODE = 'BT203',
                  HINT = 'Every embedding in a database has the dimensions given to bitemporal.enable_vector.';
    END IF;
    IF EXISTS (SELECT FROM unnest(embedding) x WHERE x IS NULL OR x IN ('NaN', 'Infinity', '-Infinity')) THEN
        RAISE EXCEPTION 'an embedding must hold finite numbers only'
            USING ERRCODE = 'BT203';
    END IF;
    IF NOT EXISTS (SELECT FROM unnest(embedding) x WHERE x <> 0) THEN
        RAISE EXCEPTION 'an embedding must not be all zeros: its cosine similarity is undefined'
            USING ERRCODE = 'BT203';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.check_embedding(real[], integer) IS
    'Raises BT203 unless embedding is a one-dimensional array of the given number of finite numbers, not all zero.';

CREATE FUNCTION bitemporal.enable_vector(dimensions integer)
RETURNS integer
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    schema_name text;
    enabled integer := bitemporal.vector_dimensions();
BEGIN
    IF dimensions IS NULL OR dimensions < 1 OR dimensions > 16000 THEN
        RAISE EXCEPTION 'embedding dimensions must be between 1 and 16000, not %', dimensions
            USING ERRCODE = 'BT203';
    END IF;
    IF enabled IS NOT NULL THEN
        IF enabled <> dimensions THEN
            RAISE EXCEPTION 'vector retrieval is already enabled with % dimensions, not %', enabled, dimensions
                USING ERRCODE = 'BT203',
                      HINT = 'One database holds embeddings of one model: re-embed with it, or use another database.';
        END IF;
        RETURN enabled;
    END IF;
    IF NOT bitemporal.vector_available() THEN
        PERFORM bitemporal.require_vector();  -- raises BT201
    END IF;
    SELECT n.nspname INTO schema_name
      FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace
     WHERE x.extname = 'vector';
    IF schema_name IS NULL THEN
        IF pg_catalog.to_regnamespace('public') IS NULL THEN
            RAISE EXCEPTION 'cannot create the pgvector extension: there is no schema public to create it in'
                USING ERRCODE = 'BT201',
                      HINT = 'CREATE EXTENSION vector in a schema of your choice, then call bitemporal.enable_vector again.';
        END IF;
        BEGIN
            CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'this role may not create the pgvector extension: %', SQLERRM
                USING ERRCODE = 'BT201',
                      HINT = 'Ask a superuser to run CREATE EXTENSION vector in this database, then call bitemporal.enable_vector again.';
        END;
        schema_name := 'public';
    END IF;
    EXECUTE pg_catalog.format(
        'CREATE TABLE bitemporal.evidence_embedding ('
        '    evidence_id bigint NOT NULL,'
        '    embedding %I.vector(%s) NOT NULL,'
        '    CONSTRAINT evidence_embedding_pkey PRIMARY KEY (evidence_id),'
        '    CONSTRAINT evidence_embedding_evidence_fkey FOREIGN KEY (evidence_id)'
        '        REFERENCES bitemporal.evidence (evidence_id) ON DELETE CASCADE)',
        schema_name, dimensions);
    COMMENT ON TABLE bitemporal.evidence_embedding IS
        'Embeddings of evidence passages (pgvector), created by bitemporal.enable_vector; searched exactly by bitemporal.nearest_evidence.';
    COMMENT ON TYPE bitemporal.evidence_embedding IS
        'Row type of bitemporal.evidence_embedding.';
    RETURN dimensions;
END;
$$;
COMMENT ON FUNCTION bitemporal.enable_vector(integer) IS
    'Enables vector retrieval in this database: creates the pgvector extension if needed (in schema public) and the table bitemporal.evidence_embedding for embeddings of the given dimensions. Idempotent for the same dimensions. Errors: BT201 the server lacks pgvector (or the role may not create it), BT203 other dimensions already enabled, or out of 1..16000.';

CREATE FUNCTION bitemporal.set_embedding(evidence_id bigint, embedding real[])
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    schema_name text := bitemporal.require_vector();
BEGIN
    PERFORM bitemporal.check_embedding(embedding, bitemporal.vector_dimensions());
    PERFORM FROM bitemporal.evidence e WHERE e.evidence_id = evidence_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown evidence %', evidence_id USING ERRCODE = 'BT208';
    END IF;
    EXECUTE pg_catalog.format(
        'INSERT INTO bitemporal.evidence_embedding (evidence_id, embedding) VALUES ($1, $2::%I.vector)'
        ' ON CONFLICT ON CONSTRAINT evidence_embedding_pkey DO UPDATE SET embedding = EXCLUDED.embedding',
        schema_name)
    USING evidence_id, embedding;
END;
$$;
COMMENT ON FUNCTION bitemporal.set_embedding(bigint, real[]) IS
    'Stores (or replaces) the embedding of a passage. Errors: BT201/BT202 vector retrieval unavailable or not enabled, BT203 wrong dimensions or non-finite numbers, BT208 unknown evidence.';

CREATE FUNCTION bitemporal.add_evidence(
    version_id   bigint,
    passage      text,
    document     text    DEFAULT NULL,
    language     text    DEFAULT 'english',
    embedding    real[]  DEFAULT NULL,
    recorded_by  text    DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    config regconfig := bitemporal.text_search_config(coalesce(language, 'english'), 'BT208');
    id bigint;
BEGIN
    PERFORM FROM bitemporal.fact_version v WHERE v.version_id = add_evidence.version_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown fact version %', version_id
            USING ERRCODE = 'BT205',
                  HINT = 'Use the version_id returned by bitemporal.record.';
    END IF;
    IF passage IS NULL OR btrim(passage) = '' THEN
        RAISE EXCEPTION 'a passage must be non-blank text' USING ERRCODE = 'BT208';
    END IF;
    IF document = '' THEN
        RAISE EXCEPTION 'a document reference must be non-empty (or NULL)' USING ERRCODE = 'BT208';
    END IF;
    INSERT INTO bitemporal.evidence (version_id, passage, document, language, recorded_by)
    VALUES (version_id, passage, document, config, recorded_by)
    RETURNING evidence.evidence_id INTO id;
    IF embedding IS NOT NULL THEN
        PERFORM bitemporal.set_embedding(id, embedding);
    END IF;
    RETURN id;
END;
$$;
COMMENT ON FUNCTION bitemporal.add_evidence(bigint, text, text, text, real[], text) IS
    'Attaches a passage to a fact version: its text, the document it comes from, the text search configuration to index it with (default english) and optionally its embedding (needs bitemporal.enable_vector). Returns the evidence id. Errors: BT205 unknown version, BT208 blank passage or unknown language, BT201-BT203 for the embedding.';

CREATE FUNCTION bitemporal.nearest_evidence(
    embedding  real[],
    valid_at   timestamptz DEFAULT NULL,
    known_at   timestamptz DEFAULT NULL,
    lim        integer     DEFAULT 10,
    entity     text        DEFAULT NULL,
    attribute  text        DEFAULT NULL)
RETURNS SETOF bitemporal.evidence_hit
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    schema_name text := bitemporal.require_vector();
BEGIN
    PERFORM bitemporal.check_embedding(embedding, bitemporal.vector_dimensions());
    PERFORM bitemporal.check_question(valid_at, known_at);
    PERFORM bitemporal.check_limit(lim);
    -- Materialized: the similarity is computed for every eligible passage and
    -- sorted, so no approximate index on the embeddings can answer the ORDER
    -- BY first and lose eligible passages to a filter applied afterwards.
    RETURN QUERY EXECUTE pg_catalog.format($q$
        WITH eligible AS MATERIALIZED (
            SELECT v.* FROM bitemporal.eligible($2, $3, $5, $6) v
        ), scored AS MATERIALIZED (
            SELECT v.*, e.evidence_id, e.passage, e.document,
                   (1 - (x.embedding OPERATOR(%1$I.<=>) $1::%1$I.vector))::float8 AS score
              FROM eligible v
              JOIN bitemporal.evidence e ON e.version_id IN (v.version_id, v.carried_from)
              JOIN bitemporal.evidence_embedding x ON x.evidence_id = e.evidence_id
        )
        SELECT (pg_catalog.row_number() OVER (ORDER BY s.score DESC, s.version_id, s.evidence_id))::integer,
               s.score, s.version_id, s.entity, s.attribute, s.source, s.value, s.valid_period,
               s.known_period, s.recorded_by, s.carried_from, s.evidence_id, s.passage, s.document
          FROM scored s
         ORDER BY s.score DESC, s.version_id, s.evidence_id
         LIMIT $4
        $q$, schema_name)
    USING embedding, valid_at, known_at, lim, entity, attribute;
END;
$$;
COMMENT ON FUNCTION bitemporal.nearest_evidence(real[], timestamptz, timestamptz, integer, text, text) IS
    'Vector retrieval that filters before it ranks: the passages of versions eligible at (valid_at, known_at) (NULL = now) that have an embedding, ranked by cosine similarity to embedding (score = 1 - cosine distance), ties by version id then evidence id, first lim (NULL = all). Exact, never an approximate index scan filtered afterwards. Errors: BT201 no pgvector on this server, BT202 not enabled, BT203 embedding, BT001, BT003, BT204.';
