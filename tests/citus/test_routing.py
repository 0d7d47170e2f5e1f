"""On Citus: the store is distributed by entity, and a single-key call stays on one worker.

What ``citus.log_remote_commands`` shows for each call of the Python API is the whole of
what the coordinator sent to the workers: every statement of a single-key read or write
must go to the worker holding the key, and name only that key's shards. The reads
(``as_of``, ``history``, ``resolve`` as SQL asks it, and the Python API's ``resolve``, which
asks ``resolve_versions`` for the versions its answer rests on too) are one command; a
write's statements, and its commit (in one phase), go there too (writes are not delegated:
they announce their knowledge time on the coordinator, where ``settled_knowledge_time``
looks for it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from typing import Any

import psycopg
import pytest

from bitemporal import Key, Store
from tests.helpers import CITUS, Connect, RemoteCommands

pytestmark = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")

_SHARD = re.compile(r"bitemporal\.(fact_key|fact_version)_(\d+)")


@pytest.fixture
def conn(connect: Connect) -> Iterator[psycopg.Connection[Any]]:
    yield connect()


def placement(conn: psycopg.Connection[Any], table: str, entity: str) -> tuple[int, str]:
    """The shard of ``table`` holding ``entity``, and the worker holding it."""
    row = conn.execute(
        "SELECT s.shardid, n.nodename || ':' || n.nodeport"
        "  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)"
        "  JOIN pg_dist_node n USING (groupid)"
        " WHERE s.shardid = get_shard_id_for_distribution_column(%s, %s::text)",
        (table, entity),
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def test_the_store_is_distributed_by_entity_and_co_located(
    conn: psycopg.Connection[Any],
) -> None:
    rows = conn.execute(
        "SELECT logicalrelid::regclass::text, partmethod, colocationid,"
        "       column_to_column_name(logicalrelid, partkey)"
        "  FROM pg_dist_partition JOIN pg_class c ON c.oid = logicalrelid"
        " WHERE c.relnamespace = 'bitemporal'::regnamespace AND NOT c.relispartition"
        " ORDER BY 1"
    ).fetchall()
    kinds = {name: (method, column) for name, method, _, column in rows}
    assert kinds == {
        "bitemporal.erasures": ("n", None),
        "bitemporal.fact_key": ("h", "entity"),
        "bitemporal.fact_version": ("h", "entity"),
    }
    colocation = {name: group for name, _, group, _ in rows}
    assert colocation["bitemporal.fact_key"] == colocation["bitemporal.fact_version"]
    delegated = conn.execute(
        "SELECT objid::regprocedure::text, distribution_argument_index"
        "  FROM pg_dist_object WHERE classid = 'pg_proc'::regclass"
        "   AND distribution_argument_index IS NOT NULL ORDER BY 1"
    ).fetchall()
    assert [name.split("(")[0] for name, _ in delegated] == [
        "bitemporal.as_of",
        "bitemporal.history",
        "bitemporal.resolve",
        "bitemporal.resolve_versions",
    ]
    assert {index for _, index in delegated} == {0}


def test_keys_spread_over_both_workers(conn: psycopg.Connection[Any]) -> None:
    workers = {placement(conn, "bitemporal.fact_version", f"spread:{n}")[1] for n in range(40)}
    assert len(workers) == 2


def _single_worker(
    commands: list[tuple[str, str]], conn: psycopg.Connection[Any], key: Key
) -> None:
    key_shard, worker = placement(conn, "bitemporal.fact_key", key.entity)
    version_shard, _ = placement(conn, "bitemporal.fact_version", key.entity)
    assert commands, "nothing was sent to a worker"
    assert {server for _, server in commands} == {worker}, commands
    shards = {int(m[2]) for command, _ in commands for m in _SHARD.finditer(command)}
    assert shards <= {key_shard, version_shard}, commands


def test_single_key_reads_are_one_command_on_the_keys_worker(
    conn: psycopg.Connection[Any], key: Key
) -> None:
    store = Store(conn)
    store.facts.record(key, 1, source="s")
    store.facts.record(key, 2, source="s", valid_from=date(2026, 1, 1))
    remote = RemoteCommands(conn)
    for read in (
        lambda: store.facts.as_of(key),
        lambda: store.facts.history(key),
        # The answer and its versions in one call (migration 0025; three commands before).
        lambda: store.facts.resolve(key),
    ):
        commands = remote.during(read)
        _single_worker(commands, conn, key)
        assert len(commands) == 1, commands


def test_resolve_in_sql_is_one_command_on_the_keys_worker(
    conn: psycopg.Connection[Any], key: Key
) -> None:
    """``SELECT bitemporal.resolve(...)`` (as psql asks it) is delegated whole to the worker
    holding the key, and answers what the Python API answers."""
    store = Store(conn)
    store.facts.record(key, 1, source="a")
    store.facts.record(key, 2, source="b")
    remote = RemoteCommands(conn)
    rows: list[Any] = []
    commands = remote.during(
        lambda: rows.extend(
            conn.execute(
                "SELECT bitemporal.resolve(%s, %s)", (key.entity, key.attribute)
            ).fetchall()
        )
    )
    _single_worker(commands, conn, key)
    assert len(commands) == 1 and "bitemporal.resolve(" in commands[0][0], commands
    status, values = conn.execute(
        "SELECT (r).status::text, (r).values FROM (SELECT %s::bitemporal.answer AS r) a",
        (rows[0][0],),
    ).fetchone() or (None, None)
    answer = store.facts.resolve(key)
    assert (status, values) == (answer.status.value, list(answer.values))


def test_single_key_writes_go_to_the_keys_worker_alone(
    conn: psycopg.Connection[Any], key: Key
) -> None:
    store = Store(conn)
    store.facts.record(key, 1, source="s")
    remote = RemoteCommands(conn)
    sent: list[tuple[str, str]] = []
    start, end = date(2026, 1, 10), date(2026, 1, 20)  # an interior change
    # Each write's statements that change versions: one UPDATE for the version it ends,
    # and its remainders and new version in one INSERT (migration 0027).
    for write, changes in (
        (lambda: store.facts.record(key, 2, source="s", valid_from=date(2026, 1, 1)), 2),
        (lambda: store.facts.record(key, 3, source="s", valid_from=start, valid_to=end), 2),
        # Already known: a no-op, which reads as much and writes nothing.
        (lambda: store.facts.record(key, 3, source="s", valid_from=start, valid_to=end), 0),
        # Inside the version valid from the 20th: both of its remainders in one INSERT.
        (
            lambda: store.facts.retract(
                key, source="s", valid_from=date(2026, 3, 1), valid_to=date(2026, 3, 2)
            ),
            2,
        ),
    ):
        commands = remote.during(write)
        _single_worker(commands, conn, key)
        # Committed in one phase: the remainders go by value, not by COPY, which Citus
        # commits with PREPARE TRANSACTION and COMMIT PREPARED (migration 0023).
        assert commands[-1][0] == "COMMIT", commands
        assert not [c for c, _ in commands if c.startswith(("COPY", "PREPARE"))], commands
        # The versions a write may cut are read once, the no-op test included (0024).
        reads = [c for c, _ in commands if c.startswith("SELECT") and "fact_version_" in c]
        assert len(reads) == 1, commands
        written = [c for c, _ in commands if c.startswith(("INSERT", "UPDATE", "DELETE"))]
        assert len(written) == changes, commands
        sent += commands
    # Every update and delete of a version names its entity: routed, never multi-shard.
    modifying = [c for c, _ in sent if c.startswith(("UPDATE", "DELETE"))]
    assert any(c.startswith("UPDATE bitemporal.fact_version") for c in modifying), modifying
    assert all("entity" in c for c in modifying), modifying
    # The key's latest knowledge is moved on the worker, by the knowledge trigger of the
    # versions written, and not sent again (migration 0022).
    assert not [c for c in modifying if c.startswith("UPDATE bitemporal.fact_key")], modifying


def test_a_key_lookup_is_a_router_plan(conn: psycopg.Connection[Any], key: Key) -> None:
    Store(conn).facts.record(key, 1, source="s")
    plan = "\n".join(
        row[0]
        for row in conn.execute(
            "EXPLAIN SELECT * FROM bitemporal.as_of(%s, %s)", (key.entity, key.attribute)
        )
    )
    assert "Task Count: 1" in plan, plan


@pytest.mark.parametrize("shards", [0, 64001])
def test_distribute_refuses_a_shard_count_out_of_range_and_changes_nothing(
    conn: psycopg.Connection[Any], shards: int
) -> None:
    before = conn.execute(
        "SELECT count(*) FROM pg_dist_shard"
        " WHERE logicalrelid = 'bitemporal.fact_version'::regclass"
    ).fetchone()
    with pytest.raises(psycopg.Error) as refused:
        conn.execute("SELECT bitemporal.distribute(%s)", (shards,))
    assert refused.value.sqlstate == "BT502"
    assert "shard_count must be from 1 to 64000" in str(refused.value)
    after = conn.execute(
        "SELECT count(*) FROM pg_dist_shard"
        " WHERE logicalrelid = 'bitemporal.fact_version'::regclass"
    ).fetchone()
    assert after == before
