"""Schema migrations: every Alembic command as a plain function.

The migrations live in ``migrations/`` and the SQL they load in ``sql/``; the
wheel carries both (as ``bitemporal/_resources``), so an installed package can
migrate a database without a checkout. Our version table is
``bitemporal.alembic_version``, apart from an application's own
``alembic_version``, so both histories coexist in one database.
"""

from __future__ import annotations

import io
import re
from argparse import Namespace
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, pool, text

from .database import database_url, sqlalchemy_url
from .errors import ConfigurationError

SCHEMA = "bitemporal"
VERSION_TABLE = "alembic_version"

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """``migrations`` or ``sql``: inside the installed wheel, else in the checkout."""
    for candidate in (_PACKAGE / "_resources" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bitemporal resource directory {name!r} not found")


def sql_text(filename: str) -> str:
    """The text of one versioned SQL file from ``sql/`` (for migrations)."""
    return (resource_dir("sql") / filename).read_text(encoding="utf-8")


def previous_definition(filename: str, function: str) -> str:
    """``CREATE OR REPLACE`` of a function (and its ``COMMENT``) as an earlier, frozen SQL
    file defines it: what a migration that redefined the function restores on downgrade."""
    text_ = sql_text(filename)
    found = re.search(
        rf"^CREATE (?:OR REPLACE )?FUNCTION {re.escape(function)}\(.*?"
        rf"^COMMENT ON FUNCTION {re.escape(function)}\(.*?';$",
        text_,
        re.MULTILINE | re.DOTALL,
    )
    if found is None:
        raise LookupError(f"{filename} does not define {function}")
    return re.sub(r"^CREATE (?:OR REPLACE )?FUNCTION", "CREATE OR REPLACE FUNCTION", found[0], count=1)


Target = str | Engine | Connection | None

# The migration option asking for the partitioned layout (migration 0008): how
# many hash partitions of entity bitemporal.fact_version gets; 0 or absent, none.
PARTITIONS_OPTION = "bitemporal_partitions"
MAX_PARTITIONS = 1024


def partitions_option(value: int | str | None) -> int | None:
    """The ``partitions`` option checked: None (not given) or 0..MAX_PARTITIONS."""
    if value is None:
        return None
    try:
        count = int(value)
    except ValueError:
        count = -1
    if not 0 <= count <= MAX_PARTITIONS:
        raise ConfigurationError(f"partitions must be an integer from 0 to {MAX_PARTITIONS}, not {value!r}")
    return count


def config(*, output: io.StringIO | None = None) -> Config:
    """An Alembic config for our migrations (for ``alembic.command`` and ``ScriptDirectory``)."""
    cfg = Config(output_buffer=output) if output is not None else Config()
    cfg.set_main_option("script_location", str(resource_dir("migrations")))
    return cfg


# Migrations wait at most this long for a lock (a busy table), then fail and
# can be re-run, instead of queueing every other session behind them.
LOCK_TIMEOUT = "10s"


def prepare(connection: Connection, lock_timeout: str = LOCK_TIMEOUT) -> None:
    """Take the migration lock, bound lock waits, and create the schema holding our version table.

    The advisory lock makes concurrent deployments take turns; it is held
    until the transaction ends.
    """
    connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('bitemporal.migrations'))"))
    connection.execute(text("SELECT set_config('lock_timeout', :t, true)"), {"t": lock_timeout})
    connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))


def check_layout(connection: Connection, partitions: int | None) -> None:
    """After migrating: the version table has the layout the ``partitions`` option asked for.

    Migration 0008 applies the option when it runs. On a database already past
    it, migrating does not rebuild the table behind the operator's back: it
    fails and says how to convert it.
    """
    if partitions is None:
        return
    installed = connection.execute(
        text("SELECT to_regprocedure('bitemporal.version_partitions()')")
    ).scalar()
    actual: int | None = 0
    if installed:
        actual = connection.execute(text("SELECT bitemporal.version_partitions()")).scalar()
    if actual == partitions:
        return
    if not installed:
        raise ConfigurationError("the partitioned layout needs migration 0008 or later: upgrade to head")
    raise ConfigurationError(
        f"bitemporal.fact_version has {actual} partitions, not {partitions}: migration 0008 chose the "
        f"layout when it ran; to change it, run (as the table's owner) "
        f"SELECT bitemporal.partition_versions({partitions})"
    )


