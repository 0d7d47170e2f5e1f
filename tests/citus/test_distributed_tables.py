"""On Citus: application tables distributed by their first key column (issue 14).

``op.create_bitemporal_table(..., distributed=True)`` (``bitemporal.distribute_table(relation)``)
distributes a table and its key table, co-located. The same workload runs against a
distributed table and against one kept on the coordinator, in the same database, and
must give the same answers (version ids and instants aside); a single-key write or read
goes to the one worker holding the key; the append-only guard and the knowledge rule
hold on the shards; a table distributed with rows keeps its history as it was.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from alembic.migration import MigrationContext
from alembic.operations import Operations
from psycopg import sql
from sqlalchemy import Column, Integer, Text, create_engine

import bitemporal.alembic_ops  # noqa: F401  (registers the operations)
from bitemporal import DistributionError, Store
from bitemporal.database import sqlalchemy_url
from bitemporal.errors import KnowledgeTimeError, UnknownTableError
from tests.helpers import CITUS, RemoteCommands

pytestmark = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")

JAN = datetime(2026, 1, 1, tzinfo=UTC)
MAR = datetime(2026, 3, 1, tzinfo=UTC)
JUN = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def url(migrated_database_url: str) -> Iterator[str]:
    """A store with two tables of one shape: ``public.spread``, distributed with
    ``op.create_bitemporal_table(..., distributed=True)``, and ``public.local``, kept on
    the coordinator."""
    engine = create_engine(sqlalchemy_url(migrated_database_url))
    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        for name, distributed in (("spread", True), ("local", False)):
            op.create_bitemporal_table(  # type: ignore[attr-defined]
                name,
                Column("id", Integer),
                Column("region", Text),
                Column("email", Text),
                key=["id", "region"],
                distributed=distributed,
            )
    engine.dispose()
    yield migrated_database_url


@pytest.fixture
def conn(url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(url, autocommit=True) as conn:
        yield conn


def test_the_table_and_its_key_table_are_distributed_by_the_first_key_column(
    conn: psycopg.Connection[Any],
) -> None:
    rows = conn.execute(
        "SELECT logicalrelid::regclass::text, column_to_column_name(logicalrelid, partkey),"
        "       colocationid FROM pg_dist_partition"
        " WHERE logicalrelid::regclass::text IN ('spread', 'spread_key', 'local', 'local_key')"
        " ORDER BY 1"
    ).fetchall()
    assert [(r[0], r[1]) for r in rows] == [("spread", "id"), ("spread_key", "id")]
    assert rows[0][2] == rows[1][2]  # co-located
    primary_key = conn.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE conrelid = 'spread'::regclass AND contype = 'p'"
    ).fetchone()
    assert primary_key == ("PRIMARY KEY (id, version_id)",)


def _workload(store: Store, table: str) -> None:
    t = store.app_tables
    for i in range(1, 9):
        t.record(table, {"id": i, "region": "eu", "email": f"{i}@a"}, valid_from=JAN)
    t.record(table, {"id": 1, "region": "eu", "email": "1@b"}, valid_from=MAR)  # a split
    t.record(table, {"id": 2, "region": "eu", "email": "2@a"}, valid_from=JAN)  # a no-op
    t.retract(table, {"id": 3, "region": "eu"}, valid_from=JUN)
    with store.transaction():
        # Several writes to one key in one transaction, and to another key.
        t.record(table, {"id": 4, "region": "eu", "email": "4@b"}, valid_from=MAR)
        t.record(table, {"id": 4, "region": "eu", "email": "4@c"}, valid_from=MAR)
        t.record(table, {"id": 5, "region": "us", "email": "5@us"})
    t.erase(table, {"id": 6, "region": "eu"}, reason="ticket 17")


def _answers(store: Store, table: str) -> dict[str, Any]:
    t = store.app_tables

    def versions(vs: list[Any]) -> list[Any]:
        return [
            (v.row, v.valid_period.start, v.valid_period.end, v.known_period.end is None)
            for v in vs
        ]

    keys = [{"id": i, "region": r} for i in range(1, 9) for r in ("eu", "us")]
    return {
        "as_of": [versions(t.as_of(table, k, valid_at=MAR)) for k in keys],
        "as_of_june": [versions(t.as_of(table, k, valid_at=JUN)) for k in keys],
        "all": sorted(map(repr, versions(t.as_of(table, valid_at=MAR)))),
        "history": [versions(t.history(table, {"id": i, "region": "eu"})) for i in range(1, 9)],
        "erased": [v.erased for v in t.history(table, {"id": 6, "region": "eu"})],
        "changes": sorted(c.change.value for c in t.changes(table)),
    }


def test_a_distributed_table_answers_as_one_on_the_coordinator(
    conn: psycopg.Connection[Any],
) -> None:
    store = Store(conn)
    for table in ("public.spread", "public.local"):
        _workload(store, table)
    spread, local = _answers(store, "public.spread"), _answers(store, "public.local")
    assert spread == local
    assert spread["erased"] == [True]
    assert spread["as_of"][0][0][0]["email"] == "1@b"  # the split's later part, at March
    assert spread["as_of"][6][0][0]["email"] == "4@c"  # the last write of the transaction
    # The sequel of the transaction: one knowledge time, the first write of it removed.
    history = store.app_tables.history("public.spread", {"id": 4, "region": "eu"})
    assert [v.row["email"] for v in history] == ["4@a", "4@a", "4@c"]
    # The SQL functions answer the same too (as_of in the form Citus can plan).
    assert (
        conn.execute("SELECT count(*) FROM spread_as_of(%s) WHERE id = 1", (MAR,)).fetchone()
        == conn.execute("SELECT count(*) FROM local_as_of(%s) WHERE id = 1", (MAR,)).fetchone()
    )


def _placement(conn: psycopg.Connection[Any], table: str, value: int) -> tuple[int, str]:
    row = conn.execute(
        "SELECT s.shardid, n.nodename || ':' || n.nodeport"
        "  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)"
        "  JOIN pg_dist_node n USING (groupid)"
        " WHERE s.shardid = get_shard_id_for_distribution_column(%s, %s::integer)",
        (table, value),
    ).fetchone()
    assert row is not None
    return row[0], row[1]


@pytest.mark.parametrize("value", [1, 2, 3, 4])
def test_a_single_key_write_and_read_go_to_the_worker_holding_the_key(
    conn: psycopg.Connection[Any], value: int
) -> None:
    store = Store(conn)
    table = "public.spread"
    store.app_tables.record(table, {"id": value, "region": "eu", "email": "a"}, valid_from=JAN)
    shard, worker = _placement(conn, "spread", value)
    key_shard, _ = _placement(conn, "spread_key", value)
    key = {"id": value, "region": "eu"}

    def calls() -> None:
        store.app_tables.record(table, {**key, "email": "b"}, valid_from=MAR)
        store.app_tables.as_of(table, key, valid_at=MAR)
        store.app_tables.history(table, key)
        store.app_tables.erase(table, key, reason="ticket 9")

    sent = RemoteCommands(conn).during(calls)
    # The erasure's row goes to every node (bitemporal.erasures is a reference table);
    # every statement about the table goes to the key's worker.
    about_table = [(c, w) for c, w in sent if "spread" in c]
    assert about_table
    assert {w for _, w in about_table} == {worker}, about_table
    named = {int(n) for c, _ in sent for n in re.findall(r"spread(?:_key)?_(\d+)", c)}
    assert named <= {shard, key_shard}, sent
    updates = [c for c, _ in sent if re.match(r"\s*(WITH|UPDATE|DELETE)", c)]
    # Each names the key's distribution column (Citus deparses = as OPERATOR(pg_catalog.=)).
    named_key = re.compile(r"\(id OPERATOR\(pg_catalog\.=\) ")
    assert updates and all(named_key.search(c) for c in updates), updates


def test_a_single_key_write_commits_in_one_phase(conn: psycopg.Connection[Any]) -> None:
    """Every version a write inserts goes by value (migration 0023), and a new key's row
    (0030): an INSERT ... SELECT reached the shard by COPY, and Citus commits a transaction
    that copied in two phases."""
    store = Store(conn)
    table, key = "public.spread", {"id": 7, "region": "eu"}
    remote = RemoteCommands(conn)
    for write in (
        lambda: store.app_tables.record(table, {**key, "email": "a"}, valid_from=JAN),
        lambda: store.app_tables.record(table, {**key, "email": "b"}, valid_from=MAR, valid_to=JUN),
        lambda: store.app_tables.retract(table, key, valid_from=JUN),
    ):
        sent = remote.during(write)
        assert sent[-1][0] == "COMMIT", sent
        assert not [c for c, _ in sent if c.startswith(("COPY", "PREPARE"))], sent
        assert len({w for _, w in sent}) == 1, sent
    assert [
        (v.row["email"], v.valid_period.start, v.valid_period.end, v.carried_from is not None)
        for v in store.app_tables.history(table, key)
        if v.known_period.end is None
    ] == [("a", JAN, MAR, True), ("b", MAR, JUN, False)]


def test_the_guard_and_the_knowledge_rule_hold_on_the_shards(
    conn: psycopg.Connection[Any],
) -> None:
    store = Store(conn)
    store.app_tables.record("public.spread", {"id": 1, "region": "eu", "email": "a"})
    for statement in (
        "UPDATE spread SET email = 'forged' WHERE id = 1",
        "DELETE FROM spread WHERE id = 1",
        "TRUNCATE spread",
    ):
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(statement)
        assert refused.value.sqlstate == "BT006", statement
    with pytest.raises(psycopg.Error) as refused:
        # A version known from before the key's latest knowledge.
        conn.execute(
            "INSERT INTO spread (id, region, email, valid_period, known_period)"
            " VALUES (1, 'eu', 'back-dated', '[,)', tstzrange('2020-01-01', NULL))"
        )
    assert refused.value.sqlstate == "BT006"
    with pytest.raises(KnowledgeTimeError):
        Store(conn).app_tables.record(
            "public.spread", {"id": 1, "region": "eu", "email": "b"}, known_at=JAN
        )
    assert [
        v.row["email"] for v in store.app_tables.history("public.spread", {"id": 1, "region": "eu"})
    ] == ["a"]


def test_a_table_distributed_with_rows_keeps_its_history(conn: psycopg.Connection[Any]) -> None:
    store = Store(conn)
    conn.execute("CREATE TABLE later (id integer, note text)")
    conn.execute("SELECT bitemporal.enable_table('later', ARRAY['id'])")
    for i in range(1, 6):
        store.app_tables.record("public.later", {"id": i, "note": "first"}, valid_from=JAN)
        store.app_tables.record("public.later", {"id": i, "note": "second"}, valid_from=MAR)
    before = conn.execute("SELECT * FROM later ORDER BY version_id").fetchall()
    keys_before = conn.execute("SELECT * FROM later_key ORDER BY id").fetchall()
    _distribute(conn, "later")
    _distribute(conn, "later")  # idempotent
    assert conn.execute("SELECT * FROM later ORDER BY version_id").fetchall() == before
    assert conn.execute("SELECT * FROM later_key ORDER BY id").fetchall() == keys_before
    assert conn.execute(
        "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'later'::regclass"
    ).fetchone() == (1,)
    store.app_tables.record("public.later", {"id": 1, "note": "third"}, valid_from=JUN)
    assert [
        v.row["note"] for v in store.app_tables.as_of("public.later", {"id": 1}, valid_at=JUN)
    ] == ["third"]


def _url(conn: psycopg.Connection[Any]) -> str:
    info = conn.info
    return f"postgresql://{info.host}:{info.port}/{info.dbname}"


def test_refresh_keeps_a_distributed_tables_as_of_plannable(
    conn: psycopg.Connection[Any],
) -> None:
    store = Store(conn)
    store.app_tables.record("public.spread", {"id": 1, "region": "eu", "email": "a"})
    conn.execute("ALTER TABLE spread ADD COLUMN phone text")
    conn.execute("SELECT bitemporal.refresh_table('spread')")
    Store(conn).app_tables.record(
        "public.spread", {"id": 1, "region": "eu", "email": "a", "phone": "555"}
    )
    assert conn.execute("SELECT phone FROM spread_as_of() WHERE id = 1").fetchall() == [("555",)]


def test_what_cannot_be_distributed_is_refused_and_nothing_changes(
    conn: psycopg.Connection[Any],
) -> None:
    conn.execute("CREATE TABLE plain_table (id integer)")
    with pytest.raises(UnknownTableError):
        _distribute(conn, "plain_table")
    conn.execute("SELECT bitemporal.add_reference('local', ARRAY['id', 'region'], 'local')")
    with pytest.raises(DistributionError, match="temporal references"):
        _distribute(conn, "local")
    assert conn.execute(
        "SELECT count(*) FROM pg_dist_partition"
        " WHERE logicalrelid IN ('local'::regclass, 'plain_table'::regclass)"
    ).fetchone() == (0,)
    # Nor does a distributed table take a reference to one on the coordinator
    # (tests/citus/test_distributed_references.py: between distributed tables).
    with pytest.raises(psycopg.Error, match="spread is distributed and public.local is not") as e:
        conn.execute("SELECT bitemporal.add_reference('spread', ARRAY['id', 'region'], 'local')")
    assert e.value.sqlstate == "BT502"
    assert conn.execute("SELECT count(*) FROM bitemporal.app_reference").fetchone() == (1,)


def _distribute(conn: psycopg.Connection[Any], table: str) -> None:
    """``op.distribute_bitemporal_table(table)`` in a migration of its own."""
    engine = create_engine(sqlalchemy_url(_url(conn)))
    try:
        with engine.begin() as sa_conn:
            op = Operations(MigrationContext.configure(sa_conn))
            op.distribute_bitemporal_table(table)  # type: ignore[attr-defined]
    finally:
        engine.dispose()


def test_a_reader_reads_a_distributed_tables_versions_and_erasures(
    conn: psycopg.Connection[Any], url: str
) -> None:
    """A query routed to a worker reads the erasures there with the reader's privileges:
    ``grant_roles`` gives the reader the columns the view ``table_erasures`` shows."""
    store = Store(conn)
    store.app_tables.record("public.spread", {"id": 1, "region": "eu", "email": "a"})
    store.app_tables.erase("public.spread", {"id": 1, "region": "eu"}, reason="ticket 3")
    reader = f"bt_dt_reader_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(reader)))
    try:
        conn.execute(
            "SELECT bitemporal.grant_roles(reader => %s, writer => NULL,"
            " auditor => NULL, eraser => NULL)",
            (reader,),
        )
        conn.execute(sql.SQL("GRANT SELECT ON spread TO {}").format(sql.Identifier(reader)))
        with psycopg.connect(url, user=reader, autocommit=True) as as_reader:
            versions = Store(as_reader).app_tables.as_of("public.spread", {"id": 1, "region": "eu"})
            assert [(v.row["email"], v.erased) for v in versions] == [(None, True)]
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                as_reader.execute("SELECT reason FROM bitemporal.erasures")
    finally:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(reader)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(reader)))
