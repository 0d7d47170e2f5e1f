"""The reference model of the property tests, checked on its own (no database)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from tests.reference_model import FactModel, Period, covers

US = timedelta(microseconds=1)


def d(month: int, day: int = 1, year: int = 2026, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


def contents(model: FactModel) -> Counter[tuple[object, ...]]:
    return Counter(v.fingerprint() for v in model.history())


def test_minus_splits_into_pieces_meeting_at_the_boundaries() -> None:
    assert Period(None, None).minus(Period(d(2), d(3))) == [Period(None, d(2)), Period(d(3), None)]
    assert Period(d(1), d(4)).minus(Period(d(1), d(2))) == [Period(d(2), d(4))]
    assert Period(d(1), d(4)).minus(Period(None, d(5))) == []
    assert Period(d(1), d(2)).minus(Period(d(2), d(3))) == [Period(d(1), d(2))]


def test_half_open_periods() -> None:
    p = Period(d(1), d(2))
    assert p.contains(d(1)) and p.contains(d(2) - US) and not p.contains(d(2))
    assert not Period(d(1), d(2)).overlaps(Period(d(2), d(3)))  # adjacent, not overlapping
    assert Period(None, d(2)).overlaps(Period(d(2) - US, None))
    assert Period(None, None).contains(datetime.min.replace(tzinfo=UTC) + US)
    with pytest.raises(ValueError):
        Period(d(2), d(2))
    assert covers([Period(None, d(2)), Period(d(2), None)], Period(None, None))
    assert not covers([Period(None, d(2)), Period(d(2) + US, None)], Period(d(1), d(3)))


def test_record_inside_an_open_version_splits_it() -> None:
    m = FactModel()
    t1, t2 = d(1, year=2025), d(2, year=2025)
    assert m.record("a", 50, Period(None, None), t1)
    assert m.record("a", 80, Period(d(3), d(5)), t2)
    assert contents(m) == Counter(
        [
            ("a", ("int", 50), (None, None), (t1, t2)),
            ("a", ("int", 50), (None, d(3)), (t2, None)),
            ("a", ("int", 50), (d(5), None), (t2, None)),
            ("a", ("int", 80), (d(3), d(5)), (t2, None)),
        ]
    )
    assert m.overlapping_pairs() == []
    # What was known at t1 is unchanged; the boundaries meet exactly.
    assert [v.value for v in m.as_of(d(4), t2 - US)] == [50]
    assert [v.value for v in m.as_of(d(3) - US, t2)] == [50]
    assert [v.value for v in m.as_of(d(3), t2)] == [80]
    assert [v.value for v in m.as_of(d(5) - US, t2)] == [80]
    assert [v.value for v in m.as_of(d(5), t2)] == [50]


def test_adjacent_periods_do_not_cut_each_other() -> None:
    m = FactModel()
    t1, t2 = d(1, year=2025), d(2, year=2025)
    m.record("a", 50, Period(d(1), d(2)), t1)
    m.record("a", 80, Period(d(2), d(3)), t2)
    assert all(v.known.is_open for v in m.history())
    assert len(m.history()) == 2


def test_other_sources_are_untouched_and_conflict() -> None:
    m = FactModel()
    t1, t2 = d(1, year=2025), d(2, year=2025)
    m.record("a", 50, Period(None, None), t1)
    m.record("b", 90, Period(d(2), d(3)), t2)
    assert all(v.known.is_open for v in m.history())
    answer = m.resolve(d(2), t2, now=t2)
    assert answer.status == "conflict" and answer.values == (50, 90) and answer.value is None


def test_recording_what_is_already_known_changes_nothing() -> None:
    m = FactModel()
    t1, t2, t3 = d(1, year=2025), d(2, year=2025), d(3, year=2025)
    m.record("a", 50, Period(d(1), d(2)), t1)
    m.record("a", 50, Period(d(2), None), t2)
    before = contents(m)
    # Covered by two adjacent pieces with the same value: a no-op.
    assert not m.record("a", 50, Period(d(1), d(4)), t3)
    assert not m.record("a", 50, Period(d(1), None), t3)
    assert contents(m) == before
    # Not covered (open start), another value, or another type: a change.
    assert m.record("a", "50", Period(d(5), d(6)), t3)
    assert m.record("a", 50, Period(None, d(2)), d(4, year=2025))
    assert m.overlapping_pairs() == []


def test_retract_cuts_and_reports() -> None:
    m = FactModel()
    t1, t2, t3 = d(1, year=2025), d(2, year=2025), d(3, year=2025)
    m.record("a", 50, Period(d(1), d(5)), t1)
    assert m.retract("b", Period(None, None), t2) == 0
    assert m.retract("a", Period(d(2), d(3)), t2) == 1
    held = [v for v in m.history() if v.known.is_open]
    assert sorted((v.valid.as_tuple(), v.known.as_tuple()) for v in held) == [
        ((d(1), d(2)), (t2, None)),
        ((d(3), d(5)), (t2, None)),
    ]
    assert m.resolve(d(2), t3, now=t3).status == "missing"
    assert m.resolve(d(2), t2 - US, now=t3).values == (50,)


def test_writes_at_one_knowledge_time_leave_no_empty_known_period() -> None:
    m = FactModel()
    t0, t = d(1, year=2025), d(2, year=2025)
    m.record("a", 50, Period(None, None), t0)
    m.record("a", 80, Period(d(2), d(4)), t)
    m.record("a", 100, Period(d(3), None), t)
    m.retract("a", Period(None, d(1)), t)
    assert contents(m) == Counter(
        [
            ("a", ("int", 50), (None, None), (t0, t)),
            ("a", ("int", 50), (d(1), d(2)), (t, None)),
            ("a", ("int", 80), (d(2), d(3)), (t, None)),
            ("a", ("int", 100), (d(3), None), (t, None)),
        ]
    )


def test_knowledge_never_goes_back() -> None:
    m = FactModel()
    m.record("a", 50, Period(None, None), d(2, year=2025))
    with pytest.raises(ValueError):
        m.record("a", 80, Period(None, None), d(1, year=2025))
    # A write that changes nothing records no knowledge.
    assert not m.record("a", 50, Period(d(1), d(2)), d(5, year=2025))
    assert m.retract("b", Period(None, None), d(6, year=2025)) == 0
    assert m.record("a", 80, Period(None, None), d(3, year=2025))


def test_worked_example_interpretations() -> None:
    def at(month: int, day: int, hour: int = 12) -> datetime:
        return d(month, day, hour=hour)

    m = FactModel()
    m.record("policy", 50, Period(d(1), None), d(12, 15, year=2025, hour=12))
    m.record("policy", 80, Period(d(9), None), at(9, 3, 9))
    m.record("policy", 100, Period(d(10), None), at(9, 20))
    m.record("forum", 90, Period(d(9), d(10)), at(9, 30))
    now = at(9, 29)

    def ask(valid_at: datetime, known_at: datetime, present: datetime = now) -> tuple[object, ...]:
        a = m.resolve(valid_at, known_at, present)
        return a.status, a.values, a.interpretation

    assert ask(now, now) == ("supported", (80,), "current")
    assert ask(at(10, 15), now) == ("supported", (100,), "announced_future")
    assert ask(at(9, 2), at(9, 2)) == ("supported", (50,), "known_then")
    assert ask(at(9, 2), now) == ("supported", (80,), "retrospective")
    assert ask(at(6, 15), now) == ("supported", (50,), "historical")
    assert ask(d(6, 1, year=2025), now) == ("missing", (), "missing")
    assert ask(at(9, 15), at(10, 5), at(10, 5)) == ("conflict", (80, 90), "retrospective")
    assert ask(at(8, 31, 23), at(9, 3)) == ("supported", (50,), "historical")
    assert ask(at(9, 1, 0), at(9, 3)) == ("supported", (80,), "retrospective")
    with pytest.raises(ValueError):
        m.resolve(now, now + US, now)
