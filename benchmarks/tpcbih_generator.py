"""A seeded history of TPC-H-like business events over simulated days, for the ``tpcbih``
benchmark (benchmarks/tpcbih.py), and a pure-Python bitemporal replay of it.

The model is TPC-BiH (M. Kaufmann, P. M. Fischer, N. May, A. Tonder, D. Kossmann, "TPC-BiH:
A Benchmark for Bitemporal Databases", TPCTC 2013, LNCS 8391, pp. 16-31; measured on
commercial systems in "Benchmarking Bitemporal Database Systems: Ready for the Future or
Stuck in the Past?", EDBT 2014): the TPC-H schema made bitemporal, filled by a history
generator that replays *update scenarios* (business transactions such as a new order, a
cancellation, a delivery, a payment, a price or availability change, a supplier update)
one after the other, with system (knowledge) time advancing as they are applied, and a
share of them setting application (valid) time in the past or the future. What was used
from the paper is only that: the TPC-H entities, the idea of a scenario mix replayed in
system-time order, and the kinds of scenario named in the issue. The paper's own scenario
table and its probabilities could not be retrieved here; the weights in ``MIX`` below are
this project's choice, not figures from the paper.

The history:

* an initial population at day 0 (``EPOCH``): customers, suppliers, parts and four
  suppliers per part (``partsupp``), valid and known from ``EPOCH``; its size follows the
  number of scenarios (``Sizes``);
* then ``scenarios`` scenarios, ``per_day`` of them per simulated day; scenario j (from 0)
  of day d (from 1) is known at ``EPOCH + d days + (j + 1) / (per_day + 1) days``:
  knowledge times are explicit and strictly increasing;
* each scenario is one write, valid from its knowledge time, except a scheduled price change
  (valid from 7 to 30 days after it is known: announced ahead) and a retroactive correction
  (an order's total price or a customer's balance was wrong; valid from up to a week before
  it is known, never before the key's last change).

A write is a whole row for ``[valid_from, infinity)`` (the application tables' ``record``) or
the end of a key from ``valid_from`` on (``retract``). ``Replay`` applies the writes with the
store's semantics (a write closes the key's current versions that overlap its period and
re-records their remainders) and answers as-of questions: the reference the benchmark's
answers are checked against. ``current_state`` is what an application keeping only the
current row would hold (upsert in place; a scheduled change applied when it falls due).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)

# Kinds of scenario and their shares of the mix (this project's weights; see above).
NEW_ORDER = "new order"
CANCEL_ORDER = "cancel order"
DELIVER_ORDER = "deliver order"
PAYMENT = "receive payment"
PRICE_CHANGE = "price change"
SCHEDULED_PRICE_CHANGE = "scheduled price change"
AVAILABILITY_CHANGE = "availability change"
SUPPLIER_UPDATE = "supplier update"
CUSTOMER_UPDATE = "customer update"
CORRECTION = "retroactive correction"
MIX: dict[str, float] = {
    NEW_ORDER: 0.30,
    CANCEL_ORDER: 0.04,
    DELIVER_ORDER: 0.20,
    PAYMENT: 0.18,
    PRICE_CHANGE: 0.06,
    SCHEDULED_PRICE_CHANGE: 0.02,
    AVAILABILITY_CHANGE: 0.10,
    SUPPLIER_UPDATE: 0.04,
    CUSTOMER_UPDATE: 0.03,
    CORRECTION: 0.03,
}
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY")
BRANDS = tuple(f"Brand#{m}{n}" for m in range(1, 6) for n in range(1, 6))
SUPPLIERS_PER_PART = 4


@dataclass(frozen=True, slots=True)
class Table:
    """A table of the schema: its key columns and value columns, with their SQL types."""

    name: str
    key: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]  # every column, key first: (name, SQL type)

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns if c not in self.key)


TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table(
            "customer",
            ("c_custkey",),
            (
                ("c_custkey", "bigint"),
                ("c_name", "text"),
                ("c_address", "text"),
                ("c_nationkey", "integer"),
                ("c_acctbal", "numeric(12,2)"),
                ("c_mktsegment", "text"),
            ),
        ),
        Table(
            "supplier",
            ("s_suppkey",),
            (
                ("s_suppkey", "bigint"),
                ("s_name", "text"),
                ("s_address", "text"),
                ("s_nationkey", "integer"),
                ("s_acctbal", "numeric(12,2)"),
            ),
        ),
        Table(
            "part",
            ("p_partkey",),
            (
                ("p_partkey", "bigint"),
                ("p_name", "text"),
                ("p_brand", "text"),
                ("p_retailprice", "numeric(12,2)"),
            ),
        ),
        Table(
            "partsupp",
            ("ps_partkey", "ps_suppkey"),
            (
                ("ps_partkey", "bigint"),
                ("ps_suppkey", "bigint"),
                ("ps_availqty", "integer"),
                ("ps_supplycost", "numeric(12,2)"),
            ),
        ),
        Table(
            "orders",
            ("o_orderkey",),
            (
                ("o_orderkey", "bigint"),
                ("o_custkey", "bigint"),
                ("o_orderstatus", "text"),
                ("o_totalprice", "numeric(12,2)"),
                ("o_orderdate", "date"),
                ("o_shipdate", "date"),
            ),
        ),
    )
}

Row = dict[str, Any]
KeyValues = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Write:
    """A whole row of ``table`` for ``[valid_from, infinity)`` known from ``known_at``, or
    (``row`` None) the end of the key from ``valid_from`` on."""

    table: str
    key: KeyValues
    row: Row | None
    valid_from: datetime
    known_at: datetime


# Makes a write and keeps the generator's state: (table, row, key, valid_from, known_at).
Writer = Callable[[str, Row | None, KeyValues, datetime, datetime], Write]


@dataclass(frozen=True, slots=True)
class Scenario:
    kind: str
    known_at: datetime
    writes: tuple[Write, ...]


@dataclass(frozen=True, slots=True)
class Sizes:
    """The initial population for a number of scenarios."""

    customers: int
    suppliers: int
    parts: int
    per_day: int

    @classmethod
    def for_scenarios(cls, scenarios: int) -> Sizes:
        return cls(
            customers=max(20, scenarios // 50),
            suppliers=max(5, scenarios // 1000),
            parts=max(10, scenarios // 200),
            per_day=max(10, min(1000, scenarios // 50)),
        )


@dataclass(frozen=True, slots=True)
class History:
    seed: int
    sizes: Sizes
    initial: tuple[Write, ...]
    scenarios: tuple[Scenario, ...]

    @property
    def writes(self) -> Iterator[Write]:
        yield from self.initial
        for s in self.scenarios:
            yield from s.writes

    @property
    def days(self) -> int:
        """Simulated days with scenarios (day 0, the initial population, not counted)."""
        return (len(self.scenarios) + self.sizes.per_day - 1) // self.sizes.per_day

    def day_start(self, day: int) -> datetime:
        return EPOCH + day * DAY

    @property
    def end(self) -> datetime:
        """The knowledge time of the last scenario."""
        return self.scenarios[-1].known_at if self.scenarios else EPOCH


def _money(rng: random.Random, low: int, high: int) -> Decimal:
    """A random amount in [low, high) with two decimals."""
    return Decimal(rng.randrange(low * 100, high * 100)).scaleb(-2)


def _key(table: str, row: Mapping[str, Any]) -> KeyValues:
    return tuple(row[c] for c in TABLES[table].key)


@dataclass
class _State:
    """What the generator knows now: the current rows, the open and live orders, and for a
    key the valid time of its last change (corrections never reach before it)."""

    rows: dict[str, dict[KeyValues, Row]] = field(default_factory=dict)
    last_change: dict[tuple[str, KeyValues], datetime] = field(default_factory=dict)
    # A part's scheduled prices not yet due, by due time.
    pending_price: dict[KeyValues, list[tuple[datetime, Row]]] = field(default_factory=dict)
    partsupp_keys: list[KeyValues] = field(default_factory=list)
    open_orders: list[int] = field(default_factory=list)
    # Every order ever placed, and the cancelled ones (a set: removal from a long list is slow).
    placed_orders: list[int] = field(default_factory=list)
    cancelled: set[int] = field(default_factory=set)
    next_order: int = 1


def generate(scenarios: int, seed: int = 1) -> History:
    """The history of ``scenarios`` scenarios; the same seed gives the same history."""
    rng = random.Random(seed)
    sizes = Sizes.for_scenarios(scenarios)
    state = _State(rows={name: {} for name in TABLES})
    initial: list[Write] = []

    def write(
        table: str, row: Row | None, key: KeyValues, valid_from: datetime, known: datetime
    ) -> Write:
        w = Write(table, key, None if row is None else dict(row), valid_from, known)
        if row is None:
            del state.rows[table][key]
        elif valid_from <= known:
            state.rows[table][key] = dict(row)
        state.last_change[table, key] = valid_from
        return w

    for c in range(1, sizes.customers + 1):
        row = {
            "c_custkey": c,
            "c_name": f"Customer#{c:09d}",
            "c_address": f"address {rng.randrange(10**6)}",
            "c_nationkey": rng.randrange(25),
            "c_acctbal": _money(rng, -999, 9999),
            "c_mktsegment": rng.choice(SEGMENTS),
        }
        initial.append(write("customer", row, (c,), EPOCH, EPOCH))
    for s in range(1, sizes.suppliers + 1):
        row = {
            "s_suppkey": s,
            "s_name": f"Supplier#{s:09d}",
            "s_address": f"address {rng.randrange(10**6)}",
            "s_nationkey": rng.randrange(25),
            "s_acctbal": _money(rng, -999, 9999),
        }
        initial.append(write("supplier", row, (s,), EPOCH, EPOCH))
    for p in range(1, sizes.parts + 1):
        row = {
            "p_partkey": p,
            "p_name": f"part {p}",
            "p_brand": rng.choice(BRANDS),
            "p_retailprice": _money(rng, 900, 2000),
        }
        initial.append(write("part", row, (p,), EPOCH, EPOCH))
        for s in rng.sample(
            range(1, sizes.suppliers + 1), min(SUPPLIERS_PER_PART, sizes.suppliers)
        ):
            row = {
                "ps_partkey": p,
                "ps_suppkey": s,
                "ps_availqty": rng.randrange(1, 10_000),
                "ps_supplycost": _money(rng, 1, 1000),
            }
            initial.append(write("partsupp", row, (p, s), EPOCH, EPOCH))
            state.partsupp_keys.append((p, s))

    kinds = list(MIX)
    weights = [MIX[k] for k in kinds]
    out: list[Scenario] = []
    for i in range(scenarios):
        day, j = divmod(i, sizes.per_day)
        known = (
            EPOCH
            + (day + 1) * DAY
            + timedelta(microseconds=(86_400_000_000 * (j + 1)) // (sizes.per_day + 1))
        )
        kind = rng.choices(kinds, weights)[0]
        if kind in (CANCEL_ORDER, DELIVER_ORDER) and not state.open_orders:
            kind = NEW_ORDER  # nothing to cancel or deliver yet
        if kind == CORRECTION and len(state.placed_orders) == len(state.cancelled):
            kind = NEW_ORDER
        writes = _scenario(kind, known, rng, sizes, state, write)
        out.append(Scenario(kind, known, writes))
    return History(seed, sizes, tuple(initial), tuple(out))


def _pop(rng: random.Random, items: list[int]) -> int:
    """Remove and return a random item (swap with the last: O(1))."""
    i = rng.randrange(len(items))
    items[i], items[-1] = items[-1], items[i]
    return items.pop()


def _scenario(
    kind: str,
    known: datetime,
    rng: random.Random,
    sizes: Sizes,
    state: _State,
    write: Writer,
) -> tuple[Write, ...]:
    rows = state.rows
    # A scheduled price that has fallen due is the part's current row from now on.
    for key, scheduled in list(state.pending_price.items()):
        while scheduled and scheduled[0][0] <= known:
            rows["part"][key] = scheduled.pop(0)[1]
        if not scheduled:
            del state.pending_price[key]
    if kind == NEW_ORDER:
        o = state.next_order
        state.next_order += 1
        row = {
            "o_orderkey": o,
            "o_custkey": rng.randrange(1, sizes.customers + 1),
            "o_orderstatus": "O",
            "o_totalprice": _money(rng, 900, 500_000),
            "o_orderdate": known.date(),
            "o_shipdate": None,
        }
        state.open_orders.append(o)
        state.placed_orders.append(o)
        return (write("orders", row, (o,), known, known),)
    if kind == CANCEL_ORDER:
        o = _pop(rng, state.open_orders)
        state.cancelled.add(o)
        return (write("orders", None, (o,), known, known),)
    if kind == DELIVER_ORDER:
        o = _pop(rng, state.open_orders)
        row = {**rows["orders"][(o,)], "o_orderstatus": "F", "o_shipdate": known.date()}
        return (write("orders", row, (o,), known, known),)
    if kind == PAYMENT:
        c = rng.randrange(1, sizes.customers + 1)
        old = rows["customer"][(c,)]
        row = {**old, "c_acctbal": old["c_acctbal"] + _money(rng, 1, 5000)}
        return (write("customer", row, (c,), known, known),)
    if kind in (PRICE_CHANGE, SCHEDULED_PRICE_CHANGE):
        p = rng.randrange(1, sizes.parts + 1)
        old = rows["part"][(p,)]
        price = old["p_retailprice"]
        while price == old["p_retailprice"]:
            price = _money(rng, 900, 2000)
        row = {**old, "p_retailprice": price}
        if kind == PRICE_CHANGE:
            # It replaces the scheduled prices not yet due (as the store's write does).
            state.pending_price.pop((p,), None)
            return (write("part", row, (p,), known, known),)
        # It replaces the scheduled prices due at or after it, not those due before it.
        due = known + timedelta(days=rng.randrange(7, 31))
        scheduled = [(d, r) for d, r in state.pending_price.get((p,), []) if d < due]
        state.pending_price[(p,)] = [*scheduled, (due, row)]
        return (write("part", row, (p,), due, known),)
    if kind == AVAILABILITY_CHANGE:
        key = rng.choice(state.partsupp_keys)
        old = rows["partsupp"][key]
        qty = old["ps_availqty"]
        while qty == old["ps_availqty"]:
            qty = rng.randrange(0, 10_000)
        return (write("partsupp", {**old, "ps_availqty": qty}, key, known, known),)
    if kind == SUPPLIER_UPDATE:
        s = rng.randrange(1, sizes.suppliers + 1)
        old = rows["supplier"][(s,)]
        row = {
            **old,
            "s_address": f"address {rng.randrange(10**6)}",
            "s_acctbal": old["s_acctbal"] + _money(rng, -500, 500),
        }
        return (write("supplier", row, (s,), known, known),)
    if kind == CUSTOMER_UPDATE:
        c = rng.randrange(1, sizes.customers + 1)
        old = rows["customer"][(c,)]
        row = {
            **old,
            "c_address": f"address {rng.randrange(10**6)}",
            "c_mktsegment": rng.choice([s for s in SEGMENTS if s != old["c_mktsegment"]]),
        }
        return (write("customer", row, (c,), known, known),)
    # A retroactive correction: the value was wrong since a time before it is known
    # (up to a week back, never before the key's last change).
    if rng.random() < 0.5:
        o = rng.choice(state.placed_orders)
        while o in state.cancelled:
            o = rng.choice(state.placed_orders)
        table, key = "orders", (o,)
        old = rows[table][key]
        row = {**old, "o_totalprice": _money(rng, 900, 500_000)}
    else:
        table, key = "customer", (rng.randrange(1, sizes.customers + 1),)
        old = rows[table][key]
        row = {**old, "c_acctbal": old["c_acctbal"] - _money(rng, 1, 500)}
    since = max(state.last_change[table, key], known - timedelta(days=7))
    valid_from = since + (known - since) * rng.uniform(0.1, 0.9)
    return (write(table, row, key, valid_from, known),)


# -- The reference ------------------------------------------------------------------------


@dataclass(slots=True)
class _Version:
    row: Row
    valid_from: datetime
    valid_to: datetime | None
    known_from: datetime
    known_to: datetime | None = None


class Replay:
    """The history applied with the store's write semantics, in memory: the reference."""

    def __init__(self, writes: Sequence[Write] | Iterator[Write]) -> None:
        self.versions: dict[tuple[str, KeyValues], list[_Version]] = {}
        for w in writes:
            self.apply(w)

    def apply(self, w: Write) -> None:
        versions = self.versions.setdefault((w.table, w.key), [])
        for v in [v for v in versions if v.known_to is None]:
            if v.valid_to is not None and v.valid_to <= w.valid_from:
                continue  # ends before the write's period
            v.known_to = w.known_at
            if v.valid_from < w.valid_from:  # the remainder before the write's period
                versions.append(_Version(v.row, v.valid_from, w.valid_from, w.known_at))
        if w.row is not None:
            versions.append(_Version(w.row, w.valid_from, None, w.known_at))

    def as_of(self, table: str, valid_at: datetime, known_at: datetime) -> dict[KeyValues, Row]:
        """Every key's row valid at ``valid_at`` as known at ``known_at``."""
        out = {}
        for (t, key), versions in self.versions.items():
            if t != table:
                continue
            for v in versions:
                if (
                    v.known_from <= known_at
                    and (v.known_to is None or known_at < v.known_to)
                    and v.valid_from <= valid_at
                    and (v.valid_to is None or valid_at < v.valid_to)
                ):
                    out[key] = v.row
        return out


def current_state(history: History) -> Iterator[tuple[datetime, Write]]:
    """The writes an application keeping only current rows applies, at the knowledge time it
    applies them: each as it comes, except a change valid from a later time, which waits
    until the first scenario at or after that time (and is dropped if a later write to the
    key comes first)."""
    pending: dict[tuple[str, KeyValues], list[Write]] = {}
    for w in history.initial:
        yield w.known_at, w
    for s in history.scenarios:
        for key, waiting in list(pending.items()):
            while waiting and waiting[0].valid_from <= s.known_at:
                yield s.known_at, waiting.pop(0)
            if not waiting:
                del pending[key]
        for w in s.writes:
            key = (w.table, w.key)
            if w.valid_from > w.known_at:
                # It replaces the waiting changes valid from the same time or later.
                kept = [p for p in pending.get(key, []) if p.valid_from < w.valid_from]
                pending[key] = [*kept, w]
            else:
                pending.pop(key, None)
                yield w.known_at, w
