"""The worked example of the fact store, question by question.

An attachment limit is 50 MB from 2026-01-01. It changes to 80 MB on
2026-09-01, ingested only on 2026-09-03. On 2026-09-20 an announcement is
ingested: 100 MB from 2026-10-01. On 2026-09-30 a second source claims 90 MB
for September.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from bitemporal import Interpretation, Key, Status, Store


def at(day: str, hour: int = 12) -> datetime:
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC)


@pytest.fixture
def example(store: Store, key: Key) -> Key:
    facts = store.facts
    facts.record(key, 50, source="policy", valid_from=date(2026, 1, 1), known_at=at("2025-12-15"))
    facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-03", 9)
    )
    facts.record(key, 100, source="policy", valid_from=date(2026, 10, 1), known_at=at("2026-09-20"))
    facts.record(
        key,
        90,
        source="forum",
        valid_from=date(2026, 9, 1),
        valid_to=date(2026, 10, 1),
        known_at=at("2026-09-30"),
    )
    return key


@pytest.mark.parametrize(
    ("valid_at", "known_at", "now", "status", "values", "interpretation"),
    [
        # Asked on 2026-09-29: 80 MB, in force.
        (None, None, at("2026-09-29"), Status.SUPPORTED, (80,), Interpretation.CURRENT),
        # 100 MB is announced, not in force.
        (
            at("2026-10-15"),
            None,
            at("2026-09-29"),
            Status.SUPPORTED,
            (100,),
            Interpretation.ANNOUNCED_FUTURE,
        ),
        # On 2026-09-02 the store would have said 50 MB...
        (
            at("2026-09-02"),
            at("2026-09-02"),
            at("2026-09-29"),
            Status.SUPPORTED,
            (50,),
            Interpretation.KNOWN_THEN,
        ),
        # ...while now we know 80 MB applied that day.
        (
            at("2026-09-02"),
            None,
            at("2026-09-29"),
            Status.SUPPORTED,
            (80,),
            Interpretation.RETROSPECTIVE,
        ),
        # June: 50 MB, and that is what the store said in June too.
        (
            at("2026-06-15"),
            None,
            at("2026-09-29"),
            Status.SUPPORTED,
            (50,),
            Interpretation.HISTORICAL,
        ),
        # Before the rule existed: missing, not zero.
        (at("2025-06-01"), None, at("2026-09-29"), Status.MISSING, (), Interpretation.MISSING),
        # The second source disagrees for September: a conflict, not an average.
        (
            at("2026-09-15"),
            None,
            at("2026-10-05"),
            Status.CONFLICT,
            (80, 90),
            Interpretation.RETROSPECTIVE,
        ),
        # The 31 August / 1 September boundary as known on 3 September.
        (
            at("2026-08-31", 23),
            at("2026-09-03", 12),
            at("2026-09-29"),
            Status.SUPPORTED,
            (50,),
            Interpretation.HISTORICAL,
        ),
        (
            at("2026-09-01", 0),
            at("2026-09-03", 12),
            at("2026-09-29"),
            Status.SUPPORTED,
            (80,),
            Interpretation.RETROSPECTIVE,
        ),
    ],
)
def test_question(
    store: Store, example: Key, valid_at, known_at, now, status, values, interpretation
) -> None:
    answer = store.facts.resolve(example, valid_at=valid_at, known_at=known_at, now=now)
    assert answer.status is status
    assert answer.values == values
    assert answer.interpretation is interpretation
    assert answer.value == (values[0] if status is Status.SUPPORTED else None)
    assert {v.value for v in answer.versions} == set(values)
    assert [v.version_id for v in answer.versions] == sorted(v.version_id for v in answer.versions)


def test_conflict_names_both_sources(store: Store, example: Key) -> None:
    answer = store.facts.resolve(example, valid_at=at("2026-09-15"), now=at("2026-10-05"))
    assert answer.sources == ("forum", "policy")
    assert answer.value is None


def test_history_keeps_every_version(store: Store, example: Key) -> None:
    history = store.facts.history(example)
    # 50 (closed), its remainder, 80 (closed), its remainder, 100, 90.
    assert [v.value for v in history] == [50, 50, 80, 80, 100, 90]
    closed = [v for v in history if not v.known_period.is_open]
    assert [v.value for v in closed] == [50, 80]
    assert closed[0].known_period.end == at("2026-09-03", 9)
