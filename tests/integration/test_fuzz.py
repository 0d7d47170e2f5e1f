"""Fuzzing the Python API and the SQL functions: only documented errors, never a partial write."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bitemporal import (
    BitemporalError,
    DecayPolicy,
    InvalidValueError,
    Key,
    Store,
    WindowPolicy,
    errors,
)

DOCUMENTED = {"BT001", "BT002", "BT003", "BT004", "BT005", "BT007"}

texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", "'", "''", '"', "\\", "%s", "%(x)s", "$1", ";--", "\x00", "é" * 600, "x" * 1025]
    ),
)
zones = st.sampled_from([UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)), None])
instants = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=zones),
)
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=20),
    ),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def snapshot(conn: psycopg.Connection[Any], entity: str) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT version_id, known_period FROM bitemporal.fact_version WHERE entity = %s ORDER BY 1",
        (entity,),
    ).fetchall()


@FUZZ
@given(
    attribute=texts,
    source=texts,
    value=json_values,
    valid_from=instants,
    valid_to=instants,
    known_at=instants,
    retract=st.booleans(),
)
def test_python_api_fuzz(
    store: Store,
    attribute: str,
    source: str,
    value: Any,
    valid_from: Any,
    valid_to: Any,
    known_at: Any,
    retract: bool,
) -> None:
    entity = f"fuzz:{uuid.uuid4().hex}"
    try:
        key = Key(entity, attribute)
    except BitemporalError:
        return
    store.facts.record(key, "seed", source="seed", known_at=datetime(2000, 1, 1, tzinfo=UTC))
    before = snapshot(store.connection, entity)
    try:
        if retract:
            store.facts.retract(
                key, source=source, valid_from=valid_from, valid_to=valid_to, known_at=known_at
            )
        else:
            store.facts.record(
                key,
                value,
                source=source,
                valid_from=valid_from,
                valid_to=valid_to,
                known_at=known_at,
            )
    except BitemporalError:
        assert snapshot(store.connection, entity) == before
        return
    answer = store.facts.resolve(key)
    assert answer.status.value in ("missing", "supported", "conflict")


sql_times = st.one_of(
    st.none(),
    st.sampled_from(
        ["infinity", "-infinity", "9999-12-31", "4713-01-01 BC", "294276-01-01", "2026-01-01"]
    ),
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ).map(str),
)


@FUZZ
@given(
    entity=texts,
    attribute=texts,
    source=texts,
    value=st.sampled_from(["1", "null", '"x"', "{}", "[]"]),
    valid_from=sql_times,
    valid_to=sql_times,
    known_at=sql_times,
)
def test_sql_function_fuzz(
    database_url: str,
    entity: str,
    attribute: str,
    source: str,
    value: str,
    valid_from: Any,
    valid_to: Any,
    known_at: Any,
) -> None:
    entity = entity.replace("\x00", "")[:900] + f":{uuid.uuid4().hex}" if entity else ""
    attribute, source = attribute.replace("\x00", ""), source.replace("\x00", "")
    with psycopg.connect(database_url) as conn:
        check_sql_record(conn, entity, attribute, source, value, valid_from, valid_to, known_at)


def check_sql_record(
    conn: psycopg.Connection[Any],
    entity: str,
    attribute: str,
    source: str,
    value: str,
    valid_from: Any,
    valid_to: Any,
    known_at: Any,
) -> None:
    try:
        with errors.translate():
            conn.execute(
                "SELECT bitemporal.record(%s, %s, %s, %s::jsonb, %s::timestamptz, %s::timestamptz, %s::timestamptz)",
                (entity, attribute, source, value, valid_from, valid_to, known_at),
            )
    except BitemporalError as exc:
        assert isinstance(exc.__cause__, psycopg.Error) and exc.__cause__.sqlstate in DOCUMENTED
        conn.rollback()
        assert snapshot(conn, entity) == []
        return
    except psycopg.errors.DatetimeFieldOverflow:
        # PostgreSQL itself refuses the literal (e.g. beyond year 294276) before our function runs.
        conn.rollback()
        return
    conn.commit()
    assert snapshot(conn, entity) != []


def test_deeply_nested_value_is_refused(store: Store, key: Key) -> None:
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(InvalidValueError):
        store.facts.record(key, deep, source="s")
    assert store.facts.as_of(key) == []


def test_nul_character_in_a_value_is_refused(store: Store, key: Key) -> None:
    with pytest.raises(InvalidValueError, match="u0000"):
        store.facts.record(key, {"a\x00": 1}, source="s")
    assert store.facts.as_of(key) == []


numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -1.0, 1e-320, 1e300, 1e308]),
)


@FUZZ
@given(
    namespace=texts,
    item=texts,
    threshold=numbers,
    stability=st.one_of(st.none(), numbers),
    window=st.one_of(st.integers(min_value=-5, max_value=2**60), st.none()),
    pinned=st.booleans(),
)
def test_memory_api_fuzz(
    store: Store,
    namespace: str,
    item: str,
    threshold: float,
    stability: Any,
    window: Any,
    pinned: bool,
) -> None:
    """Odd names, ids, thresholds, stabilities and windows: only documented errors."""
    name = f"{namespace[:200]}:{uuid.uuid4().hex}" if namespace else namespace
    try:
        policy = (
            WindowPolicy(window=window) if window is not None else DecayPolicy(threshold=threshold)
        )
        memory = store.memory(name, policy=policy)
        memory.register(item, pinned=pinned, stability=stability)
        memory.recall(item)
        memory.step()
        memory.retention(item)
    except BitemporalError:
        return
    assert memory.is_present(item) in (True, False)
    assert memory.turn == 2
