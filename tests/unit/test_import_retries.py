"""bitemporal import records a batch again when its transaction is a deadlock's victim
(batches of disjoint keys can deadlock on Citus), and not forever."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from bitemporal import DeadlockError, InvalidValueError
from bitemporal.importing import BATCH_ATTEMPTS, FileRow, _import_batch_again

BATCH: list[FileRow] = [
    (n, {"entity": f"e{n}", "attribute": "a", "source": "s", "value": n}) for n in (1, 2, 3)
]


@dataclass
class Made:
    created: bool


class Deadlocking:
    """A repository whose record_many is a deadlock's victim ``times`` times, then records."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.calls = 0

    def record_many(self, rows: list[Any], max_errors: int) -> list[Made]:
        self.calls += 1
        if self.calls <= self.times:
            raise DeadlockError("deadlock detected", hint=DeadlockError.default_hint)
        return [Made(created=True) for _ in rows]


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the pauses between attempts
    return slept


def test_a_batch_chosen_as_a_deadlocks_victim_is_recorded_again(pauses: list[float]) -> None:
    facts = Deadlocking(times=2)
    done = _import_batch_again(facts, BATCH, max_errors=10)
    assert facts.calls == 3
    assert done.created == 3 and done.unchanged == 0
    assert len(pauses) == 2 and all(0 <= p <= 0.2 * 2**n for n, p in enumerate(pauses, 1))


def test_a_batch_that_deadlocks_every_time_fails_after_its_attempts(pauses: list[float]) -> None:
    facts = Deadlocking(times=BATCH_ATTEMPTS)
    with pytest.raises(DeadlockError):
        _import_batch_again(facts, BATCH, max_errors=10)
    assert facts.calls == BATCH_ATTEMPTS and len(pauses) == BATCH_ATTEMPTS - 1


def test_a_bad_batch_is_not_tried_again(pauses: list[float]) -> None:
    facts = Deadlocking(times=0)
    bad: list[FileRow] = [*BATCH, (4, InvalidValueError("value must not be null"))]
    with pytest.raises(Exception, match="1 bad row in the batch of lines 1-4"):
        _import_batch_again(facts, bad, max_errors=10)
    assert facts.calls == 0 and pauses == []
