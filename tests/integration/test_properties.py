"""Property tests: the SQL functions against the pure-Python reference model.

Random sequences of record/retract, over one to three sources, with valid
bounds taken from a small grid of dates (so that periods meet, nest and share
edges often) and values from a small set (so that no-ops and agreeing sources
happen), are applied both through ``store.facts`` and to
:class:`tests.reference_model.FactModel`. Then many ``(valid_at, known_at)``
questions, many of them exactly on an edge, must get the same answer from both.

Every example writes to a key of its own in the shared test database.
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import psycopg
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bitemporal import Answer, Key, Store, Version
from tests.helpers import examples
from tests.reference_model import FactModel, ModelAnswer, Period
from tests.reference_model import Version as ModelVersion
from tests.strategies import (
    GRID,
    KNOWN_BASE,
    NOW,
    US,
    VALID_QUESTIONS,
    Op,
    knowledge_times,
    scenarios,
)


def fresh_key() -> Key:
    return Key(f"prop:{uuid.uuid4().hex}", "attachment_limit_mb")


def apply(
    store: Store,
    model: FactModel,
    key: Key,
    op: Op,
    known_at: datetime | None,
    model_known_at: datetime,
) -> tuple[int, ...]:
    """One write through the SQL functions and to the model; both must agree on its effect.

    Returns the ids of the versions whose knowledge the write ended.
    """
    start, end = op.valid.start, op.valid.end
    if op.kind == "record":
        recorded = store.facts.record(
            key, op.value, source=op.source, valid_from=start, valid_to=end, known_at=known_at
        )
        created = model.record(op.source, op.value, op.valid, model_known_at)
        assert recorded.created == created, f"{op}: store {recorded.created}, model {created}"
        assert recorded.known_at == (model_known_at if created else None)
        event(f"write: record {'created' if created else 'no-op'}")
        return recorded.superseded
    ended = store.facts.retract(
        key, source=op.source, valid_from=start, valid_to=end, known_at=known_at
    )
    count = model.retract(op.source, op.valid, model_known_at)
    assert len(ended) == count, op
    event(f"write: retract ended {min(count, 2)}{'+' if count >= 2 else ''}")
    return ended


def to_model(v: Version) -> ModelVersion:
    return ModelVersion(
        v.source,
        v.value,
        Period(v.valid_period.start, v.valid_period.end),
        Period(v.known_period.start, v.known_period.end),
    )


def contents(versions: list[Version] | tuple[Version, ...]) -> Counter[tuple[Any, ...]]:
    """The multiset of (source, value, valid period, known period) of store versions."""
    return Counter(to_model(v).fingerprint() for v in versions)


def model_contents(
    versions: list[ModelVersion] | tuple[ModelVersion, ...],
) -> Counter[tuple[Any, ...]]:
    return Counter(v.fingerprint() for v in versions)


def assert_same_answer(answer: Answer, expected: ModelAnswer, question: str) -> None:
    got = (answer.status.value, answer.values, answer.value, answer.interpretation.value)
    want = (expected.status, expected.values, expected.value, expected.interpretation)
    assert got == want, f"{question}: store {got}, model {want}"
    # jsonb: 80 and "80" differ; Python's == would not tell 1 from True, so compare types too.
    assert [type(v) for v in answer.values] == [type(v) for v in expected.values], question
    assert contents(answer.versions) == model_contents(expected.versions), question


def frozen(answer: Answer) -> tuple[Any, ...]:
    """An answer as it must stay once its knowledge time is past: everything but the
    end of each version's known period (closing an open known period later is the one
    change the store allows to a version)."""
    return (
        answer.status,
        answer.values,
        answer.interpretation,
        answer.valid_at,
        answer.known_at,
        tuple(
            (v.version_id, v.source, v.value, type(v.value), v.valid_period, v.known_period.start)
            for v in answer.versions
        ),
    )


def overlapping_versions(conn: psycopg.Connection[Any], key: Key) -> list[tuple[int, int]]:
    """Pairs of versions of one source overlapping in both valid and known period."""
    return conn.execute(
        """
        SELECT a.version_id, b.version_id
          FROM bitemporal.fact_version a
          JOIN bitemporal.fact_version b
            ON b.entity = a.entity AND b.attribute = a.attribute AND b.source = a.source
           AND a.version_id < b.version_id
         WHERE a.entity = %s AND a.attribute = %s
           AND a.valid_period && b.valid_period
           AND a.known_period && b.known_period
        """,
        (key.entity, key.attribute),
    ).fetchall()


@settings(
    deadline=None,
    max_examples=examples(100, 30),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_sql_functions_agree_with_the_model(
    store: Store, raw: psycopg.Connection[Any], data: st.DataObject
) -> None:
    conn = raw
    key = fresh_key()
    model = FactModel()
    writes = data.draw(scenarios(), label="writes")
    times = data.draw(knowledge_times(len(writes)), label="knowledge times")

    def ask(valid_at: datetime, known_at: datetime) -> Answer:
        return store.facts.resolve(key, valid_at=valid_at, known_at=known_at, now=NOW)

    # (c) Answers for knowledge times already past, captured as the writes go on.
    captured: dict[tuple[datetime, datetime], Answer] = {}
    for op, t in zip(writes, times, strict=True):
        apply(store, model, key, op, t, t)
        # (b) One source never holds overlapping valid periods within a knowledge period.
        assert overlapping_versions(conn, key) == [], f"after {op} at {t}"
        assert model.overlapping_pairs() == []
        for known_at in (t - US, t):
            for valid_at in (*GRID, known_at):
                captured[valid_at, known_at] = ask(valid_at, known_at)

    # (a) The same answers as the model, at every edge and knowledge time.
    known_questions = sorted(
        {KNOWN_BASE - timedelta(days=1), NOW, *times, *(t - US for t in times)}
    )
    questions = [(v, k) for v in (*VALID_QUESTIONS, *times) for k in known_questions]
    # valid_at = known_at: what the store said at the time (known_then, current).
    questions += [(k, k) for k in known_questions]
    for valid_at, known_at in questions:
        expected = model.resolve(valid_at, known_at, NOW)
        assert_same_answer(
            ask(valid_at, known_at),
            expected,
            f"{writes} at {times}: valid_at={valid_at}, known_at={known_at}",
        )
        event(f"asked: {expected.status}, {expected.interpretation}")

    # (c) Later writes never changed what had been known.
    for (valid_at, known_at), before in captured.items():
        assert frozen(ask(valid_at, known_at)) == frozen(before), (
            f"{writes} at {times}: valid_at={valid_at}, known_at={known_at}"
        )

    # (d) Every version, superseded ones included, is the model's.
    assert contents(store.facts.history(key)) == model_contents(model.history())


@settings(
    deadline=None,
    max_examples=examples(50, 15),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_writes_in_one_transaction_share_one_knowledge_time(
    store: Store, raw: psycopg.Connection[Any], data: st.DataObject
) -> None:
    conn = raw
    key = fresh_key()
    model = FactModel()
    writes = data.draw(scenarios(max_ops=8), label="writes")
    # Some writes committed earlier at explicit knowledge times, the rest in one transaction.
    split = data.draw(st.integers(0, min(3, len(writes) - 1)), label="committed before")
    earlier, together = writes[:split], writes[split:]
    times = data.draw(knowledge_times(len(earlier)), label="earlier knowledge times")
    for op, t in zip(earlier, times, strict=True):
        apply(store, model, key, op, t, t)

    superseded: list[int] = []
    with store.transaction():
        t_tx = store.now()
        for op in together:
            superseded += apply(store, model, key, op, None, t_tx)
    history = store.facts.history(key)
    kept = {v.version_id for v in history}
    if set(superseded) - kept:
        event("a version was superseded in the transaction that wrote it")

    rows = conn.execute(
        "SELECT known_period, isempty(known_period) FROM bitemporal.fact_version "
        "WHERE entity = %s AND attribute = %s",
        (key.entity, key.attribute),
    ).fetchall()
    assert not any(empty for _, empty in rows)
    # Nothing written in the transaction was superseded in it: none ends at or before it starts.
    for period, _ in rows:
        assert period.upper is None or period.lower < period.upper
        if period.lower == t_tx:
            assert period.upper is None, f"known from {t_tx}, closed in the same transaction"
    assert overlapping_versions(conn, key) == []
    assert contents(history) == model_contents(model.history())

    known_questions = sorted({KNOWN_BASE - US, *times, *(t - US for t in times), t_tx - US, t_tx})
    questions = [(v, k) for v in (*VALID_QUESTIONS, t_tx) for k in known_questions]
    for valid_at, known_at in questions:
        assert_same_answer(
            store.facts.resolve(key, valid_at=valid_at, known_at=known_at, now=t_tx),
            model.resolve(valid_at, known_at, t_tx),
            f"{earlier} at {times}, then {together} in one transaction at {t_tx}: "
            f"valid_at={valid_at}, known_at={known_at}",
        )
