"""The bitemporal diagram of the worked example: its rectangles are the history rows."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest

from bitemporal import Key, Store, cli
from bitemporal.demo import WRITES
from bitemporal.plot import draw, rectangles


@pytest.fixture
def example(store: Store, key: Key) -> Key:
    for w in WRITES:
        store.facts.record(
            key,
            w.value,
            source=w.source,
            valid_from=w.valid_from,
            valid_to=w.valid_to,
            known_at=w.known_at,
        )
    return key


def test_one_rectangle_per_version_with_its_periods(
    store: Store, example: Key, tmp_path: Path
) -> None:
    history = store.facts.history(example)
    shapes = draw(history, tmp_path / "example.png", title=str(example), now=store.now())
    assert [s.version_id for s in shapes] == [v.version_id for v in history]
    for shape, version in zip(shapes, history, strict=True):
        assert (shape.valid_start, shape.valid_end) == (
            version.valid_period.start,
            version.valid_period.end,
        )
        assert (shape.known_start, shape.known_end) == (
            version.known_period.start,
            version.known_period.end,
        )
        assert shape.label == f"{version.value} ({version.source})"
    # Open ends stay open: the current remainders and the announcement.
    assert sum(s.known_end is None for s in shapes) == 4
    assert sum(s.valid_end is None for s in shapes) == 3
    # The forum's 90 MB overlaps the policy's 80 MB for September, both known from 30 September.
    conflicting = sorted(s.label for s in shapes if s.conflict)
    assert conflicting == ["80 (policy)", "90 (forum)"]
    assert (tmp_path / "example.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_axes_are_in_utc_whatever_matplotlib_s_time_zone(
    store: Store, example: Key, tmp_path: Path
) -> None:
    """The drawing's dates are UTC, as its labels say: the same picture when matplotlib's
    own ``timezone`` setting (a user's matplotlibrc) names another zone."""
    history, now = store.facts.history(example), store.now()
    draw(history, tmp_path / "default.png", title="t", now=now)
    with matplotlib.rc_context({"timezone": "America/New_York"}):
        draw(history, tmp_path / "new_york.png", title="t", now=now)
    assert (tmp_path / "new_york.png").read_bytes() == (tmp_path / "default.png").read_bytes()


def test_rectangles_need_no_matplotlib(store: Store, example: Key) -> None:
    assert len(rectangles(store.facts.history(example))) == 6


def test_cli_plot(
    database_url: str, example: Key, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli.png"
    assert (
        cli.main(["--url", database_url, "plot", example.entity, example.attribute, "-o", str(out)])
        == 0
    )
    assert "drew 6 versions" in capsys.readouterr().out
    assert out.stat().st_size > 10_000
