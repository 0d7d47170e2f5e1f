"""Migration 0039: knowledge_micros inlined into its callers.

On a store written at 0038, the upgrade leaves every knowledge time's microseconds, every
answer and the settled knowledge time as they were, and writes go on; the downgrade gives
0038's definition back (with its SET clause, run as a query of its own), with the same
microseconds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from bitemporal import migrations
from tests.migrations.test_integer_key import START, answers, write_history

pytestmark = pytest.mark.not_on_citus(
    "migration paths are single-node: on Citus every test database is migrated with "
    "citus=True (docs/citus.md; the Citus path: tests/citus/test_upgrade_of_a_distributed_store.py)"
)

TIMES = [
    datetime(1, 1, 2, tzinfo=UTC),
    datetime(2026, 3, 8, 7, 0, 0, 1, tzinfo=UTC),
    datetime(9999, 12, 29, 23, 59, 59, 999999, tzinfo=UTC),
]
FUNCTION = "'bitemporal_internal.knowledge_micros(timestamptz)'::regprocedure"


def state(conn: psycopg.Connection[Any], times: list[datetime]) -> tuple[list[int], bool]:
    """The microseconds of ``times``, in New York's time zone, and whether a plan that calls
    the function still calls it (not inlined)."""
    conn.execute("SET TimeZone = 'America/New_York'")
    values = [
        row[0]
        for row in conn.execute(
            "SELECT bitemporal_internal.knowledge_micros(t)"
            " FROM unnest(%s::timestamptz[]) WITH ORDINALITY u (t, i) ORDER BY i",
            (times,),
        )
    ]
    plan = "\n".join(
        row[0]
        for row in conn.execute(
            "EXPLAIN (VERBOSE) SELECT bitemporal_internal.knowledge_micros(clock_timestamp())"
        )
    )
    return values, "knowledge_micros" in plan


def pinned(conn: psycopg.Connection[Any]) -> Any:
    row = conn.execute(f"SELECT proconfig FROM pg_proc WHERE oid = {FUNCTION}").fetchone()
    assert row is not None
    return row[0]


def test_upgrade_and_downgrade(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0038")
    with psycopg.connect(url, autocommit=True) as conn:
        write_history(conn)
        times = TIMES + [
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT lower(known_period) FROM bitemporal.fact_version ORDER BY 1"
            )
        ]
        values, called = state(conn, times)
        assert called and pinned(conn) == ["search_path=pg_catalog, pg_temp"]
        before = answers(conn)

    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert state(conn, times) == (values, False)
        assert pinned(conn) is None
        assert answers(conn) == before
        settled = conn.execute("SELECT bitemporal.settled_knowledge_time()").fetchone()
        assert settled is not None
        # A new key's explicit knowledge time: refused at the settled time (BT002), taken a
        # microsecond later; announce_knowledge compares the two in microseconds.
        record = "SELECT bitemporal.record('d', 'status', 'ops', %s, %s, NULL, %s)"
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(record, ('"settled"', START, settled[0]))
        assert refused.value.sqlstate == "BT002"
        conn.execute(record, ('"after"', START, settled[0] + timedelta(microseconds=1)))
        conn.execute("SELECT bitemporal.record('c', 'status', 'ops', '\"new\"', %s)", (START,))

    migrations.downgrade(url, "0038")
    with psycopg.connect(url, autocommit=True) as conn:
        assert state(conn, times) == (values, True)
        assert pinned(conn) == ["search_path=pg_catalog, pg_temp"]
        conn.execute("SELECT bitemporal.record('c', 'status', 'ops', '\"newer\"', %s)", (START,))
