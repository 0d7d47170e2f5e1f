"""The same seeded workload gives the same answers on plain PostgreSQL and on Citus.

A seeded ``random.Random`` builds a workload over 40 entities (their keys spread over both
workers) and three attributes, with several sources: records with valid periods that split
each other (interior periods that leave leftovers on both sides), retractions, no-op
repeats of an identical record, conflicting values from two sources, ``record_many``
batches (several rows per key, splitting each other), several writes to one key in one
``store.transaction()`` and writes across keys in one, idempotency keys (a retry, a key
reused for another request or another key), a transaction rolled back, and refusals (a
knowledge time before the key's, one in the future, a batch with a bad row). It runs in two
phases: first every write names its ``known_at`` (increasing, in 2020: the same instants on
both servers), then every write takes the default, the transaction's time.

The workload is applied through the Python API to a database on a plain PostgreSQL server and
to one on the Citus coordinator (distributed by entity). Then, for every key: ``history``,
``resolve`` and ``as_of`` at a grid of (valid time, knowledge time) questions, and
``changes()`` over the whole store and over knowledge windows, must give the same answers.

The two servers write at different wall-clock times, and assign different version ids, so
neither is compared raw:

* each side notes the database's present before every operation (and after the last): these
  brackets place every instant. A knowledge instant chosen by the workload (earlier than the
  first bracket) stays as it is, the same on both sides; any other becomes ``("op", i, j)``,
  the j-th distinct knowledge instant inside operation i's bracket (``("op", i, "after", j)``
  for an instant there that is no knowledge instant, such as a question's). So the servers
  must agree on which operation learned what, and on which writes share a knowledge time; a
  write one side refuses shifts nothing else;
* a version id is replaced by what identifies the version: its key, source, value, valid
  period and its normalised knowledge start (``carried_from``, ``superseded`` and
  retraction results map through it); ``recorded_at`` and ``closed_at`` by how they stand
  to the knowledge the writer chose (the same instant, or later: back-dated);
* questions name knowledge instants normalised, and each side asks at its own instant.

Valid times are fixed instants, the same on both sides (from 2000 to 2045, none between the two
servers' runs). Refusals are compared by exception class and SQLSTATE; a batch's by its bad
lines too.
"""

from __future__ import annotations

import bisect
import itertools
import os
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeAlias, TypeVar

import psycopg
import pytest
from psycopg import sql

import bitemporal
from bitemporal import (
    Answer,
    BatchError,
    BitemporalError,
    Change,
    Key,
    Recorded,
    RecordRow,
    Status,
    Store,
    Version,
)
from bitemporal.jsonvalues import JSON, dumps
from tests.conftest import with_database
from tests.helpers import CITUS, DatabaseFactory

pytestmark = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")

PLAIN_URL = os.environ.get("BITEMPORAL_TEST_PLAIN_URL", "postgresql://127.0.0.1:5432/test")

ENTITIES = tuple(f"tenant-{i:02d}" for i in range(40))
ATTRIBUTES = ("limit_mb", "plan", "region")
SOURCES = ("policy", "forum", "audit", "import")
VALUES: tuple[JSON, ...] = (10, 20, 50, 80, 100, "gold", "silver", {"tier": "gold", "seats": 5})

# Valid-time boundaries: half-years from 2001 to 2012, and 2040. None is an open side.
POINTS = (
    *(datetime(year, month, 1, tzinfo=UTC) for year in range(2001, 2013) for month in (1, 7)),
    datetime(2040, 1, 1, tzinfo=UTC),
)
# Explicit knowledge times of the first phase: one minute apart from here.
KNOWN_BASE = datetime(2020, 1, 1, tzinfo=UTC)
# Refused knowledge times: earlier than any knowledge of the workload; later than the present.
KNOWN_PAST = datetime(2019, 6, 1, tzinfo=UTC)
KNOWN_FUTURE = datetime(2100, 1, 1, tzinfo=UTC)
# Valid times asked about besides the keys' own boundaries: before and after every one.
VALID_EDGES = (datetime(2000, 6, 1, tzinfo=UTC), datetime(2045, 1, 1, tzinfo=UTC))
MICROSECOND = timedelta(microseconds=1)

# Questions per key (sampled from the candidates when there are more).
RESOLVES_PER_KEY = 6
AS_OFS_PER_KEY = 3
# Writes of each phase after the opening batch.
OPERATIONS_PER_PHASE = 30


# ---------------------------------------------------------------------------------------
# The workload: plain data, the same for both servers.


@dataclass(frozen=True)
class Record:
    key: Key
    value: JSON
    source: str
    valid_from: datetime | None
    valid_to: datetime | None
    known_at: datetime | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Retract:
    key: Key
    source: str
    valid_from: datetime | None
    valid_to: datetime | None
    known_at: datetime | None = None


