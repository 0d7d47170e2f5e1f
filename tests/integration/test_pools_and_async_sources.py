"""Stores on what applications run: a psycopg pool (sync, for threaded servers), an async
pool, SQLAlchemy's AsyncConnection and AsyncSession, and connect_async().

The sync and async APIs' behaviour on one connection is covered by the sync tests and
their async run (tests/integration/async_api); here: what changes with the source.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import psycopg_pool
import pytest
import sqlalchemy
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

import bitemporal
from bitemporal import AsyncStore, Key, Status, Store
from bitemporal.errors import (
    ConfigurationError,
    ConnectionLostError,
    InvalidKeyError,
    SchemaNotMigratedError,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def pool(database_url: str) -> Iterator[psycopg_pool.ConnectionPool[Any]]:
    with psycopg_pool.ConnectionPool(database_url, min_size=1, max_size=4, open=True) as pool:
        yield pool


@pytest.fixture
async def async_pool(database_url: str) -> AsyncIterator[psycopg_pool.AsyncConnectionPool[Any]]:
    async with psycopg_pool.AsyncConnectionPool(database_url, min_size=1, max_size=4) as pool:
        yield pool


def count(connect: Any, key: Key) -> int:
    with connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM bitemporal.versions WHERE entity = %s AND attribute = %s",
            (key.entity, key.attribute),
        ).fetchone()
    return int(row[0])


def test_a_store_on_a_pool_serves_threads(pool: Any, key: Key) -> None:
    store = Store(pool)
    keys = [Key(key.entity, f"{key.attribute}_{i}") for i in range(8)]
    with ThreadPoolExecutor(4) as threads:
        list(threads.map(lambda k: store.facts.record(k, 1, source="s"), keys))
    assert [store.facts.resolve(k).value for k in keys] == [1] * 8


def test_a_transaction_on_a_pool_keeps_one_connection(pool: Any, key: Key, connect: Any) -> None:
    store = Store(pool)
    with pytest.raises(RuntimeError), store.transaction():
        pid = store.connection.info.backend_pid
        store.facts.record(key, 1, source="s")
        store.facts.record(key, 2, source="t")
        assert store.connection.info.backend_pid == pid
        assert store.facts.resolve(key).status is Status.CONFLICT  # both, seen inside
        raise RuntimeError("roll back")
    assert count(connect, key) == 0
    with store.transaction():
        store.facts.record(key, 1, source="s")
        store.facts.record(key, 2, source="t")
    assert count(connect, key) == 2


async def test_an_async_store_on_a_pool_serves_concurrent_tasks(async_pool: Any, key: Key) -> None:
    store = AsyncStore(async_pool)
    keys = [Key(key.entity, f"{key.attribute}_{i}") for i in range(8)]
    await asyncio.gather(*(store.facts.record(k, i, source="s") for i, k in enumerate(keys)))
    answers = await asyncio.gather(*(store.facts.resolve(k) for k in keys))
    assert [a.value for a in answers] == list(range(8))


async def test_an_async_transaction_on_a_pool_is_atomic(
    async_pool: Any, key: Key, connect: Any
) -> None:
    store = AsyncStore(async_pool)
    with pytest.raises(RuntimeError):
        async with store.transaction():
            await store.facts.record(key, 1, source="s")
            assert (await store.facts.resolve(key)).value == 1
            raise RuntimeError("roll back")
    assert count(connect, key) == 0
    async with store.transaction():
        await store.facts.record(key, 1, source="s")
        await store.facts.record(key, 2, source="t")
    assert count(connect, key) == 2


async def test_sqlalchemy_async_connection_and_session(
    database_url: str, key: Key, connect: Any
) -> None:
    url = sqlalchemy.make_url(database_url).set(drivername="postgresql+psycopg_async")
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            store = AsyncStore(conn)
            await store.facts.record(key, 1, source="s")
            assert (await store.facts.resolve(key)).value == 1
            await conn.rollback()  # the caller's transaction: the write goes with it
        assert count(connect, key) == 0
        async with AsyncSession(engine) as session, session.begin():
            await AsyncStore(session).facts.record(key, 2, source="s")
        assert count(connect, key) == 1
    finally:
        await engine.dispose()


async def test_bad_arguments_raise_at_the_call_not_at_the_await(async_pool: Any, key: Key) -> None:
    store = AsyncStore(async_pool)
    with pytest.raises(InvalidKeyError):
        store.facts.record(key, 1, source="")  # no await: checked before any I/O


async def test_connect_async_answers_like_connect(database_url: str, key: Key) -> None:
    async with await bitemporal.connect_async(database_url) as store:
        await store.facts.record(key, 1, source="s")
        answer = await store.facts.resolve(key)
        assert isinstance(answer, bitemporal.Answer) and answer.value == 1
    with bitemporal.connect(database_url) as sync_store:
        assert sync_store.facts.resolve(key, now=answer.now) == answer


async def test_connect_async_refuses_what_connect_refuses(empty_database_url: str) -> None:
    with pytest.raises(SchemaNotMigratedError):
        await bitemporal.connect_async(empty_database_url)
    with pytest.raises(ConfigurationError):
        await bitemporal.connect_async("postgresql://127.0.0.1:1/nothing")


def test_a_psycopg_connection_is_no_async_source(connect: Any) -> None:
    with pytest.raises(ConfigurationError, match="AsyncConnection"):
        AsyncStore(connect())
    with pytest.raises(ConfigurationError, match="ConnectionPool"):
        Store(psycopg)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"call bitemporal\.connect\(url\)"):
        Store("postgresql://127.0.0.1:5432/test")  # type: ignore[arg-type]


async def test_a_closed_store_says_so(database_url: str, key: Key) -> None:
    """A call on a store whose connection or pool was closed on purpose is a
    ConfigurationError saying so, not ConnectionLostError's "lost ... reconnect and retry"
    (the driver says the same of both); a connection the server ended is still lost."""
    closed: list[Store] = []
    with bitemporal.connect(database_url) as store:
        closed.append(store)
    conn = psycopg.connect(database_url, autocommit=True)
    closed.append(Store(conn))
    conn.close()
    pool = psycopg_pool.ConnectionPool(database_url, min_size=1, max_size=1, open=True)
    closed.append(Store(pool))
    pool.close()
    for store, what in zip(closed, ("connection", "connection", "pool"), strict=True):
        with pytest.raises(ConfigurationError, match=f"^the store's {what} is closed"):
            store.facts.resolve(key)
    async_conn = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
    await async_conn.close()
    with pytest.raises(ConfigurationError, match="^the store's connection is closed"):
        await AsyncStore(async_conn).facts.resolve(key)
    # Ended by the server: lost, and a retry on a new connection is the remedy.
    with (
        psycopg.connect(database_url, autocommit=True) as ended,
        psycopg.connect(database_url, autocommit=True) as admin,
    ):
        # integer: Citus adds a pg_terminate_backend(bigint) that a smallint cannot choose.
        admin.execute("SELECT pg_terminate_backend(%s::integer)", (ended.info.backend_pid,))
        for _ in range(2):  # the call that finds it ended, and the next
            with pytest.raises(ConnectionLostError):
                Store(ended).facts.resolve(key)
