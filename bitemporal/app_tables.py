"""Application tables: an application's own typed tables, made bitemporal.

A table made bitemporal (``op.create_bitemporal_table`` in Alembic, or
``bitemporal.enable_table()`` in SQL; see sql/tables.v1.sql) keeps the fact
store's rules with the application's key and value columns. Its generated
functions ``<table>_record``, ``<table>_retract``, ``<table>_as_of``,
``<table>_history`` and ``<table>_changes`` are what this repository calls;
``store.app_tables`` is an :class:`ApplicationTables`.

A row is passed as a mapping of column names to Python values. It travels as
JSON and is turned into the table's row type by ``jsonb_populate_record``, so
each value is converted to its column's type by PostgreSQL, the function's
arguments are typed exactly, and the statement is composed from identifiers
only (never from values).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from uuid import UUID

import sqlalchemy
from psycopg import sql
from psycopg.abc import AdaptContext

from .errors import (
    InvalidInputError,
    InvalidKeyError,
    InvalidValueError,
    UnknownTableError,
    check_optional_text,
    check_text,
)
from .jsonvalues import encode
from .model import ChangeKind, Erasure, Recorded, check_reason
from .operations import (
    AsyncRepository,
    AsyncRunning,
    Statement,
    Steps,
    SyncRepository,
    SyncRunning,
    one,
    reads,
    writes,
)
from .periods import Instant, Period, period_bounds, to_optional_instant

#: A table: "schema.table" or "table" (found on the search path), a SQLAlchemy
#: ``Table`` or a mapped class.
TableRef = str | sqlalchemy.Table | type


class Name(sql.Identifier):
    """A quoted identifier for a statement run with parameters. psycopg looks for
    placeholders in the whole statement text, quoted names included, so a ``%`` in a
    name (``"p%q"``, ``"a%sb"``) is written ``%%``, which it reads back as ``%``."""

    def as_bytes(self, context: AdaptContext | None = None) -> bytes:
        return bytes(super().as_bytes(context)).replace(b"%", b"%%")


class Text(sql.Literal):
    """A string literal for a statement run with parameters, its ``%`` written ``%%`` (as
    :class:`Name` does)."""

    def as_bytes(self, context: AdaptContext | None = None) -> bytes:
        return bytes(super().as_bytes(context)).replace(b"%", b"%%")


@dataclass(frozen=True, slots=True)
class TableDefinition:
    """A bitemporal application table: its name and its key and value columns."""

    schema: str
    name: str
    key_columns: tuple[str, ...]
    value_columns: tuple[str, ...]
    #: The key columns' types, in ``key_columns``' order, each as (schema, name).
    key_types: tuple[tuple[str, str], ...]

    def function(self, suffix: str) -> Name:
        """One of the table's generated functions (``record``, ``as_of``, ...)."""
        return Name(self.schema, f"{self.name}_{suffix}")

    @property
    def row_type(self) -> Name:
        return Name(self.schema, self.name)


@dataclass(frozen=True, slots=True)
class TableVersion:
    """One version of a row of an application table."""

    version_id: int
    #: The key and value columns.
    row: Mapping[str, Any]
    valid_period: Period
    known_period: Period
    #: For a remainder re-recorded when a write cut an older version: that version.
    carried_from: int | None
    #: When its value columns were erased (:meth:`ApplicationTableOperations.erase`, or a
    #: retention policy); they read None since. None: not erased.
    erased_at: datetime | None = None

    @property
    def erased(self) -> bool:
        """Whether the version's values were erased (``bitemporal.erasures`` says who and
        why, for the auditor)."""
        return self.erased_at is not None


@dataclass(frozen=True, slots=True)
class TableChange:
    """What an application table learned, superseded or retracted, and when."""

    change: ChangeKind
    changed_at: datetime
    version_id: int
    #: For ``superseded``: the versions that superseded it.
    by_version_ids: tuple[int, ...]


