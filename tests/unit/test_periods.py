"""Instants and periods on the Python side (no database)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from psycopg.types.range import Range

from bitemporal import InvalidPeriodError, InvalidTimeError, NaiveDatetimeError, Period
from bitemporal.periods import to_instant

PLUS2 = timezone(timedelta(hours=2))


def test_date_is_midnight_utc() -> None:
    assert to_instant(date(2026, 9, 1)) == datetime(2026, 9, 1, tzinfo=UTC)


def test_aware_datetime_is_kept() -> None:
    t = datetime(2026, 9, 1, 2, tzinfo=PLUS2)
    assert to_instant(t) is t and to_instant(t) == datetime(2026, 9, 1, tzinfo=UTC)


def test_naive_datetime_is_refused_with_a_hint() -> None:
    with pytest.raises(NaiveDatetimeError, match="no time zone") as caught:
        to_instant(datetime(2026, 9, 1), name="valid_from")
    assert "valid_from" in str(caught.value) and caught.value.hint


@pytest.mark.parametrize("value", ["2026-09-01", 1_700_000_000, None])
def test_other_types_are_refused(value: object) -> None:
    with pytest.raises(InvalidTimeError):
        to_instant(value)  # type: ignore[arg-type]


def test_half_open_membership() -> None:
    p = Period.of(date(2026, 1, 1), date(2026, 2, 1))
    assert p.contains(date(2026, 1, 1))
    assert p.contains(datetime(2026, 1, 31, 23, 59, 59, 999999, tzinfo=UTC))
    assert not p.contains(date(2026, 2, 1))
    assert not p.contains(datetime(2025, 12, 31, 23, 59, 59, 999999, tzinfo=UTC))


def test_open_ends() -> None:
    p = Period.of(None, None)
    assert p.is_open and p.contains(date(1, 1, 2)) and p.contains(date(9999, 1, 1))
    assert Period.of(date(2026, 1, 1), date(9999, 12, 31)).is_open
    assert str(Period.of(date(2026, 1, 1))) == "[2026-01-01T00:00:00+00:00, )"


@pytest.mark.parametrize(
    ("start", "end"), [(date(2026, 1, 2), date(2026, 1, 2)), (date(2026, 1, 3), date(2026, 1, 2))]
)
def test_empty_and_inverted_periods_are_refused(start: date, end: date) -> None:
    with pytest.raises(InvalidPeriodError):
        Period.of(start, end)


def test_from_store_range() -> None:
    lower = datetime(2026, 1, 1, tzinfo=UTC)
    assert Period.from_range(Range(lower, None, "[)")) == Period(lower, None)
    # psycopg reads 'infinity' as datetime.max: an open end.
    assert Period.from_range(Range(lower, datetime.max.replace(tzinfo=UTC), "[)")).is_open
    with pytest.raises(InvalidPeriodError):
        Period.from_range(Range(empty=True))
