"""Bulk ingestion: :meth:`Facts.record_many <bitemporal.Facts.record_many>` and the
readers behind ``bitemporal import``.

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

import csv
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any, NoReturn

from .adapters import cursor
from .errors import (
    BatchError,
    BitemporalError,
    InvalidInputError,
    InvalidTimeError,
    InvalidValueError,
    PermissionDeniedError,
    TransientError,
    check_optional_text,
)
from .jsonvalues import JSON
from .jsonvalues import parse as parse_json
from .model import Connector, Key, Recorded, check_key_part, json_text
from .periods import Instant, Period, to_optional_instant

#: The fields of a row, in the order of the CSV header ``bitemporal import`` expects.
FIELDS = ("entity", "attribute", "source", "value", "valid_from", "valid_to", "known_at", "recorded_by")
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
    "(line, entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by) FROM STDIN"
)
_MERGE = """
SELECT r.line, r.version_id, r.created, r.superseded, r.known_at
  FROM bitemporal.record_many(
         (SELECT pg_catalog.array_agg(ROW(b.entity, b.attribute, b.source, b.value, b.valid_from,
                                          b.valid_to, b.known_at, b.recorded_by)::bitemporal.batch_row
                                      ORDER BY b.line)
            FROM pg_temp.bitemporal_batch_v1 b),
         %s) r
 ORDER BY r.line"""

Staged = tuple[int, str, str, str, str, datetime | None, datetime | None, datetime | None, str | None]


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
        return (row.key.entity, row.key.attribute, row.source, row.value, row.valid_from,
                row.valid_to, row.known_at, row.recorded_by)
    if not isinstance(row, Mapping):
        raise InvalidInputError(f"a row must be a RecordRow or a mapping, not {type(row).__name__}")
    unknown = row.keys() - _MAPPING_FIELDS
    if unknown:
        raise InvalidInputError(f"unknown field(s) {', '.join(sorted(map(str, unknown)))}; "
                                f"expected {', '.join(FIELDS)}")
    missing = [name for name in _REQUIRED if name not in row]
    entity: Any
    attribute: Any
    if "key" in row:
        if "entity" in row or "attribute" in row:
            raise InvalidInputError("give either key or entity and attribute, not both")
        key = row["key"]
        if not isinstance(key, Key):
            raise InvalidInputError(f"key must be a Key, not {type(key).__name__}")
        entity, attribute = key.entity, key.attribute
    else:
        missing = [name for name in ("entity", "attribute") if name not in row] + missing
        entity, attribute = row.get("entity"), row.get("attribute")
    if missing:
        raise InvalidInputError(f"missing field(s) {', '.join(missing)}")
    return (entity, attribute, row["source"], row["value"], row.get("valid_from"), row.get("valid_to"),
            row.get("known_at"), row.get("recorded_by"))


def stage(line: int, row: RecordRow | Mapping[str, Any]) -> Staged:
    """The checked COPY row for batch row ``line``; raises what :meth:`Facts.record`
    would raise before the database for the same arguments."""
    entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by = _fields(row)
    check_key_part("entity", entity)
    check_key_part("attribute", attribute)
    check_key_part("source", source)
    text = json_text(value)
    if "\\u0000" in text and _has_nul(value):
        raise InvalidValueError("value contains a \\u0000 character, which PostgreSQL jsonb cannot store")
    start = to_optional_instant(valid_from, name="valid_from")
    end = to_optional_instant(valid_to, name="valid_to")
    if start is not None and end is not None:
        Period(start, end)  # refuses an empty or inverted period
    return (line, entity, attribute, source, text, start, end,
            to_optional_instant(known_at, name="known_at"), check_optional_text("recorded_by", recorded_by))


def stage_all(
    rows: Iterable[RecordRow | Mapping[str, Any]], max_errors: int = DEFAULT_MAX_ERRORS
) -> list[Staged]:
    """Every row checked and staged; :class:`BatchError` listing the bad ones if any is."""
    staged: list[Staged] = []
    errors: list[tuple[int, str | None, str]] = []
    total = 0
    for line, row in enumerate(rows, start=1):
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
    """A :class:`BatchError` for bad rows found before the database, worded as the SQL function's."""
    line, _, reason = errors[0]
    plural = "" if total == 1 else "s"
    return BatchError(
        f"{total} bad row{plural} in the batch, nothing written; line {line}: {reason}",
        hint="fix or drop the rows listed (line = 1-based position in the batch) and send the batch again",
        errors=errors, total=total,
    )