@dataclass(frozen=True)
class Batch:
    rows: tuple[Record, ...]


@dataclass(frozen=True)
class Transaction:
    writes: tuple[Record | Retract, ...]
    roll_back: bool = False


Operation: TypeAlias = Record | Retract | Batch | Transaction


def _index(instant: datetime | None, *, end: bool) -> int:
    """Where a period bound sits on POINTS (-1: open start, len(POINTS): open end)."""
    if instant is None:
        return len(POINTS) if end else -1
    return POINTS.index(instant)


def _point(index: int) -> datetime | None:
    return None if index < 0 or index >= len(POINTS) else POINTS[index]


@dataclass
class Workload:
    """Builds the operations of one seed (``ops``: a purpose and an operation each)."""

    seed: int
    rng: random.Random = field(init=False)
    ops: list[tuple[str, Operation]] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    tokens: list[Record] = field(default_factory=list)
    written: list[Key] = field(default_factory=list)
    explicit: bool = True
    tick: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # -- building blocks

    def known(self) -> datetime | None:
        """The next write's knowledge time: explicit and increasing in the first phase."""
        if not self.explicit:
            return None
        self.tick += 1
        return KNOWN_BASE + timedelta(minutes=self.tick)

    def key(self, *, fresh: float = 0.3) -> Key:
        if self.written and self.rng.random() > fresh:
            return self.rng.choice(self.written)
        key = Key(self.rng.choice(ENTITIES), self.rng.choice(ATTRIBUTES))
        self.note(key)
        return key

    def note(self, key: Key) -> None:
        if key not in self.written:
            self.written.append(key)

    def period(self) -> tuple[datetime | None, datetime | None]:
        start = self.rng.randrange(-1, len(POINTS) - 1)
        end = self.rng.randrange(start + 1, len(POINTS) + 1)
        return _point(start), _point(end)

    def inside(
        self, valid_from: datetime | None, valid_to: datetime | None
    ) -> tuple[datetime | None, datetime | None] | None:
        """A period strictly inside ``[valid_from, valid_to)`` (leftovers on both sides)."""
        low, high = _index(valid_from, end=False), _index(valid_to, end=True)
        if high - low < 3:
            return None
        start = self.rng.randrange(low + 1, high - 1)
        end = self.rng.randrange(start + 1, high)
        return POINTS[start], POINTS[end]

    def value(self, unlike: JSON = None) -> JSON:
        choices = [v for v in VALUES if v != unlike]
        return self.rng.choice(choices)

    def record(
        self,
        key: Key,
        *,
        source: str | None = None,
        value: JSON = None,
        period: tuple[datetime | None, datetime | None] | None = None,
        token: str | None = None,
    ) -> Record:
        valid_from, valid_to = period if period is not None else self.period()
        made = Record(
            key,
            self.value() if value is None else value,
            source or self.rng.choice(SOURCES),
            valid_from,
            valid_to,
            self.known(),
            token,
        )
        self.note(key)
        self.records.append(made)
        return made

    def earlier(self) -> Record:
        return self.rng.choice(self.records)

    def split(self) -> Record:
        """A new value from the same source over a period inside an earlier record's."""
        for _ in range(10):
            before = self.earlier()
            if (inner := self.inside(before.valid_from, before.valid_to)) is not None:
                return self.record(
                    before.key,
                    source=before.source,
                    value=self.value(unlike=before.value),
                    period=inner,
                )
        return self.record(self.key())

    def conflict(self) -> Record:
        """Another source, another value, over a period overlapping an earlier record's."""
        before = self.earlier()
        other = self.rng.choice([s for s in SOURCES if s != before.source])
        period = self.inside(before.valid_from, before.valid_to) or (
            before.valid_from,
            before.valid_to,
        )
        return self.record(
            before.key, source=other, value=self.value(unlike=before.value), period=period
        )

    def repeat(self) -> Record:
        """An earlier record again, identical but for its knowledge time: a no-op when the
        value is still known over the whole period."""
        before = self.earlier()
        return self.record(
            before.key,
            source=before.source,
            value=before.value,
            period=(before.valid_from, before.valid_to),
        )

    def retract(self) -> Retract:
        before = self.earlier()
        period = self.rng.choice(
            [
                (before.valid_from, before.valid_to),
                self.inside(before.valid_from, before.valid_to) or self.period(),
                self.period(),
            ]
        )
        return Retract(before.key, before.source, *period, known_at=self.known())

    def write(self) -> Record | Retract:
        pick = self.rng.random()
        if pick < 0.3:
            return self.record(self.key())
        if pick < 0.55:
            return self.split()
        if pick < 0.7:
            return self.conflict()
        if pick < 0.8:
            return self.repeat()
        return self.retract()

    def one_key_writes(self) -> tuple[Record | Retract, ...]:
        """Several writes to one key inside the first one's period (splitting it)."""
        key = self.key(fresh=0.2)
        source = self.rng.choice(SOURCES)
        first = self.record(key, source=source)
        writes: list[Record | Retract] = [first]
        for _ in range(self.rng.randint(1, 3)):
            inner = self.inside(first.valid_from, first.valid_to) or self.period()
            if self.rng.random() < 0.25:
                writes.append(Retract(key, source, *inner, known_at=self.known()))
            else:
                other = source if self.rng.random() < 0.6 else self.rng.choice(SOURCES)
                writes.append(self.record(key, source=other, period=inner))
        return tuple(writes)

    def many_key_writes(self) -> tuple[Record | Retract, ...]:
        entities = self.rng.sample(ENTITIES, self.rng.randint(2, 4))
        return tuple(
            self.record(Key(entity, self.rng.choice(ATTRIBUTES)), period=self.period())
            for entity in entities
        )

    def batch(self) -> Batch:
        """Several keys, several rows per key splitting each other, a no-op or two."""
        rows: list[Record] = []
        for _ in range(self.rng.randint(1, 3)):
            rows.extend(self.one_key_writes_as_records())
        for _ in range(self.rng.randint(1, 3)):
            rows.append(self.record(self.key()))
        if self.rng.random() < 0.5:
            rows.append(self.repeat())
        self.rng.shuffle(rows)
        # Knowledge must not go back within a key: hand the batch's explicit times out again,
        # in batch order.
        if self.explicit:
            times = sorted(r.known_at for r in rows if r.known_at is not None)
            rows = [
                Record(r.key, r.value, r.source, r.valid_from, r.valid_to, t)
                for r, t in zip(rows, times, strict=True)
            ]
        return Batch(tuple(rows))

    def one_key_writes_as_records(self) -> list[Record]:
        key = self.key(fresh=0.3)
        source = self.rng.choice(SOURCES)
        first = self.record(key, source=source)
        rows = [first]
        for _ in range(self.rng.randint(1, 3)):
            inner = self.inside(first.valid_from, first.valid_to) or self.period()
            other = source if self.rng.random() < 0.7 else self.rng.choice(SOURCES)
            rows.append(self.record(key, source=other, period=inner))
        return rows

    def idempotent(self) -> tuple[str, Operation]:
        pick = self.rng.random()
        if not self.tokens or pick < 0.4:
            made = self.record(self.key(), token=f"req-{self.seed}-{len(self.tokens)}")
            self.tokens.append(made)
            return "record with an idempotency key", made
        first = self.rng.choice(self.tokens)
        if pick < 0.75:
            return "the same request retried", first
        if pick < 0.9:
            return "an idempotency key reused for another value", Record(
                first.key,
                self.value(unlike=first.value),
                first.source,
                first.valid_from,
                first.valid_to,
                first.known_at,
                first.idempotency_key,
            )
        other = Key(self.rng.choice([e for e in ENTITIES if e != first.key.entity]), "plan")
        return "an idempotency key reused for another key", Record(
            other,
            first.value,
            first.source,
            first.valid_from,
            first.valid_to,
            first.known_at,
            first.idempotency_key,
        )

    # -- phases

    def step(self) -> tuple[str, Operation]:
        pick = self.rng.random()
        if pick < 0.45:
            made = self.write()
            return type(made).__name__.lower(), made
        if pick < 0.6:
            return "record_many", self.batch()
        if pick < 0.72:
            return "one key, several writes, one transaction", Transaction(self.one_key_writes())
        if pick < 0.84:
            return "several keys, one transaction", Transaction(self.many_key_writes())
        return self.idempotent()

    def refusals(self) -> None:
        """Second phase only: writes both servers must refuse, and a rolled-back one."""
        opening = self.ops[0][1]
        assert isinstance(opening, Batch)
        key = self.rng.choice(opening.rows).key  # known since 2020
        self.ops.append(
            (
                "known_at before the key's knowledge",
                Record(key, 1, "policy", None, None, KNOWN_PAST),
            )
        )
        self.ops.append(
            ("known_at in the future", Record(key, 2, "policy", None, None, KNOWN_FUTURE))
        )
        good = self.record(self.key())
        self.ops.append(
            (
                "record_many with one bad row",
                Batch((good, Record(key, 3, "policy", None, None, KNOWN_PAST))),
            )
        )
        self.ops.append(
            (
                "transaction rolled back",
                Transaction((*self.one_key_writes(), *self.many_key_writes()), roll_back=True),
            )
        )
        # An idempotency key: a request, its retry after another write, then the key reused.
        token = f"req-{self.seed}-refusals"
        first = self.record(self.key(), token=token)
        self.ops.append(("record with an idempotency key", first))
        self.ops.append(("another write", self.record(first.key, source=first.source)))
        self.ops.append(("the same request retried", first))
        self.ops.append(
            (
                "an idempotency key reused for another value",
                Record(
                    first.key,
                    self.value(unlike=first.value),
                    first.source,
                    first.valid_from,
                    first.valid_to,
                    None,
                    token,
                ),
            )
        )

    def build(self) -> list[tuple[str, Operation]]:
        # Every entity gets a key, in one batch spanning every shard.
        self.ops.append(
            (
                "opening record_many over every entity",
                Batch(tuple(self.record(Key(e, self.rng.choice(ATTRIBUTES))) for e in ENTITIES)),
            )
        )
        for _ in range(OPERATIONS_PER_PHASE):
            self.ops.append(self.step())
        self.explicit = False
        for position in range(OPERATIONS_PER_PHASE):
            if position == OPERATIONS_PER_PHASE // 2:
                self.refusals()
            self.ops.append(self.step())
        return self.ops


