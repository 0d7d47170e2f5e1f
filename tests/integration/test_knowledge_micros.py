"""The microseconds that key a write's announced knowledge time (sql/settled.v2.sql).

``bitemporal_internal.knowledge_micros`` must give, for every supported time and in every
session time zone, the microseconds from 0001-01-01 00:00 UTC (the pure-Python reference
below), and ``knowledge_from_micros`` must give the time back. Since migration 0039 the
planner inlines it into its callers: no SET clause, and no call of it left in a plan.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ZERO = datetime(1, 1, 1, tzinfo=UTC)
US = timedelta(microseconds=1)
# UTC, zones with daylight saving time on both hemispheres, a half-hour offset, and the
# date line.
ZONES = ("UTC", "America/New_York", "Europe/Berlin", "Australia/Adelaide", "Pacific/Kiritimati")
# The supported range of instants (bitemporal_internal.check_instant), and daylight saving
# time's edges in New York and Berlin.
EDGES = (
    datetime(1, 1, 2, tzinfo=UTC),
    datetime(9999, 12, 29, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(2026, 3, 8, 6, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 3, 8, 7, tzinfo=UTC),
    datetime(2026, 10, 25, 0, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 10, 25, 1, tzinfo=UTC),
)
MICROS = "SELECT bitemporal_internal.knowledge_micros(%s)"
# Compared on the server, as instants: Python never finds an ambiguous local time (as
# psycopg gives one in the session's zone) equal to a time in another zone.
ROUND_TRIP = "SELECT bitemporal_internal.knowledge_from_micros(%s) = %s"


def micros(t: datetime) -> int:
    """The reference: microseconds from 0001-01-01 00:00 UTC to t."""
    return (t - ZERO) // US


@pytest.fixture(scope="module")
def conn(database_url: str) -> Any:
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


@pytest.mark.parametrize("zone", ZONES)
def test_every_edge_in_every_zone(conn: psycopg.Connection[Any], zone: str) -> None:
    conn.execute("SELECT set_config('TimeZone', %s, false)", (zone,))
    for t in EDGES:
        assert conn.execute(MICROS, (t,)).fetchone() == (micros(t),), (zone, t)
        assert conn.execute(ROUND_TRIP, (micros(t), t)).fetchone() == (True,), (zone, t)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    t=st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 29), timezones=st.just(UTC)
    ),
    zone=st.sampled_from(ZONES),
)
def test_any_time_in_any_zone(conn: psycopg.Connection[Any], t: datetime, zone: str) -> None:
    conn.execute("SELECT set_config('TimeZone', %s, false)", (zone,))
    assert conn.execute(MICROS, (t,)).fetchone() == (micros(t),)
    assert conn.execute(ROUND_TRIP, (micros(t), t)).fetchone() == (True,)


def test_it_is_inlined_into_its_callers(conn: psycopg.Connection[Any]) -> None:
    """No SET clause (a standard body is bound when created), and a plan that calls it
    holds its arithmetic instead of a call."""
    row = conn.execute(
        "SELECT proconfig, prosqlbody IS NOT NULL FROM pg_proc"
        " WHERE oid = 'bitemporal_internal.knowledge_micros(timestamptz)'::regprocedure"
    ).fetchone()
    assert row == (None, True)
    plan = "\n".join(
        r[0]
        for r in conn.execute(
            "EXPLAIN (VERBOSE) SELECT bitemporal_internal.knowledge_micros(clock_timestamp())"
        )
    )
    assert "knowledge_micros" not in plan, plan
    assert "clock_timestamp()" in plan, plan
