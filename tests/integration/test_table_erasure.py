"""Erasure of application tables (migration 0013): <table>_erase, store.app_tables.erase,
the guard, the roles, the key's lock.

Each test makes its table in a schema of its own in the shared test database.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql

import bitemporal
from bitemporal import (
    InvalidReasonError,
    InvalidValueError,
    NotErasableError,
    PermissionDeniedError,
    Store,
    UnknownKeyError,
)
from tests.helpers import Connect, eraser_roles

JAN, FEB, MAR = (datetime(2026, m, 1, tzinfo=UTC) for m in (1, 2, 3))


@pytest.fixture
def schema(connect: Connect) -> Iterator[str]:
    """A schema of the test's own with person(id, email, name), made bitemporal."""
    name = f"erase_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    conn.execute(
        sql.SQL("CREATE TABLE {} (id int NOT NULL, email text, name text)").format(
            sql.Identifier(name, "person")
        )
    )
    conn.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['id'])", (f"{name}.person",))
    yield name
    conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (f"{name}.person",))
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def table_rows(conn: psycopg.Connection[Any], schema: str) -> list[tuple[Any, ...]]:
    """Every version of the table, and the erasures of it: what a refused erasure leaves."""
    rows = conn.execute(
        sql.SQL("SELECT t::text FROM {} t ORDER BY version_id").format(
            sql.Identifier(schema, "person")
        )
    ).fetchall()
    return (
        rows
        + conn.execute(
            "SELECT e::text FROM bitemporal.erasures e WHERE relation = %s", (f"{schema}.person",)
        ).fetchall()
    )


def test_erase_clears_the_values_of_every_version_and_keeps_the_shape(
    store: Store, schema: str, raw: psycopg.Connection[Any]
) -> None:
    t, person = store.app_tables, f"{schema}.person"
    t.record(person, {"id": 1, "email": "ann@example.com", "name": "Ann"}, valid_from=JAN)
    t.record(person, {"id": 1, "email": "ann@example.org", "name": "Ann"}, valid_from=FEB)
    t.record(person, {"id": 2, "email": "bo@example.com", "name": "Bo"})
    before = [(v.version_id, v.valid_period, v.known_period) for v in t.history(person, {"id": 1})]
    assert len(before) == 3  # the first, its remainder, the second

    erasure = t.erase(person, {"id": 1}, reason="GDPR art. 17, ticket 42")
    assert erasure is not None
    assert (erasure.scope, erasure.relation, erasure.key) == ("table", person, {"id": 1})
    assert (erasure.entity, erasure.attribute, erasure.policy) == (None, None, None)
    assert erasure.reason == "GDPR art. 17, ticket 42"
    assert sorted(erasure.version_ids) == [v for v, _, _ in before]
    row = raw.execute("SELECT session_user").fetchone()
    assert row is not None and erasure.erased_by == row[0]

    history = t.history(person, {"id": 1})
    assert [(v.version_id, v.valid_period, v.known_period) for v in history] == before
    assert all(v.row == {"id": 1, "email": None, "name": None} for v in history)
    assert all(v.erased and v.erased_at == erasure.erased_at for v in history)
    [now] = t.as_of(person, {"id": 1})
    assert now.erased and now.row["email"] is None
    [other] = t.history(person, {"id": 2})
    assert other.row["email"] == "bo@example.com" and not other.erased

    # Idempotent: nothing new is recorded.
    assert t.erase(person, {"id": 1}, reason="again") is None
    count = raw.execute(
        "SELECT count(*) FROM bitemporal.erasures WHERE relation = %s", (person,)
    ).fetchone()
    assert count == (1,)
    # A later write records anew, and re-records the remainder of the erased version it cuts
    # without values: erased too. A second erasure erases the new version only.
    later = t.record(person, {"id": 1, "email": "new@example.com", "name": "Ann"}, valid_from=MAR)
    [remainder] = [
        v
        for v in t.history(person, {"id": 1})
        if v.version_id not in erasure.version_ids and v.version_id != later.version_id
    ]
    assert remainder.erased and remainder.row["email"] is None
    assert remainder.carried_from in erasure.version_ids
    second = t.erase(person, {"id": 1}, reason="ticket 43")
    assert second is not None and second.version_ids == (later.version_id,)


