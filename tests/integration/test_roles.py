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
            membership = sql.SQL("") if kind == "nobody" else sql.SQL(" IN ROLE {}").format(
                sql.Identifier(f"bitemporal_{kind}"))
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN{}").format(sql.Identifier(name), membership))
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
    ("INSERT INTO bitemporal.fact_version (entity, " "attribute, source, value, valid_period, known_period) "
     "VALUES (%(e)s, 'x', 's', '1', tstzrange(NULL, NULL), tstzrange(now(), NULL))"),
    "UPDATE bitemporal.fact_version SET value = '1' WHERE entity = %(e)s",
    "DELETE FROM bitemporal.fact_version WHERE entity = %(e)s",
    "TRUNCATE bitemporal.fact_version CASCADE",
    "UPDATE bitemporal.fact_key SET last_known_at = now() WHERE entity = %(e)s",
    "UPDATE bitemporal.memory_item SET pinned = true",
    "SELECT bitemporal.cut(%(e)s, 'attachment_limit_mb', 'policy', tstzrange(NULL, NULL), now())",
]


@pytest.mark.parametrize("kind", ["reader", "writer", "auditor", "nobody"])
@pytest.mark.parametrize("statement", DIRECT_WRITES)
def test_no_role_writes_tables_directly(login: Callable[[str], psycopg.Connection[Any]], seeded: Key, kind: str, statement: str) -> None:
    with pytest.raises(DENIED):
        login(kind).execute(statement, {"e": seeded.entity})


def test_reader_reads_and_cannot_write(login: Callable[[str], psycopg.Connection[Any]], seeded: Key) -> None:
    store = Store(login("reader"))
    assert store.facts.resolve(seeded).value == 50
    assert len(store.facts.history(seeded)) == 1
    row = store.connection.execute(
        "SELECT count(*) FROM bitemporal.facts_now WHERE entity = %s", (seeded.entity,)).fetchone()
    assert row == (1,)
    with pytest.raises(PermissionDeniedError):
        store.facts.record(seeded, 80, source="policy")
    with pytest.raises(PermissionDeniedError):
        store.memory(f"ns-{uuid.uuid4().hex}")
    with pytest.raises(DENIED):
        store.connection.execute("SELECT * FROM bitemporal.memory_log")


def test_writer_writes_only_through_functions(login: Callable[[str], psycopg.Connection[Any]], seeded: Key) -> None:
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


def test_write_functions_ignore_the_callers_search_path(login: Callable[[str], psycopg.Connection[Any]], seeded: Key) -> None:
    conn = login("writer")
    conn.execute("SET search_path = pg_temp, public")
    conn.execute(
        "CREATE FUNCTION pg_temp.tstzrange(timestamptz, timestamptz, text) RETURNS tstzrange "
        "LANGUAGE sql AS $$ SELECT NULL::tstzrange $$"
    )
    result = Store(conn).facts.record(seeded, 81, source="policy", valid_from=date(2026, 10, 1))
    assert result.created


def test_auditor_reads_everything_and_writes_nothing(login: Callable[[str], psycopg.Connection[Any]], seeded: Key) -> None:
    conn = login("auditor")
    for table in ("fact_version", "fact_key", "fact_request", "memory_log", "memory_item", "alembic_version"):
        conn.execute(sql.SQL("SELECT count(*) FROM bitemporal.{}").format(sql.Identifier(table))).fetchone()
    with pytest.raises(PermissionDeniedError):
        Store(conn).facts.record(seeded, 80, source="policy")


def test_a_role_without_grants_sees_nothing(login: Callable[[str], psycopg.Connection[Any]], seeded: Key) -> None:
    with pytest.raises(PermissionDeniedError, match="permission denied"):
        Store(login("nobody")).facts.resolve(seeded)