def record_many(
    atomic: Connector,
    rows: Iterable[RecordRow | Mapping[str, Any]],
    *,
    max_errors: int = DEFAULT_MAX_ERRORS,
) -> list[Recorded]:
    """See :meth:`bitemporal.Facts.record_many`."""
    if max_errors < 1:
        raise InvalidInputError(f"max_errors must be at least 1, not {max_errors}")
    staged = stage_all(rows, max_errors)
    if not staged:
        return []
    with atomic() as conn:
        conn.execute(_STAGING)
        with cursor(conn) as cur:
            with cur.copy(_COPY) as copy:
                for row in staged:
                    copy.write_row(row)
            cur.execute(_MERGE, (max_errors,))
            results = cur.fetchall()
    assert len(results) == len(staged), "record_many returned one result per row"
    return [Recorded(version_id, created, tuple(superseded), known_at)
            for _, version_id, created, superseded, known_at in results]


# The rows whose value their source already held over their whole valid period at their
# (explicit) knowledge time: a re-run of rows recorded before. Several adjacent versions
# (remainders of later cuts) may cover the period together, hence range_agg.
_RECORDED_ALREADY = """
SELECT r.line
  FROM ROWS FROM (pg_catalog.unnest(%s::bigint[]), pg_catalog.unnest(%s::text[]),
                  pg_catalog.unnest(%s::text[]), pg_catalog.unnest(%s::text[]),
                  pg_catalog.unnest(%s::jsonb[]), pg_catalog.unnest(%s::timestamptz[]),
                  pg_catalog.unnest(%s::timestamptz[]), pg_catalog.unnest(%s::timestamptz[]))
       AS r(line, entity, attribute, source, value, valid_from, valid_to, known_at)
 WHERE (SELECT pg_catalog.range_agg(v.valid_period)
          FROM bitemporal.versions v
         WHERE v.entity = r.entity AND v.attribute = r.attribute AND v.source = r.source
           AND v.value = r.value AND v.known_period @> r.known_at)
       @> pg_catalog.tstzrange(r.valid_from, r.valid_to)"""


def recorded_already(reading: Connector, rows: Iterable[RecordRow | Mapping[str, Any]]) -> list[bool]:
    """See :meth:`bitemporal.Facts.recorded_already`."""
    staged = stage_all(rows)
    candidates = [row for row in staged if row[7] is not None]
    found: set[int] = set()
    if candidates:
        columns = [list(column) for column in zip(*candidates, strict=True)][:8]
        with reading() as conn:
            found = {line for (line,) in conn.execute(_RECORDED_ALREADY, columns)}
    return [row[0] in found for row in staged]


# -- files: CSV and JSON Lines, for `bitemporal import` --------------------------------------

#: Rows per batch (each batch is one transaction) unless told otherwise.
DEFAULT_BATCH_SIZE = 10_000


def _instant(name: str, text: Any) -> Instant | None:
    if text is None or text == "":
        return None
    if isinstance(text, datetime | date):
        return text
    if not isinstance(text, str):
        raise InvalidTimeError(f"{name} must be an ISO 8601 date or datetime, not {text!r}")
    try:
        return date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidTimeError(
            f"{name} {text!r} is not an ISO 8601 date or datetime",
            hint="e.g. 2026-09-01 or 2026-09-01T12:00:00+00:00",
        ) from exc


