"""A stored writer transaction id is one this cluster has assigned (migration 0041).

A row arriving with an id ahead of the cluster's, as rows copied from another cluster do,
is refused (``BT503``), for the owner too and with the triggers off, as logical
replication's apply runs them; a store restored into another cluster before 0041 stops
its upgrade. tests/migrations/test_dump_restore.py restores a dump into a new cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from bitemporal import ForeignTransactionIdError, Key, Store, migrations
from bitemporal.errors import error_for

pytestmark = pytest.mark.not_on_citus(
    "on a database with the citus extension the check is always true: the distributed "
    "write path stores Citus's transaction ids (docs/citus.md)"
)

# An id this cluster will not reach during the test.
AHEAD = "(pg_current_xact_id()::text::bigint + 1000000)::text::xid8"

# Each stored id, written as a copy would write it: the row whole, triggers off.
COPIES = {
    "bitemporal.fact_key": "INSERT INTO bitemporal.fact_key (entity, attribute, first_known_at, "
    f"last_known_at, last_txid) VALUES ('copied', 'a', now(), now(), {AHEAD})",
    "bitemporal.fact_version": "INSERT INTO bitemporal.fact_version (entity, attribute, key_id, "
    "source, value, valid_period, known_period, recorded_in) SELECT entity, attribute, key_id, "
    f"'copied', '1', tstzrange(NULL, NULL), tstzrange(now(), NULL), {AHEAD} "
    "FROM bitemporal.fact_key",
    "bitemporal.erasures": "INSERT INTO bitemporal.erasures (reason, scope, relation, key, "
    f"version_ids, recorded_in) VALUES ('copied', 'table', 'product', '{{}}', '{{}}', {AHEAD})",
    "product": "INSERT INTO product (sku, price, valid_period, known_period, recorded_in) "
    f"VALUES ('a', 1, tstzrange(NULL, NULL), tstzrange(now(), NULL), {AHEAD})",
    "product_key": "INSERT INTO product_key (sku, first_known_at, last_known_at, last_txid) "
    f"VALUES ('b', now(), now(), {AHEAD})",
}


def refused(conn: psycopg.Connection[Any], statement: str) -> ForeignTransactionIdError:
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(statement)
    error = error_for(caught.value)
    assert isinstance(error, ForeignTransactionIdError), error
    return error


@pytest.mark.parametrize("table", COPIES)
def test_a_row_with_an_id_ahead_of_the_cluster_is_refused(
    table: str, migrated_database_url: str
) -> None:
    with psycopg.connect(migrated_database_url, autocommit=True) as conn:
        Store(conn).facts.record(Key("copy", "a"), 1, source="s")
        # Made bitemporal after the migration: the registry's trigger adds its checks.
        conn.execute("CREATE TABLE product (sku text, price int)")
        conn.execute("SELECT bitemporal.enable_table('product', ARRAY['sku'])")
        conn.execute("INSERT INTO product_key VALUES ('a', now(), now(), pg_current_xact_id())")
        before = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        # As logical replication's apply worker writes, and pg_restore before the
        # triggers exist: no trigger stamps the id anew.
        conn.execute("SET session_replication_role = replica")
        error = refused(conn, COPIES[table])
        assert "was not assigned by this cluster" in error.message
        assert error.hint is not None and "docs/operations.md" in error.hint
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == before
        # The cluster's own id, and an earlier one, are the cluster's: accepted.
        conn.execute("BEGIN")
        conn.execute(COPIES[table].replace(AHEAD, "pg_current_xact_id()"))
        conn.execute("ROLLBACK")


def test_an_update_keeping_an_id_ahead_is_refused_too(
    connect: Callable[..., psycopg.Connection[Any]],
) -> None:
    conn = connect()
    conn.execute("SET session_replication_role = replica")
    conn.execute("BEGIN")
    conn.execute(COPIES["bitemporal.fact_key"].replace(AHEAD, "pg_current_xact_id()"))
    refused(conn, f"UPDATE bitemporal.fact_key SET last_txid = {AHEAD} WHERE entity = 'copied'")
    conn.execute("ROLLBACK")


def test_an_id_assigned_after_this_snapshot_was_taken_is_the_clusters(
    connect: Callable[..., psycopg.Connection[Any]],
) -> None:
    """A transaction that began later may commit first; one whose snapshot is older then
    writes beside its id (a key's row it waited for), above that snapshot's horizon.
    Not a copy: accepted (the check asks the cluster's counter)."""
    conn, other = connect(), connect()
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    conn.execute("SELECT 1")  # the snapshot
    later = other.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
    assert later is not None
    conn.execute("SET LOCAL session_replication_role = replica")
    horizon = conn.execute(
        "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint"
    ).fetchone()
    assert horizon is not None and later[0] >= horizon[0]
    conn.execute(COPIES["bitemporal.fact_key"].replace(AHEAD, "%s::text::xid8"), (str(later[0]),))
    conn.execute("ROLLBACK")


def test_a_store_holding_an_id_ahead_stops_the_upgrade_until_the_cluster_passes_it(
    empty_database_url: str,
) -> None:
    url = empty_database_url
    migrations.migrate(url, "0040")
    with psycopg.connect(url, autocommit=True) as conn:
        Store(conn).facts.record(Key("restored", "a"), 1, source="s")
        # As a store restored into another cluster before 0041 holds it.
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            "UPDATE bitemporal.fact_key"
            " SET last_txid = (pg_current_xact_id()::text::bigint + 50)::text::xid8"
        )
    with pytest.raises(ForeignTransactionIdError):
        migrations.migrate(url)
    assert migrations.current(url) == "0040"
    with psycopg.connect(url, autocommit=True) as conn:
        # docs/operations.md's remedy, in short: this cluster's ids past the stored one.
        for _ in range(60):
            conn.execute("SELECT pg_current_xact_id()")
    migrations.migrate(url)
    assert migrations.current(url) == migrations.head()
    with psycopg.connect(url, autocommit=True) as conn:
        assert Store(conn).facts.resolve(Key("restored", "a")).value == 1
