"""The two executors of repository operations (:mod:`bitemporal.operations`):
:class:`Runner` for the sync API, :class:`AsyncRunner` for the async API.

A runner knows where connections come from (one connection, a pool, or a
SQLAlchemy connection or session) and how a call uses one:

* a read runs as it is;
* a write that is one statement runs alone on an idle autocommit connection
  (it is a transaction of its own: BEGIN/COMMIT would only add round trips),
  and inside ``connection.transaction()`` otherwise;
* several statements run inside ``connection.transaction()``: a transaction,
  or a savepoint inside the caller's. On an idle connection outside
  autocommit, the caller's implicit transaction is opened first, so that the
  block is a savepoint in it rather than a transaction committed at its end.

A read asked again for one snapshot (a torn read: :func:`bitemporal.operations.whole`)
runs in a ``REPEATABLE READ READ ONLY`` transaction of its own where the call owns the
connection's transaction: on an idle autocommit connection, or on one it borrowed from a
pool for its reads alone (their implicit transaction is committed first, as the pool would
commit it); in a caller's transaction it keeps the caller's isolation.

So a refused write leaves the store, and the caller's transaction, as they
were. With a pool, each call borrows a connection (the pool commits it when it
is given back) except inside :meth:`Runner.transaction`, which keeps one
connection for its block, per thread or asyncio task.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from contextvars import ContextVar
from typing import Any, TypeVar

import psycopg
import psycopg_pool
import sqlalchemy
import sqlalchemy.ext.asyncio
import sqlalchemy.orm
from psycopg import pq
from psycopg.pq import TransactionStatus
from psycopg.rows import RowFactory, dict_row, tuple_row

from . import errors
from .adapters import async_cursor, cursor
from .operations import Access, Copy, Done, Statement, Step, Steps, advance

T = TypeVar("T")

#: What the sync API runs on.
Connectable = (
    psycopg.Connection[Any]
    | psycopg_pool.ConnectionPool[Any]
    | sqlalchemy.Connection
    | sqlalchemy.orm.Session
)
#: What the async API runs on.
AsyncConnectable = (
    psycopg.AsyncConnection[Any]
    | psycopg_pool.AsyncConnectionPool[Any]
    | sqlalchemy.ext.asyncio.AsyncConnection
    | sqlalchemy.ext.asyncio.AsyncSession
)


def plan(
    access: Access, conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]
) -> tuple[bool, bool]:
    """``(begin, atomic)`` for a call: whether to open the caller's implicit transaction
    first, and whether to run inside ``connection.transaction()`` (module docstring)."""
    if access is Access.READ:
        return False, False
    idle = conn.info.transaction_status == TransactionStatus.IDLE
    if access is Access.WRITE and conn.autocommit and idle:
        return False, False
    return (not conn.autocommit and idle), True


#: Opens the caller's implicit transaction (see :func:`plan`).
BEGIN_IMPLICIT = "SELECT 1"

#: What a call that need not be atomic runs in: nothing (shared: it holds no state).
_NOT_ATOMIC = nullcontext()


def _check_open(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    # Closed on purpose (not broken, which is a lost connection and worth a retry): the
    # driver would say the same as for a lost one, whose hint is to reconnect and retry.
    if conn.closed and not conn.broken:
        raise errors.closed_store("connection")


def _scope(access: Access, conn: psycopg.Connection[Any]) -> AbstractContextManager[Any]:
    """What a call's statements run in on ``conn`` (:func:`plan`): ``conn.transaction()``,
    the caller's implicit transaction opened first where it must be, or nothing."""
    _check_open(conn)
    begin, atomic = plan(access, conn)
    if begin:
        conn.execute(BEGIN_IMPLICIT)
    return conn.transaction() if atomic else _NOT_ATOMIC


async def _async_scope(
    access: Access, conn: psycopg.AsyncConnection[Any]
) -> AbstractAsyncContextManager[Any]:
    """:func:`_scope` for the async API."""
    _check_open(conn)
    begin, atomic = plan(access, conn)
    if begin:
        await conn.execute(BEGIN_IMPLICIT)
    return conn.transaction() if atomic else _NOT_ATOMIC


@contextmanager
def _pinned_to(pinned: ContextVar[Any], conn: Any, pool: bool) -> Iterator[None]:
    # Only a pool hands out another connection per call.
    if not pool:
        yield
        return
    token = pinned.set(conn)
    try:
        yield
    finally:
        pinned.reset(token)


def _driver(connection: sqlalchemy.Connection) -> psycopg.Connection[Any]:
    driver = connection.connection.driver_connection
    if not isinstance(driver, psycopg.Connection):
        raise errors.ConfigurationError(
            "bitemporal needs SQLAlchemy's psycopg 3 driver: postgresql+psycopg://"
        )
    return driver