# ---------------------------------------------------------------------------------------
# Applying it.


class _RollBack(Exception):
    """Raised inside a transaction the workload rolls back on purpose."""


@dataclass(frozen=True)
class Failure:
    """A refused operation: its class and SQLSTATE (compared), its message (reported)."""

    error: str
    sqlstate: str | None
    rows: tuple[tuple[int, str | None], ...]
    message: str


@dataclass(frozen=True)
class RolledBack:
    results: tuple[object, ...]


def _apply(store: Store, op: Operation) -> object:
    if isinstance(op, Record):
        return store.facts.record(
            op.key,
            op.value,
            source=op.source,
            valid_from=op.valid_from,
            valid_to=op.valid_to,
            known_at=op.known_at,
            idempotency_key=op.idempotency_key,
        )
    if isinstance(op, Retract):
        return store.facts.retract(
            op.key,
            source=op.source,
            valid_from=op.valid_from,
            valid_to=op.valid_to,
            known_at=op.known_at,
        )
    if isinstance(op, Batch):
        return store.facts.record_many(
            [
                RecordRow(r.key, r.value, r.source, r.valid_from, r.valid_to, r.known_at)
                for r in op.rows
            ]
        )
    results: list[object] = []
    try:
        with store.transaction():
            for write in op.writes:
                results.append(_apply(store, write))
            if op.roll_back:
                raise _RollBack
    except _RollBack:
        return RolledBack(tuple(results))
    return tuple(results)


