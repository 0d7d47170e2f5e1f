"""Bulk recording: :meth:`Facts.record_many <bitemporal.Facts.record_many>` (the file
importer behind ``bitemporal import`` is :mod:`bitemporal.importing`).

``record_many(rows)`` applies a batch with exactly the semantics of calling
:meth:`~bitemporal.Facts.record` for each row, in order, inside one transaction
(several rows of one key, rows splitting each other, no-ops, explicit and default
knowledge times included), but set-based: the rows are checked, ``COPY``-ed into a
temporary staging table, and merged by one call of the SQL function
``bitemporal.record_many`` (``sql/facts_bulk.v1.sql``). A batch is all or
nothing: if any row is bad, :class:`~bitemporal.BatchError` lists the bad rows by
line (1-based position in the batch) with their reasons, and nothing is written.

Rows are :class:`RecordRow` objects or mappings with the fields of ``FIELDS``
(``entity`` and ``attribute``, or a ``key``; ``source``; ``value``; optionally
``valid_from``, ``valid_to``, ``known_at``, ``recorded_by``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import (
    BatchError,
    BitemporalError,
    InvalidInputError,
    InvalidValueError,
    check_optional_text,
)
from .formatting import counted
from .jsonvalues import JSON
from .model import Key, Recorded, check_key, check_key_part, check_many, json_text
from .operations import Copy, Statement, Steps
from .periods import Instant, Period, to_optional_instant

#: The fields of a row, in the order of the CSV header ``bitemporal import`` expects.
FIELDS = (
    "entity",
    "attribute",
    "source",
    "value",
    "valid_from",
    "valid_to",
    "known_at",
    "recorded_by",
)
_MAPPING_FIELDS = frozenset((*FIELDS, "key"))
_REQUIRED = ("source", "value")

#: Bad rows a BatchError lists, at most (its total counts them all).
DEFAULT_MAX_ERRORS = 100


@dataclass(frozen=True, slots=True)
class RecordRow:
    """One row of a :meth:`~bitemporal.Facts.record_many` batch: the arguments of
    :meth:`~bitemporal.Facts.record` (without idempotency key)."""

    key: Key
    value: JSON
    source: str
    valid_from: Instant | None = None
    valid_to: Instant | None = None
    known_at: Instant | None = None
    recorded_by: str | None = None


# The caller's own staging table; the SQL function gets the rows as an array
# built by the calling statement, so it never reads a table the caller owns.
_STAGING = """
DO $$
BEGIN
    IF pg_catalog.to_regclass('pg_temp.bitemporal_batch_v1') IS NULL THEN
        CREATE TEMPORARY TABLE bitemporal_batch_v1 (
            line        bigint NOT NULL,
            entity      text,
            attribute   text,
            source      text,
            value       jsonb,
            valid_from  timestamptz,
            valid_to    timestamptz,
            known_at    timestamptz,
            recorded_by text
        ) ON COMMIT DELETE ROWS;
    ELSE
        TRUNCATE pg_temp.bitemporal_batch_v1;
    END IF;
