"""Functions planted in a writable ``public`` never run inside bitemporal's functions (issue 11,
finding 2).

Before PostgreSQL 15 every role could create objects in ``public`` (and ``pg_upgrade``
keeps that). An attacker who plants ``public.upper_inf(tstzrange)`` or an exact-match
operator such as ``public.@>(tstzrange, timestamptz)`` wins name resolution over
``pg_catalog``'s polymorphic ones in any statement parsed with ``public`` on the path.
Each test migrates a database of its own, lets a role of its own plant such objects
(each raises, naming who ran it), then has the superuser use every kind of function:
none may run a planted object, and tables made bitemporal afterwards must not bind
their constraints or index predicates to them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

# Functions and operators whose pg_catalog versions are polymorphic (anyrange,
# anyelement), so that one declared for tstzrange is an exact match and wins.
PLANTED_FUNCTIONS = (
    ("upper_inf", "r tstzrange", "boolean"),
    ("lower_inf", "r tstzrange", "boolean"),
    ("isempty", "r tstzrange", "boolean"),
    ("lower", "r tstzrange", "timestamptz"),
    ("upper", "r tstzrange", "timestamptz"),
    ("range_contains_elem", "r tstzrange, t timestamptz", "boolean"),
    ("planted_overlaps", "a tstzrange, b tstzrange", "boolean"),
    ("planted_contains", "r tstzrange, t timestamptz", "boolean"),
    ("planted_contains_range", "a tstzrange, b tstzrange", "boolean"),
    ("planted_equal", "a tstzrange, b tstzrange", "boolean"),
    ("planted_adjacent", "a tstzrange, b tstzrange", "boolean"),
)
PLANTED_OPERATORS = (
    ("&&", "tstzrange", "tstzrange", "planted_overlaps"),
    ("@>", "tstzrange", "timestamptz", "planted_contains"),
    ("@>", "tstzrange", "tstzrange", "planted_contains_range"),
    ("=", "tstzrange", "tstzrange", "planted_equal"),
    ("-|-", "tstzrange", "tstzrange", "planted_adjacent"),
)


@pytest.fixture
def attacked(migrated_database_url: str) -> Iterator[str]:
    """A migrated database whose ``public`` holds planted functions and operators."""
    empty_database_url = migrated_database_url
    attacker = f"bt_attacker_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(attacker)))
        try:
            # As before PostgreSQL 15: anyone may create in public.
            conn.execute("GRANT CREATE, USAGE ON SCHEMA public TO PUBLIC")
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(attacker)))
            for name, args, result in PLANTED_FUNCTIONS:
                conn.execute(
                    sql.SQL(
                        "CREATE FUNCTION public.{}({}) RETURNS {} LANGUAGE plpgsql AS $$ BEGIN "
                        "RAISE EXCEPTION 'planted public.% ran as %', {}, current_user; END $$"
                    ).format(
                        sql.Identifier(name), sql.SQL(args), sql.SQL(result), sql.Literal(name)
                    )
                )
            for operator, left, right, function in PLANTED_OPERATORS:
                conn.execute(
                    sql.SQL(
                        "CREATE OPERATOR public.{} "
                        "(LEFTARG = {}, RIGHTARG = {}, FUNCTION = public.{})"
                    ).format(
                        sql.SQL(operator), sql.SQL(left), sql.SQL(right), sql.Identifier(function)
                    )
                )
            conn.execute("RESET ROLE")
            # The superuser's session resolves to the planted objects: the attack is live.
            with pytest.raises(psycopg.errors.RaiseException, match="planted public.upper_inf"):
                conn.execute("SELECT upper_inf(tstzrange(now(), NULL))")
            yield empty_database_url
        finally:
            conn.execute("RESET ROLE")
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(attacker)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(attacker)))


@pytest.mark.not_on_citus(
    "plants its objects as a NOLOGIN role through SET ROLE, and Citus opens the workers' "
    "connections as the current role, which may not log in (that every function pins its "
    "path is checked on Citus too, below)"
)
def test_fact_store_functions_never_run_planted_objects(attacked: str) -> None:
    with psycopg.connect(attacked, autocommit=True) as conn:

        def run(statement: str) -> list[Any]:
            cursor = conn.execute(statement)
            return cursor.fetchall() if cursor.description else []

        run(
            "SELECT bitemporal.record("
            "'e', 'a', 's', '80', '2026-01-01Z', '2026-03-01Z', '2026-01-01Z')"
        )
        run("SELECT bitemporal.record('e', 'a', 's', '90', '2026-02-01Z', NULL, '2026-02-01Z')")
        run("SELECT bitemporal.retract('e', 'a', 's', '2026-05-01Z', '2026-06-01Z', '2026-02-02Z')")
        assert [
            r[0] for r in run("SELECT value FROM bitemporal.as_of('e', 'a', '2026-01-15Z')")
        ] == [80]
        assert (
            len(run("SELECT * FROM bitemporal.as_of('e', 'a', '2026-01-15Z', '2026-01-15Z')")) == 1
        )
        assert run("SELECT status FROM bitemporal.resolve('e', 'a', '2026-02-15Z')") == [
            ("supported",)
        ]
        assert len(run("SELECT * FROM bitemporal.history('e', 'a')")) >= 3
        assert len(run("SELECT * FROM bitemporal.changes(NULL, NULL, 'e', 'a')")) >= 1
        assert (
            run("SELECT bitemporal.explain('e', 'a', '2026-02-15Z')")[0][0]["status"] == "supported"
        )
        run(
            "SELECT bitemporal.explain_sentence("
            "bitemporal.explain('e', 'a', '2026-02-15Z', '2026-01-15Z'))"
        )
        run("SELECT * FROM bitemporal.retrospective_diff('e', 'a', '2026-02-15Z', '2026-01-15Z')")
        run("SELECT * FROM bitemporal.facts_now")
        run("SELECT * FROM bitemporal.conflicts_now")
        run(
            "SELECT bitemporal.record_many(ARRAY[ROW('e2', 'a', 's', '1', NULL, NULL, NULL, NULL)]"
            "::bitemporal.batch_row[])"
        )
        # Migration 0010's functions: the settled time, evidence's configuration check,
        # the JSON limits on an artifact's detail (notifications ran at each commit above).
        run("SELECT bitemporal.settled_knowledge_time()")
        run(
            "SELECT bitemporal.add_evidence(min(version_id), 'A passage.', NULL, 'english') "
            "FROM bitemporal.fact_version"
        )
        run(
            "SELECT * FROM bitemporal.search_evidence('passage', '2026-02-15Z', NULL, 5, 'english')"
        )
        run(
            "SELECT bitemporal.record_artifact("
            "'report', 'r1', ARRAY[min(version_id)], NULL, '{\"a\": [1]}') "
            "FROM bitemporal.fact_version"
        )
        # The append-only and knowledge triggers refuse with their own error, not a planted one.
        for statement in (
            "UPDATE bitemporal.fact_version SET valid_period = valid_period WHERE entity = 'e'",
            (
                "INSERT INTO bitemporal.fact_version "
                "(entity, attribute, source, value, valid_period, known_period) "
                "VALUES ('e', 'a', 's', '1', '[2026-01-01Z,)', '[2026-01-01Z,)')"
            ),
            "UPDATE bitemporal.fact_key SET last_known_at = '2001-01-01Z' WHERE entity = 'e'",
        ):
            with pytest.raises(psycopg.Error) as caught:
                run(statement)
            assert caught.value.sqlstate in ("BT006", "BT002"), caught.value


@pytest.mark.not_on_citus(
    "plants its objects as a NOLOGIN role through SET ROLE, and Citus opens the workers' "
    "connections as the current role, which may not log in (that every function pins its "
    "path is checked on Citus too, below)"
)
def test_tables_made_bitemporal_never_bind_to_planted_objects(attacked: str) -> None:
    with psycopg.connect(attacked, autocommit=True) as conn:

        def run(statement: str) -> list[Any]:
            cursor = conn.execute(statement)
            return cursor.fetchall() if cursor.description else []

        run("CREATE SCHEMA app")
        run("CREATE TABLE app.price (sku text, amount numeric NOT NULL)")
        run("INSERT INTO app.price VALUES ('A', 1)")
        run("SELECT bitemporal.enable_table('app.price', ARRAY['sku'], '2026-01-01Z')")
        # The table's CHECK constraints and index predicates are bound to pg_catalog.
        for (definition,) in run(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = 'app.price'::regclass "
            "UNION ALL SELECT pg_get_indexdef(indexrelid) FROM pg_index "
            "WHERE indrelid = 'app.price'::regclass"
        ):
            assert "public." not in definition, definition
        run("SELECT app.price_record('A', 2, '2026-02-01Z', NULL, NULL)")
        run("SELECT app.price_record('B', 3, '2026-02-01Z', '2026-04-01Z', NULL)")
        run("SELECT app.price_retract('B', '2026-03-01Z', NULL, NULL)")
        assert run("SELECT amount FROM app.price_as_of('2026-02-15Z') WHERE sku = 'A'") == [(2,)]
        assert len(run("SELECT * FROM app.price_history('A')")) == 3
        assert len(run("SELECT * FROM app.price_changes()")) >= 1
        for statement in (
            "DELETE FROM app.price",
            "UPDATE app.price_key SET last_known_at = '2001-01-01Z'",
            (
                "INSERT INTO app.price (sku, amount, valid_period, known_period) "
                "VALUES ('A', 9, '[2026-01-01Z,)', '[2026-01-01Z,)')"
            ),
        ):
            with pytest.raises(psycopg.Error) as caught:
                run(statement)
            assert caught.value.sqlstate == "BT006", caught.value
        run("SELECT bitemporal.refresh_table('app.price')")
        run("SELECT app.price_record('A', 4, '2026-03-01Z', NULL, NULL)")
        run("SELECT bitemporal.drop_table('app.price')")


def test_every_function_pins_its_search_path(database_url: str) -> None:
    """Each function is either a SQL-standard body (bound to objects by OID when it was
    created) or runs with search_path pinned to pg_catalog, pg_temp."""
    with psycopg.connect(database_url) as conn:
        loose = conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname LIKE 'bitemporal%' AND p.prosqlbody IS NULL "
            "AND NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false) "
            "ORDER BY 1"
        ).fetchall()
    assert loose == []


# What migration 0010 defines and the store still has (bitemporal_internal.lock_key
# went with migration 0028): the check above must see each of them.
DEFINED_IN_0010 = {
    "bitemporal.settled_knowledge_time()",
    "bitemporal.record_many(bitemporal.batch_row[],integer)",
    "bitemporal_internal.key_guard()",
    "bitemporal_internal.fact_version_knowledge()",
    "bitemporal_internal.knowledge_micros(timestamp with time zone)",
    "bitemporal_internal.knowledge_from_micros(bigint)",
    "bitemporal_internal.announce_knowledge(timestamp with time zone,boolean)",
    "bitemporal_internal.check_json_value(text,jsonb)",
    "bitemporal_internal.artifact_detail_check()",
    (
        "bitemporal_internal.table_knowledge_event(text,text,anyelement,timestamp with time zone,"
        "timestamp with time zone)"
    ),
    "bitemporal_internal.guard_key_table(text,text)",
    "bitemporal_internal.app_table_guard_key()",
    "bitemporal_internal.fact_version_notify_closed()",
    "bitemporal_internal.text_search_config(text,text)",
    "bitemporal_internal.fact_version_stamp_insert()",
    "bitemporal_internal.table_guard()",
    "bitemporal_internal.invalidation_channel()",
}


def test_the_check_covers_migration_0010s_functions(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        checked = {
            r[0]
            for r in conn.execute(
                "SELECT p.oid::regprocedure::text FROM pg_proc p "
                "JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname LIKE 'bitemporal%' AND (p.prosqlbody IS NOT NULL "
                "OR 'search_path=pg_catalog, pg_temp' = ANY (p.proconfig))"
            )
        }
    assert DEFINED_IN_0010 <= checked, sorted(DEFINED_IN_0010 - checked)