def _failure(exc: BitemporalError | psycopg.Error) -> Failure:
    rows = (
        tuple((line, state) for line, state, _ in exc.errors) if isinstance(exc, BatchError) else ()
    )
    return Failure(type(exc).__name__, getattr(exc, "sqlstate", None), rows, f"{exc}")


def _attempt(store: Store, op: Operation) -> object:
    """The operation's result, or the Failure it was refused with."""
    try:
        return _apply(store, op)
    except (BitemporalError, psycopg.Error) as exc:
        return _failure(exc)


T = TypeVar("T")
U = TypeVar("U")


def _asked(question: Callable[[], T], normalise: Callable[[T], U]) -> U | Failure:
    """A read's normalised answer, or the Failure it raised (reported, not hidden)."""
    try:
        answer = question()
    except (BitemporalError, psycopg.Error) as exc:
        return _failure(exc)
    return normalise(answer)


# ---------------------------------------------------------------------------------------
# Reading one side back, in terms both sides share.

# A knowledge instant as both sides can name it (see the module docstring):
# ("written", t): an instant the workload chose (or earlier than the first operation);
# ("op", i, j): the j-th distinct knowledge instant within operation i's bracket;
# ("op", i, "after", j): another instant of that bracket, after j knowledge instants.
Norm: TypeAlias = tuple[Any, ...]
KnownRef: TypeAlias = tuple[str, Norm] | None  # ("at", norm), ("before", norm); None: now
ValidRef: TypeAlias = datetime | tuple[str, KnownRef] | None  # ("known", ref): valid = known


class Unmapped(Exception):
    """A question names a knowledge instant this side does not have."""


