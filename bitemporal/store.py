"""The store: repositories bound to one database connection.

A store is built on whatever connection the application already has:

* :func:`connect` opens its own autocommit connection, so each
  call is its own transaction, and :meth:`Store.transaction` groups calls;
* ``Store(psycopg_connection)`` takes part in the caller's transaction;
* ``Store(sqlalchemy_connection_or_session)`` does the same on the psycopg
  connection underneath SQLAlchemy's;
* ``Store(psycopg_pool.ConnectionPool(...))`` borrows a connection per call
  (for threaded servers); :meth:`Store.transaction` keeps one for its block.

Each write is atomic: a single statement on an idle autocommit connection is a
transaction of its own; anything else runs inside ``connection.transaction()``,
a savepoint inside the caller's transaction. So a refused write leaves the
store, and the caller's transaction, exactly as they were. The repositories'
methods are operations (:mod:`bitemporal.operations`) run by a
:class:`~bitemporal.runners.Runner`; :class:`~bitemporal.AsyncStore` runs the
same ones asynchronously.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from types import TracebackType
from typing import Any, Self

import psycopg
import psycopg_pool

from . import errors, migrations
from .app_tables import ApplicationTables
from .database import database_url, psycopg_url
from .decay import DecayPolicy, Memory, WindowPolicy
from .evidence import Evidence
from .facts import Facts
from .operations import Statement, Steps, SyncRepository, one, reads
from .provenance import Provenance
from .retention import Retention
from .runners import Connectable, Runner


class StoreOperations:
    """What :class:`Store` and :class:`~bitemporal.AsyncStore` share beyond their repositories."""

    @reads
    def now(self) -> Steps[datetime]:
        """The database's present: the store's transaction time, which the writes of this
        transaction record when given no knowledge time (``bitemporal.transaction_time()``:
        ``now()`` on PostgreSQL; on Citus the distributed transaction's, set when the
        transaction first reaches the store, a little after ``now()``)."""
        now: datetime = one((yield Statement("SELECT bitemporal.transaction_time()")))[0]
        return now


class Store(StoreOperations, SyncRepository):
    """Repositories over one database connection or pool (see the module docstring)."""

    _runner: Runner

    def __init__(self, connection: Connectable, *, owns_connection: bool = False) -> None:
        runner = Runner(connection)
        super().__init__(runner)
        self._owns = owns_connection
        self.facts = Facts(runner)
        self.evidence = Evidence(runner)
        self.provenance = Provenance(runner)
        self.app_tables = ApplicationTables(runner)
        self.retention = Retention(runner)

    @property
    def tables(self) -> ApplicationTables:
        """Deprecated name of :attr:`app_tables` (goes at 1.0)."""
        warnings.warn(
            "Store.tables is deprecated and goes at 1.0: use Store.app_tables",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.app_tables

    @property
    def connection(self) -> psycopg.Connection[Any]:
        """The psycopg connection calls go through (on a pool: the one of the
        :meth:`transaction` block around the call)."""
        with self._runner.connection() as conn:
            return conn

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """Group several calls into one transaction (a savepoint if one is open)."""
        with self._runner.transaction():
            yield self

    def memory(
        self,
        namespace: str,
        policy: DecayPolicy | WindowPolicy = DecayPolicy(),  # noqa: B008 - frozen, shareable
    ) -> Memory:
        """The working-memory namespace ``namespace``, created at turn 1 if it is new.

        A namespace keeps the policy it was created with (asking for another
        raises :class:`~bitemporal.errors.PolicyMismatchError`), because its
        items' crossing turns were computed under it. See :mod:`bitemporal.decay`.
        """
        return Memory(namespace, policy, self._runner)

    def close(self) -> None:
        """Close the connection if the store opened it."""
        if self._owns:
            self._runner.source.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def connect(url: str | None = None, *, migrate: bool = False, pool_size: int = 0) -> Store:
    """A store on its own autocommit connection to a database migrated to head, or with
    ``pool_size`` on a pool of at most that many (each call borrows one, so that threads
    may call at once: :attr:`~bitemporal.Facts.pooled`).

    The URL comes from ``url``, else ``BITEMPORAL_DATABASE_URL``, else
    ``DATABASE_URL``, else an embedded PostgreSQL 18 kept under the user's data
    directory. Connecting needs no DDL rights: the schema is deployed by
    ``bitemporal db upgrade``, and a schema that is missing or behind raises
    :class:`~bitemporal.errors.SchemaNotMigratedError` (or its subclass
    :class:`~bitemporal.errors.SchemaBehindError`) naming that command.
    ``migrate=True`` migrates to head first, for a role that may.
    """
    if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 0:
        raise errors.InvalidInputError(
            f"pool_size must be a whole number (0: no pool, one connection), not {pool_size!r}"
        )
    resolved = database_url(url)
    if migrate:
        migrations.migrate(resolved)
    try:
        conn = psycopg.connect(psycopg_url(resolved), autocommit=True)
    except psycopg.OperationalError as exc:
        raise errors.ConfigurationError(f"cannot connect to the database: {exc}") from exc
    try:
        migrations.require_head(conn)
    except BaseException:
        conn.close()
        raise
    if not pool_size:
        return Store(conn, owns_connection=True)
    # The connection above has shown the database reachable and migrated: the pool's
    # connections are opened in the background, each as it is first needed.
    conn.close()
    pool = psycopg_pool.ConnectionPool(
        psycopg_url(resolved),
        min_size=1,
        max_size=pool_size,
        kwargs={"autocommit": True},
        open=True,
    )
    return Store(pool, owns_connection=True)
