"""On Citus: a store migrated and filled on one node is distributed later, in place.

docs/citus.md, "From a single-node store": load Citus, create the extension, add the
workers, upgrade with ``--citus``. The history and the answers are the same afterwards,
the rows are on the workers' shards (the copy into them stamped nothing anew), the
append-only guard holds there, and writing goes on.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import date

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

import bitemporal
from bitemporal import Key, Store
from tests.conftest import _citus_workers, with_database
from tests.helpers import CITUS

pytestmark = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")


@pytest.fixture
def single_node_store(server_url: str) -> Iterator[str]:
    """A database on the coordinator without Citus, migrated the plain way; the same
    database on every worker, with the extension, as Citus expects."""
    name = f"bt_later_{uuid.uuid4().hex[:12]}"
    workers = _citus_workers(server_url)
    for node in (server_url, *workers):
        with psycopg.connect(node, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    for worker in workers:
        with psycopg.connect(with_database(worker, name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION citus")
    url = with_database(server_url, name)
    bitemporal.migrate(url)
    yield url
    for node in (server_url, *workers):
        with psycopg.connect(node, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def snapshot(store: Store, keys: list[Key]) -> list[object]:
    return [
        (
            [
                (v.source, v.value, v.valid_period, v.known_period, v.recorded_at)
                for v in store.facts.history(k)
            ],
            store.facts.resolve(k, valid_at=date(2026, 6, 1)).values,
        )
        for k in keys
    ]


def test_a_filled_store_is_distributed_in_place(server_url: str, single_node_store: str) -> None:
    keys = [Key(f"later:{n}", "limit") for n in range(20)]
    with bitemporal.connect(single_node_store) as store:
        for n, k in enumerate(keys):
            store.facts.record(k, n, source="s")
            store.facts.record(k, n + 100, source="s", valid_from=date(2026, 1, 1))
        before = snapshot(store, keys)
    with psycopg.connect(single_node_store) as conn:
        versions = conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()
    assert versions is not None

    with psycopg.connect(single_node_store, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION citus")
        coordinator = make_url(server_url)
        conn.execute(
            "SELECT citus_set_coordinator_host(%s, %s)",
            (coordinator.host or "localhost", coordinator.port or 5432),
        )
        for worker in _citus_workers(server_url):
            url = make_url(worker)
            conn.execute("SELECT citus_add_node(%s, %s)", (url.host, url.port))
    bitemporal.migrate(single_node_store, citus=True)

    with psycopg.connect(single_node_store) as conn:
        # Read through the distributed table, i.e. from the workers' shards.
        assert conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone() == versions
        # The triggers are on again on the shards: history stays append-only.
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(
                "UPDATE bitemporal.fact_version SET value = '1' WHERE entity = %s",
                (keys[1].entity,),
            )
        assert refused.value.sqlstate == "BT006"
    with bitemporal.connect(single_node_store) as store:
        assert snapshot(store, keys) == before
        store.facts.record(keys[0], 7, source="s", valid_from=date(2026, 3, 1))
        assert store.facts.resolve(keys[0], valid_at=date(2026, 6, 1)).values == (7,)
