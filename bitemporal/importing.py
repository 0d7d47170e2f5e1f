"""The file importer behind ``bitemporal import``: CSV and JSON Lines files recorded
through :meth:`Facts.record_many <bitemporal.Facts.record_many>`, batch by batch.

Each batch is its own transaction; on the first bad batch the import stops with
:class:`~bitemporal.errors.ImportFailed` naming the bad rows by file line, and the
batches before it stay imported. Running the same file again writes nothing new:

* a row with an explicit ``known_at`` recorded before is skipped
  (:meth:`Facts.recorded_already <bitemporal.Facts.recorded_already>`);
* a lone row of its key and source without ``known_at`` whose value is already known is
  a no-op of ``record_many`` itself;
* several rows of one key and source without ``known_at`` would each be a change (each
  overwrites the one before), so the file is read twice: first to work out what each such
  group leaves known at its end (the last row wins over each instant of valid time), and
  the group is skipped when the store still knows exactly that (not for a pipe, which can
  be read only once).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import queue
import random
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NoReturn

from .errors import (
    BatchError,
    BitemporalError,
    DeadlockError,
    ImportFailed,
    InvalidInputError,
    InvalidValueError,
    PermissionDeniedError,
    SerializationError,
    TransientError,
)
from .formatting import counted, shown
from .jsonvalues import parse as parse_json
from .periods import parse_instant, to_optional_instant
from .record_many import DEFAULT_MAX_ERRORS, FIELDS

#: Called after each batch: rows done, bytes read, the file's size (None: unknown), final.
OnProgress = Callable[[int, int, int | None, bool], None]


#: Rows per batch (each batch is one transaction) unless told otherwise.
DEFAULT_BATCH_SIZE = 10_000
#: Lanes of batches recorded at once, at most: each holds a connection and a thread.
MAX_JOBS = 64
#: Times a batch is recorded when each attempt is chosen as a deadlock's victim.
BATCH_ATTEMPTS = 5


def check_jobs(jobs: int) -> int:
    """``jobs``, if a number of lanes an import can run (InvalidInputError otherwise)."""
    if not 1 <= jobs <= MAX_JOBS:
        raise InvalidInputError(f"jobs must be between 1 and {MAX_JOBS}, not {jobs}")
    return jobs


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
    if reader.fieldnames is None:
        raise InvalidInputError(
            "the file is empty: a CSV file starts with a header naming its columns",
            hint=f"e.g. {','.join(FIELDS)}",
        )
    header = list(reader.fieldnames)
    unknown = [name for name in header if name not in FIELDS]
    missing = [name for name in ("entity", "attribute", "source", "value") if name not in header]
    if unknown or missing:
        problems = []
        if unknown:
            problems.append(f"unknown column(s) {', '.join(unknown)}")
        if missing:
            problems.append(f"missing column(s) {', '.join(missing)}")
        # A spreadsheet's export with another separator reads as one column.
        other = [c for c in ";\t|" if len(header) == 1 and c in header[0]]
        raise InvalidInputError(
            f"CSV header {','.join(header)!r}: {'; '.join(problems)}",
            hint=f"expected {','.join(FIELDS)}"
            + (f", separated by commas, not {other[0]!r}" if other else ""),
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


#: The path that means standard input, as for most Unix commands (its format must be given).
STDIN = "-"


def source_name(path: str) -> str:
    """How messages name the file at ``path``."""
    return "standard input" if path == STDIN else path


def _opened(path: str) -> AbstractContextManager[IO[bytes]]:
    # Standard input is read, never closed: it is the process's, not the import's.
    return nullcontext(sys.stdin.buffer) if path == STDIN else open(path, "rb")


def file_format(path: str, given: str | None) -> str:
    """``csv`` or ``jsonl``: as given, else from the file name's extension."""
    if given:
        return given
    if path == STDIN:
        raise InvalidInputError(
            "cannot tell the format of standard input", hint="pass --format csv|jsonl"
        )
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
        # Not last_line: a CSV file's header is line 1, read through before any row commits.
        if not self.rows:
            return f"nothing of {path} was committed"
        return f"lines 1-{self.last_line} of {path} were committed ({counted(self.rows, 'row')})"


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
    jobs: int = 1,
) -> ImportReport:
    """Import a CSV or JSON Lines file (``path`` :data:`STDIN`: standard input, whose
    ``fmt`` must be given) through ``facts.record_many``, ``batch_size`` rows
    per batch, each batch its own transaction (on an autocommit store). On the first bad
    batch, raises :class:`ImportFailed` with its bad rows by file line; the batches before
    it stay imported. ``progress``, if given, is called after each batch with the rows
    done, the bytes read, the file's size (None if unknown) and whether it is the end.

    ``jobs`` > 1 records that many lanes of batches at once, each key's rows in one lane
    in file order, each batch on a connection of its own: ``facts`` must be on a pool
    (:attr:`Facts.pooled <bitemporal.Facts.pooled>`). Rows with ``known_at`` give the
    same versions as with one job; rows without it take their batch's transaction time,
    as with one job, and what the store knows in the end is the same. The first bad batch
    stops every lane after the batch it is recording; the report's ``last_line`` is then
    the last line up to which every row is committed (later rows of other keys may be
    committed too: running the file again skips them)."""
    if batch_size < 1:
        raise InvalidInputError(f"batch size must be at least 1, not {batch_size}")
    if max_errors < 1:
        raise InvalidInputError(f"max errors must be at least 1, not {max_errors}")
    check_jobs(jobs)
    if jobs > 1 and not facts.pooled:
        raise InvalidInputError(
            f"{jobs} jobs need a connection each: the store is on one connection",
            hint="build the store on a pool: Store(psycopg_pool.ConnectionPool(url, "
            f"max_size={jobs}))",
        )
    kind = file_format(path, fmt)
    report = ImportReport()
    with _opened(path) as raw:
        try:
            settled: set[Group] = set()
            if raw.seekable():  # a pipe is read once: its groups are recorded again
                settled = _settled_groups(facts, _records(_CountingLines(raw), kind), kind)
                raw.seek(0)
            _import_stream(
                facts, raw, kind, report, batch_size, max_errors, progress, settled, jobs
            )
        except (BitemporalError, OSError) as exc:
            # Bad rows, a line that is not UTF-8, a lost connection: say what is kept.
            retry = (
                "re-run the same command to continue"
                if isinstance(exc, TransientError | OSError)
                else "fix the file and re-run the same command to continue"
            )
            failed = exc if isinstance(exc, ImportFailed) else None
            raise ImportFailed(
                f"{exc}; {report.committed(source_name(path))}; {retry}",
                rows=failed.rows if failed else [],
                total=failed.total if failed else 0,
                report=report,
                first_line=failed.first_line if failed else report.last_line + 1,
            ) from exc
    return report


