"""Two states of one workload timed in turns, round after round: the median rate of each
and their ratio, of the medians and round by round (a noisy machine moves both states of a
round alike, so the rounds' ratios show how far the medians' ratio can be trusted)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Turns:
    """The rates of a baseline state and another, each round's in the same order."""

    baseline: float  # median rate of the baseline state
    other: float  # median rate of the other state
    ratio: float  # other / baseline, of the medians
    by_round: list[float]  # other / baseline, each round's


def turns(baseline: Sequence[float], other: Sequence[float]) -> Turns:
    """The medians of ``baseline`` and ``other`` (one rate a round each) and their ratios."""
    return Turns(
        baseline=statistics.median(baseline),
        other=statistics.median(other),
        ratio=statistics.median(other) / statistics.median(baseline),
        by_round=[b / a for a, b in zip(baseline, other, strict=True)],
    )