def test_bad_input_raises_a_typed_error_and_changes_nothing(
    store: Store, schema: str, raw: psycopg.Connection[Any]
) -> None:
    t, person = store.app_tables, f"{schema}.person"
    t.record(person, {"id": 1, "email": "ann@example.com", "name": "Ann"})
    before = table_rows(raw, schema)
    with pytest.raises(UnknownKeyError):
        t.erase(person, {"id": 99}, reason="ticket")
    for reason in ("", "   ", None):
        with pytest.raises(InvalidReasonError):
            t.erase(person, {"id": 1}, reason=reason)  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError):
        t.erase(person, {"id": 1, "email": "x"}, reason="ticket")
    # In SQL too: the same SQLSTATEs.
    function = sql.Identifier(schema, "person_erase")
    for args, code in (((99, "ticket"), "BT004"), ((1, " "), "BT009"), ((None, "t"), "BT005")):
        with pytest.raises(psycopg.Error) as failure:
            raw.execute(sql.SQL("SELECT {}(%s, %s)").format(function), args)
        assert failure.value.sqlstate == code
    # A NOT NULL value column cannot hold an erased value: refused before anything changes.
    raw.execute(
        sql.SQL("ALTER TABLE {} ALTER COLUMN name SET NOT NULL").format(
            sql.Identifier(schema, "person")
        )
    )
    with pytest.raises(NotErasableError, match="name"):
        t.erase(person, {"id": 1}, reason="ticket")
    assert table_rows(raw, schema) == before


def test_only_an_erasure_may_clear_values(
    store: Store, schema: str, raw: psycopg.Connection[Any]
) -> None:
    t, person = store.app_tables, f"{schema}.person"
    first = t.record(person, {"id": 1, "email": "a@example.com", "name": "Ann"})
    table = sql.Identifier(schema, "person")
    for statement in (
        "UPDATE {} SET email = NULL WHERE version_id = %s",
        "UPDATE {} SET email = NULL, name = NULL WHERE version_id = %s",
    ):
        with pytest.raises(psycopg.Error) as failure:
            raw.execute(sql.SQL(statement).format(table), (first.version_id,))
        assert failure.value.sqlstate == "BT006"
    # An erasure of another transaction does not let this one clear a later version.
    t.erase(person, {"id": 1}, reason="ticket")
    later = t.record(person, {"id": 1, "email": "b@example.com", "name": "Ann"}, valid_from=MAR)
    with pytest.raises(psycopg.Error) as failure:
        raw.execute(
            sql.SQL("UPDATE {} SET email = NULL WHERE version_id = %s").format(table),
            (later.version_id,),
        )
    assert failure.value.sqlstate == "BT006"
    # Nor does an erasure row of this transaction let it change anything but the values.
    with raw.transaction():
        raw.execute(
            "INSERT INTO bitemporal.erasures (reason, scope, relation, key, version_ids)"
            " VALUES ('by hand', 'table', %s, '{\"id\": 1}', ARRAY[%s]::bigint[])",
            (person, later.version_id),
        )
        with pytest.raises(psycopg.Error) as failure, raw.transaction():
            raw.execute(
                sql.SQL("UPDATE {} SET email = NULL, id = 5 WHERE version_id = %s").format(table),
                (later.version_id,),
            )
        assert failure.value.sqlstate == "BT006"
        raise psycopg.Rollback  # the row inserted by hand goes too
    assert raw.execute(
        "SELECT count(*) FROM bitemporal.erasures WHERE reason = 'by hand'"
    ).fetchone() == (0,)


def test_erase_waits_for_a_write_of_the_key_in_flight(
    store: Store, schema: str, connect: Connect
) -> None:
    """The key's lock: an erasure started while a write of the key is open waits for it,
    and erases what it wrote."""
    t, person = store.app_tables, f"{schema}.person"
    t.record(person, {"id": 1, "email": "a@example.com", "name": "Ann"}, valid_from=JAN)
    writer = connect(autocommit=False)
    in_flight = Store(writer).app_tables.record(
        person, {"id": 1, "email": "b@example.com", "name": "Ann"}, valid_from=FEB
    )
    done: list[Any] = []
    thread = threading.Thread(
        target=lambda: done.append(
            Store(connect()).app_tables.erase(person, {"id": 1}, reason="ticket")
        )
    )
    thread.start()
    time.sleep(0.5)
    assert not done, "the erasure did not wait for the write in flight"
    writer.commit()
    thread.join(timeout=30)
    [erasure] = done
    assert erasure is not None and in_flight.version_id in erasure.version_ids
    assert all(v.erased for v in t.history(person, {"id": 1}))


@pytest.fixture
def roles(migrated_database_url: str) -> Iterator[dict[str, str]]:
    """LOGIN roles in a database of the test's own: a writer, an eraser (granted EXECUTE on
    the table's erase function) and a reader, granted through bitemporal.grant_roles."""
    with eraser_roles(migrated_database_url, "bt_te") as roles:
        names = {kind: sql.Identifier(roles[kind]) for kind in ("reader", "writer", "eraser")}
        with psycopg.connect(migrated_database_url, autocommit=True) as admin:
            admin.execute("CREATE TABLE public.person (id int NOT NULL, email text)")
            admin.execute("SELECT bitemporal.enable_table('public.person', ARRAY['id'])")
            admin.execute(
                sql.SQL(
                    "GRANT EXECUTE ON FUNCTION public.person_record(int, text, timestamptz,"
                    " timestamptz, timestamptz) TO {writer};"
                    " GRANT EXECUTE ON FUNCTION public.person_erase(int, text) TO {eraser};"
                    " GRANT SELECT ON public.person, public.person_key"
                    " TO {reader}, {writer}, {eraser};"
                    # An application reads and writes (the reader's grants, then the writer's).
                    " GRANT {reader} TO {writer}"
                ).format(**names)
            )
        yield roles