Group = tuple[str, str, str]  # entity, attribute, source
Segment = tuple[datetime, datetime, Any]  # valid from, valid to (open: _LOW, _HIGH), value
_LOW, _HIGH = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
# After every knowledge time: the versions still known (knowledge not ended) contain it.
_STILL_KNOWN = datetime(9999, 1, 1, tzinfo=UTC)


def _overwrite(
    segments: list[Segment], start: datetime, end: datetime, value: Any
) -> list[Segment]:
    """``segments`` (disjoint) after ``value`` is written over [start, end): what a
    record of one source does to that source's current values."""
    kept: list[Segment] = []
    for s, e, v in segments:
        if s < start:
            kept.append((s, min(e, start), v))
        if e > end:
            kept.append((max(s, end), e, v))
    return [*kept, (start, end, value)]


def _records(lines: Iterable[str], kind: str) -> Iterator[Mapping[str, Any]]:
    """The file's records as field mappings, not checked: a cheap first reading. It stops
    at a record that is not a mapping of fields (the import proper stops there too)."""
    if kind == "csv":
        yield from csv.DictReader(lines, strict=True)
        return
    for text in lines:
        if text.strip():
            fields = parse_json(text)
            if not isinstance(fields, dict):
                return
            yield fields


def _settled_groups(facts: Any, records: Iterable[Mapping[str, Any]], kind: str) -> set[Group]:
    """The (entity, attribute, source) groups of several rows, none with ``known_at``,
    whose end result the store still knows: recording them again would only write the
    same values anew. Rows after the file's first problem do not count (the import stops
    there), and neither does a group with a bad row. Only these groups' rows are checked
    and parsed here; the others are read, not parsed."""
    rows: dict[Group, list[Mapping[str, Any]]] = {}
    unsettled: set[Group] = set()
    try:
        for fields in records:
            entity, attribute, source = (
                fields.get(name) for name in ("entity", "attribute", "source")
            )
            if not (
                isinstance(entity, str) and isinstance(attribute, str) and isinstance(source, str)
            ):
                continue  # bad: the import proper stops there
            group = (entity, attribute, source)
            if fields.get("known_at") not in (None, ""):
                unsettled.add(group)
            elif group not in unsettled:
                rows.setdefault(group, []).append(fields)
    except (BitemporalError, ValueError, RecursionError, csv.Error):
        pass  # not UTF-8, not CSV or JSON: the import proper stops there
    groups: dict[Group, list[Segment]] = {}
    for group, found in rows.items():
        if len(found) < 2 or group in unsettled:
            continue  # a lone row: a no-op of record_many if already known
        segments: list[Segment] = []
        try:
            for fields in found:
                row = _file_row(fields, value_is_json_text=kind == "csv")
                start = to_optional_instant(row["valid_from"], name="valid_from") or _LOW
                end = to_optional_instant(row["valid_to"], name="valid_to") or _HIGH
                if end <= start:  # an empty or inverted period: the import proper refuses it
                    raise InvalidInputError("empty or inverted period")
                segments = _overwrite(segments, start, end, row["value"])
        except BitemporalError:
            continue
        groups[group] = segments
    try:
        # The last row's segment first (one per group): on a first import, that rules
        # every group out in one small query.
        settled = _still_known(facts, {g: parts[-1:] for g, parts in groups.items()})
        return _still_known(facts, {g: groups[g][:-1] for g in settled})
    except (BatchError, PermissionDeniedError):
        return set()  # a value the store refuses, or no right to read: import as is


