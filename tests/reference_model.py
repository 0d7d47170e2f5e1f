"""A pure-Python reference model of one key of the fact store, for the property tests.

It states the meaning of the store's operations as plainly as possible, without
looking at how the SQL functions compute it:

* a *version* is a source's value for a valid period, held for a known period;
  both periods are half-open ``[start, end)`` and ``None`` means open;
* ``record`` is a sequenced update at knowledge time ``t``: every version of the
  same source that is still held (open known period) and overlaps the written
  valid period stops being held at ``t``; the parts of its valid period outside
  the written one are held again from ``t`` as new versions; then the new value
  is held from ``t`` for the written period. Recording a value the source is
  already held to say for the whole period changes nothing;
* ``retract`` is the same without the new value;
* a version that would be held for the empty period ``[t, t)`` (written and
  superseded at the same knowledge time, i.e. inside one transaction) was never
  visible to anyone and simply disappears;
* ``as_of(valid_at, known_at)`` is every version whose valid period contains
  ``valid_at`` and whose known period contains ``known_at``;
* ``resolve`` names the answer: its status from the number of distinct values,
  and its interpretation relative to a present ``now``;
* ``erase`` removes the value of every version of the key (periods and sources
  stay): an erased version is still eligible, but has no value; the status comes
  from the values left, and is ``erased`` when every eligible version is erased.
  A remainder of an erased version is erased too.

Knowledge times must never decrease; several writes at the same knowledge time
behave as the writes of one transaction.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Stand-ins for the open ends, used only inside comparisons.
_BEGINNING = datetime.min.replace(tzinfo=UTC)
_END = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Period:
    """A half-open period ``[start, end)``; ``None`` means open on that side."""

    start: datetime | None = None
    end: datetime | None = None

    def __post_init__(self) -> None:
        if self._lo >= self._hi:
            raise ValueError(f"empty or inverted period [{self.start}, {self.end})")

    @property
    def _lo(self) -> datetime:
        return _BEGINNING if self.start is None else self.start

    @property
    def _hi(self) -> datetime:
        return _END if self.end is None else self.end

    @staticmethod
    def _between(lo: datetime, hi: datetime) -> Period | None:
        """The period [lo, hi) with the stand-ins turned back into open ends, or None if empty."""
        if lo >= hi:
            return None
        return Period(None if lo == _BEGINNING else lo, None if hi == _END else hi)

    def contains(self, instant: datetime) -> bool:
        return self._lo <= instant < self._hi

    def overlaps(self, other: Period) -> bool:
        return max(self._lo, other._lo) < min(self._hi, other._hi)

    def intersection(self, other: Period) -> Period | None:
        return Period._between(max(self._lo, other._lo), min(self._hi, other._hi))

    def minus(self, other: Period) -> list[Period]:
        """The parts of this period outside ``other``, earliest first (zero, one or two)."""
        before = Period._between(self._lo, min(self._hi, other._lo))
        after = Period._between(max(self._lo, other._hi), self._hi)
        return [p for p in (before, after) if p is not None]

    def ended_at(self, instant: datetime) -> Period | None:
        """This period cut short at ``instant``; None if nothing is left."""
        return Period._between(self._lo, min(self._hi, instant))

    @property
    def is_open(self) -> bool:
        return self.end is None

    def as_tuple(self) -> tuple[datetime | None, datetime | None]:
        return (self.start, self.end)


def covers(pieces: Iterable[Period], whole: Period) -> bool:
    """Whether the union of ``pieces`` contains every instant of ``whole``."""
    uncovered = [whole]
    for piece in pieces:
        uncovered = [rest for gap in uncovered for rest in gap.minus(piece)]
    return not uncovered


@dataclass(frozen=True)
class Version:
    source: str
    #: None once erased.
    value: Any
    valid: Period
    known: Period

    @property
    def erased(self) -> bool:
        return self.value is None

    def fingerprint(self) -> tuple[Hashable, ...]:
        """What identifies a version's content: (source, value, valid, known)."""
        return (self.source, _hashable(self.value), self.valid.as_tuple(), self.known.as_tuple())


def _hashable(value: Any) -> Hashable:
    # Tell 1 from True and 80 from "80", as jsonb does.
    return (type(value).__name__, value)


