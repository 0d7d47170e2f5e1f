"""Instants and half-open periods, as Python sees them.

An instant is an aware :class:`~datetime.datetime`; a :class:`~datetime.date`
means midnight UTC of that day. A naive ``datetime`` is refused: which instant
it names depends on a time zone nobody stated.

A :class:`Period` is ``[start, end)``; ``None`` on either side means open on
that side ("not known to end" for ``end``). It is the one period type of every
API (the fact store, ``store.app_tables``, the ORM mixin's columns), and converts
to and from psycopg's and SQLAlchemy's ``Range`` (:meth:`Period.from_range`,
:meth:`Period.to_range`, :meth:`Period.to_sqlalchemy_range`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, TypeAlias

from psycopg.types.range import Range, TimestamptzRange
from sqlalchemy.dialects.postgresql import Range as SqlalchemyRange

from .errors import InvalidPeriodError, InvalidTimeError, NaiveDatetimeError
from .formatting import shown

#: What callers may pass wherever an instant is expected.
Instant: TypeAlias = datetime | date


def to_instant(value: Instant, *, name: str = "time") -> datetime:
    """An aware ``datetime`` for ``value``; a ``date`` is midnight UTC."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise NaiveDatetimeError(
                f"{name} {value.isoformat()} has no time zone",
                hint="pass an aware datetime, e.g. datetime(..., tzinfo=timezone.utc)",
            )
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    raise InvalidTimeError(f"{name} must be a datetime or a date, not {type(value).__name__}")


def to_optional_instant(value: Instant | None, *, name: str = "time") -> datetime | None:
    """Like :func:`to_instant`, keeping ``None``."""
    return None if value is None else to_instant(value, name=name)


def parse_instant(text: object, *, name: str | None = None) -> Instant:
    """An instant written as input (command line, import files): an ISO 8601 date
    (midnight UTC) or datetime with its offset; InvalidTimeError naming ``name``
    otherwise (NaiveDatetimeError for a datetime without an offset, with a hint for
    whoever wrote the text rather than :func:`to_instant`'s for Python code)."""
    what = f"{name} " if name else ""
    if not isinstance(text, str):
        raise InvalidTimeError(f"{what}must be an ISO 8601 date or datetime, not {text!r}")
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        instant = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidTimeError(
            f"{what}{shown(text)} is not an ISO 8601 date or datetime",
            hint="e.g. 2026-09-01 or 2026-09-01T12:00:00+00:00",
        ) from exc
    if instant.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{what}{shown(text)} has no time zone",
            hint="write its offset, as in 2026-09-01T12:00:00+02:00 or 2026-09-01T10:00:00Z,"
            " or a date alone for midnight UTC",
        )
    return instant


#: Ends from here on are open: 'infinity' is read as datetime.max (in UTC).
_OPEN_FROM = datetime(9999, 12, 30, tzinfo=UTC)


def open_end(value: datetime | None) -> datetime | None:
    """``value``, or None for an end from 9999-12-30 on (``'infinity'`` included): open."""
    # Compared as instants: 9999-12-29 13:00Z is 9999-12-30 03:00 in a +14 session.
    if value is None or value >= _OPEN_FROM:
        return None
    return value


@dataclass(frozen=True, slots=True)
class Period:
    """A half-open period ``[start, end)``; ``None`` means open on that side."""

    start: datetime | None
    end: datetime | None

    def __post_init__(self) -> None:
        if self.start is not None and self.end is not None and self.end <= self.start:
            state = "empty" if self.end == self.start else "inverted"
            raise InvalidPeriodError(
                f"period [{self.start.isoformat()}, {self.end.isoformat()}) is {state}",
                hint="a period is half-open [start, end): end must be later than start",
            )

    @classmethod
    def of(cls, start: Instant | None = None, end: Instant | None = None) -> Period:
        """A period from instants or dates; ``None`` leaves that side open."""
        return cls(
            to_optional_instant(start, name="period start"),
            open_end(to_optional_instant(end, name="period end")),
        )

    @classmethod
    def from_range(cls, value: Range[Any] | SqlalchemyRange[Any]) -> Period:
        """A period from a ``tstzrange`` value, psycopg's ``Range`` or SQLAlchemy's,
        with its bounds in UTC (psycopg reads them in the session's TimeZone) and an
        end from 9999-12-30 on (``'infinity'``) read as open. An empty range, or bounds
        other than ``[)`` on a bounded side, is no half-open period: InvalidPeriodError."""
        empty = value.empty if isinstance(value, SqlalchemyRange) else value.isempty
        if empty:
            raise InvalidPeriodError(
                "an empty range is not a period",
                hint="a period is half-open [start, end) with end later than start",
            )
        lower_inc = value.bounds[0] == "["
        upper_inc = value.bounds[1] == "]"
        if (value.lower is not None and not lower_inc) or (value.upper is not None and upper_inc):
            raise InvalidPeriodError(
                f"range {value} is not half-open",
                hint="a period includes its start and excludes its end: [start, end)",
            )
        start = to_optional_instant(value.lower, name="range lower bound")
        end = to_optional_instant(value.upper, name="range upper bound")
        return cls(
            None if start is None else start.astimezone(UTC),
            open_end(None if end is None else end.astimezone(UTC)),
        )

    def to_range(self) -> Range[datetime]:
        """The period as psycopg's ``Range`` (a ``TimestamptzRange``, so that an open
        side still binds as ``tstzrange``), bounds ``[)``."""
        return TimestamptzRange(self.start, self.end, "[)")

    def to_sqlalchemy_range(self) -> SqlalchemyRange[datetime]:
        """The period as SQLAlchemy's ``Range``, bounds ``[)``."""
        return SqlalchemyRange(self.start, self.end, bounds="[)")

    def contains(self, instant: Instant) -> bool:
        """Whether ``instant`` falls inside: start inclusive, end exclusive."""
        t = to_instant(instant)
        return (self.start is None or self.start <= t) and (self.end is None or t < self.end)

    @property
    def is_open(self) -> bool:
        """Whether the end is not known."""
        return self.end is None

    def __str__(self) -> str:
        start = "" if self.start is None else self.start.isoformat()
        end = "" if self.end is None else self.end.isoformat()
        return f"[{start}, {end})"


def period_bounds(
    valid_from: Instant | None, valid_to: Instant | None
) -> tuple[datetime | None, datetime | None]:
    """The bounds of a valid period as aware datetimes, refusing an empty or inverted
    period (and naive datetimes) before any round trip."""
    start = to_optional_instant(valid_from, name="valid_from")
    end = to_optional_instant(valid_to, name="valid_to")
    Period(start, end)
    return start, end