def run(
    connection: Connection,
    revision: str,
    *,
    downgrade: bool = False,
    lock_timeout: str = LOCK_TIMEOUT,
    partitions: int | None = None,
) -> None:
    """Upgrade (or downgrade) to ``revision`` on ``connection``, inside its transaction.

    This drives Alembic's MigrationContext directly instead of going through
    ``env.py``, so it also works while another Alembic command is running, e.g.
    from an application's own ``env.py``. ``partitions``: see :func:`migrate`.
    """
    partitions = partitions_option(partitions)
    script = ScriptDirectory.from_config(config())

    def steps(current: Any, _context: MigrationContext) -> Any:
        if downgrade:
            return script._downgrade_revs(revision, current)
        return script._upgrade_revs(revision, current)

    prepare(connection, lock_timeout)
    context = MigrationContext.configure(
        connection,
        opts={"version_table": VERSION_TABLE, "version_table_schema": SCHEMA, "fn": steps,
              "script": script, PARTITIONS_OPTION: partitions},
    )
    with Operations.context(context):
        context.run_migrations()
    check_layout(connection, partitions)


@contextmanager
def _connection(target: Target) -> Iterator[Connection]:
    if isinstance(target, Connection):
        yield target
        return
    engine = (
        target if isinstance(target, Engine)
        else create_engine(sqlalchemy_url(database_url(target)), poolclass=pool.NullPool)
    )
    try:
        with engine.begin() as connection:
            yield connection
    finally:
        if not isinstance(target, Engine):
            engine.dispose()


def migrate(
    target: Target = None,
    revision: str = "head",
    *,
    lock_timeout: str = LOCK_TIMEOUT,
    partitions: int | None = None,
) -> None:
    """Upgrade the database to ``revision``.

    ``target`` is a URL (default: as for :func:`bitemporal.connect`), a
    SQLAlchemy engine, or a SQLAlchemy connection, whose transaction the
    migration joins (the caller commits). A lock wait longer than
    ``lock_timeout`` fails the migration, which leaves nothing behind (it runs
    in one transaction) and can simply be run again.

    ``partitions``: the partitioned layout, applied by migration 0008 (the
    version table as that many hash partitions of entity; 0: a plain table).
    If the database is past 0008 with another layout, the upgrade fails and
    says how to convert it.
    """
    with _connection(target) as connection:
        run(connection, revision, lock_timeout=lock_timeout, partitions=partitions)


def downgrade(target: Target = None, revision: str = "base") -> None:
    """Downgrade the database to ``revision`` (default: remove the schema's objects)."""
    with _connection(target) as connection:
        run(connection, revision, downgrade=True)


def current(target: Target = None) -> str | None:
    """The revision the database is at, or None if never migrated."""
    with _connection(target) as connection:
        context = MigrationContext.configure(
            connection, opts={"version_table": VERSION_TABLE, "version_table_schema": SCHEMA}
        )
        return context.get_current_revision()


def head() -> str:
    """The newest revision the package ships."""
    revision = ScriptDirectory.from_config(config()).get_current_head()
    assert revision is not None
    return revision


def sql_script(revision: str = "head", *, start: str | None = None, partitions: int | None = None) -> str:
    """The SQL that upgrading to ``revision`` runs (offline mode), for a DBA to review."""
    buffer = io.StringIO()
    cfg = config(output=buffer)
    cfg.set_main_option("sqlalchemy.url", "postgresql+psycopg://")
    partitions = partitions_option(partitions)
    if partitions is not None:
        # As `alembic -x partitions=N` would pass it to env.py.
        cfg.cmd_opts = Namespace(x=[f"partitions={partitions}"])
    command.upgrade(cfg, revision if start is None else f"{start}:{revision}", sql=True)
    return buffer.getvalue()