def table_name(table: TableRef) -> tuple[str | None, str]:
    """``(schema, name)`` of a table reference (schema None: the search path decides)."""
    if isinstance(table, type):
        mapped = getattr(table, "__table__", None)
        if not isinstance(mapped, sqlalchemy.Table):
            raise InvalidInputError(f"{table.__name__} is not a mapped class")
        table = mapped
    if isinstance(table, sqlalchemy.Table):
        schema, name = table.schema, table.name
    elif isinstance(table, str):
        schema, dot, name = table.rpartition(".")
        schema = (schema or None) if dot else None
    else:
        raise InvalidInputError(
            f"a table is a name, a SQLAlchemy Table or a mapped class, not {type(table).__name__}"
        )
    check_optional_text("table name", name)
    return check_optional_text("schema name", schema), name


def table_oid(table: TableRef) -> Steps[int]:
    """The OID of a table reference (the search path finds an unqualified name); raises
    :class:`~bitemporal.UnknownTableError` when there is no such table."""
    schema, name = table_name(table)
    found = one(
        (
            yield Statement(
                "SELECT to_regclass(CASE WHEN %(schema)s::text IS NULL"
                " THEN format('%%I', %(name)s::text)"
                " ELSE format('%%I.%%I', %(schema)s::text, %(name)s::text) END)::oid",
                {"schema": schema, "name": name},
            )
        )
    )
    if found[0] is None:
        shown = name if schema is None else f"{schema}.{name}"
        raise UnknownTableError(f"there is no table {shown}")
    oid: int = found[0]
    return oid


def _json_default(value: Any) -> Any:
    # What PostgreSQL reads back exactly from its text form.
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, UUID | timedelta):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a column value bitemporal can pass")


def _check_mapping(what: str, value: object, error: type[InvalidInputError]) -> None:
    """Refuse a row or key that is not a mapping before any I/O: a tuple of values or a
    list of pairs would otherwise be read as column names."""
    if not isinstance(value, Mapping):
        raise error(
            f"{what} must be a mapping of column name to value, not {type(value).__name__}",
            hint="app_tables.definition(table) lists the table's key and value columns",
        )


def _row_json(row: Mapping[str, Any]) -> str:
    for name, value in row.items():
        if isinstance(value, datetime) and value.tzinfo is None:
            to_optional_instant(value, name=name)  # raises NaiveDatetimeError
    try:
        # Decimals (and numbers read back) as exact JSON numbers, for numeric and jsonb columns.
        text = encode(dict(row), default=_json_default)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidValueError(f"row is not a valid set of column values: {exc}") from exc
    return check_text("a column value", text, InvalidValueError)


def _version(d: TableDefinition, row: Mapping[str, Any]) -> TableVersion:
    return TableVersion(
        version_id=row["version_id"],
        row={c: row[c] for c in (*d.key_columns, *d.value_columns)},
        valid_period=Period.from_range(row["valid_period"]),
        known_period=Period.from_range(row["known_period"]),
        carried_from=row["carried_from"],
        erased_at=row["erased_at"],
    )


def _version_columns(d: TableDefinition) -> sql.Composable:
    """The select list of a version ``v`` of the table: its columns, and when it was erased
    (the view readers may read; the array containment reaches the erasures' GIN index): an
    erasure of the table lists it, or it is a remainder re-recorded without values from a
    version an erasure lists."""
    columns = (*d.key_columns, *d.value_columns, "version_id", "valid_period", "known_period")
    erased_at = (
        "(SELECT max(e.erased_at) FROM bitemporal.table_erasures e"
        " WHERE e.relation = pg_catalog.format('%%I.%%I', {schema}::text, {name}::text)"
        " AND e.version_ids @> ARRAY[{id}])"
    )
    return sql.SQL(
        "{columns}, v.carried_from, coalesce({listed}, CASE WHEN {no_values} THEN {origin} END)"
        " AS erased_at"
    ).format(
        columns=sql.SQL(", ").join(Name("v", c) for c in columns),
        listed=sql.SQL(erased_at).format(
            schema=Text(d.schema), name=Text(d.name), id=sql.SQL("v.version_id")
        ),
        no_values=sql.SQL(" AND ").join(
            [
                *(sql.SQL("{} IS NULL").format(Name("v", c)) for c in d.value_columns),
                sql.SQL("true"),
            ]
        ),
        origin=sql.SQL(erased_at).format(
            schema=Text(d.schema), name=Text(d.name), id=sql.SQL("v.carried_from")
        ),
    )