@dataclass
class Side:
    """One server's run of the workload and what it reads back."""

    name: str
    store: Store
    outcomes: list[object] = field(default_factory=list)
    #: The database's present before each operation, and after the last.
    brackets: list[datetime] = field(default_factory=list)
    histories: dict[Key, list[Version]] = field(default_factory=dict)
    #: The distinct instants the knowledge periods of every version name, sorted.
    known: list[datetime] = field(default_factory=list)
    instants: dict[Norm, datetime] = field(default_factory=dict)
    idents: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    failed_reads: dict[str, Failure] = field(default_factory=dict)

    def run(self, ops: list[tuple[str, Operation]], keys: list[Key]) -> None:
        for _, op in ops:
            self.brackets.append(self.store.now())
            self.outcomes.append(_attempt(self.store, op))
        self.brackets.append(self.store.now())
        for key in keys:
            try:
                self.histories[key] = self.store.facts.history(key)
            except (BitemporalError, psycopg.Error) as exc:
                self.histories[key] = []
                self.failed_reads[f"history {key}"] = _failure(exc)
        instants = {
            instant
            for versions in self.histories.values()
            for v in versions
            for instant in (v.known_period.start, v.known_period.end)
            if instant is not None
        }
        self.known = sorted(instants)
        self.instants = {self.placed(t): t for t in self.known}
        self.idents = {v.version_id: self.ident(v) for vs in self.histories.values() for v in vs}

    # -- normalising

    def norm(self, instant: datetime | None) -> Norm | None:
        return None if instant is None else self.placed(instant)

    def placed(self, instant: datetime) -> Norm:
        if instant < self.brackets[0]:
            return ("written", instant)
        op = bisect.bisect_right(self.brackets, instant) - 1
        first = bisect.bisect_left(self.known, self.brackets[op])
        place = bisect.bisect_left(self.known, instant)
        if place < len(self.known) and self.known[place] == instant:
            return ("op", op, place - first)
        return ("op", op, "after", place - first)

    def instant(self, ref: KnownRef) -> datetime | None:
        if ref is None:
            return None
        kind, norm = ref
        if norm not in self.instants:
            raise Unmapped(f"no knowledge instant {norm} on {self.name}")
        found = self.instants[norm]
        return found if kind == "at" else found - MICROSECOND

    def valid(self, ref: ValidRef) -> datetime | None:
        if isinstance(ref, tuple):
            return self.instant(ref[1])
        return ref

    def ident(self, v: Version) -> tuple[Any, ...]:
        return (
            str(v.key),
            v.source,
            None if v.value is None else dumps(v.value),
            v.valid_period.start,
            v.valid_period.end,
            self.norm(v.known_period.start),
        )

    def vid(self, version_id: int | None) -> object:
        if version_id is None:
            return None
        return self.idents.get(version_id, "a version not kept")

    def version(self, v: Version) -> tuple[Any, ...]:
        return (
            *self.ident(v),
            self.norm(v.known_period.end),
            v.recorded_by,
            self.vid(v.carried_from),
            _stamp(v.recorded_at, v.known_period.start),
            _stamp(v.closed_at, v.known_period.end),
            v.erased,
        )

    def versions(self, versions: list[Version] | tuple[Version, ...]) -> list[tuple[Any, ...]]:
        return sorted((self.version(v) for v in versions), key=repr)

    def recorded(self, r: Recorded) -> tuple[Any, ...]:
        return (
            "recorded",
            r.created,
            self.vid(r.version_id),
            sorted((self.vid(s) for s in r.superseded), key=repr),
            self.norm(r.known_at),
        )

    def outcome(self, raw: object) -> object:
        if isinstance(raw, Recorded):
            return self.recorded(raw)
        if isinstance(raw, Failure):
            return ("refused", raw.error, raw.sqlstate, raw.rows)
        if isinstance(raw, RolledBack):
            return ("rolled back", [type(r).__name__ for r in raw.results])
        if isinstance(raw, list):  # record_many
            return [self.outcome(r) for r in raw]
        if isinstance(raw, tuple) and all(isinstance(r, int) for r in raw):  # retract
            return ("retracted", sorted((self.vid(i) for i in raw), key=repr))
        assert isinstance(raw, tuple)  # a transaction's results
        return tuple(self.outcome(r) for r in raw)

    def answer(self, a: Answer, valid: ValidRef) -> tuple[Any, ...]:
        return (
            a.status,
            None if a.value is None else dumps(a.value),
            [dumps(v) for v in a.values],
            self.versions(a.versions),
            a.sources,
            a.valid_at if isinstance(valid, datetime) else self.norm(a.valid_at),
            self.norm(a.known_at),
            a.interpretation,
        )

    def changes(self, changes: list[Change]) -> list[tuple[Any, ...]]:
        return sorted(
            (
                (
                    c.kind,
                    self.norm(c.at),
                    self.version(c.version),
                    sorted((self.vid(b) for b in c.by), key=repr),
                )
                for c in changes
            ),
            key=repr,
        )