async def _async_driver(
    connection: sqlalchemy.ext.asyncio.AsyncConnection,
) -> psycopg.AsyncConnection[Any]:
    driver = (await connection.get_raw_connection()).driver_connection
    if not isinstance(driver, psycopg.AsyncConnection):
        raise errors.ConfigurationError(
            "bitemporal needs SQLAlchemy's async psycopg 3 driver: postgresql+psycopg_async://"
        )
    return driver


_BY_URL = "to connect by URL, call bitemporal.connect(url) or bitemporal.connect_async(url)"


def _leaser(source: Connectable) -> Callable[[], AbstractContextManager[psycopg.Connection[Any]]]:
    if isinstance(source, psycopg.Connection):
        held = nullcontext(source)
        return lambda: held
    if isinstance(source, psycopg_pool.ConnectionPool):
        return source.connection
    if isinstance(source, sqlalchemy.orm.Session):
        # A Session may hand out a new Connection per transaction: look it up per call.
        return lambda: nullcontext(_driver(source.connection()))
    if isinstance(source, sqlalchemy.Connection):
        return lambda: nullcontext(_driver(source))
    raise errors.ConfigurationError(
        "Store needs a psycopg Connection or ConnectionPool, or a SQLAlchemy Connection or "
        f"Session, not {type(source).__name__}",
        hint=_BY_URL,
    )


def _async_leaser(
    source: AsyncConnectable,
) -> Callable[[], AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]]:
    if isinstance(source, psycopg.AsyncConnection):
        held = nullcontext(source)
        return lambda: held
    if isinstance(source, psycopg_pool.AsyncConnectionPool):
        return source.connection

    @asynccontextmanager
    async def sqlalchemy_driver() -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        connection = source
        if isinstance(connection, sqlalchemy.ext.asyncio.AsyncSession):
            connection = await connection.connection()
        yield await _async_driver(connection)

    if isinstance(
        source, sqlalchemy.ext.asyncio.AsyncSession | sqlalchemy.ext.asyncio.AsyncConnection
    ):
        return sqlalchemy_driver
    raise errors.ConfigurationError(
        "AsyncStore needs a psycopg AsyncConnection or AsyncConnectionPool, or a SQLAlchemy "
        f"AsyncConnection or AsyncSession, not {type(source).__name__}",
        hint=_BY_URL,
    )


def _row_factory(step: Statement) -> RowFactory[Any]:
    return dict_row if step.dicts else tuple_row


def _sql(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], step: Statement) -> Any:
    """The statement's text for ``conn``: its ``unprepared`` form where the connection
    never prepares."""
    if step.unprepared is not None and conn.prepare_threshold is None:
        return step.unprepared
    return step.sql


