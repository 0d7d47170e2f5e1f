"""Bad input gets a typed error, a documented SQLSTATE, and leaves the store exactly as it was."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest

from bitemporal import (
    AppendOnlyError,
    BatchError,
    BitemporalError,
    InvalidInputError,
    InvalidKeyError,
    InvalidPeriodError,
    InvalidTimeError,
    InvalidValueError,
    Key,
    KnowledgeTimeInFutureError,
    KnowledgeTimeInPastError,
    NaiveDatetimeError,
    RecordRow,
    Store,
    UnknownKeyError,
    errors,
)
from tests.helpers import Connect

KNOWN = datetime(2026, 1, 1, tzinfo=UTC)


def snapshot(conn: psycopg.Connection[Any], key: Key) -> tuple[list[Any], list[Any]]:
    versions = conn.execute(
        "SELECT * FROM bitemporal.versions WHERE entity "
        "= %s AND attribute = %s ORDER BY version_id",
        (key.entity, key.attribute),
    ).fetchall()
    keys = conn.execute(
        "SELECT * FROM bitemporal.fact_key WHERE entity = %s AND attribute = %s",
        (key.entity, key.attribute),
    ).fetchall()
    return versions, keys


@pytest.fixture
def seeded(store: Store, key: Key) -> Key:
    store.facts.record(key, 50, source="policy", valid_from=date(2026, 1, 1), known_at=KNOWN)
    return key


def unchanged(
    store: Store, key: Key, error: type[BitemporalError], call: Callable[[], object]
) -> BitemporalError:
    before = snapshot(store.connection, key)
    with pytest.raises(error) as caught:
        call()
    assert snapshot(store.connection, key) == before
    assert str(caught.value)  # a message a user can act on
    return caught.value


NAIVE = datetime(2026, 2, 1)


@pytest.mark.parametrize("argument", ["valid_from", "valid_to", "known_at"])
def test_naive_datetime_is_refused_before_writing(store: Store, seeded: Key, argument: str) -> None:
    naive: dict[str, Any] = {argument: NAIVE}
    err = unchanged(
        store,
        seeded,
        NaiveDatetimeError,
        lambda: store.facts.record(seeded, 1, source="policy", **naive),
    )
    assert "time zone" in str(err)


@pytest.mark.parametrize("argument", ["valid_at", "known_at", "now"])
def test_naive_datetime_is_refused_when_asking(store: Store, seeded: Key, argument: str) -> None:
    with pytest.raises(NaiveDatetimeError):
        store.facts.resolve(seeded, **{argument: NAIVE})


def test_time_of_the_wrong_type(store: Store, seeded: Key) -> None:
    unchanged(
        store,
        seeded,
        InvalidTimeError,
        lambda: store.facts.record(seeded, 1, source="policy", valid_from="2026-01-01"),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("start", "end"), [(date(2026, 3, 1), date(2026, 3, 1)), (date(2026, 3, 2), date(2026, 3, 1))]
)
def test_empty_or_inverted_period(store: Store, seeded: Key, start: date, end: date) -> None:
    unchanged(
        store,
        seeded,
        InvalidPeriodError,
        lambda: store.facts.record(seeded, 1, source="policy", valid_from=start, valid_to=end),
    )
    unchanged(
        store,
        seeded,
        InvalidPeriodError,
        lambda: store.facts.retract(seeded, source="policy", valid_from=start, valid_to=end),
    )


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("2026-03-01", "2026-03-01"),
        ("2026-03-02", "2026-03-01"),
        ("infinity", None),
        (None, "-infinity"),
    ],
)
def test_sql_refuses_bad_periods_with_bt001(
    store: Store, seeded: Key, start: str | None, end: str | None
) -> None:
    def call() -> None:
        with errors.translate():
            store.connection.execute(
                "SELECT bitemporal.record(%s, %s, 'policy', '1', %s, %s)",
                (seeded.entity, seeded.attribute, start, end),
            )

    err = unchanged(store, seeded, InvalidPeriodError, call)
    assert isinstance(err.__cause__, psycopg.Error) and err.__cause__.sqlstate == "BT001"


def test_knowledge_time_in_the_future(store: Store, seeded: Key) -> None:
    future = datetime.now(UTC) + timedelta(days=1)
    unchanged(
        store,
        seeded,
        KnowledgeTimeInFutureError,
        lambda: store.facts.record(seeded, 1, source="policy", known_at=future),
    )
    with pytest.raises(KnowledgeTimeInFutureError):
        store.facts.resolve(seeded, known_at=future)


@pytest.mark.parametrize("delta", [timedelta(days=-1), timedelta(0)])
def test_knowledge_time_not_after_recorded_knowledge(
    store: Store, seeded: Key, delta: timedelta
) -> None:
    err = unchanged(
        store,
        seeded,
        KnowledgeTimeInPastError,
        lambda: store.facts.record(seeded, 80, source="other", known_at=KNOWN + delta),
    )
    assert "not later than knowledge already recorded" in str(err)
    unchanged(
        store,
        seeded,
        KnowledgeTimeInPastError,
        lambda: store.facts.retract(seeded, source="policy", known_at=KNOWN + delta),
    )


def test_unknown_key(store: Store, key: Key) -> None:
    with pytest.raises(UnknownKeyError, match="unknown key"):
        store.facts.resolve(key)
    with pytest.raises(UnknownKeyError):
        store.facts.history(key)
    with pytest.raises(UnknownKeyError):
        store.facts.retract(key, source="policy")
    # A raw filter, not a question: nothing eligible.
    assert store.facts.as_of(key) == []


# Every method that takes the id of a version, an artifact or a passage.
ID_CALLS: dict[str, tuple[str, Callable[[Store, Any], object]]] = {
    "version": ("version_id", lambda store, id_: store.facts.version(id_)),
    "evidence.add": ("version_id", lambda store, id_: store.evidence.add(id_, "a passage")),
    "evidence.passages": ("version_id", lambda store, id_: store.evidence.passages(id_)),
    "evidence.rank": ("a version id of scores", lambda store, id_: store.evidence.rank({id_: 1})),
    "evidence.set_embedding": (
        "evidence_id",
        lambda store, id_: store.evidence.set_embedding(id_, [1.0]),
    ),
    "provenance.get": ("artifact_id", lambda store, id_: store.provenance.get(id_)),
    "provenance.retire": ("artifact_id", lambda store, id_: store.provenance.retire(id_)),
    "provenance.record": (
        "an id of versions",
        lambda store, id_: store.provenance.record("summary", "r", versions=[id_]),
    ),
    "provenance.dependents": (
        "an id of artifacts",
        lambda store, id_: store.provenance.dependents(artifacts=[id_]),
    ),
}


@pytest.mark.parametrize("id_", [1.0, 1.5, -1, 0, -(2**63), 2**63])
@pytest.mark.parametrize("call", ID_CALLS.values(), ids=ID_CALLS.keys())
def test_malformed_id(
    store: Store, seeded: Key, call: tuple[str, Callable[[Store, Any], object]], id_: object
) -> None:
    """An id that is not a whole number a row could have (bigint, from 1) is refused
    before the database, naming the argument (not as 'bigint out of range', nor as a
    function missing from an unmigrated schema); the connection stays usable."""
    what, method = call
    error = unchanged(store, seeded, InvalidInputError, lambda: method(store, id_))
    assert str(error).startswith(
        f"{what} must be a whole number from 1 to {2**63 - 1}, not {id_!r}"
    )
    [recorded] = store.facts.history(seeded)
    assert store.facts.version(recorded.version_id) is not None


@pytest.mark.parametrize("version_id", ["1", True, None, b"1", [1]])
def test_version_id_of_another_type(store: Store, seeded: Key, version_id: object) -> None:
    error = unchanged(
        store,
        seeded,
        InvalidInputError,
        lambda: store.facts.version(version_id),  # type: ignore[arg-type]
    )
    assert str(error).startswith(
        f"version_id must be a whole number from 1 to {2**63 - 1}, not {version_id!r}"
    )


# Every argument that takes several items, given one.
MANY_CALLS: dict[str, Callable[[Store], object]] = {
    "record_many": lambda store: store.facts.record_many(RecordRow(Key("e", "a"), 1, "s")),  # type: ignore[arg-type]
    "provenance.record": lambda store: store.provenance.record("summary", "r", versions=1),  # type: ignore[arg-type]
    "provenance.dependents": lambda store: store.provenance.dependents(versions="12"),  # type: ignore[arg-type]
    "memory.register_many": lambda store: store.memory("errors").register_many("item"),
}


@pytest.mark.parametrize("call", MANY_CALLS.values(), ids=MANY_CALLS.keys())
def test_one_item_where_several_are_expected(
    store: Store, seeded: Key, call: Callable[[Store], object]
) -> None:
    """A lone item, or a string (not a collection of its characters), is refused."""
    error = unchanged(store, seeded, InvalidInputError, lambda: call(store))
    assert "must be a list (or other iterable), not" in str(error)


def test_version_by_id(store: Store, seeded: Key) -> None:
    """A version is found by its id; an id no version has (nor ever had) answers None, as
    documented, whatever the id's size."""
    [recorded] = store.facts.history(seeded)
    found = store.facts.version(recorded.version_id)
    assert found is not None
    assert (found.version_id, found.key, found.value, found.source) == (
        recorded.version_id,
        seeded,
        50,
        "policy",
    )
    before = snapshot(store.connection, seeded)
    assert store.facts.version(2**63 - 1) is None
    assert snapshot(store.connection, seeded) == before


