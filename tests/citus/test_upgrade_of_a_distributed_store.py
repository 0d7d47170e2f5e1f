"""On Citus: migration 0031 (the integer key) refuses a store distributed before it.

Its table changes would reach the coordinator's tables only (docs/citus.md, "Upgrading a
distributed store"): refused, typed, before anything changes, the store still at 0030 and
still answering.
"""

from __future__ import annotations

import psycopg
import pytest

from bitemporal import DistributionError, migrations
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
