"""On Citus: the store is distributed by entity, and a single-key call stays on one worker.

What ``citus.log_remote_commands`` shows for each call of the Python API is the whole of
what the coordinator sent to the workers: every statement of a single-key read or write
must go to the worker holding the key, and name only that key's shards. The reads
(``as_of``, ``history``, ``resolve`` as SQL asks it, and the Python API's ``resolve``, which
asks ``resolve_versions`` for the versions its answer rests on too) are one command; so is
what a write does to its key (``bitemporal_internal.write_key``, delegated inside the
write's transaction, after it announced its knowledge time on the coordinator, where
``settled_knowledge_time`` looks for it), then its commit, in one phase.
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
        "SELECT objid::regprocedure::text, distribution_argument_index,"
        "       coalesce(force_delegation, false)"
        "  FROM pg_dist_object WHERE classid = 'pg_proc'::regclass"
        "   AND distribution_argument_index IS NOT NULL ORDER BY 1"
    ).fetchall()
    # The reads, and the write that record and retract call inside their transaction,
    # which only a forced delegation reaches there (migration 0028).
    assert [(name.split("(")[0], forced) for name, _, forced in delegated] == [
        ("bitemporal.as_of", False),
        ("bitemporal.as_of_planned", False),
        ("bitemporal.history", False),
        ("bitemporal.resolve", False),
        ("bitemporal.resolve_versions", False),
        ("bitemporal_internal.write_key", True),
    ]
    assert {index for _, index, _ in delegated} == {0}


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


def test_as_of_on_a_connection_that_never_prepares_is_one_command(
    conn: psycopg.Connection[Any], key: Key
) -> None:
    """Where psycopg never prepares, the API's ``as_of`` asks ``as_of_planned``
    (migration 0037), which ``distribute()`` delegates as it delegates ``as_of``."""
    store = Store(conn)
    store.facts.record(key, 1, source="s")
    expected = store.facts.as_of(key)
    conn.prepare_threshold = None
    remote = RemoteCommands(conn)
    versions: list[Any] = []
    commands = remote.during(lambda: versions.extend(store.facts.as_of(key)))
    _single_worker(commands, conn, key)
    assert len(commands) == 1 and "as_of_planned(" in commands[0][0], commands
    assert versions == expected


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
    start, end = date(2026, 1, 10), date(2026, 1, 20)  # an interior change
    for write, changed in (
        (lambda: store.facts.record(key, 2, source="s", valid_from=date(2026, 1, 1)).created, True),
        (
            lambda: store.facts.record(key, 3, source="s", valid_from=start, valid_to=end).created,
            True,
        ),
        # Already known: a no-op.
        (
            lambda: store.facts.record(key, 3, source="s", valid_from=start, valid_to=end).created,
            False,
        ),
        # Inside the version valid from the 20th.
        (
            lambda: bool(
                store.facts.retract(
                    key, source="s", valid_from=date(2026, 3, 1), valid_to=date(2026, 3, 2)
                )
            ),
            True,
        ),
    ):
        result: list[object] = []
        commands = remote.during(lambda w=write, r=result: r.append(w()))  # type: ignore[misc]
        assert result == [changed]
        _single_worker(commands, conn, key)
        # Everything the write does to the key is one delegated call on the key's worker
        # (migration 0028: it was a command per statement, five for an interior change),
        # committed in one phase, never with PREPARE TRANSACTION and COMMIT PREPARED.
        work = [c for c, _ in commands if not c.startswith(("BEGIN", "COMMIT"))]
        assert len(work) == 1 and "bitemporal_internal.write_key(" in work[0], commands
        assert commands[-1][0] == "COMMIT", commands
        assert not [c for c, _ in commands if c.startswith(("COPY", "PREPARE"))], commands


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