@pytest.mark.parametrize("entity", ["", "a\x00b", "x" * 1025, 42])
def test_malformed_key(entity: object) -> None:
    with pytest.raises(InvalidKeyError):
        Key(entity, "attribute")  # type: ignore[arg-type]


# Every method that takes a key, given its parts as a tuple (a guess at what a key is).
KEY_CALLS: dict[str, Callable[[Store, Any], object]] = {
    "record": lambda store, key: store.facts.record(key, 1, source="policy"),
    "retract": lambda store, key: store.facts.retract(key, source="policy"),
    "as_of": lambda store, key: store.facts.as_of(key),
    "resolve": lambda store, key: store.facts.resolve(key),
    "history": lambda store, key: store.facts.history(key),
    "explain": lambda store, key: store.facts.explain(key),
    "erase": lambda store, key: store.facts.erase(key, reason="a request"),
    "changes": lambda store, key: store.facts.changes(key=key),
    "evidence.record": lambda store, key: store.evidence.record(
        key, 1, source="policy", passage="the limit is 1"
    ),
    "evidence.search": lambda store, key: store.evidence.search("limit", key=key),
    "evidence.rank": lambda store, key: store.evidence.rank({1: 1.0}, key=key),
    "evidence.nearest": lambda store, key: store.evidence.nearest([1.0], key=key),
    "memory.register": lambda store, key: store.memory("errors").register("item", key=key),
    "record_many, RecordRow": lambda store, key: store.facts.record_many(
        [RecordRow(key, 1, "policy")]
    ),
    "record_many, mapping": lambda store, key: store.facts.record_many(
        [{"key": key, "value": 1, "source": "policy"}]
    ),
}


