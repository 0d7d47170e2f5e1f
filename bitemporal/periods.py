"""Instants and half-open periods, as Python sees them.

An instant is an aware :class:`~datetime.datetime`; a :class:`~datetime.date`
means midnight UTC of that day. A naive ``datetime`` is refused: which instant
it names depends on a time zone nobody stated.

A :class:`Period` is ``[start, end)``; ``None`` on either side means open on
that side ("not known to end" for ``end``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, TypeAlias

from psycopg.types.range import Range

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
    (midnight UTC) or datetime; InvalidTimeError naming ``name`` otherwise."""
    what = f"{name} " if name else ""
    if not isinstance(text, str):
        raise InvalidTimeError(f"{what}must be an ISO 8601 date or datetime, not {text!r}")
    try:
        return date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidTimeError(
            f"{what}{shown(text)} is not an ISO 8601 date or datetime",
            hint="e.g. 2026-09-01 or 2026-09-01T12:00:00+00:00",
        ) from exc


#: Ends from here on are open: 'infinity' is read as datetime.max (in UTC).
_OPEN_FROM = datetime(9999, 12, 30, tzinfo=UTC)


def _open_end(value: datetime | None) -> datetime | None:
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
            _open_end(to_optional_instant(end, name="period end")),
        )

    @classmethod
    def from_range(cls, value: Range[Any]) -> Period:
        """A period from a psycopg ``tstzrange`` value read from the store."""
        if value.isempty:
            raise InvalidPeriodError("the store returned an empty period")
        return cls(value.lower, _open_end(value.upper))

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
