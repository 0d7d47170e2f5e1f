"""How the library reads query results: instants in UTC, JSON exactly.

psycopg returns a ``timestamptz`` in the session's TimeZone, and Python
compares two datetimes that share a tzinfo by their wall-clock times: across a
daylight-saving fall-back, ``02:15+01:00`` then sorts before ``02:45+02:00``.
So every query of the library runs on a :func:`cursor` that reads
``timestamptz`` (hence ``tstzrange`` bounds and arrays) as UTC datetimes, and
``json``/``jsonb`` with :func:`bitemporal.jsonvalues.loads`. The loaders live
on that cursor only: the caller's connection, and its other queries, are left
as they were.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, overload

import psycopg
from psycopg import abc, postgres, pq
from psycopg.abc import AdaptContext
from psycopg.adapt import AdaptersMap, Buffer, Loader
from psycopg.postgres import types as builtins
from psycopg.rows import RowFactory, tuple_row
from psycopg.types.datetime import TimestamptzLoader

from .errors import InvalidTimeError
from .jsonvalues import loads

Row = TypeVar("Row")

_ISO = TimestamptzLoader._re_format
#: The loader psycopg registers for ``timestamptz`` text: its C one where installed.
_DEFAULT_TIMESTAMPTZ: type[abc.Loader] = (
    postgres.adapters.get_loader(builtins["timestamptz"].oid, pq.Format.TEXT) or TimestamptzLoader
)


class UtcTimestamptzLoader(Loader):
    """``timestamptz`` text (DateStyle ISO, any TimeZone) as a UTC ``datetime``."""

    def __init__(self, oid: int, context: AdaptContext | None = None):
        super().__init__(oid, context)
        # psycopg's own loader (in C where installed) reads the usual instant several
        # times faster than the pattern below (issue 15: a history of thousands of
        # versions); it gives the session's time zone, hence astimezone. What it cannot
        # read (infinity, year 10000 east of UTC, another DateStyle) goes the long way.
        self._fast = _DEFAULT_TIMESTAMPTZ(oid, context).load

    def load(self, data: Buffer) -> datetime:
        try:
            instant: datetime = self._fast(data)
        except (psycopg.DataError, NotImplementedError):
            return self._load(data)
        return instant.astimezone(UTC)

    def _load(self, data: Buffer) -> datetime:
        raw = bytes(data)
        if raw == b"infinity":
            return datetime.max.replace(tzinfo=UTC)
        if raw == b"-infinity":
            return datetime.min.replace(tzinfo=UTC)
        match = _ISO.match(raw)
        if match is None:
            raise InvalidTimeError(
                f"cannot read the instant {raw.decode(errors='replace')!r}",
                hint="the session's DateStyle must be ISO (PostgreSQL's default)",
            )
        year, month, day, hour, minute, second, fraction, sign, oh, om, os = match.groups()
        offset = timedelta(hours=int(oh), minutes=int(om or 0), seconds=int(os or 0))
        if sign == b"-":
            offset = -offset
        micro = int(fraction.ljust(6, b"0")[:6]) if fraction else 0
        # A session east of UTC can print an instant of 9999's last hours in year
        # 10000, which datetime cannot hold: compute from a year earlier (9999 has 365 days).
        shift = timedelta(days=365) if int(year) == 10000 else timedelta(0)
        try:
            wall = datetime(
                int(year) - (1 if shift else 0),
                int(month),
                int(day),
                int(hour),
                int(minute),
                int(second),
                micro,
                tzinfo=UTC,
            )
            return wall + (shift - offset)
        except (ValueError, OverflowError) as exc:
            raise InvalidTimeError(
                f"the instant {raw.decode(errors='replace')!r} is outside Python's datetime range"
            ) from exc


class JsonLoader(Loader):
    """``json``/``jsonb`` text as exact Python values (:func:`~bitemporal.jsonvalues.loads`)."""

    def load(self, data: Buffer) -> Any:
        return loads(bytes(data))


def register(adapters: AdaptersMap) -> None:
    """Make ``adapters`` read as the library does (see the module docstring)."""
    adapters.register_loader(builtins["timestamptz"].oid, UtcTimestamptzLoader)
    adapters.register_loader(builtins["json"].oid, JsonLoader)
    adapters.register_loader(builtins["jsonb"].oid, JsonLoader)


@overload
def cursor(conn: psycopg.Connection[Any]) -> psycopg.Cursor[tuple[Any, ...]]: ...
@overload
def cursor(conn: psycopg.Connection[Any], row_factory: RowFactory[Row]) -> psycopg.Cursor[Row]: ...


def cursor(
    conn: psycopg.Connection[Any], row_factory: RowFactory[Any] | None = None
) -> psycopg.Cursor[Any]:
    """A cursor on ``conn`` (tuple rows unless told) that reads as the library does;
    close it (``with``) when done."""
    cur = conn.cursor(row_factory=row_factory or tuple_row)
    register(cur.adapters)
    return cur


def async_cursor(
    conn: psycopg.AsyncConnection[Any], row_factory: RowFactory[Any] | None = None
) -> psycopg.AsyncCursor[Any]:
    """:func:`cursor` for an async connection."""
    cur = conn.cursor(row_factory=row_factory or tuple_row)
    register(cur.adapters)
    return cur
