"""Values written through SQL are held to what Python can read back (issue 11, finding 6):
a 5,001-digit integer or an array nested 5,000 deep is refused when written (BT007), by
every write path, so that no read of the key can fail on it later."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bitemporal import InvalidValueError, Key, RecordRow, Store, errors

HUGE = "1" + "0" * 5000  # 5,001 digits
DEEP = "[" * 5000 + "1" + "]" * 5000  # nested 5,000 deep
SMALL_ENOUGH = [
    "9" * 4300,
    "-" + "9" * 4300,
    "1e4299",
    "0." + "1" * 5000,
    "[" * 256 + "1" + "]" * 256,
    '{"a": ' * 256 + "1" + "}" * 256,
]
TOO_BIG = [
    HUGE,
    "-" + HUGE,
    "1e4300",
    "[" * 257 + "]" * 257,
    '{"a": ' * 257 + "{}" + "}" * 257,
    '{"a": [1, 2, {"b": ' + HUGE + "}]}",
    DEEP,
]


@pytest.mark.parametrize("value", TOO_BIG, ids=range(len(TOO_BIG)))
def test_record_refuses_what_python_cannot_read(store: Store, key: Key, value: str) -> None:
    store.facts.record(key, 1, source="s")
    with pytest.raises(InvalidValueError), errors.translate():
        store.connection.execute(
            "SELECT bitemporal.record(%s, %s, 's', %s::jsonb)", (key.entity, key.attribute, value)
        )
    # Nothing was written, and every read of the key still works.
    assert [v.value for v in store.facts.history(key)] == [1]
    assert store.facts.resolve(key).value == 1
    assert store.facts.changes(key=key)


@pytest.mark.parametrize("value", SMALL_ENOUGH, ids=range(len(SMALL_ENOUGH)))
def test_values_within_the_limits_are_kept(store: Store, key: Key, value: str) -> None:
    store.connection.execute(
        "SELECT bitemporal.record(%s, %s, 's', %s::jsonb)", (key.entity, key.attribute, value)
    )
    [version] = store.facts.history(key)
    assert version.value is not None


def test_record_many_refuses_them(store: Store, key: Key) -> None:
    with pytest.raises(InvalidValueError), errors.translate():
        store.connection.execute(
            "SELECT * FROM bitemporal.record_many("
            "ARRAY[ROW(%s, %s, 's', %s::jsonb, NULL, NULL, NULL, NULL)]"
            "::bitemporal.batch_row[])",
            (key.entity, key.attribute, HUGE),
        )
    store.facts.record_many([RecordRow(key, 1, source="s")])
    assert [v.value for v in store.facts.history(key)] == [1]


def test_a_hand_written_insert_is_refused(store: Store, key: Key) -> None:
    store.facts.record(key, 1, source="s")
    with pytest.raises(InvalidValueError), errors.translate():
        store.connection.execute(
            "INSERT INTO bitemporal.fact_version "
            "(entity, attribute, source, value, valid_period, known_period) "
            "VALUES (%s, %s, 'other', %s::jsonb, '(,)', tstzrange(now(), NULL, '[)'))",
            (key.entity, key.attribute, DEEP),
        )


@pytest.fixture
def document_table(
    connect: Callable[..., psycopg.Connection[Any]],
) -> Iterator[tuple[psycopg.Connection[Any], str]]:
    """An application table with a jsonb value column, in a schema of the test's own."""
    name = f"app_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    conn.execute(
        sql.SQL("CREATE TABLE {}.doc (id integer, title text, body jsonb)").format(
            sql.Identifier(name)
        )
    )
    conn.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['id'])", (f"{name}.doc",))
    yield conn, name
    conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (f"{name}.doc",))
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


@pytest.mark.parametrize("value", [HUGE, DEEP], ids=["digits", "depth"])
def test_application_tables_refuse_them(
    document_table: tuple[psycopg.Connection[Any], str], value: str
) -> None:
    conn, schema = document_table
    record = sql.SQL("SELECT {}.doc_record(1, 'a', %s::jsonb)").format(sql.Identifier(schema))
    conn.execute(record, ('{"ok": true}',))
    with pytest.raises(InvalidValueError), errors.translate():
        conn.execute(record, (value,))
    rows = conn.execute(
        sql.SQL("SELECT body FROM {}.doc").format(sql.Identifier(schema))
    ).fetchall()
    assert rows == [({"ok": True},)]


@pytest.mark.parametrize("value", [HUGE, DEEP], ids=["digits", "depth"])
def test_an_artifacts_detail_is_held_to_the_same_limits(store: Store, key: Key, value: str) -> None:
    version = store.facts.record(key, 1, source="s").version_id
    ref = f"ref-{uuid.uuid4().hex}"
    with pytest.raises(InvalidValueError), errors.translate():
        store.connection.execute(
            "SELECT bitemporal.record_artifact("
            "'summary', %s, ARRAY[%s]::bigint[], NULL, %s::jsonb)",
            (ref, version, value),
        )
    artifact = store.provenance.record("summary", ref, versions=[version], detail={"ok": True})
    assert store.provenance.get(artifact.artifact_id).detail == {"ok": True}
