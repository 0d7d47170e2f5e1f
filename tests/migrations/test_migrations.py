"""Migrations: up and down step by step, offline SQL, frozen SQL files, a documented schema."""

from __future__ import annotations

import re
from typing import Any

import psycopg
from alembic.script import ScriptDirectory

from bitemporal import migrations

CATALOG = {
    # Both schemas: where each function lives, its whole definition (body,
    # SECURITY DEFINER, SET search_path and other settings, defaults; under the
    # same session search_path, so names are qualified alike), owner, grants
    # (a default ACL, stored or not, compares as the same) and comment.
    "functions": """
        SELECT p.proname, pg_get_function_identity_arguments(p.oid), md5(pg_get_functiondef(p.oid)),
               obj_description(p.oid, 'pg_proc'), n.nspname, p.proconfig, p.prosecdef,
               pg_get_userbyid(p.proowner),
               (SELECT array_agg(a::text ORDER BY a::text) FROM unnest(coalesce(p.proacl, acldefault('f', p.proowner))) a)
          FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname IN ('bitemporal', 'bitemporal_internal') ORDER BY 1, 2""",
    "schemas": """
        SELECT nspname, pg_get_userbyid(nspowner),
               (SELECT array_agg(a::text ORDER BY a::text) FROM unnest(coalesce(nspacl, acldefault('n', nspowner))) a),
               obj_description(oid, 'pg_namespace')
          FROM pg_namespace WHERE nspname IN ('bitemporal', 'bitemporal_internal') ORDER BY 1""",
    "columns": """
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid)
          FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
         WHERE c.relnamespace = 'bitemporal'::regnamespace ORDER BY 1, 2""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
          FROM pg_constraint WHERE connamespace = 'bitemporal'::regnamespace ORDER BY 1, 2""",
    "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'bitemporal' ORDER BY 1",
    "triggers": """
        SELECT tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = 'bitemporal'::regnamespace AND NOT t.tgisinternal ORDER BY 1""",
    "types": """
        SELECT t.typname, t.typtype, obj_description(t.oid, 'pg_type'),
               (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid)
          FROM pg_type t WHERE t.typnamespace = 'bitemporal'::regnamespace AND t.typname NOT LIKE '\\_%'
         ORDER BY 1""",
    "relations": """
        SELECT relname, relkind, obj_description(oid, 'pg_class')
          FROM pg_class WHERE relnamespace = 'bitemporal'::regnamespace ORDER BY 1""",
}


def catalog(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """What the migrations created in schema bitemporal, comparable across databases."""
    with psycopg.connect(url) as conn:
        return {name: conn.execute(query).fetchall() for name, query in CATALOG.items()}


def revisions() -> list[str]:
    script = ScriptDirectory.from_config(migrations.config())
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def test_single_head() -> None:
    script = ScriptDirectory.from_config(migrations.config())
    assert script.get_heads() == [migrations.head()]


def test_up_down_up_step_by_step(empty_database_url: str) -> None:
    url = empty_database_url
    # Up one step at a time, remembering each revision's schema.
    schema_at: dict[str, dict[str, list[tuple[Any, ...]]]] = {}
    for target in revisions():
        migrations.migrate(url, target)
        schema_at[target] = catalog(url)
    at_head = catalog(url)
    assert migrations.current(url) == migrations.head()
    # Down one step at a time: each downgrade restores exactly the previous schema.
    for target in [*reversed(revisions()[:-1]), "base"]:
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
    for target in revisions():
        migrations.migrate(url, target)
    assert catalog(url) == at_head


def test_offline_script_builds_the_same_schema(make_database: Any) -> None:
    online, offline = make_database(), make_database()
    migrations.migrate(online)
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
    for revision in revisions():
        module = script.get_revision(revision).module
        for name in getattr(module, "FILES", ()):
            assert name not in loaded, f"{name} loaded by {loaded[name]} and {revision}"
            loaded[name] = revision
    files = sorted(p.name for p in migrations.resource_dir("sql").glob("*.sql"))
    assert sorted(loaded) == files, "every sql/ file is loaded by exactly one migration"
    for name in files:
        assert SQL_FILE.match(name), f"{name} is not named <family>.v<N>.sql"
    order = revisions()
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