def _stamp(actual: datetime | None, chosen: datetime | None) -> str | None:
    """How a real write time stands to the knowledge time the writer chose."""
    if actual is None:
        return None
    if chosen is None:
        return "stamped, knowledge open"
    if actual == chosen:
        return "at the knowledge time"
    return "after: back-dated" if actual > chosen else "before the knowledge time"


# ---------------------------------------------------------------------------------------
# Questions, named in terms both sides share.


@dataclass(frozen=True)
class Questions:
    resolves: dict[Key, list[tuple[ValidRef, KnownRef]]]
    as_ofs: dict[Key, list[tuple[ValidRef, KnownRef]]]
    windows: list[tuple[KnownRef, KnownRef]]


def _questions(seed: int, side: Side) -> Questions:
    """Questions for every key, from ``side``'s histories (knowledge instants normalised)."""
    resolves: dict[Key, list[tuple[ValidRef, KnownRef]]] = {}
    as_ofs: dict[Key, list[tuple[ValidRef, KnownRef]]] = {}
    everywhere = list(side.instants)  # in knowledge order
    for key, versions in side.histories.items():
        rng = random.Random(f"{seed}:{key}")
        own = {
            norm
            for v in versions
            for instant in (v.known_period.start, v.known_period.end)
            if (norm := side.norm(instant)) is not None
        }
        norms = [n for n in everywhere if n in own]
        others = [n for n in everywhere if n not in own]
        norms += rng.sample(others, min(2, len(others)))
        knowns: list[KnownRef] = [
            *(("at", n) for n in norms),
            *(("before", n) for n in norms),
            None,
        ]
        bounds = sorted(
            {
                b
                for v in versions
                for b in (v.valid_period.start, v.valid_period.end)
                if b is not None
            }
        )
        valids: list[ValidRef] = [
            *VALID_EDGES,
            *bounds,
            *(b - MICROSECOND for b in bounds),
            *(a + (b - a) / 2 for a, b in itertools.pairwise(bounds)),
        ]
        pairs: list[tuple[ValidRef, KnownRef]] = [(v, k) for v in valids for k in knowns]
        chosen = rng.sample(pairs, min(RESOLVES_PER_KEY, len(pairs)))
        # Also: the defaults (now, now); "what did the store say then" (valid = known).
        chosen.append((None, None))
        chosen.append((("known", rng.choice(knowns[:-1])), rng.choice(knowns)))
        resolves[key] = chosen
        as_ofs[key] = [*rng.sample(pairs, min(AS_OFS_PER_KEY, len(pairs))), (None, None)]
    rng = random.Random(seed)
    windows: list[tuple[KnownRef, KnownRef]] = [(None, None)]
    for _ in range(3):
        low, high = sorted(rng.sample(range(len(everywhere)), 2))
        windows.append((("at", everywhere[low]), ("at", everywhere[high])))
    windows.append((None, ("before", rng.choice(everywhere))))
    windows.append((("at", rng.choice(everywhere)), None))
    return Questions(resolves, as_ofs, windows)


def _read(side: Side, questions: Questions) -> dict[str, object]:
    """Every answer of ``side``, normalised, by a label naming the question."""
    facts = side.store.facts
    read: dict[str, object] = {}
    for key, versions in side.histories.items():
        read[f"history {key}"] = side.versions(versions)
        for valid, known in questions.resolves[key]:
            label = f"resolve {key} valid={valid} known={known}"
            try:
                at = {"valid_at": side.valid(valid), "known_at": side.instant(known)}
            except Unmapped as exc:
                read[label] = str(exc)
                continue
            read[label] = _asked(
                partial(facts.resolve, key, **at), partial(side.answer, valid=valid)
            )
        for valid, known in questions.as_ofs[key]:
            label = f"as_of {key} valid={valid} known={known}"
            try:
                at = {"valid_at": side.valid(valid), "known_at": side.instant(known)}
            except Unmapped as exc:
                read[label] = str(exc)
                continue
            read[label] = _asked(partial(facts.as_of, key, **at), side.versions)
    for low, high in questions.windows:
        label = f"changes [{low}, {high})"
        try:
            window = (side.instant(low), side.instant(high))
        except Unmapped as exc:
            read[label] = str(exc)
            continue
        read[label] = _asked(partial(facts.changes, *window), side.changes)
    for key in list(side.histories)[:5]:
        read[f"changes of {key}"] = _asked(partial(facts.changes, key=key), side.changes)
    return read


# ---------------------------------------------------------------------------------------
# The databases.


