"""The classic bitemporal diagram of one key: valid time across, knowledge time up.

Each version is a rectangle spanning its valid period horizontally and its
known period vertically, labelled with its value and source. Open ends run to
the edge of the drawing with a dashed side, so "not known to end" reads as
open; a rectangle that overlaps another source's different value (a conflict)
is hatched. :func:`rectangles` computes what is drawn, so that it can be
checked without looking at pixels; :func:`draw` needs matplotlib
(``pip install 'bitemporal[plot]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .errors import ConfigurationError, InvalidInputError
from .jsonvalues import dumps
from .model import Version


@dataclass(frozen=True, slots=True)
class Rectangle:
    """One version as drawn; ``None`` ends are open."""

    version_id: int
    label: str
    valid_start: datetime | None
    valid_end: datetime | None
    known_start: datetime
    known_end: datetime | None
    conflict: bool


def _overlap(
    a_start: datetime | None,
    a_end: datetime | None,
    b_start: datetime | None,
    b_end: datetime | None,
) -> bool:
    return (a_end is None or b_start is None or b_start < a_end) and (
        b_end is None or a_start is None or a_start < b_end
    )


def rectangles(versions: Sequence[Version]) -> list[Rectangle]:
    """What :func:`draw` draws for ``versions``, one rectangle each."""
    drawn = []
    for v in versions:
        conflict = any(
            w.source != v.source
            and w.value != v.value
            and _overlap(
                v.valid_period.start, v.valid_period.end, w.valid_period.start, w.valid_period.end
            )
            and _overlap(
                v.known_period.start, v.known_period.end, w.known_period.start, w.known_period.end
            )
            for w in versions
        )
        assert v.known_period.start is not None  # knowledge always has a start
        drawn.append(
            Rectangle(
                version_id=v.version_id,
                label=f"{dumps(v.value)} ({v.source})",
                valid_start=v.valid_period.start,
                valid_end=v.valid_period.end,
                known_start=v.known_period.start,
                known_end=v.known_period.end,
                conflict=conflict,
            )
        )
    return drawn


def _limits(
    starts: list[datetime | None], ends: list[datetime | None], around: datetime
) -> tuple[datetime, datetime]:
    # ``around`` centres an axis whose periods are all open at both ends.
    finite = [t for t in (*starts, *ends) if t is not None] or [around]
    lo, hi = min(finite), max(finite)
    margin = max((hi - lo) * 0.08, timedelta(days=1))
    # Open ends get room of their own, so that they read as running on.
    before = margin * 3 if None in starts else margin
    after = margin * 3 if None in ends else margin
    return lo - before, hi + after


def draw(
    versions: Sequence[Version], path: str | Path, *, title: str, now: datetime
) -> list[Rectangle]:
    """Draw the diagram of ``versions`` to a PNG file at ``path``; returns the rectangles."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle as Patch
    except ImportError as exc:
        raise ConfigurationError(
            "drawing needs matplotlib", hint="pip install 'bitemporal[plot]'"
        ) from exc

    def number(t: datetime) -> float:
        return float(mdates.date2num(t))  # type: ignore[no-untyped-call]

    if not versions:
        raise InvalidInputError("there is nothing to draw: no versions were given")
    shapes = rectangles(versions)
    x_lo, x_hi = _limits([r.valid_start for r in shapes], [r.valid_end for r in shapes], now)
    y_lo, y_hi = _limits(
        [r.known_start for r in shapes], [r.known_end for r in shapes] + [now], now
    )
    figure, axes = plt.subplots(figsize=(11, 6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    sources = sorted({v.source for v in versions})
    for shape, version in zip(shapes, versions, strict=True):
        x0, x1 = (number(t) for t in (shape.valid_start or x_lo, shape.valid_end or x_hi))
        y0, y1 = (number(t) for t in (shape.known_start, shape.known_end or y_hi))
        color = colors[sources.index(version.source) % len(colors)]
        axes.add_patch(
            Patch(
                (x0, y0),
                x1 - x0,
                y1 - y0,
                facecolor=color,
                alpha=0.35,
                edgecolor=color,
                hatch="///" if shape.conflict else None,
                linewidth=1.2,
            )
        )
        # An open end is a dashed side at the edge of the drawing.
        if shape.valid_end is None:
            axes.plot([x1, x1], [y0, y1], color="black", linewidth=1.5, linestyle="--")
        if shape.valid_start is None:
            axes.plot([x0, x0], [y0, y1], color="black", linewidth=1.5, linestyle="--")
        if shape.known_end is None:
            axes.plot([x0, x1], [y1, y1], color="black", linewidth=1.5, linestyle="--")
        # Labels of overlapping sources are set apart vertically.
        shift = (sources.index(version.source) - (len(sources) - 1) / 2) * (y1 - y0) * 0.3
        axes.text(
            (x0 + x1) / 2, (y0 + y1) / 2 + shift, shape.label, ha="center", va="center", fontsize=8
        )
    axes.axhline(number(now), color="grey", linewidth=0.8, linestyle=":")
    axes.set_xlim(number(x_lo), number(x_hi))
    axes.set_ylim(number(y_lo), number(y_hi))
    # In UTC, as the command's other output, whatever matplotlib's own time zone setting.
    axes.xaxis_date(UTC)
    axes.yaxis_date(UTC)
    axes.set_xlabel("valid time, UTC (when it applies)")
    axes.set_ylabel("knowledge time, UTC (when the store held it)")
    axes.set_title(title)
    figure.autofmt_xdate()
    figure.tight_layout()
    figure.savefig(path, dpi=100, format="png")  # exactly at path: no extension appended
    plt.close(figure)
    return shapes