def jsonb_order(value: Any) -> tuple[int, Any]:
    """Sort key of jsonb for the scalars the tests use: strings < numbers < booleans."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (1, value)
    if isinstance(value, str):
        return (0, value)
    raise TypeError(f"the model orders only strings, numbers and booleans, not {value!r}")


@dataclass(frozen=True)
class ModelAnswer:
    status: str  # missing | supported | conflict | erased
    value: Any
    values: tuple[Any, ...]
    versions: tuple[Version, ...]
    #: current | known_then | historical | retrospective | announced_future | missing | erased
    interpretation: str


class FactModel:
    """Every version ever held for one key, with the store's write and read rules."""

    def __init__(self) -> None:
        self._versions: list[Version] = []
        self._last_known_at: datetime | None = None

    # -- writes ---------------------------------------------------------------

    def record(self, source: str, value: Any, valid: Period, known_at: datetime) -> bool:
        """The source says ``value`` over ``valid``, from ``known_at``. False: nothing changed."""
        self._check_knowledge_time(known_at)
        if self._already_says(source, value, valid):
            return False
        self._supersede(source, valid, known_at)
        self._versions.append(Version(source, value, valid, Period(known_at, None)))
        self._last_known_at = known_at
        return True

    def retract(self, source: str, valid: Period, known_at: datetime) -> int:
        """From ``known_at`` the source says nothing over ``valid``. Returns how many ended."""
        self._check_knowledge_time(known_at)
        ended = self._supersede(source, valid, known_at)
        if ended:
            self._last_known_at = known_at
        return ended

    def erase(self) -> int:
        """Erase the value of every version not erased yet. Returns how many; knowledge
        times do not change (an erasure is not a knowledge event)."""
        erased = sum(1 for v in self._versions if not v.erased)
        self._versions = [Version(v.source, None, v.valid, v.known) for v in self._versions]
        return erased

    def _check_knowledge_time(self, known_at: datetime) -> None:
        # Knowledge only moves forward; a write that changed nothing taught nothing.
        if self._last_known_at is not None and known_at < self._last_known_at:
            raise ValueError(f"knowledge time {known_at} is earlier than {self._last_known_at}")

    def _is_held(self, v: Version, source: str, valid: Period) -> bool:
        """Whether ``v`` is a version of ``source``, still held, overlapping ``valid``."""
        return v.source == source and v.known.is_open and v.valid.overlaps(valid)

    def _already_says(self, source: str, value: Any, valid: Period) -> bool:
        held = [v for v in self._versions if self._is_held(v, source, valid)]
        return (
            bool(held)
            and all(_hashable(v.value) == _hashable(value) for v in held)
            and covers((v.valid for v in held), valid)
        )

    def _supersede(self, source: str, valid: Period, known_at: datetime) -> int:
        kept: list[Version] = []
        remainders: list[Version] = []
        ended = 0
        for v in self._versions:
            if not self._is_held(v, source, valid):
                kept.append(v)
                continue
            ended += 1
            still_known = v.known.ended_at(known_at)
            # None: held from known_at and superseded at known_at, never visible: gone.
            if still_known is not None:
                kept.append(Version(v.source, v.value, v.valid, still_known))
            for rest in v.valid.minus(valid):
                remainders.append(Version(v.source, v.value, rest, Period(known_at, None)))
        self._versions = kept + remainders
        return ended

    # -- reads ----------------------------------------------------------------

    def history(self) -> list[Version]:
        return list(self._versions)

    def as_of(self, valid_at: datetime, known_at: datetime) -> list[Version]:
        return [
            v for v in self._versions if v.valid.contains(valid_at) and v.known.contains(known_at)
        ]

    def distinct_values(self, valid_at: datetime, known_at: datetime) -> tuple[Any, ...]:
        values = {
            _hashable(v.value): v.value for v in self.as_of(valid_at, known_at) if not v.erased
        }
        return tuple(sorted(values.values(), key=jsonb_order))

    def resolve(self, valid_at: datetime, known_at: datetime, now: datetime) -> ModelAnswer:
        if known_at > now:
            raise ValueError("nobody can say now what the store will know later")
        versions = tuple(self.as_of(valid_at, known_at))
        values = self.distinct_values(valid_at, known_at)
        status = {0: "missing", 1: "supported"}.get(len(values), "conflict")
        if status == "missing" and versions:
            status = "erased"  # every eligible version was erased
        if status in ("missing", "erased"):
            interpretation = status
        elif valid_at > known_at:
            interpretation = "announced_future"  # announced, not in force when asked
        elif valid_at == known_at:
            interpretation = "current" if known_at == now else "known_then"
        elif values == self.distinct_values(valid_at, valid_at):
            interpretation = "historical"  # what the store said at the time still holds
        else:
            interpretation = "retrospective"  # later knowledge changed the answer
        return ModelAnswer(
            status=status,
            value=values[0] if status == "supported" else None,
            values=values,
            versions=versions,
            interpretation=interpretation,
        )

    # -- invariants -------------------------------------------------------------

    def overlapping_pairs(self) -> list[tuple[Version, Version]]:
        """Pairs of versions of one source overlapping in both periods (should be none)."""
        vs = self._versions
        return [
            (a, b)
            for i, a in enumerate(vs)
            for b in vs[i + 1 :]
            if a.source == b.source and a.valid.overlaps(b.valid) and a.known.overlaps(b.known)
        ]
