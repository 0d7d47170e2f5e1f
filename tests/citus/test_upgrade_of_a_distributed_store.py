"""On Citus: upgrading a store already distributed.

Migration 0031 (the integer key) refuses a store distributed before it: its table changes
would reach the coordinator's tables only (docs/citus.md, "Upgrading a distributed store"):
refused, typed, before anything changes, the store still at 0030 and still answering.
Migration 0032 leaves the record_many of a store distributed at 0031 as it was.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from bitemporal import DistributionError, Store, migrations
from tests.helpers import CITUS

pytestmark = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")


def test_0031_refuses_a_store_already_distributed(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0030", citus=True)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT bitemporal.record('ship:1', 'status', 'ops', '\"docked\"')")
    with pytest.raises(DistributionError) as caught:
        migrations.migrate(url, citus=True)
    assert caught.value.sqlstate == "BT502"
    assert "0031" in str(caught.value) and "nothing was changed" in str(caught.value)
    assert migrations.current(url) == "0030"
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_attribute WHERE attname = 'key_id'"
            " AND attrelid = 'bitemporal.fact_version'::regclass"
        ).fetchone() == (0,)
        assert conn.execute(
            "SELECT value FROM bitemporal.as_of('ship:1', 'status')"
        ).fetchall() == [("docked",)]


def _record_many_calls_the_citus_form(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT pg_get_functiondef('bitemporal.record_many(bitemporal.batch_row[], integer)'"
        "::regprocedure)"
    ).fetchone()
    assert row is not None
    return "bitemporal_internal.record_many_by_row(batch, max_errors)" in row[0]


def test_0032_keeps_record_many_of_a_store_distributed_at_0031(empty_database_url: str) -> None:
    """0032 changes record_many's local form only: a store distributed at 0031 keeps the
    wrapper bitemporal.distribute made, through the upgrade and the downgrade."""
    url = empty_database_url
    migrations.migrate(url, "0031", citus=True)
    _still_writes_through_the_citus_form(url, "0031", "distributed")
    migrations.migrate(url, citus=True)
    _still_writes_through_the_citus_form(url, "0032", "upgraded")
    migrations.downgrade(url, "0031")
    _still_writes_through_the_citus_form(url, "0031", "downgraded")


def _still_writes_through_the_citus_form(url: str, revision: str, value: str) -> None:
    """At ``revision``, record_many is distribute's wrapper and a batch of it writes."""
    assert migrations.current(url) == revision
    with psycopg.connect(url, autocommit=True) as conn:
        assert _record_many_calls_the_citus_form(conn)
        Store(conn).facts.record_many(
            [
                {"entity": f"ship:{n}", "attribute": "status", "source": "ops", "value": value}
                for n in range(3)
            ]
        )
        assert conn.execute(
            "SELECT value FROM bitemporal.as_of('ship:2', 'status')"
        ).fetchall() == [(value,)]
