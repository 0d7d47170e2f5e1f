"""``AsyncFacts.settled_knowledge_time`` keeps tests/integration/test_settled.py's promises:
a reader that is not a superuser settles below the knowledge of another role's open
transactions, answers at the settled time never change, and an explicit knowledge time at or
before it is refused (record and record_many), the store unchanged. Those sync tests build
their own stores on connections of several roles, so they are written again here on
``AsyncConnection``s rather than collected with :func:`shared`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from bitemporal import AsyncStore, Key, KnowledgeTimeInPastError, RecordRow, Store, UnknownKeyError
from tests.integration import test_settled

# The sync module's fixtures: a database of this test's own, a reader and a writer role.
globals().update({name: vars(test_settled)[name] for name in ("url", "roles")})


async def answers(store: AsyncStore, keys: list[Key], known_at: datetime) -> list[Any]:
    return [
        (v.version_id, v.value)
        for key in keys
        for v in await store.facts.as_of(key, known_at=known_at)
    ]


async def open_writes_are_not_settled(url: str, reader_role: str, writer_role: str) -> None:
    keys = [Key(f"settle:async:{i}", "a") for i in range(3)]
    async with await psycopg.AsyncConnection.connect(url, user=writer_role, autocommit=True) as c:
        for key in keys:
            await AsyncStore(c).facts.record(key, 0, source="s")
    writers = [await psycopg.AsyncConnection.connect(url, user=writer_role) for _ in keys]
    try:
        # Transactions that wrote and stay open while the reader settles.
        written = [
            (await AsyncStore(w).facts.record(key, 1, source="s")).known_at
            for w, key in zip(writers, keys, strict=True)
        ]
        async with await psycopg.AsyncConnection.connect(
            url, user=reader_role, autocommit=True
        ) as conn:
            reader = AsyncStore(conn)
            settled = await reader.facts.settled_knowledge_time()
            assert isinstance(settled, datetime) and settled.utcoffset() == timedelta(0)
            assert all(t is not None and settled < t for t in written)
            before = await answers(reader, keys, settled)
            assert [value for _, value in before] == [0, 0, 0]
            for w in writers:
                await w.commit()
            assert await answers(reader, keys, settled) == before
            assert await answers(reader, keys, datetime.now(UTC)) != before
            # The sync API, asked by the same role, settles no earlier.
            with psycopg.connect(url, user=reader_role, autocommit=True) as sync:
                assert Store(sync).facts.settled_knowledge_time() >= settled
    finally:
        for w in writers:
            await w.close()


def test_open_writes_of_another_role_are_not_settled(url: str, roles: tuple[str, str]) -> None:
    asyncio.run(open_writes_are_not_settled(url, *roles))


async def explicit_times_are_refused(url: str) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        store = AsyncStore(conn)
        key = Key("settle:async:explicit", "a")
        await store.facts.record(key, 1, source="s", known_at=datetime(2001, 1, 1, tzinfo=UTC))
        settled = await store.facts.settled_knowledge_time()
        history = await store.facts.history(key)
        for known_at in (settled, settled - timedelta(days=1)):
            with pytest.raises(KnowledgeTimeInPastError, match="settled"):
                await store.facts.record(key, 2, source="s", known_at=known_at)
            with pytest.raises(KnowledgeTimeInPastError, match="settled"):
                await store.facts.record_many(
                    [RecordRow(Key("settle:async:new", "a"), 2, source="s", known_at=known_at)]
                )
        # Nothing was written by the refused calls.
        assert await store.facts.history(key) == history
        with pytest.raises(UnknownKeyError):
            await store.facts.history(Key("settle:async:new", "a"))
        # Settled times only move forward, and later knowledge is still written.
        assert await store.facts.settled_knowledge_time() >= settled
        later = await store.facts.record(key, 3, source="s")
        assert later.known_at is not None and later.known_at > settled


def test_an_explicit_knowledge_time_at_or_before_it_is_refused(url: str) -> None:
    asyncio.run(explicit_times_are_refused(url))
