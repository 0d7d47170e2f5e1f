"""Plain-text rendering shared by the CLI and the demo."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime


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
