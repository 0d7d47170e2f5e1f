-- bitemporal: limits on stored JSON values (version 1).
--
-- Python writes a value only if json.dumps can encode it: integers of at most
-- 4300 digits (sys.get_int_max_str_digits()) and nesting well within its
-- recursion limit (1000 frames). A value written through SQL had no limit,
-- and reading a 5,001-digit integer or an array nested 5,000 deep made every
-- Python read of the key fail. Every jsonb column of bitemporal.fact_version
-- and of every application table (enable_table) is checked when a row is
-- inserted, by the BEFORE INSERT trigger both already share
-- (bitemporal_internal.fact_version_stamp_insert, redefined in place in
-- table_knowledge.v1.sql), so record(), record_many(), the generated
-- <table>_record() functions and hand-written INSERTs all refuse such values
-- with BT007; so does an artifact's detail (bitemporal.record_artifact).
-- Size is not limited beyond PostgreSQL's own (jsonb values up to 255 MB).

CREATE FUNCTION bitemporal_internal.check_json_value(what text, value jsonb)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- A container at level 256 is the 257th nested one.
    IF pg_catalog.jsonb_path_exists(value, 'strict $.**{256} ? (@.type() == "array" || @.type() == "object")') THEN
        RAISE EXCEPTION '% nests arrays and objects more than 256 deep', what
            USING ERRCODE = 'BT007',
                  HINT = 'Flatten the value; deeply nested JSON cannot be read back everywhere.';
    END IF;
    -- An integer part of 4301 digits or more.
    IF pg_catalog.jsonb_path_exists(value, 'strict $.** ? (@.type() == "number" && (@ >= 1e4300 || @ <= -1e4300))') THEN
        RAISE EXCEPTION '% holds a number of 10^4300 or more in magnitude (over 4300 digits)', what
            USING ERRCODE = 'BT007',
                  HINT = 'Store such a number as a string.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_json_value(text, jsonb) IS
    'Raises BT007 if a JSON value nests arrays and objects more than 256 deep or holds a number whose integer part has more than 4300 digits (what Python can read back); NULL passes.';

-- Artifacts' detail (provenance.v1.sql) is read back by Python too.
CREATE FUNCTION bitemporal_internal.artifact_detail_check()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM bitemporal_internal.check_json_value('detail', NEW.detail);
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.artifact_detail_check() IS
    'Trigger: refuses an artifact detail Python cannot read back (bitemporal_internal.check_json_value, BT007).';

CREATE TRIGGER artifact_detail_check
    BEFORE INSERT OR UPDATE OF detail ON bitemporal.artifact
    FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.artifact_detail_check();
COMMENT ON TRIGGER artifact_detail_check ON bitemporal.artifact IS
    'Artifact details are held to what Python can read back: see bitemporal_internal.check_json_value.';