class ApplicationTableOperations:
    """Reads and writes bitemporal application tables through their generated functions;
    run by :class:`ApplicationTables` (sync API) and :class:`AsyncApplicationTables`
    (async API)."""

    # Filled by definition(), once per store.
    _definitions: dict[tuple[str | None, str], TableDefinition]

    @reads
    def definition(self, table: TableRef) -> Steps[TableDefinition]:
        """The table's key and value columns (looked up once per store)."""
        return (yield from self._definition(table))

    def _definition(self, table: TableRef) -> Steps[TableDefinition]:
        schema, name = table_name(table)
        cached = self._definitions.get((schema, name))
        if cached is not None:
            return cached
        oid = yield from table_oid(table)
        row = one(
            (
                yield Statement(
                    "SELECT d.table_schema, d.table_name, d.key_columns, d.value_columns,"
                    " ARRAY(SELECT ARRAY[tn.nspname::text, t.typname::text]"
                    "         FROM unnest(d.key_columns) WITH ORDINALITY AS k(name, n)"
                    "         JOIN pg_catalog.pg_attribute a"
                    "           ON a.attrelid = %(oid)s::oid AND a.attname = k.name"
                    "         JOIN pg_catalog.pg_type t ON t.oid = a.atttypid"
                    "         JOIN pg_catalog.pg_namespace tn ON tn.oid = t.typnamespace"
                    "        ORDER BY k.n)"
                    "  FROM bitemporal.table_definition(%(oid)s::oid::regclass) d",
                    {"oid": oid},
                )
            )
        )
        d = TableDefinition(
            row[0], row[1], tuple(row[2]), tuple(row[3]), tuple((t[0], t[1]) for t in row[4])
        )
        self._definitions[(schema, name)] = d
        return d

    def _check_columns(self, d: TableDefinition, row: Mapping[str, Any], *, key_only: bool) -> None:
        allowed = d.key_columns if key_only else (*d.key_columns, *d.value_columns)
        unknown = sorted(set(row) - set(allowed))
        if unknown:
            what = "key column" if key_only else "column"
            raise InvalidValueError(
                f"{d.schema}.{d.name} has no {what} {', '.join(unknown)}",
                hint=f"its {what}s are {', '.join(allowed)}",
            )
        missing_key = [c for c in d.key_columns if row.get(c) is None]
        if missing_key:
            raise InvalidKeyError(
                f"key column {', '.join(missing_key)} of {d.schema}.{d.name} is missing or None"
            )
        missing = [c for c in allowed if c not in row]
        if missing:
            raise InvalidValueError(
                f"the row for {d.schema}.{d.name} lacks {', '.join(missing)}",
                hint="a record is the whole row for its valid period: "
                "give every column (None for NULL)",
            )

    def _named_args(self, columns: Iterable[str]) -> sql.Composable:
        return sql.SQL(", ").join(sql.SQL("{0} => r.{0}").format(Name(c)) for c in columns)

    @writes
    def record(
        self,
        table: TableRef,
        row: Mapping[str, Any],
        *,
        valid_from: Instant | None = None,
        valid_to: Instant | None = None,
        known_at: Instant | None = None,
    ) -> Steps[Recorded]:
        """Record ``row`` (every key and value column) for ``[valid_from, valid_to)``.

        A sequenced update with :meth:`Facts.record`'s semantics: current versions
        of the key overlapping the period have their knowledge closed and their
        remainders re-recorded; a row already known for the whole period
        changes nothing (``created`` is False).
        """
        _check_mapping("row", row, InvalidValueError)
        d = yield from self._definition(table)
        self._check_columns(d, row, key_only=False)
        query = sql.SQL(
            "SELECT w.version_id, w.created, w.superseded, w.known_at"
            "  FROM jsonb_populate_record(NULL::{row_type}, %s::jsonb) AS r,"
            "       {function}({args}, valid_from => %s, valid_to => %s, known_at => %s) AS w"
        ).format(
            row_type=d.row_type,
            function=d.function("record"),
            args=self._named_args((*d.key_columns, *d.value_columns)),
        )
        params = (
            _row_json(row),
            *period_bounds(valid_from, valid_to),
            to_optional_instant(known_at, name="known_at"),
        )
        result = one((yield Statement(query, params)))
        return Recorded(result[0], result[1], tuple(result[2]), result[3])

    @writes
    def retract(
        self,
        table: TableRef,
        key: Mapping[str, Any],
        *,
        valid_from: Instant | None = None,
        valid_to: Instant | None = None,
        known_at: Instant | None = None,
    ) -> Steps[tuple[int, ...]]:
        """Sequenced delete of ``key`` over ``[valid_from, valid_to)``; returns the ended
        versions."""
        _check_mapping("key", key, InvalidKeyError)
        d = yield from self._definition(table)
        self._check_columns(d, key, key_only=True)
        query = sql.SQL(
            "SELECT {function}({args}, valid_from => %s, valid_to => %s, known_at => %s)"
            "  FROM jsonb_populate_record(NULL::{row_type}, %s::jsonb) AS r"
        ).format(
            row_type=d.row_type,
            function=d.function("retract"),
            args=self._named_args(d.key_columns),
        )
        params = (
            *period_bounds(valid_from, valid_to),
            to_optional_instant(known_at, name="known_at"),
            _row_json(key),
        )
        result = one((yield Statement(query, params)))
        return tuple(result[0])

    @writes
    def erase(
        self, table: TableRef, key: Mapping[str, Any], *, reason: str
    ) -> Steps[Erasure | None]:
        """Erase ``key`` (a data subject's right to erasure): every value column of every
        version of the key becomes None; keys, periods and version ids stay, and the
        erasure (table, key, versions, ``reason``, the session's role, the time) is recorded
        in ``bitemporal.erasures``. Returns it, or None when every version was already
        erased (nothing new is recorded). Takes the key's lock, as writes do. Needs
        ``EXECUTE`` on ``<table>_erase`` (granted to ``bitemporal_eraser``); raises
        :class:`~bitemporal.UnknownKeyError` for a key never recorded,
        :class:`~bitemporal.InvalidReasonError` for a blank reason,
        :class:`~bitemporal.NotErasableError` when a value column is ``NOT NULL``."""
        reason = check_reason(reason)
        _check_mapping("key", key, InvalidKeyError)
        d = yield from self._definition(table)
        self._check_columns(d, key, key_only=True)
        # By position: the reason parameter has no name when a key column is called reason.
        query = sql.SQL(
            "SELECT e.* FROM jsonb_populate_record(NULL::{row_type}, %s::jsonb) AS r,"
            " {function}({args}, %s) AS e WHERE e.erasure_id IS NOT NULL"
        ).format(
            row_type=d.row_type,
            function=d.function("erase"),
            args=sql.SQL(", ").join(Name("r", c) for c in d.key_columns),
        )
        rows = yield Statement(query, (_row_json(key), reason), dicts=True)
        return Erasure.from_row(rows[0]) if rows else None

    @reads
    def as_of(
        self,
        table: TableRef,
        key: Mapping[str, Any] | None = None,
        *,
        valid_at: Instant | None = None,
        known_at: Instant | None = None,
    ) -> Steps[list[TableVersion]]:
        """The versions eligible at ``(valid_at, known_at)`` (None = now), of one key
        or of every key, ORDER BY version_id."""
        if key is not None:
            _check_mapping("key", key, InvalidKeyError)
        d = yield from self._definition(table)
        if key is not None:
            self._check_columns(d, key, key_only=True)
        columns = _version_columns(d)
        instants = (
            to_optional_instant(valid_at, name="valid_at"),
            to_optional_instant(known_at, name="known_at"),
        )
        if key is None:
            query = sql.SQL(
                "SELECT {columns} FROM {function}(%s, %s) AS v ORDER BY v.version_id"
            ).format(columns=columns, function=d.function("as_of"))
            params: tuple[Any, ...] | dict[str, Any] = instants
        else:
            # as_of's question written out, with the key's condition beside it:
            # what inlining the as_of function gives on one node, where the
            # planner answers both from the table's GiST index, and on Citus,
            # which cannot inline it, a query routed to the key's shard. Each
            # key column is compared with a parameter of its own, neither joined
            # to a row of them (psycopg prepares a statement run five times, and
            # in the generic plan a join left the key as a filter over every
            # version valid at the question, tens of times slower) nor taken from
            # a function of one (Citus routes by a parameter or an immutable
            # expression of one, which jsonb_populate_record is not), cast to
            # the column's type: psycopg sends a small int as smallint, and the
            # GiST index's bigint operator class (btree_gist) has no operator
            # taking a smallint, which left the key a filter too.
            _row_json(key)  # the checks of every row's values (naive datetimes, NUL)
            query = sql.SQL(
                "SELECT {columns} FROM {table} AS v"
                " WHERE v.valid_period @> coalesce(%(valid_at)s::timestamptz, now())"
                " AND v.known_period @> coalesce(%(known_at)s::timestamptz, now())"
                " AND {match} ORDER BY v.version_id"
            ).format(
                columns=columns,
                table=d.row_type,
                match=sql.SQL(" AND ").join(
                    sql.SQL("v.{} = {}::{}").format(Name(c), sql.Placeholder(f"k{i}"), Name(*t))
                    for i, (c, t) in enumerate(zip(d.key_columns, d.key_types, strict=True))
                ),
            )
            params = {
                "valid_at": instants[0],
                "known_at": instants[1],
                **{f"k{i}": key[c] for i, c in enumerate(d.key_columns)},
            }
        return [_version(d, r) for r in (yield Statement(query, params, dicts=True))]

    @reads
    def history(self, table: TableRef, key: Mapping[str, Any]) -> Steps[list[TableVersion]]:
        """Every version of ``key``, superseded ones included, ORDER BY version_id.
        Raises :class:`~bitemporal.UnknownKeyError` for a key never recorded."""
        _check_mapping("key", key, InvalidKeyError)
        d = yield from self._definition(table)
        self._check_columns(d, key, key_only=True)
        query = sql.SQL(
            "SELECT {columns} FROM jsonb_populate_record(NULL::{row_type}, %s::jsonb) AS r,"
            " {function}({args}) AS v"
        ).format(
            columns=_version_columns(d),
            row_type=d.row_type,
            function=d.function("history"),
            args=self._named_args(d.key_columns),
        )
        return [_version(d, r) for r in (yield Statement(query, (_row_json(key),), dicts=True))]

    @reads
    def changes(
        self, table: TableRef, known_from: Instant | None = None, known_to: Instant | None = None
    ) -> Steps[list[TableChange]]:
        """What the table learned, superseded or retracted in ``[known_from, known_to)``."""
        d = yield from self._definition(table)
        query = sql.SQL(
            "SELECT change, changed_at, version_id, by_version_ids FROM {function}(%s, %s)"
        ).format(function=d.function("changes"))
        params = (
            to_optional_instant(known_from, name="known_from"),
            to_optional_instant(known_to, name="known_to"),
        )
        return [
            TableChange(ChangeKind(r[0]), r[1], r[2], tuple(r[3]))
            for r in (yield Statement(query, params))
        ]


class ApplicationTables(ApplicationTableOperations, SyncRepository):
    """The application-table repository of :class:`~bitemporal.Store` (see
    :class:`ApplicationTableOperations`)."""

    def __init__(self, runner: SyncRunning) -> None:
        super().__init__(runner)
        self._definitions = {}


class AsyncApplicationTables(ApplicationTableOperations, AsyncRepository):
    """The application-table repository of :class:`~bitemporal.AsyncStore`:
    :class:`ApplicationTables`'s methods, awaitable."""

    def __init__(self, runner: AsyncRunning) -> None:
        super().__init__(runner)
        self._definitions = {}
