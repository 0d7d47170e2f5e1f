"""On Citus: an answer is read from one snapshot, so answers at a settled time never change.

``resolve`` read the key's ``last_known_at`` and then, for current knowledge, its open
versions, in two statements. On Citus each statement of a function run on the coordinator
is its own query on the worker, with a snapshot of its own: a write that closed a version,
committed between them, left that version out of the answer, and the load test's "past
answers changed" now and then (issue 14). Here the interleaving is forced: the reader's
query of the versions waits on the worker, queued behind a lock that waits for the writer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from bitemporal import Answer, Key, Store, Version
from tests.citus.test_routing import placement
from tests.helpers import CITUS, Connect

pytestmark = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")


def _waiting(worker: psycopg.Connection[Any], shard: str) -> int:
    """How many lock requests on ``shard`` wait on the worker."""
    row = worker.execute(
        "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = to_regclass(%s)",
        (shard,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_write_committed_while_resolve_reads_is_all_or_nothing_in_its_answer(
    connect: Connect, key: Key
) -> None:
    conn = connect()
    store = Store(conn)
    first = store.facts.record(key, 1, source="s")
    known_at = first.known_at
    assert known_at is not None
    shard_id, node = placement(conn, "bitemporal.fact_version", key.entity)
    shard = f"bitemporal.fact_version_{shard_id}"
    host, port = node.split(":")
    worker = psycopg.connect(
        host=host, port=port, dbname=conn.info.dbname, user=conn.info.user, autocommit=True
    )
    locker = psycopg.connect(host=host, port=port, dbname=conn.info.dbname, user=conn.info.user)
    locker.execute("SET citus.enable_manual_changes_to_shards = on")  # a shard's lock
    # A writer closes the version known at known_at (from a later time), and holds its
    # transaction open.
    writer = connect(autocommit=False)
    assert Store(writer).facts.record(key, 2, source="s").known_at > known_at  # type: ignore[operator]
    answers: list[Answer] = []
    errors: list[BaseException] = []

    def lock() -> None:
        locker.execute(f"LOCK TABLE {shard} IN ACCESS EXCLUSIVE MODE")
        locker.commit()

    def run(work: Callable[[], object]) -> threading.Thread:
        def target() -> None:
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        thread = threading.Thread(target=target)
        thread.start()
        return thread

    try:
        # The lock waits for the writer; the reader's queries on the versions' shard
        # queue behind it (its query of the key's shard does not).
        locking = run(lock)
        _until(lambda: _waiting(worker, shard) == 1, "the lock to queue")
        reading = run(lambda: answers.append(store.facts.resolve(key, known_at=known_at)))
        _until(lambda: _waiting(worker, shard) == 2, "the reader to queue")
        writer.commit()
        for thread in (locking, reading):
            thread.join(timeout=30)
    finally:
        writer.rollback()
        locker.close()
        worker.close()
    assert not errors, errors
    # Known at known_at, whether the writer's commit is in the reader's snapshot or not.
    (answer,) = answers
    assert answer.values == (1,), answer
    assert [v.version_id for v in answer.versions] == [first.version_id]
    # Asked again, the same answer on the same versions. A version's known period is what
    # the store knows of it now: read before the writer's commit (a delegated call's
    # snapshot, migration 0025), version 1 was still open; the writer has closed it since.
    again = store.facts.resolve(key, known_at=known_at)
    assert again.values == answer.values
    assert [_at_known_at(v) for v in again.versions] == [_at_known_at(v) for v in answer.versions]


def _at_known_at(version: Version) -> tuple[object, ...]:
    """What a version says at a past knowledge time: all but its known period's end."""
    return (
        version.version_id,
        version.source,
        version.value,
        version.valid_period,
        version.known_period.start,
    )
