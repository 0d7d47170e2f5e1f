"""The file importer behind ``bitemporal import``: CSV and JSON Lines files recorded
through :meth:`Facts.record_many <bitemporal.Facts.record_many>`, batch by batch.

Each batch is its own transaction; on the first bad batch the import stops with
:class:`~bitemporal.errors.ImportFailed` naming the bad rows by file line, and the
batches before it stay imported. Running the same file again skips the rows already
recorded (:meth:`Facts.recorded_already <bitemporal.Facts.recorded_already>`).
"""

from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn

from .errors import (
    BatchError,
    BitemporalError,
    ImportFailed,
    InvalidInputError,
    InvalidValueError,
    PermissionDeniedError,
    TransientError,
)
from .formatting import shown
from .jsonvalues import parse as parse_json
from .periods import parse_instant
from .record_many import DEFAULT_MAX_ERRORS, FIELDS

#: Called after each batch: rows done, bytes read, the file's size (None: unknown), final.
OnProgress = Callable[[int, int, int | None, bool], None]


#: Rows per batch (each batch is one transaction) unless told otherwise.
DEFAULT_BATCH_SIZE = 10_000


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
        try:
            row["value"] = parse_json(text)
        except json.JSONDecodeError as exc:
            raise InvalidValueError(
                f"value {shown(text)} is not JSON",
                hint='quote text as JSON: "text" (in CSV: """text""")',
            ) from exc
        except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
            raise InvalidValueError(
                f"value {shown(text)} cannot be read: {_json_problem(exc)}"
            ) from exc
    for name in ("valid_from", "valid_to", "known_at"):
        # An empty CSV cell, or null in JSON Lines: an open bound, the default time.
        row[name] = None if row[name] in (None, "") else parse_instant(row[name], name=name)
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
        raise InvalidInputError(
            f"CSV header {','.join(header)!r}: {'; '.join(problems)}",
            hint=f"expected {','.join(FIELDS)}",
        )
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
    raise InvalidInputError(
        f"cannot tell the format of {path!r} from its name", hint="pass --format csv|jsonl"
    )


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
                    f"of the line)",
                    hint="convert the file to UTF-8",
                ) from exc


def import_file(
    facts: Any,
    path: str,
    *,
    fmt: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_errors: int = DEFAULT_MAX_ERRORS,
    progress: OnProgress | None = None,
) -> ImportReport:
    """Import a CSV or JSON Lines file through ``facts.record_many``, ``batch_size`` rows
    per batch, each batch its own transaction (on an autocommit store). On the first bad
    batch, raises :class:`ImportFailed` with its bad rows by file line; the batches before
    it stay imported. ``progress``, if given, is called after each batch with the rows
    done, the bytes read, the file's size (None if unknown) and whether it is the end."""
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
            retry = (
                "re-run the same command to continue"
                if isinstance(exc, TransientError | OSError)
                else "fix the file and re-run the same command to continue"
            )
            failed = exc if isinstance(exc, ImportFailed) else None
            raise ImportFailed(
                f"{exc}; {report.committed(path)}; {retry}",
                rows=failed.rows if failed else [],
                total=failed.total if failed else 0,
                report=report,
                first_line=failed.first_line if failed else report.last_line + 1,
            ) from exc
    return report


def _import_stream(
    facts: Any,
    raw: IO[bytes],
    kind: str,
    report: ImportReport,
    batch_size: int,
    max_errors: int,
    progress: OnProgress | None,
) -> None:
    total_bytes = os.fstat(raw.fileno()).st_size if raw.seekable() else None
    lines = _CountingLines(raw)
    source = read_csv(lines) if kind == "csv" else read_jsonl(lines)

    def done(final: bool = False) -> None:
        if progress is not None:
            progress(report.rows, lines.done, total_bytes, final)

    start = time.monotonic()
    batch: list[FileRow] = []
    for item in source:
        batch.append(item)
        if len(batch) >= batch_size:
            _import_batch(facts, batch, report, max_errors)
            done()
            batch = []
    if batch:
        _import_batch(facts, batch, report, max_errors)
    report.seconds = time.monotonic() - start
    done(final=True)


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
            _fail(
                batch,
                [(lines[position - 1], reason) for position, reason in exc.rows],
                exc.total,
                report,
                max_errors,
            )
        # Knowledge older than the key's: rows of an earlier run of this file are skipped
        # (found through bitemporal.versions; a role that may not read it gets the BT002s).
        try:
            known = facts.recorded_already(rows)
        except PermissionDeniedError:
            _fail(
                batch,
                [(lines[position - 1], reason) for position, reason in exc.rows],
                exc.total,
                report,
                max_errors,
            )
        kept = [(line, row) for line, row, done in zip(lines, rows, known, strict=True) if not done]
        try:
            results = facts.record_many([row for _, row in kept], max_errors=max_errors)
        except BatchError as again:
            _fail(
                batch,
                [(kept[position - 1][0], reason) for position, reason in again.rows],
                again.total,
                report,
                max_errors,
            )
        report.unchanged += len(rows) - len(kept)
        report.rows += len(rows) - len(kept)
    report.rows += len(results)
    report.batches += 1
    report.last_line = lines[-1]
    created = sum(1 for r in results if r.created)
    report.created += created
    report.unchanged += len(results) - created


def _fail(
    batch: list[FileRow],
    problems: list[tuple[int, str]],
    total: int,
    report: ImportReport,
    max_errors: int,
) -> NoReturn:
    first, last = batch[0][0], batch[-1][0]
    plural = "" if total == 1 else "s"
    raise ImportFailed(
        f"{total} bad row{plural} in the batch of lines {first}-{last}: nothing of that batch was "
        f"written",
        rows=problems[:max_errors],
        total=total,
        report=report,
        first_line=first,
    )