@pytest.fixture
def plain_url() -> Iterator[str]:
    """A database of its own on a plain PostgreSQL server, migrated (default layout)."""
    try:
        with psycopg.connect(PLAIN_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.skip(
            f"needs a plain PostgreSQL server at {PLAIN_URL} (BITEMPORAL_TEST_PLAIN_URL): {exc}"
        )
    name = f"bt_equivalence_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PLAIN_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = with_database(PLAIN_URL, name)
        bitemporal.migrate(url)
        yield url
    finally:
        with psycopg.connect(PLAIN_URL, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _workers_holding(url: str, entities: tuple[str, ...]) -> int:
    """How many Citus nodes hold the shards of ``entities``' versions."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(DISTINCT (p.nodename, p.nodeport))"
            "  FROM unnest(%s::text[]) e(entity)"
            "  JOIN pg_catalog.pg_dist_shard_placement p ON p.shardid ="
            "       pg_catalog.get_shard_id_for_distribution_column("
            "           'bitemporal.fact_version', e.entity)",
            (list(entities),),
        ).fetchone()
    assert row is not None
    count: int = row[0]
    return count


def _differences(plain: Mapping[str, object], citus: Mapping[str, object]) -> list[str]:
    """The answers that differ, by label (for lists: the items only one side has)."""
    shown = []
    for label in [*plain, *(k for k in citus if k not in plain)]:
        mine, theirs = plain.get(label, "(not asked)"), citus.get(label, "(not asked)")
        if mine == theirs:
            continue
        if isinstance(mine, list) and isinstance(theirs, list):
            only_plain = [x for x in mine if x not in theirs]
            only_citus = [x for x in theirs if x not in mine]
            shown.append(
                f"{label}: {len(mine)} items on plain, {len(theirs)} on citus;"
                f"\n  only on plain: {only_plain!r}\n  only on citus: {only_citus!r}"
            )
        else:
            shown.append(f"{label}:\n  plain: {mine!r}\n  citus: {theirs!r}")
    return shown


def _refusals(
    ops: list[tuple[str, Operation]],
    plain: Side,
    citus: Side,
    reads: tuple[Mapping[str, object], Mapping[str, object]],
) -> list[str]:
    """What one side refused and the other did not, by error (the likely causes of the
    differences that follow them)."""
    seen: dict[tuple[str, str], list[str]] = {}
    for i, ((why, _), p, c) in enumerate(zip(ops, plain.outcomes, citus.outcomes, strict=True)):
        for side, mine, theirs in ((plain, p, c), (citus, c, p)):
            if isinstance(mine, Failure) and not (
                isinstance(theirs, Failure) and theirs.error == mine.error
            ):
                error = f"{side.name}: {mine.error}: {mine.message}"
                seen.setdefault(("operations", error), []).append(f"{i} ({why})")
    plain_reads, citus_reads = reads
    for side, mine_all, theirs_all in (
        (plain, {**plain.failed_reads, **plain_reads}, {**citus.failed_reads, **citus_reads}),
        (citus, {**citus.failed_reads, **citus_reads}, {**plain.failed_reads, **plain_reads}),
    ):
        for label, mine in mine_all.items():
            if isinstance(mine, Failure) and not isinstance(theirs_all.get(label), Failure):
                error = f"{side.name}: {mine.error}: {mine.message}"
                seen.setdefault(("reads", error), []).append(label)
    return [
        f"{error} -- {len(where)} {what}: " + "; ".join(where[:8]) + ("; ..." * (len(where) > 8))
        for (what, error), where in seen.items()
    ]


def _operation_differences(ops: list[tuple[str, Operation]], plain: Side, citus: Side) -> list[str]:
    """Operation by operation: the same results, refusals and (normalised) knowledge times."""
    differences = []
    for i, ((why, op), p, c) in enumerate(zip(ops, plain.outcomes, citus.outcomes, strict=True)):
        mine, theirs = plain.outcome(p), citus.outcome(c)
        if mine != theirs:
            errors = "".join(
                f"\n  {side.name} error: {raw.error}: {raw.message}"
                for side, raw in ((plain, p), (citus, c))
                if isinstance(raw, Failure)
            )
            differences.append(
                f"operation {i} ({why}: {op!r}):\n  plain: {mine!r}\n  citus: {theirs!r}{errors}"
            )
    return differences


def _without_stamps(histories: dict[Key, list[Version]], side: Side) -> dict[Key, object]:
    """Each history as :meth:`Side.versions` gives it, but for recorded_at and closed_at."""
    return {key: [v[:-3] + v[-1:] for v in side.versions(vs)] for key, vs in histories.items()}


def _stamp_summary(plain: Side, citus: Side) -> list[str]:
    """The keys whose histories differ only in how ``recorded_at`` and ``closed_at`` stand to
    the knowledge periods, with one version of each side as an example."""
    bare_plain, bare_citus = (
        _without_stamps(plain.histories, plain),
        _without_stamps(citus.histories, citus),
    )
    keys = [
        key
        for key in plain.histories
        if bare_plain[key] == bare_citus.get(key)
        and plain.versions(plain.histories[key]) != citus.versions(citus.histories[key])
    ]
    if not keys:
        return []
    examples = []
    for side in (plain, citus):
        live = [
            v
            for v in side.histories[keys[0]]
            if v.known_period.start is not None and side.placed(v.known_period.start)[0] == "op"
        ]
        if live:
            v = live[0]
            examples.append(
                f"{side.name}: a version of {keys[0]} known from {v.known_period.start}"
                f" (to {v.known_period.end}), recorded_at {v.recorded_at},"
                f" closed_at {v.closed_at}"
            )
    headline = (
        f"{len(keys)} histories differ only in recorded_at/closed_at against the knowledge"
        " period (live knowledge looks back-dated on one side), e.g."
    )
    return [headline, *(f"  {e}" for e in examples)]


def _check_workload(ops: list[tuple[str, Operation]], plain: Side) -> None:
    """The workload does what it is meant to, on plain PostgreSQL at least."""
    firsts: dict[str | None, object] = {}
    for (why, op), outcome in zip(ops, plain.outcomes, strict=True):
        if isinstance(op, Record) and why == "record with an idempotency key":
            firsts[op.idempotency_key] = outcome
        elif isinstance(op, Record) and why == "the same request retried":
            assert outcome == firsts[op.idempotency_key], "a retry wrote again"
    flat: list[object] = []
    for outcome in plain.outcomes:
        flat.extend(outcome if isinstance(outcome, list | tuple) else [outcome])
    assert any(isinstance(r, Recorded) and not r.created for r in flat), "no no-op repeat"
    assert any(isinstance(r, Recorded) and r.superseded for r in flat), "nothing superseded"
    assert any(isinstance(o, RolledBack) for o in plain.outcomes), "no rollback"
    refused = {o.sqlstate for o in plain.outcomes if isinstance(o, Failure)}
    assert {"BT002", "BT003", "BT008", "BT301"} <= refused, refused
    versions = [v for vs in plain.histories.values() for v in vs]
    assert any(v.carried_from for v in versions), "no write left a leftover"
    assert len(plain.known) > OPERATIONS_PER_PHASE


@pytest.mark.parametrize("seed", [11, 23, 47])
def test_citus_answers_as_plain_postgresql_does(
    seed: int, plain_url: str, make_database: DatabaseFactory
) -> None:
    started = time.monotonic()
    citus_url = make_database(migrated=True)
    assert _workers_holding(citus_url, ENTITIES) >= 2, "the entities' keys sit on one node"

    workload = Workload(seed)
    ops = workload.build()
    keys = sorted(workload.written)
    with (
        psycopg.connect(plain_url, autocommit=True) as plain_conn,
        psycopg.connect(citus_url, autocommit=True) as citus_conn,
    ):
        plain, citus = Side("plain", Store(plain_conn)), Side("citus", Store(citus_conn))
        # The two servers are independent: each side runs in a thread of its own.
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda side: side.run(ops, keys), (plain, citus)))
        _check_workload(ops, plain)

        differences = _operation_differences(ops, plain, citus)
        differences += _differences(plain.failed_reads, citus.failed_reads)
        questions = _questions(seed, plain)
        with ThreadPoolExecutor(2) as pool:
            plain_read, citus_read = pool.map(lambda side: _read(side, questions), (plain, citus))
        assert any(isinstance(a, tuple) and a[0] == Status.CONFLICT for a in plain_read.values()), (
            "no question met a conflict"
        )
        differences += _differences(plain_read, citus_read)
        refusals = _refusals(ops, plain, citus, (plain_read, citus_read))
        stamps = _stamp_summary(plain, citus)
    elapsed = time.monotonic() - started
    kinds = Counter(d.split(" ", 1)[0] for d in differences)
    assert not differences, (
        f"seed {seed}: {len(differences)} differences between plain PostgreSQL and Citus"
        f" ({elapsed:.1f}s; by kind: {dict(kinds)}).\nRefused on one side only:\n"
        + "\n".join(refusals or ["(nothing)"])
        + "\n"
        + "\n".join(stamps)
        + "\nThe first 10 differences:\n"
        + "\n".join(d if len(d) < 2000 else d[:2000] + " ..." for d in differences[:10])
    )
