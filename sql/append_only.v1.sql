-- bitemporal: history is append-only (version 1).
--
-- Enforced by triggers, so that it holds for every role, the table owner
-- included, whatever the grants say:
--   * INSERT always records the inserting top-level transaction;
--   * UPDATE may only close an open known_period, once, at a time not later
--     than the present, leaving every other column as it was;
--   * DELETE is refused, except for a row inserted by the current transaction
--     (never committed, so never seen by anyone: not history yet);
--   * TRUNCATE is refused.
-- Violations raise SQLSTATE BT006.

CREATE FUNCTION bitemporal.fact_version_stamp_insert()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.recorded_in := pg_catalog.pg_current_xact_id();
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal.fact_version_stamp_insert() IS
    'Trigger: stamps a new fact version with the inserting top-level transaction, which the append-only rule relies on.';

CREATE FUNCTION bitemporal.fact_version_guard()
RETURNS trigger
LANGUAGE plpgsql
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

    -- UPDATE: only closing an open knowledge period, once.
    IF NOT upper_inf(OLD.known_period) THEN
        RAISE EXCEPTION 'version % is already closed (known %): committed history cannot change',
                OLD.version_id, OLD.known_period
            USING ERRCODE = 'BT006';
    END IF;
    IF (NEW.version_id, NEW.entity, NEW.attribute, NEW.source, NEW.value, NEW.valid_period,
        NEW.recorded_by, NEW.carried_from, NEW.recorded_in)
       IS DISTINCT FROM
       (OLD.version_id, OLD.entity, OLD.attribute, OLD.source, OLD.value, OLD.valid_period,
        OLD.recorded_by, OLD.carried_from, OLD.recorded_in)
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
COMMENT ON FUNCTION bitemporal.fact_version_guard() IS
    'Trigger: refuses TRUNCATE, DELETE of committed versions and any UPDATE other than closing an open knowledge period once (SQLSTATE BT006).';

CREATE TRIGGER fact_version_stamp_insert
    BEFORE INSERT ON bitemporal.fact_version
    FOR EACH ROW EXECUTE FUNCTION bitemporal.fact_version_stamp_insert();

CREATE TRIGGER fact_version_append_only
    BEFORE UPDATE OR DELETE ON bitemporal.fact_version
    FOR EACH ROW EXECUTE FUNCTION bitemporal.fact_version_guard();

CREATE TRIGGER fact_version_no_truncate
    BEFORE TRUNCATE ON bitemporal.fact_version
    FOR EACH STATEMENT EXECUTE FUNCTION bitemporal.fact_version_guard();