@pytest.mark.parametrize("call", KEY_CALLS.values(), ids=KEY_CALLS.keys())
def test_a_key_that_is_not_a_key(store: Store, seeded: Key, call: Callable[..., object]) -> None:
    err = unchanged(
        store,
        seeded,
        BitemporalError,
        lambda: call(store, (seeded.entity, seeded.attribute)),
    )
    cause = err.rows[0][1] if isinstance(err, BatchError) else str(err)
    assert isinstance(err, InvalidKeyError | BatchError)
    assert f"key must be a bitemporal.Key, not tuple ('{seeded.entity}'" in cause
    assert "write Key(entity, attribute)" in cause


@pytest.mark.parametrize("source", ["", "x" * 1025, "nul\x00"])
def test_malformed_source(store: Store, seeded: Key, source: str) -> None:
    unchanged(store, seeded, InvalidKeyError, lambda: store.facts.record(seeded, 1, source=source))


@pytest.mark.parametrize("entity", ["", "é" * 600])
def test_sql_refuses_malformed_keys_with_bt005(store: Store, entity: str) -> None:
    with pytest.raises(InvalidKeyError), errors.translate():
        store.connection.execute("SELECT bitemporal.record(%s, 'a', 's', '1')", (entity,))


@pytest.mark.parametrize("value", [None, math.nan, math.inf, {1, 2}, object(), b"bytes"])
def test_value_not_json(store: Store, seeded: Key, value: object) -> None:
    unchanged(
        store, seeded, InvalidValueError, lambda: store.facts.record(seeded, value, source="policy")
    )


