"""Instants and periods on the Python side (no database)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from psycopg.types.range import Range
from sqlalchemy.dialects.postgresql import Range as SqlalchemyRange

from bitemporal import InvalidPeriodError, InvalidTimeError, NaiveDatetimeError, Period
from bitemporal.periods import Instant, parse_instant, to_instant

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


@pytest.mark.parametrize("text", ["2026-09-01T12:00", "2026-09-01 12:00:00.5", "2026-09-01T12"])
def test_written_time_without_offset_is_refused_with_a_hint_for_its_writer(text: str) -> None:
    """Text (a command line, an import file) cannot pass an aware datetime: its hint says what
    to write instead, not what Python code should pass."""
    with pytest.raises(NaiveDatetimeError, match="no time zone") as caught:
        parse_instant(text, name="valid_from")
    assert (
        caught.value.hint and "+02:00" in caught.value.hint and "datetime(" not in str(caught.value)
    )


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2026-09-01", date(2026, 9, 1)),
        ("2026-09-01T12:00Z", datetime(2026, 9, 1, 12, tzinfo=UTC)),
        ("2026-09-01T14:00:00+02:00", datetime(2026, 9, 1, 12, tzinfo=UTC)),
    ],
)
def test_written_dates_and_times_with_offsets_are_read(text: str, instant: Instant) -> None:
    assert parse_instant(text) == instant


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


# One period type (issue 13, item 4): Period to and from psycopg's and SQLAlchemy's Range.

T1 = datetime(2026, 1, 1, tzinfo=UTC)
T2 = datetime(2026, 2, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "period", [Period(T1, T2), Period(T1, None), Period(None, T2), Period(None, None)]
)
def test_round_trips_through_both_ranges(period: Period) -> None:
    as_psycopg, as_sqlalchemy = period.to_range(), period.to_sqlalchemy_range()
    assert isinstance(as_psycopg, Range) and isinstance(as_sqlalchemy, SqlalchemyRange)
    assert (
        (as_psycopg.lower, as_psycopg.upper)
        == (as_sqlalchemy.lower, as_sqlalchemy.upper)
        == (period.start, period.end)
    )
    assert as_psycopg.lower_inc == (period.start is not None) and not as_psycopg.upper_inc
    assert as_sqlalchemy.bounds == "[)"
    assert Period.from_range(as_psycopg) == Period.from_range(as_sqlalchemy) == period


@pytest.mark.parametrize("make", [Range, SqlalchemyRange])
def test_from_either_range_in_utc(make: type) -> None:
    # A range read in a +02:00 session: the same instants, with UTC bounds.
    got = Period.from_range(make(T1.astimezone(PLUS2), T2.astimezone(PLUS2), bounds="[)"))
    assert got == Period(T1, T2) and got.start is not None and got.end is not None
    assert got.start.tzinfo is UTC and got.end.tzinfo is UTC
    # 'infinity' (read as datetime.max) is an open end.
    assert Period.from_range(make(T1, datetime.max.replace(tzinfo=UTC), bounds="[)")).is_open


@pytest.mark.parametrize("value", [Range(empty=True), SqlalchemyRange(empty=True)])
def test_an_empty_range_is_no_period(value: object) -> None:
    with pytest.raises(InvalidPeriodError, match="empty"):
        Period.from_range(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [Range, SqlalchemyRange])
@pytest.mark.parametrize("bounds", ["(]", "()", "[]"])
def test_a_range_not_half_open_is_refused(make: type, bounds: str) -> None:
    with pytest.raises(InvalidPeriodError, match="half-open"):
        Period.from_range(make(T1, T2, bounds=bounds))


def test_naive_range_bounds_are_refused() -> None:
    with pytest.raises(NaiveDatetimeError):
        Period.from_range(SqlalchemyRange(datetime(2026, 1, 1), None))