END
$$"""
_COPY = (
    "COPY pg_temp.bitemporal_batch_v1 "
    "(line, entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by) "
    "FROM STDIN"
)
_MERGE = """
SELECT r.line, r.version_id, r.created, r.superseded, r.known_at
  FROM bitemporal.record_many(
         (SELECT pg_catalog.array_agg(
                     ROW(b.entity, b.attribute, b.source, b.value, b.valid_from,
                         b.valid_to, b.known_at, b.recorded_by)::bitemporal.batch_row
                     ORDER BY b.line)
            FROM pg_temp.bitemporal_batch_v1 b),
         %s) r
 ORDER BY r.line"""

Staged = tuple[
    int, str, str, str, str, datetime | None, datetime | None, datetime | None, str | None
]


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_nul(v) for v in value)
    return False


def _fields(row: RecordRow | Mapping[str, Any]) -> tuple[Any, ...]:
    if isinstance(row, RecordRow):
        return (
            check_key(row.key).entity,
            row.key.attribute,
            row.source,
            row.value,
            row.valid_from,
            row.valid_to,
            row.known_at,
            row.recorded_by,
        )
    if not isinstance(row, Mapping):
        raise InvalidInputError(f"a row must be a RecordRow or a mapping, not {type(row).__name__}")
    unknown = row.keys() - _MAPPING_FIELDS
    if unknown:
        raise InvalidInputError(
            f"unknown field(s) {', '.join(sorted(map(str, unknown)))}; expected {', '.join(FIELDS)}"
        )
    missing = [name for name in _REQUIRED if name not in row]
    entity: Any
    attribute: Any
    if "key" in row:
        if "entity" in row or "attribute" in row:
            raise InvalidInputError("give either key or entity and attribute, not both")
        key = check_key(row["key"])
        entity, attribute = key.entity, key.attribute
    else:
        missing = [name for name in ("entity", "attribute") if name not in row] + missing
        entity, attribute = row.get("entity"), row.get("attribute")
    if missing:
        raise InvalidInputError(f"missing field(s) {', '.join(missing)}")
    return (
        entity,
        attribute,
        row["source"],
        row["value"],
        row.get("valid_from"),
        row.get("valid_to"),
        row.get("known_at"),
        row.get("recorded_by"),
    )


def stage(line: int, row: RecordRow | Mapping[str, Any]) -> Staged:
    """The checked COPY row for batch row ``line``; raises what :meth:`Facts.record`
    would raise before the database for the same arguments."""
    entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by = _fields(row)
    check_key_part("entity", entity)
    check_key_part("attribute", attribute)
    check_key_part("source", source)
    text = json_text(value)
    if "\\u0000" in text and _has_nul(value):
        raise InvalidValueError(
            "value contains a \\u0000 character, which PostgreSQL jsonb cannot store"
        )
    start = to_optional_instant(valid_from, name="valid_from")
    end = to_optional_instant(valid_to, name="valid_to")
    if start is not None and end is not None:
        Period(start, end)  # refuses an empty or inverted period
    return (
        line,
        entity,
        attribute,
        source,
        text,
        start,
        end,
        to_optional_instant(known_at, name="known_at"),
        check_optional_text("recorded_by", recorded_by),
    )


def stage_all(
    rows: Iterable[RecordRow | Mapping[str, Any]], max_errors: int = DEFAULT_MAX_ERRORS
) -> list[Staged]:
    """Every row checked and staged; :class:`BatchError` listing the bad ones if any is."""
    staged: list[Staged] = []
    errors: list[tuple[int, str | None, str]] = []
    total = 0
    for line, row in enumerate(check_many("rows", rows, InvalidInputError), start=1):
        try:
            staged.append(stage(line, row))
        except BitemporalError as exc:
            total += 1
            if len(errors) < max_errors:
                errors.append((line, exc.sqlstate, str(exc)))
    if errors:
        raise batch_error(errors, total)
    return staged


def batch_error(errors: list[tuple[int, str | None, str]], total: int) -> BatchError:
    """A :class:`BatchError` for bad rows found before the database, worded as the SQL
    function's."""
    line, _, reason = errors[0]
    return BatchError(
        f"{counted(total, 'bad row')} in the batch, nothing written; line {line}: {reason}",
        hint="fix or drop the rows listed (line = 1-based position in the batch) "
        "and send the batch again",
        errors=errors,
        total=total,
    )


def record_many(
    rows: Iterable[RecordRow | Mapping[str, Any]],
    *,
    max_errors: int = DEFAULT_MAX_ERRORS,
) -> Steps[list[Recorded]]:
    """The steps of :meth:`bitemporal.Facts.record_many` (see :mod:`bitemporal.operations`):
    run in one transaction."""
    if isinstance(max_errors, bool) or not isinstance(max_errors, int) or max_errors < 1:
        raise InvalidInputError(f"max_errors must be a whole number, 1 or more, not {max_errors!r}")
    staged = stage_all(rows, max_errors)
    if not staged:
        return []
    yield Statement(_STAGING)
    yield Copy(_COPY, staged)
    results = yield Statement(_MERGE, (max_errors,))
    assert len(results) == len(staged), "record_many returned one result per row"
    return [
        Recorded(version_id, created, tuple(superseded), known_at)
        for _, version_id, created, superseded, known_at in results
    ]


# The rows whose value their source already held over their whole valid period at their
# (explicit) knowledge time: a re-run of rows recorded before. Several adjacent versions
# (remainders of later cuts) may cover the period together, hence range_agg. A join
# on the key rather than a correlated subquery: Citus plans it (the rows become an
# intermediate result joined on the distribution column), and it refuses the other.
_RECORDED_ALREADY = """
SELECT r.line
  FROM ROWS FROM (pg_catalog.unnest(%s::bigint[]), pg_catalog.unnest(%s::text[]),
                  pg_catalog.unnest(%s::text[]), pg_catalog.unnest(%s::text[]),
                  pg_catalog.unnest(%s::jsonb[]), pg_catalog.unnest(%s::timestamptz[]),
                  pg_catalog.unnest(%s::timestamptz[]), pg_catalog.unnest(%s::timestamptz[]))
       AS r(line, entity, attribute, source, value, valid_from, valid_to, known_at)
  JOIN bitemporal.versions v
    ON v.entity = r.entity AND v.attribute = r.attribute AND v.source = r.source
   AND v.value = r.value AND v.known_period @> r.known_at
 GROUP BY r.line, r.valid_from, r.valid_to
HAVING pg_catalog.range_agg(v.valid_period) @> pg_catalog.tstzrange(r.valid_from, r.valid_to)"""


def recorded_already(rows: Iterable[RecordRow | Mapping[str, Any]]) -> Steps[list[bool]]:
    """The steps of :meth:`bitemporal.Facts.recorded_already`."""
    staged = stage_all(rows)
    candidates = [row for row in staged if row[7] is not None]
    found: set[int] = set()
    if candidates:
        columns = [list(column) for column in zip(*candidates, strict=True)][:8]
        found = {line for (line,) in (yield Statement(_RECORDED_ALREADY, columns))}
    return [row[0] in found for row in staged]
