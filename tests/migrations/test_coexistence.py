"""Our migrations live beside an application's own Alembic history in one database."""

from __future__ import annotations

import textwrap
from pathlib import Path

import psycopg
import pytest
from alembic import command
from alembic.config import Config

from bitemporal import migrations
from bitemporal.database import sqlalchemy_url

pytestmark = pytest.mark.not_on_citus(
    "migration paths (step by step, downgrades, offline scripts, layouts) are single-node: "
    "on Citus every test database is migrated with citus=True, and a distributed store "
    "is not downgraded (docs/citus.md)"
)

APP_ENV = """
from alembic import context
from sqlalchemy import create_engine, pool

import bitemporal

config = context.config


def run_migrations_online():
    engine = create_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
    with engine.connect() as connection:
        # The README's recipe: bitemporal's migrations first, on the application's connection.
        if config.attributes.get("with_bitemporal"):
            bitemporal.migrate(connection)
        context.configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
"""

APP_MIGRATION = '''
"""the application's first table"""
from alembic import op

revision = "app0001"
down_revision = None


def upgrade():
    op.execute("CREATE TABLE app_orders (id bigint PRIMARY KEY)")


def downgrade():
    op.execute("DROP TABLE app_orders")
'''


def app_config(tmp_path: Path, url: str) -> Config:
    (tmp_path / "versions").mkdir(exist_ok=True)
    (tmp_path / "env.py").write_text(textwrap.dedent(APP_ENV))
    (tmp_path / "versions" / "app0001.py").write_text(textwrap.dedent(APP_MIGRATION))
    cfg = Config()
    cfg.set_main_option("script_location", str(tmp_path))
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return cfg


def versions(url: str) -> dict[str, list[str]]:
    with psycopg.connect(url) as conn:
        return {
            "app": [r[0] for r in conn.execute("SELECT version_num FROM public.alembic_version")],
            "bitemporal": [
                r[0] for r in conn.execute("SELECT version_num FROM bitemporal.alembic_version")
            ],
        }


def test_separate_histories(tmp_path: Path, empty_database_url: str) -> None:
    url = empty_database_url
    command.upgrade(app_config(tmp_path, url), "head")
    migrations.migrate(url)
    assert versions(url) == {"app": ["app0001"], "bitemporal": [migrations.head()]}
    migrations.downgrade(url, "base")
    assert versions(url) == {"app": ["app0001"], "bitemporal": []}
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regclass('public.app_orders')").fetchone() == ("app_orders",)


def test_run_from_the_applications_env(tmp_path: Path, empty_database_url: str) -> None:
    cfg = app_config(tmp_path, empty_database_url)
    cfg.attributes["with_bitemporal"] = True
    command.upgrade(cfg, "head")
    assert versions(empty_database_url) == {"app": ["app0001"], "bitemporal": [migrations.head()]}
