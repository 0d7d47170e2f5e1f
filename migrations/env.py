"""Alembic environment for bitemporal's own migrations.

The version table is ``bitemporal.alembic_version`` so that these migrations
coexist with an application's own Alembic history in the same database. Online
runs hold an advisory lock, so that two processes migrating at once take turns,
and set a ``lock_timeout``, so that a migration waiting on a busy table fails
(and can be re-run) instead of queueing every other session behind it.
"""

from alembic import context
from sqlalchemy import Connection, create_engine, pool, text

from bitemporal.database import database_url, sqlalchemy_url
from bitemporal.migrations import SCHEMA, VERSION_TABLE

config = context.config

# pg_advisory_xact_lock key for migrations: hashtext('bitemporal.migrations').
_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtext('bitemporal.migrations'))"
_OPTIONS = {"version_table": VERSION_TABLE, "version_table_schema": SCHEMA}


def run_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url") or "postgresql+psycopg://",
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        **_OPTIONS,
    )
    with context.begin_transaction():
        context.execute(f"SET lock_timeout = '{_lock_timeout()}'")
        context.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        context.run_migrations()


def _lock_timeout() -> str:
    return config.get_main_option("lock_timeout") or "10s"


def _run(connection: Connection) -> None:
    context.configure(connection=connection, **_OPTIONS)
    with context.begin_transaction():
        connection.execute(text(_LOCK_SQL))
        connection.execute(text("SELECT set_config('lock_timeout', :t, true)"), {"t": _lock_timeout()})
        # The version table lives in our schema, which must exist first.
        connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = config.attributes.get("engine")
    if engine is None:
        url = config.get_main_option("sqlalchemy.url") or sqlalchemy_url(database_url())
        engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
        connection.commit()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
