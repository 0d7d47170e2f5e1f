-- bitemporal: how times and values are written in answer objects, reasons and
-- notifications (version 1).
--
-- Machine-readable times are ISO 8601 in UTC with a "Z" suffix, microseconds
-- only when there are any (2026-09-03T09:00:00Z); human-readable times are a
-- date when the instant is midnight UTC (2026-10-01), else the UTC time as
-- precise as it needs to be (2026-09-03 09:00 UTC). bitemporal.explain and
-- the Python package (bitemporal.explain) write both the same way.

CREATE FUNCTION bitemporal.iso_time(t timestamptz)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE
    WHEN t IS NULL OR NOT isfinite(t) THEN NULL
    ELSE pg_catalog.to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
         || CASE WHEN pg_catalog.date_part('microseconds', t AT TIME ZONE 'UTC')::bigint % 1000000 <> 0
                 THEN pg_catalog.to_char(t AT TIME ZONE 'UTC', '.US') ELSE '' END
         || 'Z'
END;
COMMENT ON FUNCTION bitemporal.iso_time(timestamptz) IS
    'ISO 8601 in UTC with a Z suffix (2026-09-03T09:00:00Z), microseconds only when non-zero; NULL for NULL or an infinite time (an open end).';

CREATE FUNCTION bitemporal.human_time(t timestamptz)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE
    WHEN t IS NULL OR NOT isfinite(t) THEN NULL
    WHEN (t AT TIME ZONE 'UTC')::time = '00:00' THEN pg_catalog.to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD')
    WHEN pg_catalog.date_part('microseconds', t AT TIME ZONE 'UTC')::bigint % 1000000 <> 0
        THEN pg_catalog.to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || ' UTC'
    WHEN pg_catalog.date_part('microseconds', t AT TIME ZONE 'UTC')::bigint <> 0
        THEN pg_catalog.to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || ' UTC'
    ELSE pg_catalog.to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC'
END;
COMMENT ON FUNCTION bitemporal.human_time(timestamptz) IS
    'A time for people: the date when it is midnight UTC (2026-10-01), else the UTC time as precise as needed (2026-09-03 09:00 UTC).';

CREATE FUNCTION bitemporal.human_value(value jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN pg_catalog.jsonb_typeof(value) = 'string' THEN value #>> '{}' ELSE value::text END;
COMMENT ON FUNCTION bitemporal.human_value(jsonb) IS
    'A value for people: a JSON string without its quotes, anything else as JSON text (80, true, {"mb": 80}).';

CREATE FUNCTION bitemporal.human_values(vals jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT coalesce(pg_catalog.string_agg(bitemporal.human_value(x.v), ' or ' ORDER BY x.n), 'nothing')
          FROM pg_catalog.jsonb_array_elements(vals) WITH ORDINALITY AS x(v, n));
COMMENT ON FUNCTION bitemporal.human_values(jsonb) IS
    'The values of a jsonb array for people, joined with " or " (80 or 90); "nothing" for an empty array.';

CREATE FUNCTION bitemporal.human_period(period tstzrange)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE
    WHEN lower_inf(period) AND upper_inf(period) THEN 'with no recorded start or end'
    WHEN lower_inf(period) THEN 'until ' || bitemporal.human_time(upper(period)) || ' (no recorded start)'
    WHEN upper_inf(period) THEN 'from ' || bitemporal.human_time(lower(period))
    ELSE 'from ' || bitemporal.human_time(lower(period)) || ' until ' || bitemporal.human_time(upper(period))
END;
COMMENT ON FUNCTION bitemporal.human_period(tstzrange) IS
    'A half-open valid period for people: "from 2026-09-01 until 2026-10-01" (the end excluded), "from 2026-10-01" (open end).';
