"""Plain-text rendering shared by the CLI and the demo."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime


def stamp(t: datetime | None) -> str:
    """A UTC minute-precision stamp; ``None`` (an open end) renders as empty."""
    if t is None:
        return ""
    text = t.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
    return text if t.second == 0 and t.microsecond == 0 else t.astimezone(UTC).isoformat(" ")


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A text table with aligned columns, one line per row."""
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    lines = [tuple(header), tuple("-" * w for w in widths), *rows]
    return "".join(
        "  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )
