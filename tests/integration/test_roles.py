"""Log in as each role and prove what it can and cannot do."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bitemporal import Key, PermissionDeniedError, Store
from tests.helpers import Connect

DENIED = psycopg.errors.InsufficientPrivilege


@pytest.fixture(scope="module")
def logins(database_url: str) -> Iterator[dict[str, str]]:
    """A login role per bitemporal role (and one with none), dropped afterwards."""
    suffix = uuid.uuid4().hex[:8]
    names = {kind: f"bt_{kind}_{suffix}" for kind in ("reader", "writer", "auditor", "nobody")}
    with psycopg.connect(database_url, autocommit=True) as admin:
        for kind, name in names.items():
            membership = (
                sql.SQL("")
                if kind == "nobody"
                else sql.SQL(" IN ROLE {}").format(sql.Identifier(f"bitemporal_{kind}"))
            )
            admin.execute(
                sql.SQL("CREATE ROLE {} LOGIN{}").format(sql.Identifier(name), membership)
            )
    yield names
    with psycopg.connect(database_url, autocommit=True) as admin:
        for name in names.values():
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


@pytest.fixture
def login(connect: Connect, logins: dict[str, str]) -> Callable[[str], psycopg.Connection[Any]]:
    """Connects as the login role of a kind ("reader", ...)."""

    def as_role(kind: str) -> psycopg.Connection[Any]:
        return connect(user=logins[kind])

    return as_role


@pytest.fixture
def seeded(store: Store, key: Key) -> Key:
    store.facts.record(key, 50, source="policy", valid_from=date(2026, 1, 1))
    return key


DIRECT_WRITES = [
    (
        "INSERT INTO bitemporal.fact_version (entity, "
        "attribute, source, value, valid_period, known_period) "
        "VALUES (%(e)s, 'x', 's', '1', tstzrange(NULL, NULL), tstzrange(now(), NULL))"
    ),
    "UPDATE bitemporal.fact_version SET value = '1' WHERE entity = %(e)s",
    "DELETE FROM bitemporal.fact_version WHERE entity = %(e)s",
    "TRUNCATE bitemporal.fact_version CASCADE",
    "UPDATE bitemporal.fact_key SET last_known_at = now() WHERE entity = %(e)s",
    "UPDATE bitemporal.memory_item SET pinned = true",
    (
        "SELECT bitemporal_internal.write_key(%(e)s, 'attachment_limit_mb', 'policy', "
        "tstzrange(NULL, NULL), now(), NULL, '1', NULL, true)"
    ),
]


@pytest.mark.parametrize("kind", ["reader", "writer", "auditor", "nobody"])
@pytest.mark.parametrize("statement", DIRECT_WRITES)
def test_no_role_writes_tables_directly(
    login: Callable[[str], psycopg.Connection[Any]], seeded: Key, kind: str, statement: str
) -> None:
    with pytest.raises(DENIED):
        login(kind).execute(statement, {"e": seeded.entity})


def test_reader_reads_and_cannot_write(
    login: Callable[[str], psycopg.Connection[Any]], seeded: Key
) -> None:
    store = Store(login("reader"))
    assert store.facts.resolve(seeded).value == 50
    assert len(store.facts.history(seeded)) == 1
    row = store.connection.execute(
        "SELECT count(*) FROM bitemporal.facts_now WHERE entity = %s", (seeded.entity,)
    ).fetchone()
    assert row == (1,)
    with pytest.raises(PermissionDeniedError):
        store.facts.record(seeded, 80, source="policy")
    with pytest.raises(PermissionDeniedError):
        store.memory(f"ns-{uuid.uuid4().hex}")
    with pytest.raises(DENIED):
        store.connection.execute("SELECT * FROM bitemporal.memory_log")


def test_writer_writes_only_through_functions(
    login: Callable[[str], psycopg.Connection[Any]], seeded: Key
) -> None:
    store = Store(login("writer"))
    result = store.facts.record(seeded, 80, source="policy", valid_from=date(2026, 9, 1))
    assert result.created and result.superseded
    assert store.facts.retract(seeded, source="policy", valid_from=date(2027, 1, 1))
    memory = store.memory(f"ns-{uuid.uuid4().hex}")
    memory.register("a")
    assert memory.recall("a") is True
    assert memory.step() == []
    # The writer writes; reading is the reader's grant (applications hold both).
    with pytest.raises(DENIED):
        store.connection.execute("SELECT * FROM bitemporal.fact_version")


def test_write_functions_ignore_the_callers_search_path(
    login: Callable[[str], psycopg.Connection[Any]], seeded: Key
) -> None:
    conn = login("writer")
    conn.execute("SET search_path = pg_temp, public")
    conn.execute(
        "CREATE FUNCTION pg_temp.tstzrange(timestamptz, timestamptz, text) RETURNS tstzrange "
        "LANGUAGE sql AS $$ SELECT NULL::tstzrange $$"
    )
    result = Store(conn).facts.record(seeded, 81, source="policy", valid_from=date(2026, 10, 1))
    assert result.created


def test_auditor_reads_everything_and_writes_nothing(
    login: Callable[[str], psycopg.Connection[Any]], seeded: Key
) -> None:
    conn = login("auditor")
    for table in (
        "fact_version",
        "fact_key",
        "fact_request",
        "memory_log",
        "memory_item",
        "alembic_version",
    ):
        conn.execute(
            sql.SQL("SELECT count(*) FROM bitemporal.{}").format(sql.Identifier(table))
        ).fetchone()
    with pytest.raises(PermissionDeniedError):
        Store(conn).facts.record(seeded, 80, source="policy")


def test_a_role_without_grants_sees_nothing(
    login: Callable[[str], psycopg.Connection[Any]], seeded: Key
) -> None:
    with pytest.raises(PermissionDeniedError, match="permission denied"):
        Store(login("nobody")).facts.resolve(seeded)


def test_reader_calls_every_read_function(login: Any, seeded: Key, store: Store) -> None:
    """The read functions keep working for the reader although the helpers they use live
    in bitemporal_internal, which the reader may not use itself."""
    namespace = f"ns-{uuid.uuid4().hex}"
    memory = store.memory(namespace)
    memory.register("a")
    schema = f"app_{uuid.uuid4().hex[:10]}"
    admin = store.connection
    admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    admin.execute(
        sql.SQL("CREATE TABLE {}.price (sku text, amount numeric)").format(sql.Identifier(schema))
    )
    admin.execute(
        "SELECT bitemporal.enable_table(%s::regclass, ARRAY['sku'])", (f"{schema}.price",)
    )
    admin.execute(sql.SQL("SELECT {}.price_record('A', 1)").format(sql.Identifier(schema)))
    admin.execute(
        sql.SQL(
            "GRANT USAGE ON SCHEMA {0} TO bitemporal_reader; "
            "GRANT SELECT ON ALL TABLES IN SCHEMA {0} TO bitemporal_reader"
        ).format(sql.Identifier(schema))
    )
    try:
        reader = login("reader")
        e, a = seeded.entity, seeded.attribute
        queries = [
            ("SELECT count(*) FROM bitemporal.as_of(%s, %s)", (e, a), 1),
            ("SELECT count(*) FROM bitemporal.as_of_planned(%s, %s)", (e, a), 1),
            ("SELECT (bitemporal.resolve(%s, %s)).status::text", (e, a), "supported"),
            ("SELECT count(r.version) FROM bitemporal.resolve_versions(%s, %s) r", (e, a), 1),
            ("SELECT count(*) FROM bitemporal.history(%s, %s)", (e, a), 1),
            ("SELECT count(*) FROM bitemporal.changes(NULL, NULL, %s, %s)", (e, a), 1),
            ("SELECT bitemporal.explain(%s, %s) ->> 'status'", (e, a), "supported"),
            (
                "SELECT bitemporal.explain_sentence(bitemporal.explain(%s, %s)) IS NOT NULL",
                (e, a),
                True,
            ),
            ("SELECT count(*) FROM bitemporal.retrospective_diff(%s, %s, NULL, now())", (e, a), 1),
            ("SELECT count(*) >= 0 FROM bitemporal.stale()", (), True),
            ("SELECT count(*) FROM bitemporal.dependents('{}', '{}')", (), 0),
            (
                (
                    "SELECT count(*) FROM bitemporal.search_evidence("
                    "'limit', NULL, NULL, 5, 'english', %s, %s)"
                ),
                (e, a),
                0,
            ),
            (
                "SELECT count(*) FROM bitemporal.rank_versions('{}', '{}', NULL, NULL, 5, %s, %s)",
                (e, a),
                0,
            ),
            ("SELECT bitemporal.memory_turn(%s)", (namespace,), 1),
            ("SELECT count(*) FROM bitemporal.memory_items(%s)", (namespace,), 1),
            ("SELECT bitemporal.memory_is_present(%s, 'a')", (namespace,), True),
            ("SELECT bitemporal.memory_working_set_size(%s)", (namespace,), 1),
            ("SELECT bitemporal.memory_retention(%s, 'a')", (namespace,), 1.0),
            ("SELECT bitemporal.memory_stability(%s, 'a') > 0", (namespace,), True),
            (f"SELECT count(*) FROM {schema}.price_as_of()", (), 1),
            (f"SELECT count(*) FROM {schema}.price_history('A')", (), 1),
            (f"SELECT count(*) FROM {schema}.price_changes()", (), 1),
            (
                "SELECT count(*) FROM bitemporal.table_changes(%s::regclass)",
                (f"{schema}.price",),
                1,
            ),
        ]
        for query, params, expected in queries:
            assert reader.execute(query, params).fetchone() == (expected,), query
        with pytest.raises(
            psycopg.Error, match=r'unknown key \(sku="B"\) in app_\w+\.price'
        ) as caught:
            reader.execute(
                sql.SQL("SELECT * FROM {}.price_history('B')").format(sql.Identifier(schema))
            )
        assert caught.value.sqlstate == "BT004"
        # The helpers themselves are out of the reader's reach.
        with pytest.raises(DENIED):
            reader.execute("SELECT bitemporal_internal.check_instant('t', now())")
    finally:
        admin.execute("SELECT bitemporal.drop_table(%s::regclass)", (f"{schema}.price",))
        admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def test_only_a_tables_owner_makes_it_bitemporal(store: Store) -> None:
    """The generated write functions are SECURITY DEFINER and the table's triggers fire
    inside them: owned by anyone but the table's owner, a trigger the owner adds would run
    with that role's rights (the superuser's, when the superuser ran enable_table)."""
    admin = store.connection
    suffix = uuid.uuid4().hex[:10]
    owner, schema = f"bt_owner_{suffix}", f"app_{suffix}"
    table = f"{schema}.price"
    admin.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(owner)))
    admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    admin.execute(
        sql.SQL("CREATE TABLE {}.price (sku text, amount numeric)").format(sql.Identifier(schema))
    )
    alter_owner = sql.SQL("ALTER TABLE {}.price OWNER TO {}")
    try:
        admin.execute(alter_owner.format(sql.Identifier(schema), sql.Identifier(owner)))
        with pytest.raises(psycopg.Error, match=f"it is owned by {owner}") as caught:
            admin.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['sku'])", (table,))
        assert caught.value.sqlstate == "BT402"
        assert admin.execute(
            "SELECT count(*) FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attname = 'version_id'",
            (table,),
        ).fetchone() == (0,)
        # Given to the caller first, it is made bitemporal; the write functions belong to its owner.
        admin.execute(alter_owner.format(sql.Identifier(schema), sql.SQL("CURRENT_USER")))
        admin.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['sku'])", (table,))
        assert admin.execute(
            "SELECT bool_and(p.proowner = c.relowner) FROM pg_proc p, pg_class c "
            "WHERE p.pronamespace = %s::regnamespace AND c.oid = %s::regclass",
            (schema, table),
        ).fetchone() == (True,)
        # Handed to another role afterwards, only that role may generate them again.
        admin.execute(alter_owner.format(sql.Identifier(schema), sql.Identifier(owner)))
        with pytest.raises(psycopg.Error, match=f"owned by {owner}") as caught:
            admin.execute("SELECT bitemporal.refresh_table(%s::regclass)", (table,))
        assert caught.value.sqlstate == "BT402"
    finally:
        admin.execute(alter_owner.format(sql.Identifier(schema), sql.SQL("CURRENT_USER")))
        if admin.execute("SELECT to_regclass(%s || '_key')", (table,)).fetchone() != (None,):
            admin.execute("SELECT bitemporal.drop_table(%s::regclass)", (table,))
        admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(owner)))
