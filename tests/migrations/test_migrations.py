"""Migrations: up and down step by step, offline SQL, frozen SQL files, a documented schema."""

from __future__ import annotations

import re
from typing import Any

import psycopg
import pytest
from alembic.script import ScriptDirectory

from bitemporal import migrations
from bitemporal.errors import ConfigurationError
from tests.helpers import DatabaseFactory, catalog

pytestmark = pytest.mark.not_on_citus(
    "migration paths (step by step, downgrades, offline scripts, layouts) are single-node: "
    "on Citus every test database is migrated with citus=True, and a distributed store "
    "is not downgraded (docs/citus.md)"
)


def test_single_head() -> None:
    script = ScriptDirectory.from_config(migrations.config())
    assert script.get_heads() == [migrations.head()]


def test_up_down_up_step_by_step(empty_database_url: str) -> None:
    url = empty_database_url
    # Up one step at a time, remembering each revision's schema.
    schema_at: dict[str, dict[str, list[tuple[Any, ...]]]] = {}
    for target in migrations.revisions():
        migrations.migrate(url, target)
        schema_at[target] = catalog(url)
    at_head = catalog(url)
    assert migrations.current(url) == migrations.head()
    # Down one step at a time: each downgrade restores exactly the previous schema.
    for target in [*reversed(migrations.revisions()[:-1]), "base"]:
        migrations.downgrade(url, target)
        assert migrations.current(url) == (None if target == "base" else target)
        if target != "base":
            assert catalog(url) == schema_at[target], (
                f"downgrade to {target} left a different schema"
            )
    leftovers = catalog(url)
    assert [r[0] for r in leftovers["relations"]] == ["alembic_version", "alembic_version_pkc"]
    assert leftovers["functions"] == [] and leftovers["types"][1:] == []
    assert [r[0] for r in leftovers["schemas"]] == ["bitemporal"]
    for target in migrations.revisions():
        migrations.migrate(url, target)
    assert catalog(url) == at_head


def test_offline_script_builds_the_same_schema(make_database: DatabaseFactory) -> None:
    online, offline = make_database(migrated=True, default_layout=True), make_database()
    script = migrations.sql_script()
    assert "CREATE TABLE bitemporal.fact_version" in script
    with psycopg.connect(offline, autocommit=True) as conn:
        conn.execute(script.encode())
    assert catalog(offline) == catalog(online)
    assert migrations.current(offline) == migrations.head()


def test_migrating_twice_changes_nothing(database_url: str) -> None:
    before = catalog(database_url)
    migrations.migrate(database_url)
    assert catalog(database_url) == before


def test_every_object_explains_itself(database_url: str) -> None:
    """`\\df+` and `\\d+` explain every function, type, table and view."""
    found = catalog(database_url)
    trigger_functions = {"fact_version_guard", "fact_version_stamp_insert"}
    for name, args, _, comment, schema, *_ in found["functions"]:
        assert comment, f"function {schema}.{name}({args}) has no COMMENT"
    for schema, _, _, comment in found["schemas"]:
        assert comment, f"schema {schema} has no COMMENT"
    for name, kind, comment in found["relations"]:
        if kind in ("r", "v") and name != "alembic_version":
            assert comment, f"relation bitemporal.{name} has no COMMENT"
    relations = {r[0] for r in found["relations"]}
    for name, _, comment, _ in found["types"]:
        if name not in relations:  # a table's or view's row type is explained by the relation
            assert comment, f"type bitemporal.{name} has no COMMENT"
    assert trigger_functions <= {f[0] for f in found["functions"]}


SQL_FILE = re.compile(r"^(?P<family>[a-z_]+)\.v(?P<version>\d+)\.sql$")


def test_sql_files_are_frozen_and_each_loaded_once() -> None:
    """A changed function is a new versioned file loaded by a new migration."""
    loaded: dict[str, str] = {}
    script = ScriptDirectory.from_config(migrations.config())
    for revision in migrations.revisions():
        module = script.get_revision(revision).module
        for name in getattr(module, "FILES", ()):
            assert name not in loaded, f"{name} loaded by {loaded[name]} and {revision}"
            loaded[name] = revision
    files = sorted(p.name for p in migrations.resource_dir("sql").glob("*.sql"))
    assert sorted(loaded) == files, "every sql/ file is loaded by exactly one migration"
    for name in files:
        assert SQL_FILE.match(name), f"{name} is not named <family>.v<N>.sql"
    order = migrations.revisions()
    latest: dict[str, tuple[int, str]] = {}
    for name, revision in loaded.items():
        m = SQL_FILE.match(name)
        assert m is not None
        family, version = m["family"], int(m["version"])
        if family in latest:
            other_version, other_revision = latest[family]
            newer_first = (version > other_version) == (
                order.index(revision) > order.index(other_revision)
            )
            assert newer_first, f"{family}: a newer file must be loaded by a later migration"
        latest[family] = max(latest.get(family, (0, "")), (version, revision))


@pytest.mark.parametrize(
    "call",
    [
        lambda url: migrations.migrate(url),
        lambda url: migrations.downgrade(url, "base"),
        lambda url: migrations.current(url),
    ],
    ids=["migrate", "downgrade", "current"],
)
def test_an_unreachable_server_is_a_configuration_error(call: Any) -> None:
    """As for bitemporal.connect: no connection was ever made, so it is not one lost (whose
    hint says to reconnect and retry)."""
    with pytest.raises(ConfigurationError, match="^cannot connect to the database: .*refused"):
        call("postgresql://127.0.0.1:1/x")
