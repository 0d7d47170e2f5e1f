"""A read asked again for one snapshot (operations.Statement.snapshot, which whole() asks
for after a torn read) runs in a REPEATABLE READ READ ONLY transaction of its own on an idle
autocommit connection or on one a read borrowed from a pool, and in the caller's
transaction, at the caller's isolation, otherwise.
On Citus that is what makes the queries it sends to a worker share one snapshot."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from bitemporal import BitemporalError
from bitemporal.operations import Access, Statement, Steps, start
from bitemporal.runners import AsyncRunner, Runner

SETTINGS = Statement(
    "SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')",
    snapshot=True,
)


def _ask(statement: Statement) -> Steps[Any]:
    rows = yield statement
    return rows[0]


def test_alone_it_has_a_repeatable_read_transaction_of_its_own(
    raw: psycopg.Connection[Any],
) -> None:
    steps = _ask(SETTINGS)
    assert Runner(raw).run(Access.READ, steps, start(steps)) == ("repeatable read", "on")
    assert raw.info.transaction_status == TransactionStatus.IDLE
    # Without the flag, as the first attempt of a read runs: the session's own.
    steps = _ask(Statement(SETTINGS.sql))
    assert Runner(raw).run(Access.READ, steps, start(steps)) == ("read committed", "off")


def test_in_the_callers_transaction_it_keeps_the_callers_isolation(
    raw: psycopg.Connection[Any],
) -> None:
    with raw.transaction():
        steps = _ask(SETTINGS)
        assert Runner(raw).run(Access.READ, steps, start(steps)) == ("read committed", "off")
        assert raw.info.transaction_status == TransactionStatus.INTRANS


def test_a_failing_read_leaves_the_connection_idle(raw: psycopg.Connection[Any]) -> None:
    steps = _ask(Statement("SELECT 1 / 0", snapshot=True))
    with pytest.raises(BitemporalError, match="division by zero"):
        Runner(raw).run(Access.READ, steps, start(steps))
    assert raw.info.transaction_status == TransactionStatus.IDLE


@pytest.mark.anyio
async def test_the_async_runner_does_the_same(database_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        steps = _ask(SETTINGS)
        assert await AsyncRunner(conn).run(Access.READ, steps, start(steps)) == (
            "repeatable read",
            "on",
        )
        assert conn.info.transaction_status == TransactionStatus.IDLE


def _torn_then_whole() -> Steps[Any]:
    """A first attempt as whole() asks it, then the attempt asked again for one snapshot."""
    first = yield Statement(SETTINGS.sql)
    again = yield SETTINGS
    return first[0], again[0]


def test_from_a_pool_it_has_a_repeatable_read_transaction_of_its_own(database_url: str) -> None:
    # The pool's connections are not autocommit: the first attempt opens the call's
    # implicit transaction, which holds nothing but its reads.
    with ConnectionPool(database_url, min_size=1, max_size=1, open=True) as pool:
        steps = _torn_then_whole()
        assert Runner(pool).run(Access.READ, steps, start(steps)) == (
            ("read committed", "off"),
            ("repeatable read", "on"),
        )
        with pool.connection() as conn:
            assert not conn.autocommit
            assert conn.info.transaction_status == TransactionStatus.IDLE
            assert conn.execute(SETTINGS.sql).fetchone() == ("read committed", "off")


def test_in_a_pools_transaction_block_it_keeps_the_blocks_isolation(database_url: str) -> None:
    with ConnectionPool(database_url, min_size=1, max_size=1, open=True) as pool:
        runner = Runner(pool)
        with runner.transaction() as conn:
            conn.execute("CREATE TEMPORARY TABLE written_in_the_block (x int)")
            steps = _torn_then_whole()
            assert runner.run(Access.READ, steps, start(steps)) == (
                ("read committed", "off"),
                ("read committed", "off"),
            )
            # Still the block's transaction: what it wrote is there.
            assert conn.execute("SELECT count(*) FROM written_in_the_block").fetchone() == (0,)


def test_a_failing_read_from_a_pool_gives_back_a_usable_connection(database_url: str) -> None:
    with ConnectionPool(database_url, min_size=1, max_size=1, open=True) as pool:
        steps = _ask(Statement("SELECT 1 / 0", snapshot=True))
        with pytest.raises(BitemporalError, match="division by zero"):
            Runner(pool).run(Access.READ, steps, start(steps))
        with pool.connection() as conn:
            assert not conn.autocommit
            assert conn.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.anyio
async def test_from_an_async_pool_it_does_the_same(database_url: str) -> None:
    async with AsyncConnectionPool(database_url, min_size=1, max_size=1, open=False) as pool:
        steps = _torn_then_whole()
        assert await AsyncRunner(pool).run(Access.READ, steps, start(steps)) == (
            ("read committed", "off"),
            ("repeatable read", "on"),
        )
        async with pool.connection() as conn:
            assert not conn.autocommit
            assert conn.info.transaction_status == TransactionStatus.IDLE