@pytest.mark.parametrize("literal", ["null", None])
def test_sql_refuses_null_values_with_bt007(store: Store, seeded: Key, literal: str | None) -> None:
    def call() -> None:
        with errors.translate():
            store.connection.execute(
                "SELECT bitemporal.record(%s, %s, 'policy', %s::jsonb)",
                (seeded.entity, seeded.attribute, literal),
            )

    unchanged(store, seeded, InvalidValueError, call)


def test_a_key_containing_sql_is_stored_verbatim(store: Store) -> None:
    evil = Key("x'); DROP TABLE bitemporal.fact_version; --", 'a"b%s')
    store.facts.record(evil, "'; SELECT 1; --", source="s%(x)s")
    [v] = store.facts.history(evil)
    assert (v.key, v.value, v.source) == (evil, "'; SELECT 1; --", "s%(x)s")


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM bitemporal.fact_version WHERE entity = %(e)s",
        "TRUNCATE bitemporal.fact_version CASCADE",
        "UPDATE bitemporal.fact_version SET value = '1' WHERE entity = %(e)s",
        (
            "UPDATE bitemporal.fact_version SET valid_period "
            "= tstzrange(NULL, NULL) WHERE entity = %(e)s"
        ),
        (
            "UPDATE bitemporal.fact_version SET known_period = "
            "tstzrange(lower(known_period), NULL) WHERE entity = %(e)s"
        ),
        (
            "UPDATE bitemporal.fact_version SET known_period = "
            "tstzrange(lower(known_period), now() + interval '1 day') WHERE entity = %(e)s"
        ),
    ],
)
def test_history_is_append_only_even_for_the_owner(
    store: Store, seeded: Key, statement: str
) -> None:
    store.facts.record(
        seeded, 80, source="policy", valid_from=date(2026, 9, 1)
    )  # one closed version

    def call() -> None:
        with errors.translate():
            store.connection.execute(statement, {"e": seeded.entity})

    unchanged(store, seeded, AppendOnlyError, call)


def test_a_closed_version_cannot_be_closed_again(store: Store, seeded: Key) -> None:
    store.facts.record(seeded, 80, source="policy", valid_from=date(2026, 9, 1))

    def call() -> None:
        with errors.translate():
            store.connection.execute(
                "UPDATE bitemporal.fact_version SET known_period "
                "= tstzrange(lower(known_period), %s) "
                "WHERE entity = %s AND NOT upper_inf(known_period)",
                (KNOWN + timedelta(hours=1), seeded.entity),
            )

    unchanged(store, seeded, AppendOnlyError, call)


def test_refused_write_keeps_the_callers_transaction_usable(connect: Connect, key: Key) -> None:
    conn = connect(autocommit=False)
    store = Store(conn)
    store.facts.record(key, 1, source="s", valid_to=date(2026, 1, 1))
    with pytest.raises(InvalidPeriodError), errors.translate():
        conn.execute(
            "SELECT bitemporal.record(%s, %s, 's', '2', '2026-02-01', '2026-01-01')",
            (key.entity, key.attribute),
        )
    conn.rollback()
    store.facts.record(key, 1, source="s", valid_to=date(2026, 1, 1))
    with pytest.raises(KnowledgeTimeInFutureError):
        store.facts.record(key, 2, source="s", known_at=datetime.now(UTC) + timedelta(days=1))
    store.facts.record(key, 3, source="s", valid_from=date(2026, 1, 1))
    conn.commit()
    assert [v.value for v in Store(connect()).facts.history(key)] == [1, 3]
