"""The store: repositories bound to one database connection.

A store is built on whatever connection the application already has:

* :func:`connect` opens its own autocommit connection, so each
  call is its own transaction, and :meth:`Store.transaction` groups calls;
* ``Store(psycopg_connection)`` takes part in the caller's transaction;
* ``Store(sqlalchemy_connection_or_session)`` does the same on the psycopg
  connection underneath SQLAlchemy's.

Each write is atomic: a single statement on an idle autocommit connection is a
transaction of its own; anything else runs inside ``connection.transaction()``,
a savepoint inside the caller's transaction. So a refused write leaves the
store, and the caller's transaction, exactly as they were.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from types import TracebackType
from typing import Any, Self

import psycopg
import sqlalchemy
import sqlalchemy.orm
from psycopg.pq import TransactionStatus

from . import errors, migrations
from .adapters import cursor
from .app_tables import ApplicationTables
from .database import database_url, psycopg_url
from .decay import DecayPolicy, Memory, WindowPolicy
from .evidence import Evidence
from .facts import Facts
from .provenance import Provenance

Connectable = psycopg.Connection[Any] | sqlalchemy.Connection | sqlalchemy.orm.Session


def _driver(connection: sqlalchemy.Connection) -> psycopg.Connection[Any]:
    driver = connection.connection.driver_connection
    if not isinstance(driver, psycopg.Connection):
        raise TypeError("bitemporal needs SQLAlchemy's psycopg 3 driver: postgresql+psycopg://")
    return driver


def _connection_getter(connection: Connectable) -> Callable[[], psycopg.Connection[Any]]:
    if isinstance(connection, psycopg.Connection):
        return lambda: connection
    if isinstance(connection, sqlalchemy.orm.Session):
        # A Session may hand out a new Connection per transaction: look it up per call.
        return lambda: _driver(connection.connection())
    if isinstance(connection, sqlalchemy.Connection):
        return lambda: _driver(connection)
    raise TypeError(
        "Store needs a psycopg Connection or a SQLAlchemy Connection or Session, "
        f"not {type(connection).__name__}"
    )


class Store:
    """Repositories over one database connection (see the module docstring)."""

    def __init__(self, connection: Connectable, *, owns_connection: bool = False) -> None:
        self._get = _connection_getter(connection)
        self._owns = owns_connection
        self.facts = Facts(self._writing, self._reading, self._atomic)
        self.evidence = Evidence(self._writing, self._reading)
        self.provenance = Provenance(self._writing, self._reading)
        self.app_tables = ApplicationTables(self._writing, self._reading)

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
        """The psycopg connection calls go through."""
        return self._get()

    @contextmanager
    def _atomic(self) -> Iterator[psycopg.Connection[Any]]:
        conn = self._get()
        with errors.translate():
            if not conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE:
                # Outside autocommit, psycopg's transaction() on an idle connection
                # would commit on exit; open the caller's implicit transaction first
                # so that the block is a savepoint inside it.
                conn.execute("SELECT 1")
            with conn.transaction():
                yield conn

    @contextmanager
    def _writing(self) -> Iterator[psycopg.Connection[Any]]:
        """For a write that is one statement (one SQL function call).

        On an autocommit connection with no transaction open, the statement is
        already a transaction of its own: BEGIN/COMMIT around it would only add
        two round trips. Otherwise it runs in :meth:`_atomic`.
        """
        conn = self._get()
        if conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE:
            with errors.translate():
                yield conn
        else:
            with self._atomic() as conn:
                yield conn

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Connection[Any]]:
        with errors.translate():
            yield self._get()

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """Group several calls into one transaction (a savepoint if one is open)."""
        with self._atomic():
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
        return Memory(namespace, policy, self._writing, self._reading)

    def now(self) -> datetime:
        """The database's present: its transaction time (``now()``)."""
        with errors.translate(), cursor(self._get()) as cur:
            row = cur.execute("SELECT now()").fetchone()
        assert row is not None
        now: datetime = row[0]
        return now

    def close(self) -> None:
        """Close the connection if the store opened it."""
        if self._owns:
            self._get().close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def connect(url: str | None = None, *, migrate: bool = False) -> Store:
    """A store on its own autocommit connection to a database migrated to head.

    The URL comes from ``url``, else ``BITEMPORAL_DATABASE_URL``, else
    ``DATABASE_URL``, else an embedded PostgreSQL 18 kept under the user's data
    directory. Connecting needs no DDL rights: the schema is deployed by
    ``bitemporal db upgrade``, and a schema that is missing or behind raises
    :class:`~bitemporal.errors.SchemaNotMigratedError` (or its subclass
    :class:`~bitemporal.errors.SchemaBehindError`) naming that command.
    ``migrate=True`` migrates to head first, for a role that may.
    """
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
    return Store(conn, owns_connection=True)
