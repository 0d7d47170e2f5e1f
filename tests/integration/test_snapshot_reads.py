"""A read asked again for one snapshot (operations.Statement.snapshot, which whole() asks
for after a torn read) runs in a REPEATABLE READ READ ONLY transaction of its own on an idle
autocommit connection, and in the caller's transaction, at the caller's isolation, otherwise.
On Citus that is what makes the queries it sends to a worker share one snapshot."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.pq import TransactionStatus

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