def _file_row(fields: Mapping[str, Any], *, value_is_json_text: bool) -> dict[str, Any]:
    unknown = fields.keys() - set(FIELDS)
    if unknown:
        raise InvalidInputError(f"unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    row: dict[str, Any] = {name: fields.get(name) for name in FIELDS}
    for name in ("entity", "attribute", "source", "value"):
        if row[name] is None or (name != "value" and row[name] == ""):
            raise InvalidInputError(f"{name} is missing")
    if value_is_json_text:
        text = row["value"]
        shown = repr(text) if len(text) <= 60 else f"{text[:60]!r}... ({len(text):,} characters)"
        try:
            row["value"] = parse_json(text)
        except json.JSONDecodeError as exc:
            raise InvalidValueError(f"value {shown} is not JSON",
                                    hint="quote text as JSON: \"text\" (in CSV: \"\"\"text\"\"\")") from exc
        except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
            raise InvalidValueError(f"value {shown} cannot be read: {_json_problem(exc)}") from exc
    for name in ("valid_from", "valid_to", "known_at"):
        row[name] = _instant(name, row[name])
    if row["recorded_by"] == "":
        row["recorded_by"] = None
    return row


FileRow = tuple[int, dict[str, Any] | BitemporalError]


def _json_problem(exc: ValueError | RecursionError) -> str:
    # Python's json refuses integers over 4300 digits (ValueError) and recurses per level.
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def read_csv(stream: Iterable[str]) -> Iterator[FileRow]:
    """(file line, row or problem) for every record of a CSV file with a header naming
    the fields (``FIELDS``; ``value`` as JSON text; empty = None)."""
    reader = csv.DictReader(stream, strict=True)
    header = reader.fieldnames or []
    unknown = [name for name in header if name not in FIELDS]
    missing = [name for name in ("entity", "attribute", "source", "value") if name not in header]
    if unknown or missing:
        problems = []
        if unknown:
            problems.append(f"unknown column(s) {', '.join(unknown)}")
        if missing:
            problems.append(f"missing column(s) {', '.join(missing)}")
        raise InvalidInputError(f"CSV header {','.join(header)!r}: {'; '.join(problems)}",
                                hint=f"expected {','.join(FIELDS)}")
    first = reader.line_num + 1
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield first, InvalidInputError(f"malformed CSV: {exc}")
            return
        line, first = first, reader.line_num + 1
        if None in record or any(v is None for v in record.values()):
            yield line, InvalidInputError(f"expected {len(header)} columns")
            continue
        try:
            yield line, _file_row(record, value_is_json_text=True)
        except BitemporalError as exc:
            yield line, exc


def read_jsonl(stream: Iterable[str]) -> Iterator[FileRow]:
    """(file line, row or problem) for every non-blank line of a JSON Lines file, each an
    object with the fields of ``FIELDS`` (``value`` any JSON value; null or absent = None)."""
    for line, text in enumerate(stream, start=1):
        if not text.strip():
            continue
        try:
            fields = parse_json(text)
        except json.JSONDecodeError as exc:
            yield line, InvalidInputError(f"not JSON: {exc}")
            continue
        except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
            yield line, InvalidInputError(f"cannot read: {_json_problem(exc)}")
            continue
        if not isinstance(fields, dict):
            yield line, InvalidInputError(f"expected a JSON object, not {type(fields).__name__}")
            continue
        if "value" in fields and fields["value"] is None:
            yield line, InvalidValueError("value must not be null")
            continue
        try:
            yield line, _file_row(fields, value_is_json_text=False)
        except BitemporalError as exc:
            yield line, exc


def file_format(path: str, given: str | None) -> str:
    """``csv`` or ``jsonl``: as given, else from the file name's extension."""
    if given:
        return given
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    raise InvalidInputError(f"cannot tell the format of {path!r} from its name", hint="pass --format csv|jsonl")


@dataclass
class ImportReport:
    """What ``bitemporal import`` did."""

    rows: int = 0
    created: int = 0
    unchanged: int = 0
    batches: int = 0
    seconds: float = 0.0
    #: The file line of the last row committed (0: nothing committed).
    last_line: int = 0

    def committed(self, path: str) -> str:
        """Which lines of the file are committed, said for an error message."""
        if not self.last_line:
            return f"nothing of {path} was committed"
        return f"lines 1-{self.last_line} of {path} were committed ({self.rows:,} rows)"


class ImportFailed(BitemporalError):
    """A batch of a file could not be imported (its bad rows by file line); earlier
    batches were committed."""

    def __init__(self, message: str, *, rows: list[tuple[int, str]], total: int, report: ImportReport,
                 first_line: int) -> None:
        super().__init__(message)
        self.rows = rows
        self.total = total
        self.report = report
        self.first_line = first_line


class Progress:
    """A plain-text progress bar on a stream (stderr): redrawn in place on a terminal,
    one line per batch otherwise."""

    def __init__(self, stream: IO[str] | None, total_bytes: int | None) -> None:
        self.stream = stream
        self.total = total_bytes
        self.start = time.monotonic()
        self.tty = bool(stream is not None and stream.isatty())
        self.shown = -1

    def update(self, rows: int, done_bytes: int | None, final: bool = False) -> None:
        if self.stream is None or (rows == self.shown and not (final and self.tty)):
            return
        self.shown = rows
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = f"{rows / elapsed:,.0f} rows/s"
        if self.total and done_bytes is not None:
            fraction = min(done_bytes / self.total, 1.0)
            filled = int(fraction * 30)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {fraction:4.0%} "
        else:
            bar = ""
        text = f"{bar}{rows:,} rows, {elapsed:.1f} s, {rate}"
        if self.tty:
            self.stream.write(f"\r{text}" + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


class _CountingLines:
    """Lines of a binary file decoded as UTF-8, counting the bytes read; a line that is
    not UTF-8 ends the import (InvalidInputError naming the line)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.done = 0

    def __iter__(self) -> Iterator[str]:
        for number, chunk in enumerate(self.raw, start=1):
            self.done += len(chunk)
            try:
                yield chunk.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInputError(
                    f"line {number} is not UTF-8 text ({exc.reason} at byte {exc.start + 1} "
                    f"of the line)", hint="convert the file to UTF-8") from exc


def import_file(
    facts: Any,
    path: str,
    *,
    fmt: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_errors: int = DEFAULT_MAX_ERRORS,
    progress: IO[str] | None = None,
) -> ImportReport:
    """Import a CSV or JSON Lines file through ``facts.record_many``, ``batch_size`` rows
    per batch, each batch its own transaction (on an autocommit store). On the first bad
    batch, raises :class:`ImportFailed` with its bad rows by file line; the batches before
    it stay imported."""
    if batch_size < 1:
        raise InvalidInputError(f"batch size must be at least 1, not {batch_size}")
    if max_errors < 1:
        raise InvalidInputError(f"max errors must be at least 1, not {max_errors}")
    kind = file_format(path, fmt)
    report = ImportReport()
    with open(path, "rb") as raw:
        try:
            _import_stream(facts, raw, kind, report, batch_size, max_errors, progress)
        except (BitemporalError, OSError) as exc:
            # Bad rows, a line that is not UTF-8, a lost connection: say what is kept.
            retry = ("re-run the same command to continue"
                     if isinstance(exc, TransientError | OSError)
                     else "fix the file and re-run the same command to continue")
            failed = exc if isinstance(exc, ImportFailed) else None
            raise ImportFailed(
                f"{exc}; {report.committed(path)}; {retry}",
                rows=failed.rows if failed else [], total=failed.total if failed else 0,
                report=report, first_line=failed.first_line if failed else report.last_line + 1,
            ) from exc
    return report


def _import_stream(facts: Any, raw: IO[bytes], kind: str, report: ImportReport, batch_size: int,
                   max_errors: int, progress: IO[str] | None) -> None:
    total_bytes = os.fstat(raw.fileno()).st_size if raw.seekable() else None
    lines = _CountingLines(raw)
    source = read_csv(lines) if kind == "csv" else read_jsonl(lines)
    bar = Progress(progress, total_bytes)
    start = time.monotonic()
    batch: list[FileRow] = []
    for item in source:
        batch.append(item)
        if len(batch) >= batch_size:
            _import_batch(facts, batch, report, max_errors)
            bar.update(report.rows, lines.done)
            batch = []
    if batch:
        _import_batch(facts, batch, report, max_errors)
    report.seconds = time.monotonic() - start
    bar.update(report.rows, lines.done, final=True)


def _import_batch(facts: Any, batch: list[FileRow], report: ImportReport, max_errors: int) -> None:
    lines = [line for line, _ in batch]
    problems = [(line, str(row)) for line, row in batch if isinstance(row, BitemporalError)]
    if problems:
        _fail(batch, problems, len(problems), report, max_errors)
    rows = [row for _, row in batch if not isinstance(row, BitemporalError)]
    try:
        results = facts.record_many(rows, max_errors=max_errors)
    except BatchError as exc:
        if not any(state == "BT002" for _, state, _ in exc.errors):
            _fail(batch, [(lines[position - 1], reason) for position, reason in exc.rows], exc.total,
                  report, max_errors)
        # Knowledge older than the key's: rows of an earlier run of this file are skipped
        # (found through bitemporal.versions; a role that may not read it gets the BT002s).
        try:
            known = facts.recorded_already(rows)
        except PermissionDeniedError:
            _fail(batch, [(lines[position - 1], reason) for position, reason in exc.rows],
                  exc.total, report, max_errors)
        kept = [(line, row) for line, row, done in zip(lines, rows, known, strict=True) if not done]
        try:
            results = facts.record_many([row for _, row in kept], max_errors=max_errors)
        except BatchError as again:
            _fail(batch, [(kept[position - 1][0], reason) for position, reason in again.rows],
                  again.total, report, max_errors)
        report.unchanged += len(rows) - len(kept)
        report.rows += len(rows) - len(kept)
    report.rows += len(results)
    report.batches += 1
    report.last_line = lines[-1]
    created = sum(1 for r in results if r.created)
    report.created += created
    report.unchanged += len(results) - created


def _fail(batch: list[FileRow], problems: list[tuple[int, str]], total: int, report: ImportReport,
          max_errors: int) -> NoReturn:
    first, last = batch[0][0], batch[-1][0]
    plural = "" if total == 1 else "s"
    raise ImportFailed(
        f"{total} bad row{plural} in the batch of lines {first}-{last}: nothing of that batch was "
        f"written",
        rows=problems[:max_errors], total=total, report=report, first_line=first,
    )


def print_problems(exc: ImportFailed, stream: IO[str] | None = None) -> None:
    """The bad rows of a failed import, one per line (on stderr unless told otherwise)."""
    stream = sys.stderr if stream is None else stream
    for line, reason in exc.rows:
        stream.write(f"  line {line}: {reason}\n")
    if exc.total > len(exc.rows):
        stream.write(f"  ... and {exc.total - len(exc.rows)} more\n")
