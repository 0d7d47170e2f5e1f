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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bitemporal import Answer, Key, Store, Version
from tests.reference_model import FactModel, ModelAnswer, Period
from tests.reference_model import Version as ModelVersion

US = timedelta(microseconds=1)

#: Valid-time edges: the first of January to May 2026.
GRID = tuple(datetime(2026, month, 1, tzinfo=UTC) for month in range(1, 6))
#: Knowledge times: 12-hour steps from 2025-12-01 (before the grid) to 2026-05-31.
KNOWN_BASE = datetime(2025, 12, 1, tzinfo=UTC)
KNOWN_STEP = timedelta(hours=12)
KNOWN_STEPS = 365
#: The present every answer is interpreted against: after all knowledge times.
NOW = datetime(2026, 6, 15, tzinfo=UTC)

SOURCES = ("policy", "forum", "vendor")
#: 80 and "80" are different jsonb values.
VALUES = (50, 80, 100, "80")

#: Valid instants to ask about: every edge, just before it, between edges,
#: before and after everything.
VALID_QUESTIONS = tuple(
    sorted(
        set(GRID)
        | {g - US for g in GRID}
        | {g + timedelta(days=14, hours=6) for g in GRID}
        | {datetime(2025, 6, 1, tzinfo=UTC), datetime(2026, 8, 1, tzinfo=UTC), NOW}
    )
)


@dataclass(frozen=True)
class Op:
    kind: str  # "record" or "retract"
    source: str
    value: Any
    valid: Period

    def __repr__(self) -> str:
        def show(t: datetime | None) -> str:
            return "" if t is None else t.date().isoformat()

        what = f"{self.value!r} " if self.kind == "record" else ""
        period = f"[{show(self.valid.start)}, {show(self.valid.end)})"
        return f"{self.kind}({what}{self.source} {period})"


@st.composite
def valid_periods(draw: st.DrawFn) -> Period:
    # Bound 0 is an open start, bound 6 an open end, 1..5 the grid.
    lo = draw(st.integers(0, len(GRID)))
    hi = draw(st.integers(lo + 1, len(GRID) + 1))
    return Period(None if lo == 0 else GRID[lo - 1], None if hi == len(GRID) + 1 else GRID[hi - 1])


def ops(sources: tuple[str, ...], kind: str | None = None) -> st.SearchStrategy[Op]:
    kinds = st.just(kind) if kind else st.sampled_from(("record", "record", "retract"))
    return st.builds(
        Op,
        kind=kinds,
        source=st.sampled_from(sources),
        value=st.sampled_from(VALUES),
        valid=valid_periods(),
    )


@st.composite
def scenarios(draw: st.DrawFn, max_ops: int = 10) -> list[Op]:
    """A sequence of writes to a fresh key, the first a record (the key must exist)."""
    # Several sources first, so conflicts are common; shrinking still picks the first source.
    sources = SOURCES[: draw(st.sampled_from((3, 2, 1)))]
    first = draw(ops(sources, "record"))
    n = draw(st.integers(0, max_ops - 1))  # uniform lengths: long sequences are common too
    return [first, *draw(st.lists(ops(sources), min_size=n, max_size=n))]


def knowledge_times(n: int) -> st.SearchStrategy[list[datetime]]:
    """n strictly increasing knowledge times in the past."""
    return st.lists(st.integers(0, KNOWN_STEPS), min_size=n, max_size=n, unique=True).map(
        lambda steps: [KNOWN_BASE + k * KNOWN_STEP for k in sorted(steps)]
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


@pytest.fixture
def raw(connect: Callable[..., psycopg.Connection[Any]]) -> psycopg.Connection[Any]:
    """One autocommit connection of its own for the checks, shared by a test's examples."""
    return connect()


@settings(
    deadline=None, max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture]
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
    deadline=None, max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture]
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
