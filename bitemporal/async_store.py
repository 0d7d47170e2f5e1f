"""The async store: :class:`~bitemporal.Store`'s repositories for asyncio applications.

``AsyncStore`` is built on a psycopg ``AsyncConnection``, a psycopg_pool
``AsyncConnectionPool``, or a SQLAlchemy ``AsyncConnection`` / ``AsyncSession``
(driver ``postgresql+psycopg_async://``), and :func:`connect_async` opens its own
autocommit connection. Its repositories (``facts``, ``evidence``, ``provenance``,
``app_tables``, ``retention``, and ``await store.memory(...)``) run the very operations of the
sync API (:mod:`bitemporal.operations`) through an async runner: same SQL, same
arguments, same checks, same results and errors; every method is awaited.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Self

import psycopg

from . import errors, migrations
from .app_tables import AsyncApplicationTables
from .database import database_url, psycopg_url
from .decay import AsyncMemory, DecayPolicy, WindowPolicy
from .evidence import AsyncEvidence
from .facts import AsyncFacts
from .operations import AsyncRepository
from .provenance import AsyncProvenance
from .retention import AsyncRetention
from .runners import AsyncConnectable, AsyncRunner
from .store import StoreOperations


class AsyncStore(StoreOperations, AsyncRepository):
    """Repositories over one async connection or pool (see the module docstring)."""

    _runner: AsyncRunner

    def __init__(self, connection: AsyncConnectable, *, owns_connection: bool = False) -> None:
        runner = AsyncRunner(connection)
        super().__init__(runner)
        self._owns = owns_connection
        self.facts = AsyncFacts(runner)
        self.evidence = AsyncEvidence(runner)
        self.provenance = AsyncProvenance(runner)
        self.app_tables = AsyncApplicationTables(runner)
        self.retention = AsyncRetention(runner)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncStore]:
        """Group several calls into one transaction (a savepoint if one is open)."""
        async with self._runner.transaction():
            yield self

    async def memory(
        self,
        namespace: str,
        policy: DecayPolicy | WindowPolicy = DecayPolicy(),  # noqa: B008 - frozen, shareable
    ) -> AsyncMemory:
        """The working-memory namespace ``namespace``, as :meth:`Store.memory
        <bitemporal.Store.memory>` gives it."""
        memory = AsyncMemory(namespace, policy, self._runner)
        await memory._ensure_namespace()
        return memory

    async def close(self) -> None:
        """Close the connection if the store opened it."""
        if self._owns:
            await self._runner.source.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def _require_head(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        migrations.require_head(conn)


async def connect_async(url: str | None = None, *, migrate: bool = False) -> AsyncStore:
    """An :class:`AsyncStore` on its own autocommit connection, as :func:`~bitemporal.connect`
    gives a :class:`~bitemporal.Store`: same URL resolution, same schema check, same
    errors. Migrating (``migrate=True``), the schema check and starting an embedded server
    (no URL anywhere) are blocking steps; the first two run in a worker thread."""
    resolved = database_url(url)
    if migrate:
        await asyncio.to_thread(migrations.migrate, resolved)
    try:
        conn = await psycopg.AsyncConnection.connect(psycopg_url(resolved), autocommit=True)
    except psycopg.OperationalError as exc:
        raise errors.ConfigurationError(f"cannot connect to the database: {exc}") from exc
    try:
        await asyncio.to_thread(_require_head, psycopg_url(resolved))
    except BaseException:
        await conn.close()
        raise
    return AsyncStore(conn, owns_connection=True)
