"""A settled knowledge time: answers asked at it never change (issue 11, finding 8).

The README's earlier recipe, ``least(now(), min(xact_start))`` over ``pg_stat_activity``,
missed transactions that had started but not yet reported their start, and hid other roles'
transactions from a reader that is not a superuser. These tests ask as a reader role that is
not a superuser while writers of another role hold open transactions.

Each test has a database of its own: settling closes knowledge up to the time returned, which
would refuse the back-dated writes other tests make.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bitemporal import Key, KnowledgeTimeInPastError, RecordRow, Store


@pytest.fixture
def url(migrated_database_url: str) -> str:
    return migrated_database_url


@pytest.fixture
def roles(url: str) -> Iterator[tuple[str, str]]:
    """A reader and a writer login role (not superusers), unique on the cluster."""
    suffix = uuid.uuid4().hex[:8]
    reader, writer = f"bt_test_settle_r_{suffix}", f"bt_test_settle_w_{suffix}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN IN ROLE bitemporal_reader").format(sql.Identifier(reader))
        )
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN IN ROLE bitemporal_writer").format(sql.Identifier(writer))
        )
    yield reader, writer
    with psycopg.connect(url, autocommit=True) as admin:
        for role in (reader, writer):
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def answers(store: Store, keys: list[Key], known_at: datetime) -> list[Any]:
    return [
        (v.version_id, v.value) for key in keys for v in store.facts.as_of(key, known_at=known_at)
    ]


def test_open_writes_of_another_role_are_not_settled(url: str, roles: tuple[str, str]) -> None:
    reader_role, writer_role = roles
    keys = [Key(f"settle:{i}", "a") for i in range(5)]
    with psycopg.connect(url, user=writer_role, autocommit=True) as setup:
        for key in keys:
            Store(setup).facts.record(key, 0, source="s")
    writers = [psycopg.connect(url, user=writer_role) for _ in keys[:4]]
    late = psycopg.connect(url, user=writer_role)
    try:
        # Open transactions that wrote, and one that started but writes only after the call.
        written = [
            Store(w).facts.record(key, 1, source="s").known_at
            for w, key in zip(writers, keys, strict=False)
        ]
        late.execute("SELECT 1")
        time.sleep(0.01)
        with psycopg.connect(url, user=reader_role, autocommit=True) as conn:
            reader = Store(conn)
            # What the earlier recipe said, as this reader: it does not see the writers.
            recipe = conn.execute(
                "SELECT least(now(), min(xact_start)) FROM pg_stat_activity "
                "WHERE datname = current_database()"
            ).fetchone()[0]  # type: ignore[index]
            settled = reader.facts.settled_knowledge_time()
            assert all(t is not None and settled < t for t in written)
            assert recipe > min(t for t in written if t is not None)  # the recipe was unsound here
            before = answers(reader, keys, settled)
            late_write = Store(late).facts.record(keys[4], 2, source="s")
            assert late_write.known_at is not None and late_write.known_at > settled
            for w in [*writers, late]:
                w.commit()
            assert answers(reader, keys, settled) == before
            assert answers(reader, keys, datetime.now(UTC)) != before
    finally:
        for w in [*writers, late]:
            w.close()


def test_an_explicit_knowledge_time_at_or_before_it_is_refused(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        store = Store(conn)
        key = Key("settle:explicit", "a")
        store.facts.record(key, 1, source="s", known_at=datetime(2001, 1, 1, tzinfo=UTC))
        settled = store.facts.settled_knowledge_time()
        for known_at in (settled, settled - timedelta(days=1)):
            with pytest.raises(KnowledgeTimeInPastError, match="settled"):
                store.facts.record(key, 2, source="s", known_at=known_at)
            with pytest.raises(KnowledgeTimeInPastError, match="settled"):
                store.facts.record_many(
                    [RecordRow(Key("settle:new", "a"), 2, source="s", known_at=known_at)]
                )
            with pytest.raises(KnowledgeTimeInPastError, match="settled"):
                store.facts.record(Key("settle:new", "a"), 2, source="s", known_at=known_at)
        # Settled times only move forward, and later knowledge is still written.
        assert store.facts.settled_knowledge_time() >= settled
        assert store.facts.record(key, 3, source="s").known_at > settled  # type: ignore[operator]


def test_answers_at_settled_times_never_change_under_concurrent_writers(
    url: str, roles: tuple[str, str]
) -> None:
    """Writers in transactions of a few writes each, some with record_many, some holding
    their transaction open a while; a reader settles and captures answers again and again.
    Once every writer has committed, every captured answer is asked again."""
    reader_role, writer_role = roles
    keys = [Key(f"load:{i}", "a") for i in range(6)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def write(seed: int) -> None:
        rng = random.Random(seed)
        try:
            with psycopg.connect(url, user=writer_role) as conn:
                store = Store(conn)
                while not stop.is_set():
                    key = rng.choice(keys)  # one key per transaction: no deadlocks
                    for _ in range(rng.randint(1, 3)):
                        if rng.random() < 0.3:
                            store.facts.record_many([RecordRow(key, rng.randint(0, 9), source="s")])
                        else:
                            store.facts.record(key, rng.randint(0, 9), source=rng.choice("st"))
                        time.sleep(rng.random() * 0.02)
                    conn.commit()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    captured: list[tuple[datetime, list[Any]]] = []
    try:
        with psycopg.connect(url, user=reader_role, autocommit=True) as conn:
            reader = Store(conn)
            # Four seconds and at least 30 captures: a loaded machine (or Citus, where each
            # question is a round trip to a worker) captures fewer in the same time.
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline or len(captured) < 30:
                settled = reader.facts.settled_knowledge_time()
                captured.append((settled, answers(reader, keys, settled)))
                time.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    with psycopg.connect(url, user=reader_role, autocommit=True) as conn:
        reader = Store(conn)
        changed = [s for s, before in captured if answers(reader, keys, s) != before]
        versions = conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()[0]  # type: ignore[index]
    assert versions > 20
    assert [s for s, _ in captured] == sorted(s for s, _ in captured)
    assert changed == [], f"{len(changed)} of {len(captured)} settled answers changed"


def test_a_write_waiting_for_its_keys_lock_holds_the_settled_time_back(url: str) -> None:
    """record announces its knowledge time before it waits for the key's lock (migration
    0028), so a settled time asked meanwhile stays before it, and the write records at its
    own transaction time rather than being moved past the settled time."""
    key = Key(f"waiting:{uuid.uuid4().hex[:8]}", "limit")
    with psycopg.connect(url, autocommit=True) as first:
        Store(first).facts.record(key, 1, source="s")
    with (
        psycopg.connect(url) as holder,
        psycopg.connect(url) as writer,
        psycopg.connect(url, autocommit=True) as asker,
    ):
        holder.execute(
            "SELECT FROM bitemporal.fact_key WHERE entity = %s AND attribute = %s FOR UPDATE",
            (key.entity, key.attribute),
        )
        wrote: dict[str, datetime] = {}

        def write() -> None:
            row = writer.execute(
                "SELECT (bitemporal.record(%s, %s, 's', '2')).known_at", (key.entity, key.attribute)
            ).fetchone()
            now = writer.execute("SELECT bitemporal.transaction_time()").fetchone()
            assert row is not None and now is not None
            wrote["known_at"], wrote["transaction_time"] = row[0], now[0]
            writer.commit()

        thread = threading.Thread(target=write)
        thread.start()
        try:
            # Its announcement (an advisory lock) comes before it waits for the key.
            deadline = time.monotonic() + 10
            while not asker.execute(
                "SELECT 1 FROM pg_locks WHERE pid = %s AND locktype = 'advisory' AND granted",
                (writer.info.backend_pid,),
            ).fetchone():
                assert time.monotonic() < deadline, "the writer never announced its time"
                time.sleep(0.01)
            settled = asker.execute("SELECT bitemporal.settled_knowledge_time()").fetchone()
            time.sleep(0.05)
            again = asker.execute("SELECT bitemporal.settled_knowledge_time()").fetchone()
            assert thread.is_alive(), "the writer did not wait for the key's lock"
        finally:
            holder.commit()
            thread.join(timeout=30)
    assert settled is not None and again is not None
    assert settled[0] <= again[0] < wrote["known_at"] == wrote["transaction_time"]
