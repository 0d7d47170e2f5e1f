"""How the library reads query results: instants in UTC, JSON exactly.

psycopg returns a ``timestamptz`` in the session's TimeZone, and Python
compares two datetimes that share a tzinfo by their wall-clock times: across a
daylight-saving fall-back, ``02:15+01:00`` then sorts before ``02:45+02:00``.
So every query of the library runs on a :func:`cursor` that reads
``timestamptz`` (hence ``tstzrange`` bounds and arrays) as UTC datetimes, and
``json``/``jsonb`` with :func:`bitemporal.jsonvalues.loads`. The loaders live
on that cursor only: the caller's connection, and its other queries, are left
as they were.

A cursor asked for ``binary`` results reads the same values from PostgreSQL's
binary format, where an instant is a count of microseconds since 2000 UTC: no
text to parse and no session TimeZone to undo (see :func:`cursor`).
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
from psycopg.types.datetime import TimestamptzBinaryLoader, TimestamptzLoader

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


class JsonBinaryLoader(JsonLoader):
    """``json`` in binary format: the same text."""

    format = pq.Format.BINARY


class JsonbBinaryLoader(Loader):
    """``jsonb`` in binary format (a version byte, 1, then the text) as exact Python values."""

    format = pq.Format.BINARY

    def load(self, data: Buffer) -> Any:
        if data[:1] != b"\x01":
            raise psycopg.DataError(f"unknown jsonb binary format: {bytes(data[:1])!r}")
        return loads(bytes(data[1:]))


#: psycopg's loader of binary ``timestamptz`` (its C one where installed).
_BINARY_TIMESTAMPTZ: type[abc.Loader] = (
    postgres.adapters.get_loader(builtins["timestamptz"].oid, pq.Format.BINARY)
    or TimestamptzBinaryLoader
)


class UtcTimestamptzBinaryLoader(Loader):
    """Binary ``timestamptz`` as a UTC ``datetime``: psycopg's own loader, made without a
    connection, whose time zone it would otherwise read (psycopg then converts to UTC).

    Not a wrapper: the loader psycopg calls per value is psycopg's own (in C where
    installed, which cannot be subclassed), so a result of thousands of instants costs no
    Python call per instant (issue 15). It reads no ``'infinity'`` (psycopg raises
    ``DataError``): only for statements whose instants are finite (the stored periods'
    bounds, transaction times, question times).
    """

    format = pq.Format.BINARY

    def __new__(cls, oid: int, context: AdaptContext | None = None) -> Any:
        return _BINARY_TIMESTAMPTZ(oid, None)


_LOADERS = {
    pq.Format.TEXT: (
        (builtins["timestamptz"].oid, UtcTimestamptzLoader),
        (builtins["json"].oid, JsonLoader),
        (builtins["jsonb"].oid, JsonLoader),
    ),
    pq.Format.BINARY: (
        (builtins["timestamptz"].oid, UtcTimestamptzBinaryLoader),
        (builtins["json"].oid, JsonBinaryLoader),
        (builtins["jsonb"].oid, JsonbBinaryLoader),
    ),
}


def register(adapters: AdaptersMap, *, binary: bool = False) -> None:
    """Make ``adapters`` read as the library does (see the module docstring), results in
    text format, or in binary format if ``binary``."""
    for oid, loader in _LOADERS[pq.Format.BINARY if binary else pq.Format.TEXT]:
        adapters.register_loader(oid, loader)


@overload
def cursor(
    conn: psycopg.Connection[Any], *, binary: bool = False
) -> psycopg.Cursor[tuple[Any, ...]]: ...
@overload
def cursor(
    conn: psycopg.Connection[Any], row_factory: RowFactory[Row], *, binary: bool = False
) -> psycopg.Cursor[Row]: ...


def cursor(
    conn: psycopg.Connection[Any],
    row_factory: RowFactory[Any] | None = None,
    *,
    binary: bool = False,
) -> psycopg.Cursor[Any]:
    """A cursor on ``conn`` (tuple rows unless told) that reads as the library does;
    close it (``with``) when done. ``binary``: results in binary format, for statements
    whose instants are all finite (:class:`UtcTimestamptzBinaryLoader`)."""
    cur = conn.cursor(row_factory=row_factory or tuple_row, binary=binary)
    register(cur.adapters, binary=binary)
    return cur


def async_cursor(
    conn: psycopg.AsyncConnection[Any],
    row_factory: RowFactory[Any] | None = None,
    *,
    binary: bool = False,
) -> psycopg.AsyncCursor[Any]:
    """:func:`cursor` for an async connection."""
    cur = conn.cursor(row_factory=row_factory or tuple_row, binary=binary)
    register(cur.adapters, binary=binary)
    return cur
