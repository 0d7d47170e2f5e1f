"""What the command line shows: the import's progress bar and problem listing, and
versions as a table. The commands themselves are in :mod:`bitemporal.cli`."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import IO

from .errors import ImportFailed
from .formatting import counted, format_table, stamp
from .jsonvalues import dumps
from .model import Version


class Progress:
    """A plain-text progress bar on a stream (stderr): redrawn in place on a terminal,
    one line per batch otherwise."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.tty = stream.isatty()
        self.shown = -1

    def update(self, rows: int, done_bytes: int, total_bytes: int | None, final: bool) -> None:
        """Redraw (the signature of :data:`bitemporal.importing.OnProgress`)."""
        if rows == self.shown and not (final and self.tty):
            return
        self.shown = rows
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = f"{rows / elapsed:,.0f} rows/s"
        if total_bytes:
            fraction = min(done_bytes / total_bytes, 1.0)
            filled = int(fraction * 30)
            bar = f"[{'#' * filled}{'.' * (30 - filled)}] {fraction:4.0%} "
        else:
            bar = ""
        text = f"{bar}{counted(rows, 'row')}, {elapsed:.1f} s, {rate}"
        if self.tty:
            self.stream.write(f"\r{text}" + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


def print_problems(exc: ImportFailed, stream: IO[str] | None = None) -> None:
    """The bad rows of a failed import, one per line (on stderr unless told otherwise)."""
    stream = sys.stderr if stream is None else stream
    for line, reason in exc.rows:
        stream.write(f"  line {line}: {reason}\n")
    if exc.total > len(exc.rows):
        stream.write(f"  ... and {exc.total - len(exc.rows)} more\n")


def versions_table(versions: Sequence[Version]) -> str:
    """Versions as a text table, one line each, times in UTC (the headers say so, since
    nothing else on the line does), open ends as ``(open)``, an erased value as
    ``(erased)``."""
    header = (
        "version",
        "source",
        "value",
        "valid from (UTC)",
        "valid to (UTC)",
        "known from (UTC)",
        "known to (UTC)",
    )
    rows = [
        (
            v.version_id,
            v.source,
            "(erased)" if v.erased else dumps(v.value),
            stamp(v.valid_period.start) or "(open)",
            stamp(v.valid_period.end) or "(open)",
            stamp(v.known_period.start),
            stamp(v.known_period.end) or "(open)",
        )
        for v in versions
    ]
    return format_table(header, rows)
