-- bitemporal: period helpers (version 1).
--
-- Periods are half-open tstzrange values [start, end). On input, a missing
-- bound, +-infinity and the customary "end of time" sentinel 9999-12-31 all
-- mean "open on that side"; they are stored as an unbounded end so that there
-- is one spelling of "not known to end".

CREATE FUNCTION bitemporal.open_end_sentinel()
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
-- One day before 9999-12-31 UTC, so that 9999-12-31 in any time zone counts.
RETURN '9999-12-30 00:00:00+00'::timestamptz;
COMMENT ON FUNCTION bitemporal.open_end_sentinel() IS
    'Upper bounds at or after this instant (9999-12-31 in any time zone, or infinity) are read as an open end.';

CREATE FUNCTION bitemporal.check_instant(what text, t timestamptz)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    -- Finite times must be readable by every client: Python's datetime, for
    -- one, stops at years 1 and 9999 (in any time zone, hence the margin).
    IF isfinite(t) AND (t < '0001-01-02 00:00:00+00' OR t >= bitemporal.open_end_sentinel()) THEN
        RAISE EXCEPTION '% % is outside the supported range [0001-01-02, 9999-12-30) UTC', what, t
            USING ERRCODE = 'BT001',
                  HINT = 'Use NULL (None in Python) for an open end.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.check_instant(text, timestamptz) IS
    'Raises BT001 for a finite time outside [0001-01-02, 9999-12-30) UTC, which clients such as Python cannot represent.';

CREATE FUNCTION bitemporal.valid_period(valid_from timestamptz, valid_to timestamptz)
RETURNS tstzrange
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    lo timestamptz := CASE WHEN valid_from = '-infinity' THEN NULL ELSE valid_from END;
    hi timestamptz := CASE WHEN valid_to >= bitemporal.open_end_sentinel() THEN NULL ELSE valid_to END;
BEGIN
    IF valid_from = 'infinity' THEN
        RAISE EXCEPTION 'valid period cannot start at infinity'
            USING ERRCODE = 'BT001',
                  HINT = 'Pass NULL (None in Python) for an open start.';
    END IF;
    IF valid_to = '-infinity' THEN
        RAISE EXCEPTION 'valid period cannot end at -infinity'
            USING ERRCODE = 'BT001',
                  HINT = 'Pass NULL (None in Python) for an open end.';
    END IF;
    PERFORM bitemporal.check_instant('valid period start', lo);
    PERFORM bitemporal.check_instant('valid period end', hi);
    IF lo IS NOT NULL AND hi IS NOT NULL AND hi <= lo THEN
        RAISE EXCEPTION 'valid period [%, %) is %', lo, hi,
                CASE WHEN hi = lo THEN 'empty' ELSE 'inverted' END
            USING ERRCODE = 'BT001',
                  HINT = 'A period is half-open [valid_from, valid_to): valid_to must be later than valid_from.';
    END IF;
    RETURN tstzrange(lo, hi, '[)');
END;
$$;
COMMENT ON FUNCTION bitemporal.valid_period(timestamptz, timestamptz) IS
    'Half-open valid period [valid_from, valid_to); NULL, +-infinity or 9999-12-31 mean open on that side. Raises BT001 for an empty or inverted period, or a bound outside [0001-01-02, 9999-12-30) UTC.';
