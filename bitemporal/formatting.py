"""Plain-text rendering: times, values and tables as the CLI, the demo and the answer
object write them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from .jsonvalues import JSON, RawJSON, dumps

#: An error line quotes at most this much of an input (a value may be megabytes long).
_SHOWN = 60


def shown(text: str) -> str:
    """``text`` quoted for an error message, cut short if it is long."""
    return repr(text) if len(text) <= _SHOWN else f"{text[:_SHOWN]!r}... ({len(text):,} characters)"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` as English writes them: "1 row", "2,000 rows", "0 batches"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def stamp(t: datetime | None) -> str:
    """A UTC stamp, as precise as ``t`` needs; ``None`` (an open end) renders as empty."""
    if t is None:
        return ""
    utc = t.astimezone(UTC)
    if utc.microsecond:
        return utc.strftime("%Y-%m-%d %H:%M:%S.%f")
    return utc.strftime("%Y-%m-%d %H:%M" if utc.second == 0 else "%Y-%m-%d %H:%M:%S")


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A text table with aligned columns, one line per row."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    lines = [tuple(header), tuple("-" * w for w in widths), *rows]
    return "".join(
        "  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )


# Writing times and values the way sql/formatting.v1.sql does.


def iso_time(t: datetime | None) -> str | None:
    """ISO 8601 in UTC with a ``Z`` (``2026-09-03T09:00:00Z``); None stays None."""
    if t is None:
        return None
    u = t.astimezone(UTC)
    fraction = f".{u.microsecond:06d}" if u.microsecond else ""
    return u.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def parse_time(text: str | None) -> datetime | None:
    """The inverse of :func:`iso_time`."""
    if text is None:
        return None
    return datetime.fromisoformat(text)


def human_time(t: datetime) -> str:
    """A date when the instant is midnight UTC (``2026-10-01``), else the UTC time as
    precise as needed (``2026-09-03 09:00 UTC``)."""
    u = t.astimezone(UTC)
    if (u.hour, u.minute, u.second, u.microsecond) == (0, 0, 0, 0):
        return u.strftime("%Y-%m-%d")
    if u.microsecond:
        return u.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC"
    if u.second:
        return u.strftime("%Y-%m-%d %H:%M:%S") + " UTC"
    return u.strftime("%Y-%m-%d %H:%M") + " UTC"


def human_value(value: JSON) -> str:
    """A string as itself, anything else as JSON (``80``, ``true``, ``{"mb": 80}``)."""
    if isinstance(value, str) and not isinstance(value, RawJSON):
        return value
    return dumps(value)


def human_duration(d: timedelta) -> str:
    """``730 days`` for a whole number of days (how retention policies are set); else
    Python's ``730 days, 6:00:00``."""
    if d.seconds == 0 and d.microseconds == 0:
        return f"{d.days} day" if d.days == 1 else f"{d.days} days"
    return str(d)
