"""Upgrading a database that holds data, and re-running a migration that failed part way."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import psycopg
import pytest

from bitemporal import BitemporalError, Key, Store, migrations
from tests.helpers import catalog

pytestmark = [
    pytest.mark.not_on_citus(
        "migration paths (step by step, downgrades, offline scripts, layouts) are single-node: "
        "on Citus every test database is migrated with citus=True, and a distributed store "
        "is not downgraded (docs/citus.md)"
    ),
    pytest.mark.default_layout_only("it steps through the revisions on the default layout"),
]

KEY = Key("mailer:prod", "attachment_limit_mb")


def test_data_survives_the_upgrade_path(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0001")
    with psycopg.connect(url, autocommit=True) as conn:
        # Written with the first revision's own SQL function, as a deployment of it would.
        conn.execute(
            "SELECT bitemporal.record('mailer:prod', 'attachment_limit_mb', 'policy', '50', "
            "'2026-01-01', NULL, '2025-12-15 12:00+00')"
        )
        conn.execute(
            "SELECT bitemporal.record('mailer:prod', 'attachment_limit_mb', 'policy', '80', "
            "'2026-09-01', NULL, '2026-09-03 09:00+00')"
        )
        before = conn.execute("SELECT * FROM bitemporal.versions ORDER BY version_id").fetchall()
    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert (
            conn.execute("SELECT * FROM bitemporal.versions ORDER BY version_id").fetchall()
            == before
        )
        store = Store(conn)
        assert store.facts.resolve(KEY, valid_at=date(2026, 9, 2)).value == 80
        assert (
            store.facts.resolve(
                KEY, valid_at=date(2026, 9, 2), known_at=datetime(2026, 9, 2, tzinfo=UTC)
            ).value
            == 50
        )
        store.facts.record(KEY, 100, source="policy", valid_from=date(2026, 10, 1))
    # Down to the first revision and up again: the facts stay.
    migrations.downgrade(url, "0001")
    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert Store(conn).facts.resolve(KEY, valid_at=date(2026, 10, 2)).value == 100


def test_a_migration_that_fails_part_way_can_be_run_again(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0002")
    holder = psycopg.connect(url)
    try:
        # A busy table: a writer's transaction is open, and 0003 adds a trigger to it.
        holder.execute("LOCK TABLE bitemporal.fact_version IN ROW EXCLUSIVE MODE")
        with pytest.raises(BitemporalError, match="lock timeout"):  # typed, not a driver error
            migrations.migrate(url, lock_timeout="200ms")
        assert migrations.current(url) == "0002"  # nothing of 0003 onwards was kept
    finally:
        holder.rollback()
        holder.close()
    migrations.migrate(url)
    assert migrations.current(url) == migrations.head()


# An application table's generated functions: where they live, their whole
# definition (SET search_path included), owner and grants.
GENERATED = """
    SELECT p.proname, md5(pg_get_functiondef(p.oid)), p.proconfig, p.prosecdef,
           pg_get_userbyid(p.proowner), p.proacl::text, obj_description(p.oid, 'pg_proc')
      FROM pg_proc p WHERE p.pronamespace = 'app'::regnamespace ORDER BY 1"""


def _application_table(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA app")
        conn.execute("CREATE TABLE app.price (sku text, amount numeric NOT NULL)")
        conn.execute("SELECT bitemporal.enable_table('app.price', ARRAY['sku'])")


def test_upgrading_from_0008_gives_the_schema_of_a_new_database(make_database: Any) -> None:
    """Migration 0009 moves functions and redefines most of them: a database upgraded
    from 0008, application table included, ends up exactly like one migrated from scratch."""
    upgraded, fresh = make_database(), make_database()
    migrations.migrate(upgraded, "0008")
    _application_table(upgraded)
    with psycopg.connect(upgraded, autocommit=True) as conn:
        conn.execute("SELECT app.price_record('A', 1)")
        at_0008 = conn.execute(GENERATED).fetchall()
    migrations.migrate(upgraded)
    migrations.migrate(fresh)
    _application_table(fresh)
    assert catalog(upgraded) == catalog(fresh)
    with psycopg.connect(upgraded) as a, psycopg.connect(fresh) as b:
        assert a.execute(GENERATED).fetchall() == b.execute(GENERATED).fetchall()
        assert a.execute("SELECT amount FROM app.price_as_of() WHERE sku = 'A'").fetchall() == [
            (1,)
        ]
    # And back: 0008's schema and generated functions, exactly.
    migrations.downgrade(upgraded, "0008")
    reference = make_database()
    migrations.migrate(reference, "0008")
    _application_table(reference)
    assert catalog(upgraded) == catalog(reference)
    with psycopg.connect(upgraded) as a:
        assert a.execute(GENERATED).fetchall() == at_0008


# An application table's triggers (its key table's included): which function each runs.
APP_TRIGGERS = """
    SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid), obj_description(t.oid, 'pg_trigger')
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
     WHERE c.relnamespace = 'app'::regnamespace AND NOT t.tgisinternal ORDER BY 1, 2"""


def test_upgrading_from_0009_gives_the_schema_of_a_new_database(make_database: Any) -> None:
    """Migration 0010 redefines helpers 0009 moved and guards every key table: a database
    upgraded from 0009, with a table made bitemporal before, ends up exactly like one
    migrated from scratch, and its downgrade gives 0009's schema back."""
    upgraded, fresh = make_database(), make_database()
    migrations.migrate(upgraded, "0009")
    _application_table(upgraded)
    with psycopg.connect(upgraded, autocommit=True) as conn:
        conn.execute("SELECT app.price_record('A', 1)")
        at_0009 = conn.execute(GENERATED).fetchall(), conn.execute(APP_TRIGGERS).fetchall()
    migrations.migrate(upgraded)
    migrations.migrate(fresh)
    _application_table(fresh)
    assert catalog(upgraded) == catalog(fresh)
    with psycopg.connect(upgraded, autocommit=True) as a, psycopg.connect(fresh) as b:
        assert a.execute(GENERATED).fetchall() == b.execute(GENERATED).fetchall()
        assert a.execute(APP_TRIGGERS).fetchall() == b.execute(APP_TRIGGERS).fetchall()
        # The table made bitemporal before 0010 has its key table guarded too.
        assert {r[1] for r in a.execute(APP_TRIGGERS) if r[0] == "price_key"} == {
            "bitemporal_append_only",
            "bitemporal_no_truncate",
        }
        with pytest.raises(psycopg.Error) as caught:
            a.execute("UPDATE app.price_key SET last_known_at = '2001-01-01Z'")
        assert caught.value.sqlstate == "BT006"
        a.execute("SELECT app.price_record('A', 2)")
        assert a.execute("SELECT amount FROM app.price_as_of() WHERE sku = 'A'").fetchall() == [
            (2,)
        ]
    # And back: 0009's schema, generated functions and triggers, exactly.
    migrations.downgrade(upgraded, "0009")
    reference = make_database()
    migrations.migrate(reference, "0009")
    _application_table(reference)
    assert catalog(upgraded) == catalog(reference)
    with psycopg.connect(upgraded) as a:
        assert (a.execute(GENERATED).fetchall(), a.execute(APP_TRIGGERS).fetchall()) == at_0009
