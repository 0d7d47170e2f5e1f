"""Plans, not timings: key lookups must be index scans once a table has real history.

The table is filled the way record() leaves it after many changes of each key:
every change closes the open version and re-records its remainder (see
benchmarks/facts.py, fill).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from benchmarks.facts import fill
from tests.helpers import DatabaseFactory

pytestmark = pytest.mark.not_on_citus(
    "single-node plans; on Citus a key's question is a router plan on one worker, which "
    "tests/citus/test_routing.py checks"
)

KEYS, CHANGES = 400, 50


@pytest.fixture(scope="module")
def conn(
    make_database: DatabaseFactory, partitions: int | None
) -> Iterator[psycopg.Connection[Any]]:
    url = make_database(migrated=True, default_layout=True)
    with psycopg.connect(url, autocommit=True) as c:
        fill(c, KEYS, CHANGES)
        if partitions:
            # Filled plain, then converted: the conversion is a bulk load too.
            c.execute("SELECT bitemporal.partition_versions(%s)", (partitions,))
            c.execute("VACUUM ANALYZE bitemporal.fact_version")
        yield c


def plan(conn: psycopg.Connection[Any], query: str) -> str:
    rows = conn.execute(f"EXPLAIN (COSTS OFF) {query}").fetchall()
    return "\n".join(r[0] for r in rows)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM bitemporal.as_of('e200', 'a', '2020-01-20')",
        "SELECT * FROM bitemporal.as_of('e200', 'a', '2020-01-20', '2020-01-01 12:00')",
        "SELECT * FROM bitemporal.as_of('e200', 'a')",
        "SELECT * FROM bitemporal.versions WHERE entity = 'e200' AND attribute = 'a'",
    ],
)
def test_key_lookups_use_the_key_index(conn: psycopg.Connection[Any], query: str) -> None:
    text = plan(conn, query)
    assert "Seq Scan" not in text, text
    assert "fact_version_periods_idx" in text, text


def test_the_table_is_big_enough_for_the_plan_to_mean_something(
    conn: psycopg.Connection[Any],
) -> None:
    row = conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()
    assert row is not None and row[0] == KEYS * (2 * CHANGES - 1)


def test_key_existence_check_uses_the_primary_key(conn: psycopg.Connection[Any]) -> None:
    # resolve() and history() first check the key exists (bitemporal.require_key).
    text = plan(
        conn, "SELECT FROM bitemporal.fact_key k WHERE k.entity = 'e200' AND k.attribute = 'a'"
    )
    assert "fact_key_pkey" in text and "Seq Scan" not in text, text


def test_as_of_touches_a_handful_of_pages(conn: psycopg.Connection[Any]) -> None:
    # The table's pages, or its partitions' on the partitioned layout.
    pages = conn.execute(
        "SELECT sum(pg_relation_size(c.oid)) / current_setting('block_size')::int FROM pg_class c "
        "WHERE c.oid = 'bitemporal.fact_version'::regclass OR c.oid IN "
        "(SELECT inhrelid FROM pg_inherits WHERE inhparent = 'bitemporal.fact_version'::regclass)"
    ).fetchone()
    assert pages is not None and pages[0] > 500
    query = "SELECT * FROM bitemporal.as_of('e200', 'a', '2020-01-20', '2020-01-01 12:00')"
    # Once first: on a fresh connection the count also holds the catalog pages that fill
    # its caches (measured: 14 blocks, then 11; 22 once in CI, in a random test order).
    conn.execute(query)
    row = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {query}").fetchone()
    assert row is not None
    top = row[0][0]["Plan"]
    assert top["Actual Rows"] == 1
    # The key's row, a GiST descent (its shape varies with the build: 8-14 blocks measured
    # here) and the version: a few dozen blocks at most, of the table's hundreds.
    assert top["Shared Hit Blocks"] + top["Shared Read Blocks"] < 30