def _still_known(facts: Any, groups: dict[Group, list[Segment]]) -> set[Group]:
    """The groups whose every segment the store still knows (its source's value over it)."""
    segments = [
        {
            "entity": e,
            "attribute": a,
            "source": s,
            "value": value,
            "known_at": _STILL_KNOWN,
            "valid_from": None if start == _LOW else start,
            "valid_to": None if end == _HIGH else end,
        }
        for (e, a, s), parts in groups.items()
        for start, end, value in parts
        if start < end
    ]
    known = facts.recorded_already(segments) if segments else []
    settled = set(groups)
    for segment, done in zip(segments, known, strict=True):
        if not done:
            settled.discard((segment["entity"], segment["attribute"], segment["source"]))
    return settled


def _lane(row: dict[str, Any] | BitemporalError, jobs: int) -> int:
    """The lane of a row: every row of a key in the same one, so that a key's rows are
    recorded in file order (with one job, a bad row too: it fails its batch)."""
    if jobs == 1 or isinstance(row, BitemporalError):
        return 0
    return zlib.crc32(f"{row['entity']}\x00{row['attribute']}".encode()) % jobs


@dataclass
class _Batch:
    """Rows of one lane for one call of record_many (one transaction)."""

    rows: list[FileRow] = field(default_factory=list)
    #: Rows of settled groups read since the lane's previous batch: done with this one.
    skipped: int = 0
    #: The file line it starts at (0: nothing yet), skipped rows included.
    first_line: int = 0

    def add(self, line: int, row: FileRow | None) -> None:
        self.first_line = self.first_line or line
        if row is None:
            self.skipped += 1
        else:
            self.rows.append(row)


class _Lanes:
    """Batches recorded lane by lane, each lane's in file order. With one job the caller's
    thread records each batch as it fills; with more, a thread per lane does, each call
    on a connection of its own (the facts' pool): batches of disjoint keys, which on one node
    never wait for each other. The first failure stops every lane after the batch it is
    recording."""

    def __init__(
        self,
        facts: Any,
        jobs: int,
        batch_size: int,
        max_errors: int,
        report: ImportReport,
        on_batch: Callable[[], None],
    ) -> None:
        self.facts, self.jobs, self.batch_size, self.max_errors = (
            facts,
            jobs,
            batch_size,
            max_errors,
        )
        self.report, self.on_batch = report, on_batch
        self.filling = [_Batch() for _ in range(jobs)]
        # Per lane, the first lines of the batches handed over and not committed yet.
        self.uncommitted: list[deque[int]] = [deque() for _ in range(jobs)]
        self.failure: tuple[int, Exception] | None = None
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.queues: list[queue.Queue[_Batch | None]] = []
        self.threads: list[threading.Thread] = []
        if jobs > 1:
            self.queues = [queue.Queue(maxsize=2) for _ in range(jobs)]
            self.threads = [
                threading.Thread(target=self._serve, args=(lane,), daemon=True)
                for lane in range(jobs)
            ]
            for thread in self.threads:
                thread.start()

    def add(self, line: int, row: FileRow | None, lane: int) -> bool:
        """Queue a row (None: a row of a settled group, done with its lane's next batch);
        False once a lane has failed: stop reading."""
        batch = self.filling[lane]
        batch.add(line, row)
        if len(batch.rows) >= self.batch_size:
            self.filling[lane] = _Batch()
            self._hand_over(lane, batch)
        return not self.stopped.is_set()

    def finish(self, read_through: int) -> None:
        """Record what is left, wait for every lane, and set the report's ``last_line``:
        every line up to it is committed (``read_through``: the last line read). Raises
        the first failure (by file line)."""
        try:
            for lane, batch in enumerate(self.filling):
                if batch.rows and not self.stopped.is_set():
                    self.filling[lane] = _Batch()
                    self._hand_over(lane, batch)
        finally:
            for q in self.queues:
                q.put(None)
            for thread in self.threads:
                thread.join()
            pending = [line for lines in self.uncommitted for line in lines]
            if self.stopped.is_set():  # rows read and never handed over are not committed
                pending += [batch.first_line for batch in self.filling if batch.first_line]
            self.report.last_line = min(pending) - 1 if pending else read_through
        if self.failure is not None:
            raise self.failure[1]
        for batch in self.filling:  # settled rows after each lane's last batch
            self.report.rows += batch.skipped
            self.report.unchanged += batch.skipped

    def stop(self) -> None:
        """Stop every lane after its current batch (the caller gives up)."""
        self.stopped.set()

    def _hand_over(self, lane: int, batch: _Batch) -> None:
        self.uncommitted[lane].append(batch.first_line)
        if self.jobs == 1:
            self._record(lane, batch)
            if self.failure is not None:
                raise self.failure[1]
        else:
            self.queues[lane].put(batch)

    def _serve(self, lane: int) -> None:
        while (batch := self.queues[lane].get()) is not None:
            if not self.stopped.is_set():  # else left uncommitted, the queue drained
                self._record(lane, batch)

    def _record(self, lane: int, batch: _Batch) -> None:
        try:
            done = _import_batch_again(self.facts, batch.rows, self.max_errors)
        except Exception as exc:  # noqa: BLE001 - handed to the caller's thread by finish()
            with self.lock:
                if self.failure is None or batch.first_line < self.failure[0]:
                    self.failure = (batch.first_line, exc)
            self.stopped.set()
            return
        with self.lock:
            self.uncommitted[lane].popleft()
            report = self.report
            report.rows += len(batch.rows) + batch.skipped
            report.unchanged += done.unchanged + batch.skipped
            report.created += done.created
            report.batches += 1
            self.on_batch()


