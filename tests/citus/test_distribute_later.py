"""On Citus: a store migrated and filled on one node is distributed later, in place, or
from its dump restored into a coordinator.

docs/citus.md, "From a single-node store": load Citus, create the extension, add the
workers, upgrade with ``--citus``. The history and the answers are the same afterwards,
the rows are on the workers' shards (the copy into them stamped nothing anew), the
append-only guard holds there, and writing goes on.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

import bitemporal
from bitemporal import Key, Store
from tests.conftest import _citus_workers, _create_citus_database, _drop_database, with_database
from tests.helpers import CITUS, pg_client

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


def fill(url: str, keys: list[Key]) -> list[object]:
    with bitemporal.connect(url) as store:
        for n, k in enumerate(keys):
            store.facts.record(k, n, source="s")
            store.facts.record(k, n + 100, source="s", valid_from=date(2026, 1, 1))
        return snapshot(store, keys)


def versions(url: str) -> object:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()


def check_distributed(url: str, keys: list[Key], before: list[object], count: object) -> None:
    """The rows read from the workers' shards are those written on one node, and the ids of
    the transactions that wrote them can never be those of a write on Citus."""
    with psycopg.connect(url) as conn:
        # Read through the distributed table, i.e. from the workers' shards.
        distributed = "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = %s::regclass"
        assert conn.execute(distributed, ("bitemporal.fact_version",)).fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone() == count
        # The triggers are on again on the shards: history stays append-only.
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(
                "UPDATE bitemporal.fact_version SET value = '1' WHERE entity = %s",
                (keys[1].entity,),
            )
        assert refused.value.sqlstate == "BT006"
    with bitemporal.connect(url) as store:
        assert snapshot(store, keys) == before
        store.facts.record(keys[0], 7, source="s", valid_from=date(2026, 3, 1))
        assert store.facts.resolve(keys[0], valid_at=date(2026, 6, 1)).values == (7,)
    # Copied: the single node's own transaction ids; written on Citus: a distributed
    # transaction's, in the upper half of xid8's range (citus_transaction_id()).
    with psycopg.connect(url) as conn:
        halves = conn.execute(
            "SELECT entity = %s, last_txid::text::numeric >= 2 ^ 62 FROM bitemporal.fact_key",
            (keys[0].entity,),
        ).fetchall()
    assert sorted(set(halves)) == [(False, False), (True, True)]


def test_a_filled_store_is_distributed_in_place(server_url: str, single_node_store: str) -> None:
    keys = [Key(f"later:{n}", "limit") for n in range(20)]
    before = fill(single_node_store, keys)
    count = versions(single_node_store)

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
    check_distributed(single_node_store, keys, before, count)


def test_a_single_node_dump_restored_into_a_coordinator_is_distributed(
    server_url: str, single_node_store: str, server_version: int, tmp_path: Path
) -> None:
    # docs/operations.md, "Backup and restore": pg_dump of the single node, pg_restore
    # into a fresh Citus database (owned by the extension's owner: --no-owner), --citus.
    keys = [Key(f"restored:{n}", "limit") for n in range(20)]
    before = fill(single_node_store, keys)
    count = versions(single_node_store)
    archive = tmp_path / "store.dump"
    subprocess.run(
        [
            pg_client("pg_dump", server_version),
            "--format=custom",
            f"--file={archive}",
            f"--dbname={single_node_store}",
        ],
        check=True,
        timeout=120,
    )
    name = f"bt_restored_{uuid.uuid4().hex[:12]}"
    _create_citus_database(server_url, name)
    try:
        url = with_database(server_url, name)
        subprocess.run(
            [
                pg_client("pg_restore", server_version),
                "--no-owner",
                "--exit-on-error",
                "--single-transaction",
                f"--dbname={url}",
                archive,
            ],
            check=True,
            timeout=120,
        )
        bitemporal.migrate(url, citus=True)
        check_distributed(url, keys, before, count)
    finally:
        _drop_database(server_url, name)
