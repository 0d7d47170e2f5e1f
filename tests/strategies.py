"""Hypothesis strategies and the grids they draw from, shared by the property tests.

Valid bounds come from a small grid of dates (so that periods meet, nest and share edges
often) and values from a small set (so that no-ops and agreeing sources happen).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from tests.reference_model import Period

US = timedelta(microseconds=1)

#: Valid-time edges: the first of January to May 2026.
GRID = tuple(datetime(2026, month, 1, tzinfo=UTC) for month in range(1, 6))
#: Knowledge times: 12-hour steps from 2025-12-01 (before the grid) to 2026-05-31.
KNOWN_BASE = datetime(2025, 12, 1, tzinfo=UTC)
KNOWN_STEP = timedelta(hours=12)
KNOWN_STEPS = 365
#: The present every answer is interpreted against: after all knowledge times.
NOW = datetime(2026, 6, 15, tzinfo=UTC)

SOURCES = ("policy", "forum", "vendor")
#: 80 and "80" are different jsonb values.
VALUES = (50, 80, 100, "80")

#: Valid instants to ask about: every edge, just before it, between edges,
#: before and after everything.
VALID_QUESTIONS = tuple(
    sorted(
        set(GRID)
        | {g - US for g in GRID}
        | {g + timedelta(days=14, hours=6) for g in GRID}
        | {datetime(2025, 6, 1, tzinfo=UTC), datetime(2026, 8, 1, tzinfo=UTC), NOW}
    )
)


@dataclass(frozen=True)
class Op:
    kind: str  # "record" or "retract"
    source: str
    value: Any
    valid: Period

    def __repr__(self) -> str:
        def show(t: datetime | None) -> str:
            return "" if t is None else t.date().isoformat()

        what = f"{self.value!r} " if self.kind == "record" else ""
        period = f"[{show(self.valid.start)}, {show(self.valid.end)})"
        return f"{self.kind}({what}{self.source} {period})"


@st.composite
def valid_periods(draw: st.DrawFn) -> Period:
    # Bound 0 is an open start, bound 6 an open end, 1..5 the grid.
    lo = draw(st.integers(0, len(GRID)))
    hi = draw(st.integers(lo + 1, len(GRID) + 1))
    return Period(None if lo == 0 else GRID[lo - 1], None if hi == len(GRID) + 1 else GRID[hi - 1])


def ops(sources: tuple[str, ...], kind: str | None = None) -> st.SearchStrategy[Op]:
    kinds = st.just(kind) if kind else st.sampled_from(("record", "record", "retract"))
    return st.builds(
        Op,
        kind=kinds,
        source=st.sampled_from(sources),
        value=st.sampled_from(VALUES),
        valid=valid_periods(),
    )


@st.composite
def scenarios(draw: st.DrawFn, max_ops: int = 10) -> list[Op]:
    """A sequence of writes to a fresh key, the first a record (the key must exist)."""
    # Several sources first, so conflicts are common; shrinking still picks the first source.
    sources = SOURCES[: draw(st.sampled_from((3, 2, 1)))]
    first = draw(ops(sources, "record"))
    n = draw(st.integers(0, max_ops - 1))  # uniform lengths: long sequences are common too
    return [first, *draw(st.lists(ops(sources), min_size=n, max_size=n))]


def knowledge_times(n: int) -> st.SearchStrategy[list[datetime]]:
    """n strictly increasing knowledge times in the past."""
    return st.lists(st.integers(0, KNOWN_STEPS), min_size=n, max_size=n, unique=True).map(
        lambda steps: [KNOWN_BASE + k * KNOWN_STEP for k in sorted(steps)]
    )
