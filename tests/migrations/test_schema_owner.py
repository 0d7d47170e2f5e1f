"""Nothing is migrated into a `bitemporal` schema that another role owns.

Its owner could replace bitemporal.record() (run by every caller, superusers included) or
drop the history, whatever the migration granted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from bitemporal import SchemaOwnershipError, cli, migrations


@pytest.fixture(params=migrations.SCHEMAS)
def planted(request: pytest.FixtureRequest, empty_database_url: str) -> Iterator[str]:
    """An empty database where another role created one of our schemas first."""
    role = f"bt_squatter_{uuid.uuid4().hex[:8]}"
    schema = sql.Identifier(request.param)
    with psycopg.connect(empty_database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(
            sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(schema, sql.Identifier(role))
        )
    yield role
    with psycopg.connect(empty_database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(schema))
        admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def relations(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = ANY(%s)",
            [list(migrations.SCHEMAS)],
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_upgrade_refuses_a_schema_another_role_owns(
    planted: str, empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = empty_database_url
    with pytest.raises(SchemaOwnershipError, match=f"owned by role {planted}") as refused:
        migrations.migrate(url)
    assert refused.value.sqlstate == "BT501" and "SET ROLE" in str(refused.value)
    assert cli.main(["--url", url, "db", "upgrade"]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("bitemporal: error: schema bitemporal") and f"owned by role {planted}" in err
    )
    assert relations(url) == 0 and migrations.current(url) is None


def test_the_offline_script_refuses_it_too(planted: str, empty_database_url: str) -> None:
    script = migrations.sql_script()
    with (
        psycopg.connect(empty_database_url, autocommit=True) as conn,
        pytest.raises(psycopg.Error, match=f"owned by role {planted}") as refused,
    ):
        conn.execute(script.encode())
    assert refused.value.sqlstate == "BT501"
    assert relations(empty_database_url) == 0


def test_a_schema_the_migrating_role_owns_is_used(empty_database_url: str) -> None:
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA bitemporal")
    migrations.migrate(empty_database_url)
    assert migrations.current(empty_database_url) == migrations.head()
