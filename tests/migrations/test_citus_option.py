"""The ``citus`` option of the migrations on a database without Citus: refused, nothing
changed, from Python, the CLI and Alembic alike (on Citus, tests/citus covers the rest)."""

from __future__ import annotations

import psycopg
import pytest
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy import Column, Integer, Text, create_engine

import bitemporal
import bitemporal.alembic_ops
from bitemporal import DistributionError, migrations
from bitemporal.database import sqlalchemy_url
from tests.helpers import CITUS, run_cli

pytestmark = pytest.mark.not_on_citus("needs a database without the citus extension")


def objects(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = ANY(%s)",
            (list(migrations.SCHEMAS),),
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_migrate_with_citus_needs_the_extension(empty_database_url: str) -> None:
    assert not CITUS
    with pytest.raises(DistributionError) as caught:
        bitemporal.migrate(empty_database_url, citus=True)
    assert caught.value.sqlstate == "BT502"
    assert "citus extension" in str(caught.value)
    assert objects(empty_database_url) == 0


def test_db_upgrade_citus_is_one_line_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], empty_database_url: str
) -> None:
    code, _, err = run_cli(capsys, "--url", empty_database_url, "db", "upgrade", "--citus")
    assert code == 1
    assert len(err.strip().splitlines()) == 1, err
    assert "citus" in err
    assert objects(empty_database_url) == 0


def test_a_migrated_store_is_refused_too(migrated_database_url: str) -> None:
    before = objects(migrated_database_url)
    with pytest.raises(DistributionError):
        bitemporal.migrate(migrated_database_url, citus=True)
    assert objects(migrated_database_url) == before
    with psycopg.connect(migrated_database_url) as conn, pytest.raises(psycopg.Error) as sql_error:
        conn.execute("SELECT bitemporal.distribute()")
    assert sql_error.value.sqlstate == "BT502"


def test_a_distributed_application_table_needs_citus(migrated_database_url: str) -> None:
    """``op.create_bitemporal_table(..., distributed=True)`` on plain PostgreSQL: refused
    (BT502) inside the migration's transaction, so the table is not created either."""
    engine = create_engine(sqlalchemy_url(migrated_database_url))
    try:
        with pytest.raises(DistributionError, match="citus extension"), engine.begin() as conn:
            Operations(MigrationContext.configure(conn)).create_bitemporal_table(  # type: ignore[attr-defined]
                "spread", Column("id", Integer), Column("note", Text), key=["id"], distributed=True
            )
    finally:
        engine.dispose()
    with psycopg.connect(migrated_database_url) as conn:
        assert conn.execute("SELECT to_regclass('public.spread')").fetchone() == (None,)