def _returns_rows(cur: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> bool:
    """Whether the statement returned a result set (maybe empty). ``cur.description`` says
    so too, but first builds a ``Column`` per column, which a short read pays for."""
    result = cur.pgresult
    return result is not None and result.status == pq.ExecStatus.TUPLES_OK


#: Begins the transaction of a read that asks for one snapshot (:func:`_execute`).
#: On Citus a coordinator transaction reaches each worker over one connection, in a
#: transaction begun at the coordinator's isolation level: its queries there share one
#: snapshot, where each of a statement run alone takes its own.
SNAPSHOT_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"


def _borrows(access: Access, pool: bool, pinned: ContextVar[Any]) -> bool:
    """Whether a call borrows its connection from a pool for reads alone (not inside
    :meth:`Runner.transaction`, which keeps one connection for its block)."""
    return pool and access is Access.READ and pinned.get() is None


def _snapshot(step: Step) -> bool:
    return isinstance(step, Statement) and step.snapshot


def _idle_autocommit(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    return conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE


def _execute(conn: psycopg.Connection[Any], step: Step, borrowed: bool = False) -> list[Any]:
    """Runs ``step``; a read asking for one snapshot in a transaction of its own where the
    call owns the connection's transaction (module docstring)."""
    if not _snapshot(step):
        return _fetch(conn, step)
    if borrowed and not conn.autocommit:
        # Its implicit transaction holds only this call's reads: end it, as the pool
        # would, and ask as on an autocommit connection.
        conn.commit()
        conn.autocommit = True
        try:
            return _in_own_snapshot(conn, step)
        finally:
            if not conn.broken:
                conn.autocommit = False
    return _in_own_snapshot(conn, step) if _idle_autocommit(conn) else _fetch(conn, step)


def _in_own_snapshot(conn: psycopg.Connection[Any], step: Step) -> list[Any]:
    conn.execute(SNAPSHOT_BEGIN)
    try:
        rows = _fetch(conn, step)
    except BaseException:
        if not conn.broken:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return rows


def _fetch(conn: psycopg.Connection[Any], step: Step) -> list[Any]:
    if isinstance(step, Copy):
        with cursor(conn) as cur, cur.copy(step.sql) as copy:
            for row in step.rows:
                copy.write_row(row)
        return []
    with cursor(conn, _row_factory(step), binary=step.binary) as cur:
        cur.execute(_sql(conn, step), step.params)
        return cur.fetchall() if _returns_rows(cur) else []


async def _execute_async(
    conn: psycopg.AsyncConnection[Any], step: Step, borrowed: bool = False
) -> list[Any]:
    """:func:`_execute` for the async API."""
    if not _snapshot(step):
        return await _fetch_async(conn, step)
    if borrowed and not conn.autocommit:
        await conn.commit()
        await conn.set_autocommit(True)
        try:
            return await _in_own_snapshot_async(conn, step)
        finally:
            if not conn.broken:
                await conn.set_autocommit(False)
    if _idle_autocommit(conn):
        return await _in_own_snapshot_async(conn, step)
    return await _fetch_async(conn, step)


async def _in_own_snapshot_async(conn: psycopg.AsyncConnection[Any], step: Step) -> list[Any]:
    await conn.execute(SNAPSHOT_BEGIN)
    try:
        rows = await _fetch_async(conn, step)
    except BaseException:
        if not conn.broken:
            await conn.execute("ROLLBACK")
        raise
    await conn.execute("COMMIT")
    return rows


async def _fetch_async(conn: psycopg.AsyncConnection[Any], step: Step) -> list[Any]:
    if isinstance(step, Copy):
        async with async_cursor(conn) as cur, cur.copy(step.sql) as copy:
            for row in step.rows:
                await copy.write_row(row)
        return []
    async with async_cursor(conn, _row_factory(step), binary=step.binary) as cur:
        await cur.execute(_sql(conn, step), step.params)
        return await cur.fetchall() if _returns_rows(cur) else []


class Runner:
    """Runs operations for the sync API on a connection, a pool, or SQLAlchemy's."""

    def __init__(self, source: Connectable) -> None:
        self.source = source
        self._lease = _leaser(source)
        self._pinned: ContextVar[psycopg.Connection[Any] | None] = ContextVar(
            "bitemporal_connection", default=None
        )
        self._pool = isinstance(source, psycopg_pool.ConnectionPool)

    @property
    def pooled(self) -> bool:
        """Whether calls borrow connections from a pool (:class:`SyncRunning`)."""
        return self._pool

    def connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        """The connection for a call: the transaction's, else one borrowed (or the only one)."""
        pinned = self._pinned.get()
        return nullcontext(pinned) if pinned is not None else self._lease()

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """One transaction (a savepoint if one is open) for every call in the block."""
        with (
            errors.translate(),
            self.connection() as conn,
            _scope(Access.TRANSACTION, conn),
            _pinned_to(self._pinned, conn, self._pool),
        ):
            yield conn

    def run(self, access: Access, steps: Steps[T], first: Step | Done[T]) -> T:
        """Execute an operation (see :mod:`bitemporal.operations`)."""
        if isinstance(first, Done):
            return first.value
        borrowed = _borrows(access, self._pool, self._pinned)
        # Errors translated, on the call's connection, in its scope (module docstring).
        with errors.translate(), self.connection() as conn, _scope(access, conn):
            step: Step | Done[T] = first
            while not isinstance(step, Done):
                step = advance(steps, _execute(conn, step, borrowed))
            return step.value


class AsyncRunner:
    """Runs operations for the async API on a connection, a pool, or SQLAlchemy's."""

    def __init__(self, source: AsyncConnectable) -> None:
        self.source = source
        self._lease = _async_leaser(source)
        self._pinned: ContextVar[psycopg.AsyncConnection[Any] | None] = ContextVar(
            "bitemporal_async_connection", default=None
        )
        self._pool = isinstance(source, psycopg_pool.AsyncConnectionPool)

    def connection(self) -> AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
        """The connection for a call: the transaction's, else one borrowed (or the only one)."""
        pinned = self._pinned.get()
        return nullcontext(pinned) if pinned is not None else self._lease()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """One transaction (a savepoint if one is open) for every call in the block."""
        with errors.translate():
            async with (
                self.connection() as conn,
                await _async_scope(Access.TRANSACTION, conn),
            ):
                with _pinned_to(self._pinned, conn, self._pool):
                    yield conn

    async def run(self, access: Access, steps: Steps[T], first: Step | Done[T]) -> T:
        """Execute an operation (see :mod:`bitemporal.operations`)."""
        if isinstance(first, Done):
            return first.value
        borrowed = _borrows(access, self._pool, self._pinned)
        with errors.translate():
            async with self.connection() as conn, await _async_scope(access, conn):
                step: Step | Done[T] = first
                while not isinstance(step, Done):
                    step = advance(steps, await _execute_async(conn, step, borrowed))
                return step.value
