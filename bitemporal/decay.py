"""Working memory that keeps what keeps being used: decay with reinforcement, or a window.

A sliding window forgets a rule stated at turn 1 and used five times exactly
like a throw-away line from turn 40. The decay policy instead gives each item a
retention ``exp(-elapsed / S)`` that every recall reinforces (``S`` grows), so
an item used a few times early survives a long silence while noise fades. The
honest limit: an item stated once and never used again gets no protection at
all (with the defaults it goes after 13 turns, two before a 15-turn window).

Two engines share one interface and one arithmetic:

* :class:`Memory`, from :meth:`bitemporal.Store.memory`, wraps the SQL functions
  of ``sql/decay.v1.sql`` (the semantics live in PostgreSQL, so ``psql`` and
  Python agree, and every change is in ``bitemporal.memory_log``); its
  ``step()`` evicts by one range scan of an index on the crossing turn, so it
  costs O(evicted + log n) however large the working set;
* :class:`InMemoryMemory`, pure Python: the reference model in the tests and the
  speed peer in the benchmark. Its ``step()`` scans every item and applies the
  definition (retention below the threshold) directly, which is what the
  indexed crossing turn must agree with.

Both compute in IEEE double precision with the same operations in the same
order (and the same C library's ``exp``/``log``), so their results are equal
bit for bit, not just approximately. Turns, never the wall clock, decide.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from .errors import (
    InvalidInputError,
    InvalidMemoryNameError,
    InvalidPolicyError,
    InvalidStabilityError,
    UnknownItemError,
    check_text,
)
from .model import Key, check_many, check_optional_key, optional_key_parts
from .operations import AsyncRepository, Statement, Steps, SyncRepository, one, reads, writes

#: Stabilities (in turns) are kept within these bounds, so that no product or
#: quotient of the arithmetic can overflow or underflow (PostgreSQL raises where
#: C returns inf or 0); a recall's growth saturates at the upper one.
MIN_STABILITY = 1e-300
MAX_STABILITY = 1e300
#: Windows (in turns) up to 2**53: beyond, turn arithmetic in doubles is inexact.
MAX_WINDOW = 2**53
_NAME_LIMIT = 1024
# Crossing turns at or past 2**52 are not snapped to whole turns: no clock gets there.
_EXACT_TURNS = 2.0**52


def _number(what: str, value: object) -> float:
    # bool is an int, but True as a threshold is a bug, not 1.0.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidPolicyError(f"{what} must be a number, not {value!r}")
    return float(value)


def decay_retention(elapsed: int, stability: float) -> float:
    """``exp(-elapsed / S)``, 1.0 when nothing has elapsed, 0.0 where ``exp`` underflows.

    The same guards as ``bitemporal.memory_decay_retention``: past an exponent
    of 746 the result is 0.0 in double precision anyway, and the quotient, which
    could overflow for a tiny ``S``, is then not computed.
    """
    if elapsed <= 0:
        return 1.0
    e = float(elapsed)
    if e > 746.0 * stability:
        return 0.0
    return math.exp(-(e / stability))


def decay_crossing(last_touched: int, stability: float, threshold: float) -> float:
    """The turn after which an item is due: ``last_touched + S * ln(1/threshold)``.

    Where rounding would put that value on the other side of a whole turn than
    the direct comparison ``decay_retention(turn - last_touched, S) < threshold``,
    it is snapped to the last turn at which the item is still retained, so that
    "evicted at turn T exactly when T > crossing" holds at the boundary too.
    Mirrors ``bitemporal.memory_decay_crossing``.
    """
    c = last_touched + stability * (-math.log(threshold))
    if c >= _EXACT_TURNS:
        return c
    k = math.floor(c) + 1
    while k - 1 > last_touched and decay_retention(k - 1 - last_touched, stability) < threshold:
        k -= 1
    while not decay_retention(k - last_touched, stability) < threshold:
        k += 1
    if c < k - 1 or c >= k:
        c = float(k - 1)
    return c


@dataclass(frozen=True, slots=True)
class DecayPolicy:
    """Evict an item once ``exp(-(turn - last_touched) / S)`` falls below ``threshold``.

    Registration sets ``S`` to ``baseline_stability`` (or the item's own) and
    counts as the first use; each recall increments the recall count ``n`` and
    multiplies ``S`` by ``1 + ln(1 + n)``. With the defaults an unrecalled item
    (S = 8) falls below 0.20 after 12.88 turns, so the step at which 13 turns
    have elapsed evicts it.
    """

    threshold: float = 0.20
    baseline_stability: float = 8.0

    kind: ClassVar[str] = "decay"

    def __post_init__(self) -> None:
        threshold = _number("threshold", self.threshold)
        if not 0.0 < threshold < 1.0:
            raise InvalidPolicyError(
                f"threshold must lie strictly between 0 and 1, not {self.threshold!r}",
                hint="an item is evicted once its retention exp(-elapsed / S) falls below it",
            )
        baseline = _number("baseline_stability", self.baseline_stability)
        if not MIN_STABILITY <= baseline <= MAX_STABILITY:
            raise InvalidPolicyError(
                "baseline_stability must be a number of turns between "
                f"{MIN_STABILITY} and {MAX_STABILITY}, not {self.baseline_stability!r}"
            )
        object.__setattr__(self, "threshold", threshold)
        object.__setattr__(self, "baseline_stability", baseline)

    def retention(self, elapsed: int, stability: float | None) -> float:
        """Retention after ``elapsed`` turns at stability ``S``."""
        assert stability is not None
        return decay_retention(elapsed, stability)

    def crossing(self, last_touched: int, stability: float | None) -> float:
        """The crossing turn: a step at turn ``T`` evicts the item when ``T > crossing``."""
        assert stability is not None
        return decay_crossing(last_touched, stability, self.threshold)

    def reinforced(self, stability: float | None, recall_count: int) -> float | None:
        """Stability after the recall that brought the count to ``recall_count``."""
        assert stability is not None
        return min(stability * (1 + math.log(1 + float(recall_count))), MAX_STABILITY)

    def initial_stability(self, stability: float | None) -> float | None:
        """The stability a registration starts with: the item's own, else the baseline."""
        if stability is None:
            return self.baseline_stability
        if isinstance(stability, bool) or not isinstance(stability, int | float):
            raise InvalidStabilityError(f"stability must be a number of turns, not {stability!r}")
        value = float(stability)
        if not MIN_STABILITY <= value <= MAX_STABILITY:
            raise InvalidStabilityError(
                f"stability must be a number of turns between {MIN_STABILITY} and "
                f"{MAX_STABILITY}, not {stability!r}",
                hint="stability is S in exp(-elapsed / S): larger means remembered longer",
            )
        return value

    def _sql_args(self) -> tuple[str, float | None, float | None, int | None]:
        return (self.kind, self.threshold, self.baseline_stability, None)


@dataclass(frozen=True, slots=True)
class WindowPolicy:
    """The baseline: evict an item once ``turn - last_touched > window``.

    Recalls only touch the item (the count is kept but ignored); there is no
    stability. Retention is 1.0 inside the window and 0.0 outside it.
    """

    window: int = 15

    kind: ClassVar[str] = "window"

    def __post_init__(self) -> None:
        if isinstance(self.window, bool) or not isinstance(self.window, int):
            raise InvalidPolicyError(f"window must be a whole number of turns, not {self.window!r}")
        if not 1 <= self.window <= MAX_WINDOW:
            raise InvalidPolicyError(
                f"window must be between 1 and 2**53 turns, not {self.window!r}"
            )

    def retention(self, elapsed: int, stability: float | None) -> float:
        """1.0 while ``elapsed <= window``, else 0.0."""
        return 1.0 if elapsed <= self.window else 0.0

    def crossing(self, last_touched: int, stability: float | None) -> float:
        """``last_touched + window``: a step at turn ``T`` evicts the item when ``T > crossing``."""
        return float(last_touched) + float(self.window)

    def reinforced(self, stability: float | None, recall_count: int) -> float | None:
        """No stability under the window policy."""
        return None

    def initial_stability(self, stability: float | None) -> float | None:
        """None: an item's own stability is refused, since the window policy has none."""
        if stability is not None:
            raise InvalidStabilityError("the window policy has no stability")
        return None

    def _sql_args(self) -> tuple[str, float | None, float | None, int | None]:
        return (self.kind, None, None, self.window)


#: Either eviction policy.
Policy: TypeAlias = DecayPolicy | WindowPolicy


def _check_policy(policy: object) -> Policy:
    if not isinstance(policy, DecayPolicy | WindowPolicy):
        raise InvalidPolicyError(
            f"policy must be a DecayPolicy or a WindowPolicy, not {type(policy).__name__}"
        )
    return policy


def _check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or value == "":
        raise InvalidMemoryNameError(f"{what} must be a non-empty string, not {value!r}")
    check_text(what, value, InvalidMemoryNameError)
    if len(value.encode()) > _NAME_LIMIT:
        raise InvalidMemoryNameError(f"{what} is longer than {_NAME_LIMIT} bytes")
    return value


def _check_register(key: object, pinned: object) -> None:
    check_optional_key(key)
    if not isinstance(pinned, bool):
        raise InvalidInputError(f"pinned must be True or False, not {pinned!r}")


def _check_many(item_ids: object) -> list[str]:
    ids = [
        _check_name("item id", i) for i in check_many("item_ids", item_ids, InvalidMemoryNameError)
    ]
    if len(set(ids)) != len(ids):
        raise InvalidMemoryNameError(
            "an item id appears twice in one call",
            hint="register it once; a second registration would only reset the first",
        )
    return ids


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One item of a namespace as it stands now (present or evicted)."""

    item_id: str
    #: The fact the item stands for, if any, to resolve against the fact store.
    key: Key | None
    #: Pinned items are never evicted.
    pinned: bool
    #: In the working set (False once evicted).
    present: bool
    #: S in turns (decay policy); None under the window policy.
    stability: float | None
    #: Uses so far; registration is the first.
    recall_count: int
    registered_turn: int
    last_touched_turn: int
    evicted_turn: int | None
    #: A step at turn T evicts the item when T > crossing_turn; None when
    #: pinned or evicted.
    crossing_turn: float | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> MemoryItem:
        entity, attribute = row["entity"], row["attribute"]
        return cls(
            item_id=row["item_id"],
            key=None if entity is None else Key(entity, attribute),
            pinned=row["pinned"],
            present=row["state"] == "present",
            stability=row["stability"],
            recall_count=row["recall_count"],
            registered_turn=row["registered_turn"],
            last_touched_turn=row["last_touched_turn"],
            evicted_turn=row["evicted_turn"],
            crossing_turn=row["crossing_turn"],
        )


_ITEM_COLUMNS = (
    "item_id, entity, attribute, pinned, state, stability, recall_count, registered_turn, "
    "last_touched_turn, evicted_turn, crossing_turn"
)


class MemoryOperations:
    """A working-memory namespace in PostgreSQL (see :meth:`bitemporal.Store.memory`).

    Every method is one call of a ``bitemporal.memory_*`` SQL function; nothing
    is computed here, so that concurrent users, ``psql`` and the audit log see
    the same memory. Each write is one statement: a transaction of its own on
    an idle autocommit connection, else run in the store's atomic block (a
    savepoint inside the caller's transaction). Written once as operations
    (:mod:`bitemporal.operations`): :class:`Memory` runs them for the sync API,
    :class:`AsyncMemory` for the async API.
    """

    def __init__(self, namespace: str, policy: Policy, runner: Any) -> None:
        self.namespace = _check_name("namespace", namespace)
        self.policy: Policy = _check_policy(policy)
        self._runner = runner

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.namespace!r}, {self.policy!r})"

    @writes
    def _ensure_namespace(self) -> Steps[None]:
        yield Statement(
            "SELECT FROM bitemporal.memory_ensure_namespace(%s, %s, %s, %s, %s)",
            (self.namespace, *self.policy._sql_args()),
        )

    @writes
    def register(
        self,
        item_id: str,
        *,
        key: Key | None = None,
        pinned: bool = False,
        stability: float | None = None,
    ) -> Steps[MemoryItem]:
        """Register ``item_id`` at the current turn (again: a fresh registration).

        ``stability`` is the item's own initial stability (importance) instead of
        the baseline; ``pinned`` items are never evicted; ``key`` ties the item
        to a fact. An evicted item comes back as new.
        """
        _check_name("item id", item_id)
        _check_register(key, pinned)
        own = self.policy.initial_stability(stability)
        args = (
            self.namespace,
            item_id,
            *optional_key_parts(key),
            pinned,
            None if stability is None else own,
        )
        row = one(
            (
                yield Statement(
                    f"SELECT {_ITEM_COLUMNS} "
                    "FROM bitemporal.memory_register(%s, %s, %s, %s, %s, %s)",
                    args,
                    dicts=True,
                )
            )
        )
        return MemoryItem.from_row(row)

    @writes
    def register_many(
        self, item_ids: Iterable[str], *, pinned: bool = False, stability: float | None = None
    ) -> Steps[int]:
        """Register several items in one round trip, as :meth:`register` would in order.

        Ids must be distinct; no fact keys. Holds the namespace exclusively while
        it runs, like :meth:`step`. Returns how many were registered.
        """
        ids = _check_many(item_ids)
        _check_register(None, pinned)
        own = self.policy.initial_stability(stability)
        count = yield from _scalar(
            "SELECT bitemporal.memory_register_many(%s, %s::text[], %s, %s)",
            self.namespace,
            ids,
            pinned,
            None if stability is None else own,
        )
        return int(count)

    @writes
    def recall(self, item_id: str) -> Steps[bool]:
        """Reinforce a present item; False (and nothing changes) if unknown or evicted."""
        _check_name("item id", item_id)
        recalled = yield from _scalar(
            "SELECT bitemporal.memory_recall(%s, %s)", self.namespace, item_id
        )
        return bool(recalled)

    @writes
    def step(self) -> Steps[list[str]]:
        """End the current turn: evict what fell below the threshold, advance the clock.

        Returns the evicted ids in registration order.
        """
        evicted = yield from _scalar("SELECT bitemporal.memory_step(%s)", self.namespace)
        return list(evicted)

    @reads
    def _turn(self) -> Steps[int]:
        turn = yield from _scalar("SELECT bitemporal.memory_turn(%s)", self.namespace)
        return int(turn)

    @reads
    def is_present(self, item_id: str) -> Steps[bool]:
        """Whether ``item_id`` is in the working set (False for an unknown id)."""
        _check_name("item id", item_id)
        present = yield from _scalar(
            "SELECT bitemporal.memory_is_present(%s, %s)", self.namespace, item_id
        )
        return bool(present)

    @reads
    def working_set_size(self) -> Steps[int]:
        """How many items are present, pinned ones included."""
        size = yield from _scalar("SELECT bitemporal.memory_working_set_size(%s)", self.namespace)
        return int(size)

    @reads
    def retention(self, item_id: str) -> Steps[float]:
        """Retention at the current turn (0.0 once evicted); UnknownItemError if never
        registered."""
        _check_name("item id", item_id)
        retention = yield from _scalar(
            "SELECT bitemporal.memory_retention(%s, %s)", self.namespace, item_id
        )
        return float(retention)

    @reads
    def stability(self, item_id: str) -> Steps[float | None]:
        """S in turns (None under the window policy); UnknownItemError if never registered."""
        _check_name("item id", item_id)
        value = yield from _scalar(
            "SELECT bitemporal.memory_stability(%s, %s)", self.namespace, item_id
        )
        return None if value is None else float(value)

    @reads
    def items(self) -> Steps[list[MemoryItem]]:
        """Every item, present and evicted, in registration order."""
        rows = yield Statement(
            f"SELECT {_ITEM_COLUMNS} FROM bitemporal.memory_items(%s)",
            (self.namespace,),
            dicts=True,
        )
        return [MemoryItem.from_row(row) for row in rows]


def _scalar(query: str, *args: object) -> Steps[Any]:
    row = one((yield Statement(query, args)))
    return row[0]


class Memory(MemoryOperations, SyncRepository):
    """A working-memory namespace of :class:`~bitemporal.Store` (see :class:`MemoryOperations`)."""

    def __init__(self, namespace: str, policy: Policy, runner: Any) -> None:
        super().__init__(namespace, policy, runner)
        self._ensure_namespace()

    @property
    def turn(self) -> int:
        """The current turn (1 for a new namespace)."""
        return self._turn()


class AsyncMemory(MemoryOperations, AsyncRepository):
    """A working-memory namespace of :class:`~bitemporal.AsyncStore`: :class:`Memory`'s
    methods, awaitable (``await memory.turn`` too). Made by ``await store.memory(...)``."""

    @property
    def turn(self) -> Awaitable[int]:
        """The current turn (1 for a new namespace)."""
        return self._turn()


@dataclass(slots=True)
class _Entry:
    item_id: str
    key: Key | None
    pinned: bool
    present: bool
    stability: float | None
    recall_count: int
    registered_turn: int
    last_touched_turn: int
    evicted_turn: int | None
    crossing_turn: float | None

    def snapshot(self) -> MemoryItem:
        return MemoryItem(
            self.item_id,
            self.key,
            self.pinned,
            self.present,
            self.stability,
            self.recall_count,
            self.registered_turn,
            self.last_touched_turn,
            self.evicted_turn,
            self.crossing_turn,
        )


class InMemoryMemory:
    """The same memory in pure Python, for one process: the reference model.

    Same interface and arithmetic as :class:`Memory`, but ``step()`` scans every
    item and evicts by the definition (retention at this turn below the
    threshold; window: elapsed > window) rather than by the crossing turn, so
    comparing the two engines checks that the index-driven eviction is exact.
    Not thread-safe.
    """

    def __init__(self, policy: Policy = DecayPolicy(), namespace: str = "in-memory") -> None:
        self.namespace = _check_name("namespace", namespace)
        self.policy: Policy = _check_policy(policy)
        self._turn = 1
        # Insertion order is registration order: a re-registration moves to the end.
        self._items: dict[str, _Entry] = {}

    def __repr__(self) -> str:
        return f"InMemoryMemory({self.policy!r})"

    def register(
        self,
        item_id: str,
        *,
        key: Key | None = None,
        pinned: bool = False,
        stability: float | None = None,
    ) -> MemoryItem:
        """Register ``item_id`` at the current turn (see :meth:`Memory.register`)."""
        _check_name("item id", item_id)
        _check_register(key, pinned)
        s = self.policy.initial_stability(stability)
        turn = self._turn
        entry = _Entry(
            item_id,
            key,
            pinned,
            True,
            s,
            1,
            turn,
            turn,
            None,
            None if pinned else self.policy.crossing(turn, s),
        )
        self._items.pop(item_id, None)
        self._items[item_id] = entry
        return entry.snapshot()

    def register_many(
        self, item_ids: Iterable[str], *, pinned: bool = False, stability: float | None = None
    ) -> int:
        """Register several items, as :meth:`register` would in order (see
        :meth:`Memory.register_many`)."""
        ids = _check_many(item_ids)
        _check_register(None, pinned)
        self.policy.initial_stability(stability)
        for item_id in ids:
            self.register(item_id, pinned=pinned, stability=stability)
        return len(ids)

    def recall(self, item_id: str) -> bool:
        """Reinforce a present item; False (and nothing changes) if unknown or evicted."""
        _check_name("item id", item_id)
        entry = self._items.get(item_id)
        if entry is None or not entry.present:
            return False
        entry.recall_count += 1
        entry.stability = self.policy.reinforced(entry.stability, entry.recall_count)
        entry.last_touched_turn = self._turn
        if not entry.pinned:
            entry.crossing_turn = self.policy.crossing(self._turn, entry.stability)
        return True

    def step(self) -> list[str]:
        """End the current turn, scanning every item; returns evicted ids in registration order."""
        turn = self._turn
        policy = self.policy
        evicted: list[str] = []
        if isinstance(policy, DecayPolicy):
            threshold = policy.threshold
            for entry in self._items.values():
                if (
                    entry.present
                    and not entry.pinned
                    and decay_retention(turn - entry.last_touched_turn, entry.stability)  # type: ignore[arg-type]
                    < threshold
                ):
                    evicted.append(self._evict(entry, turn))
        else:
            window = policy.window
            for entry in self._items.values():
                if entry.present and not entry.pinned and turn - entry.last_touched_turn > window:
                    evicted.append(self._evict(entry, turn))
        self._turn = turn + 1
        return evicted

    @staticmethod
    def _evict(entry: _Entry, turn: int) -> str:
        entry.present = False
        entry.evicted_turn = turn
        entry.crossing_turn = None
        return entry.item_id

    @property
    def turn(self) -> int:
        """The current turn (1 at the start)."""
        return self._turn

    def is_present(self, item_id: str) -> bool:
        """Whether ``item_id`` is in the working set (False for an unknown id)."""
        _check_name("item id", item_id)
        entry = self._items.get(item_id)
        return entry is not None and entry.present

    def working_set_size(self) -> int:
        """How many items are present, pinned ones included."""
        return sum(1 for e in self._items.values() if e.present)

    def retention(self, item_id: str) -> float:
        """Retention at the current turn (0.0 once evicted); UnknownItemError if never
        registered."""
        entry = self._entry(item_id)
        if not entry.present:
            return 0.0
        return self.policy.retention(self._turn - entry.last_touched_turn, entry.stability)

    def stability(self, item_id: str) -> float | None:
        """S in turns (None under the window policy); UnknownItemError if never registered."""
        return self._entry(item_id).stability

    def items(self) -> list[MemoryItem]:
        """Every item, present and evicted, in registration order."""
        return [e.snapshot() for e in self._items.values()]

    def _entry(self, item_id: str) -> _Entry:
        _check_name("item id", item_id)
        entry = self._items.get(item_id)
        if entry is None:
            raise UnknownItemError(
                f"unknown item {item_id!r} in memory namespace {self.namespace!r}"
            )
        return entry


#: What both engines offer.
AnyMemory: TypeAlias = Memory | InMemoryMemory


__all__ = [
    "MAX_STABILITY",
    "MAX_WINDOW",
    "MIN_STABILITY",
    "AnyMemory",
    "AsyncMemory",
    "DecayPolicy",
    "InMemoryMemory",
    "Memory",
    "MemoryItem",
    "Policy",
    "WindowPolicy",
    "decay_crossing",
    "decay_retention",
]