def _import_stream(
    facts: Any,
    raw: IO[bytes],
    kind: str,
    report: ImportReport,
    batch_size: int,
    max_errors: int,
    progress: OnProgress | None,
    settled: set[Group],
    jobs: int,
) -> None:
    total_bytes = os.fstat(raw.fileno()).st_size if raw.seekable() else None
    lines = _CountingLines(raw)
    source = read_csv(lines) if kind == "csv" else read_jsonl(lines)

    def done(final: bool = False) -> None:
        if progress is not None:
            progress(report.rows, lines.done, total_bytes, final)

    start = time.monotonic()
    lanes = _Lanes(facts, jobs, batch_size, max_errors, report, done)
    line, bad = 0, []
    try:
        for line, row in source:
            if isinstance(row, BitemporalError) and jobs > 1:
                # Its key is unknown, so other lanes could commit rows of that key after it:
                # it ends the import there, with the rows read after it as its batch.
                bad = [(line, row), *itertools.islice(source, batch_size - 1)]
                line -= 1
                break
            lane = _lane(row, jobs)
            if (
                settled
                and not isinstance(row, BitemporalError)
                and (row["entity"], row["attribute"], row["source"]) in settled
            ):
                going = lanes.add(line, None, lane)
            else:
                going = lanes.add(line, (line, row), lane)
            if not going:
                break
    except BaseException:
        lanes.stop()
        raise
    finally:
        lanes.finish(line)
    if bad:
        _import_batch(facts, bad, report, max_errors)  # raises ImportFailed
    report.seconds = time.monotonic() - start
    done(final=True)


def _import_batch_again(facts: Any, batch: list[FileRow], max_errors: int) -> ImportReport:
    """Record one batch, again when its transaction is chosen as a deadlock's victim or
    fails to serialize (up to :data:`BATCH_ATTEMPTS` times, after a random pause): it
    rolled back whole. Batches of disjoint keys can deadlock on Citus, where a batch's
    statements lock their shards on several workers, in no order that two batches share."""
    attempt = 1
    while True:
        done = ImportReport()
        try:
            _import_batch(facts, batch, done, max_errors)
            return done
        except (DeadlockError, SerializationError):
            if attempt == BATCH_ATTEMPTS:
                raise
        time.sleep(random.uniform(0, 0.2 * 2**attempt))
        attempt += 1


def _import_batch(facts: Any, batch: list[FileRow], report: ImportReport, max_errors: int) -> None:
    """Record one batch (raises ImportFailed naming its bad rows); counts what it created
    and left unchanged in ``report``."""
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
    raise ImportFailed(
        f"{counted(total, 'bad row')} in the batch of lines {first}-{last}: "
        "nothing of that batch was written",
        rows=problems[:max_errors],
        total=total,
        report=report,
        first_line=first,
    )