def test_only_a_role_granted_the_erase_function_may_erase(roles: dict[str, str]) -> None:
    url = roles["url"]
    with psycopg.connect(url, user=roles["writer"], autocommit=True) as conn:
        writer = Store(conn)
        writer.app_tables.record("public.person", {"id": 1, "email": "a@example.com"})
        with pytest.raises(PermissionDeniedError):
            writer.app_tables.erase("public.person", {"id": 1}, reason="ticket")
    with psycopg.connect(url, user=roles["eraser"], autocommit=True) as conn:
        erasure = Store(conn).app_tables.erase("public.person", {"id": 1}, reason="ticket")
        assert erasure is not None and erasure.erased_by == roles["eraser"]
    with psycopg.connect(url, user=roles["reader"], autocommit=True) as conn:
        # A reader sees which versions are erased (the view), not who erased them or why.
        [version] = Store(conn).app_tables.history("public.person", {"id": 1})
        assert version.erased and version.row["email"] is None
        with pytest.raises(psycopg.Error) as failure:
            conn.execute("SELECT reason FROM bitemporal.erasures")
        assert failure.value.sqlstate == "42501"


def test_the_async_api_erases_too(database_url: str, schema: str) -> None:
    person = f"{schema}.person"

    async def main() -> tuple[Any, Any]:
        store = await bitemporal.connect_async(database_url)
        async with store:
            await store.app_tables.record(person, {"id": 3, "email": "c@example.com", "name": "C"})
            erasure = await store.app_tables.erase(person, {"id": 3}, reason="ticket")
            again = await store.app_tables.erase(person, {"id": 3}, reason="ticket")
            return erasure, again

    erasure, again = asyncio.run(main())
    assert isinstance(erasure, bitemporal.Erasure) and erasure.key == {"id": 3}
    assert again is None


def test_values_are_recorded_again_over_an_erased_version(store: Store, schema: str) -> None:
    # An erased version never counts as holding a row's values: recording them again is a
    # write, not a no-op.
    t, person = store.app_tables, f"{schema}.person"
    t.record(person, {"id": 1, "email": "ann@example.com", "name": "Ann"}, valid_from=JAN)
    t.erase(person, {"id": 1}, reason="request")
    again = t.record(person, {"id": 1, "email": "ann@example.com", "name": "Ann"}, valid_from=JAN)
    assert again.created
    [now] = t.as_of(person, {"id": 1})
    assert (now.row["email"], now.erased) == ("ann@example.com", False)


def test_an_all_null_row_is_recorded_again_over_an_erased_version(
    store: Store, schema: str
) -> None:
    t, person = store.app_tables, f"{schema}.person"
    t.record(person, {"id": 2, "email": None, "name": None}, valid_from=JAN)
    t.erase(person, {"id": 2}, reason="request")
    nulls = t.record(person, {"id": 2, "email": None, "name": None}, valid_from=JAN)
    assert nulls.created
    [now] = t.as_of(person, {"id": 2})
    assert (now.row, now.erased) == ({"id": 2, "email": None, "name": None}, False)


def test_an_all_null_row_over_the_remainder_of_a_remainder_of_an_erased_version(
    store: Store, schema: str
) -> None:
    # Not erased, a row holding only NULLs is known: recording it again changes nothing.
    t, person = store.app_tables, f"{schema}.person"
    apr, may = (datetime(2026, m, 1, tzinfo=UTC) for m in (4, 5))
    first = t.record(person, {"id": 5, "email": None, "name": None}, valid_from=JAN)
    same = t.record(person, {"id": 5, "email": None, "name": None}, valid_from=JAN)
    assert (same.created, same.version_id) == (False, first.version_id)
    t.erase(person, {"id": 5}, reason="request")
    # Cuts after the erasure re-record remainders without values, carried from the
    # erased version, and the remainder of a remainder too.
    t.record(person, {"id": 5, "email": "b@example.com", "name": "B"}, valid_from=FEB, valid_to=MAR)
    t.record(person, {"id": 5, "email": "d@example.com", "name": "D"}, valid_from=apr, valid_to=may)
    [tail] = t.as_of(person, {"id": 5}, valid_at=may)
    assert tail.erased and tail.carried_from == first.version_id
    nulls = t.record(person, {"id": 5, "email": None, "name": None}, valid_from=may)
    assert nulls.created and nulls.superseded == (tail.version_id,)
    [now] = t.as_of(person, {"id": 5}, valid_at=may)
    assert (now.row, now.erased) == ({"id": 5, "email": None, "name": None}, False)
    again = t.record(person, {"id": 5, "email": None, "name": None}, valid_from=may)
    assert (again.created, again.version_id) == (False, nulls.version_id)
