"""Schema migrations: every Alembic command as a plain function.

The migrations live in ``migrations/`` and the SQL they load in ``sql/``; the
wheel carries both (as ``bitemporal/_resources``), so an installed package can
migrate a database without a checkout. Our version table is
``bitemporal.alembic_version``, apart from an application's own
``alembic_version``, so both histories coexist in one database.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, create_engine, pool

from .database import database_url, sqlalchemy_url

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


Target = str | Engine | Connection | None


def config(target: Target = None, *, output: io.StringIO | None = None) -> Config:
    """An Alembic config for our migrations, bound to ``target`` (a URL, engine or connection)."""
    cfg = Config(output_buffer=output) if output is not None else Config()
    cfg.set_main_option("script_location", str(resource_dir("migrations")))
    if isinstance(target, Connection):
        cfg.attributes["connection"] = target
    elif isinstance(target, Engine):
        cfg.attributes["engine"] = target
    elif target is not None:
        # '%' would be read as ConfigParser interpolation.
        cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(target).replace("%", "%%"))
    return cfg


@contextmanager
def _bound(target: Target) -> Iterator[Config]:
    if isinstance(target, Connection | Engine):
        yield config(target)
        return
    engine = create_engine(sqlalchemy_url(database_url(target)), poolclass=pool.NullPool)
    try:
        with engine.begin() as connection:
            yield config(connection)
    finally:
        engine.dispose()


def migrate(target: Target = None, revision: str = "head") -> None:
    """Upgrade the database (URL, SQLAlchemy engine or connection) to ``revision``."""
    with _bound(target) as cfg:
        command.upgrade(cfg, revision)


def downgrade(target: Target = None, revision: str = "base") -> None:
    """Downgrade the database to ``revision`` (default: remove the schema's objects)."""
    with _bound(target) as cfg:
        command.downgrade(cfg, revision)


def current(target: Target = None) -> str | None:
    """The revision the database is at, or None if never migrated."""
    with _bound(target) as cfg:
        connection = cfg.attributes["connection"]
        context = MigrationContext.configure(
            connection, opts={"version_table": VERSION_TABLE, "version_table_schema": SCHEMA}
        )
        return context.get_current_revision()


def head() -> str:
    """The newest revision the package ships."""
    from alembic.script import ScriptDirectory

    revision = ScriptDirectory.from_config(config()).get_current_head()
    assert revision is not None
    return revision


def sql_script(revision: str = "head", *, start: str | None = None) -> str:
    """The SQL that upgrading to ``revision`` runs (offline mode), for a DBA to review."""
    buffer = io.StringIO()
    cfg = config(output=buffer)
    cfg.set_main_option("sqlalchemy.url", "postgresql+psycopg://")
    command.upgrade(cfg, revision if start is None else f"{start}:{revision}", sql=True)
    return buffer.getvalue()
