"""Alembic environment for bitemporal's migrations, for the ``alembic`` command and offline SQL.

``bitemporal.migrate()`` and ``bitemporal db ...`` drive the same migrations
without this file (see bitemporal.migrations.run). The version table is
``bitemporal.alembic_version``, so that these migrations coexist with an
application's own Alembic history in the same database.
"""

from typing import Any

from alembic import context
from sqlalchemy import create_engine, pool, text

from bitemporal.database import database_url, sqlalchemy_url
from bitemporal.migrations import (
    LOCK_TIMEOUT,
    OWNER_GUARD,
    PARTITIONS_OPTION,
    SCHEMA,
    STAMP,
    VERSION_TABLE,
    check_layout,
    distribute,
    has_citus,
    partitions_option,
    prepare,
    prepare_citus,
)

config = context.config
# `alembic -x partitions=16 upgrade head`: the partitioned layout (migration 0008).
_x = context.get_x_argument(as_dictionary=True)
partitions = partitions_option(_x.get("partitions"))
# `alembic -x citus=1 upgrade head`: require a Citus coordinator, distributed after
# migrating; without it, a database with the citus extension is distributed anyway.
citus = _x.get("citus", "0") not in ("0", "", "false", "no") or None
_OPTIONS: dict[str, Any] = {
    "version_table": VERSION_TABLE,
    "version_table_schema": SCHEMA,
    PARTITIONS_OPTION: partitions,
}


def run_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url") or "postgresql+psycopg://",
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        **_OPTIONS,
    )
    with context.begin_transaction():
        # What prepare() does online, minus the advisory lock (a script runs once).
        context.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        context.execute(OWNER_GUARD)
        context.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        context.run_migrations()
        context.execute(STAMP)


def run_online() -> None:
    url = config.get_main_option("sqlalchemy.url") or sqlalchemy_url(database_url())
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, **_OPTIONS)
        with context.begin_transaction():
            prepare(connection)
            distributed = citus or has_citus(connection)
            if distributed:
                prepare_citus(connection)
            context.run_migrations()
            connection.execute(text(STAMP))
            if distributed:
                distribute(connection, required=citus is True)
            check_layout(connection, partitions)


if context.is_offline_mode():
    run_offline()
else:
    run_online()
