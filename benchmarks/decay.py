"""Working-memory benchmark: the decay policy against the sliding window, on both engines.

    python -m benchmarks decay [--quick] [--full] [--sizes N,N,...] [--tables-only] [--in-place]

Synthetic agent sessions, made by ``random.Random(seed)``: 150 turns; 3 core
facts registered at turn 1; ``noise`` items (default 3) registered every turn
and never recalled; each core fact recalled 4 times on a widening schedule
(base offsets 3, 8, 20, 45 turns after turn 1, each times its own uniform
factor in [0.7, 1.3]; recall turn = max(previous + 1, min(1 + round(offset *
factor), 150))). Each turn registers, then recalls, then ends with ``step()``.
"At session end" means after the last step (the clock reads 151); footprint
reduction is the share of the items created so far that are not resident,
after each turn's step, averaged over the 150 turns.

Every session runs on the PostgreSQL engine (``Store.memory``, in a scratch
database) and on the pure-Python engine (``InMemoryMemory``); the tables are
rendered from each and must be byte-identical (they are printed once, followed
by the check and a SHA-256 of the text). They do not depend on the machine or
the PostgreSQL version: only turns and seeded draws decide. The timings that
follow them do, and are marked so.

Timings: ``step()`` on namespaces holding 10k / 100k / 1M present items, each
measured step evicting a handful of due items (median of several), against
the in-memory engine's full scan at the same sizes; recalls per second from
one connection and from two (threads, separate items).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import psycopg

from bitemporal import DecayPolicy, InMemoryMemory, Memory, Store, WindowPolicy, migrate
from bitemporal.database import database_url, psycopg_url, scratch_database
from bitemporal.decay import Policy
from bitemporal.formatting import format_table

TURNS = 150
CORE = ("core-0", "core-1", "core-2")
BASE_OFFSETS = (3, 8, 20, 45)
NOISE = 3
DECAY = DecayPolicy(threshold=0.20, baseline_stability=8.0)
WINDOW = WindowPolicy(window=15)

AnyMemory: TypeAlias = Memory | InMemoryMemory


@dataclass(frozen=True, slots=True)
class Scenario:
    """One synthetic session: what is registered and recalled when."""

    seed: int
    noise: int = NOISE
    #: False: the failure case, core facts stated once and never used again.
    recalled: bool = True

    def schedule(self) -> tuple[tuple[int, ...], ...]:
        """For each core fact, the turns at which it is recalled."""
        if not self.recalled:
            return tuple(() for _ in CORE)
        rng = random.Random(self.seed)
        turns: list[tuple[int, ...]] = []
        for _ in CORE:
            previous, mine = 1, []
            for offset in BASE_OFFSETS:
                factor = rng.uniform(0.7, 1.3)
                turn = max(previous + 1, min(1 + round(offset * factor), TURNS))
                mine.append(turn)
                previous = turn
            turns.append(tuple(mine))
        return tuple(turns)


@dataclass(slots=True)
class Outcome:
    """What one session did, as observed through the engine's API."""

    #: Core-fact retention after the last step (0.0 if evicted).
    retention: tuple[float, ...] = ()
    #: Turn of the step that evicted each core fact (None: still present).
    evicted_at: list[int | None] = field(default_factory=lambda: [None] * len(CORE))
    #: (core index, turn) of each recall that returned False.
    failed: list[tuple[int, int]] = field(default_factory=list)
    #: Per core fact: (turn, ok, stability after) of each recall (trace only).
    recalls: list[list[tuple[int, bool, float | None]]] = field(
        default_factory=lambda: [[] for _ in CORE]
    )
    footprint: float = 0.0
    resident_at_end: int = 0


def run_session(memory: AnyMemory, scenario: Scenario, *, trace: bool = False) -> Outcome:
    """Drive one engine through one scenario."""
    at: dict[int, list[int]] = defaultdict(list)
    for core, turns in enumerate(scenario.schedule()):
        for turn in turns:
            at[turn].append(core)
    out = Outcome()
    created = evicted = 0
    reduction = 0.0
    for turn in range(1, TURNS + 1):
        ids = [*(CORE if turn == 1 else ()), *(f"noise-{turn}-{i}" for i in range(scenario.noise))]
        memory.register_many(ids)
        created += len(ids)
        for core in at[turn]:
            ok = memory.recall(CORE[core])
            if not ok:
                out.failed.append((core, turn))
            if trace:
                out.recalls[core].append((turn, ok, memory.stability(CORE[core]) if ok else None))
        gone = memory.step()
        evicted += len(gone)
        for item in gone:
            if item in CORE:
                out.evicted_at[CORE.index(item)] = turn
        reduction += evicted / created
    out.footprint = reduction / TURNS
    out.retention = tuple(memory.retention(c) for c in CORE)
    out.resident_at_end = memory.working_set_size()
    if out.resident_at_end != created - evicted:
        raise AssertionError(
            f"working set {out.resident_at_end} != created {created} - evicted {evicted}"
        )
    return out


# --- the runs the tables need ---------------------------------------------------

Run: TypeAlias = tuple[Policy, Scenario]


@dataclass(frozen=True, slots=True)
class Plan:
    """Seeds per table; ``--quick`` shrinks them."""

    headline_seeds: int = 50
    sweep_seeds: int = 20

    def headline(self) -> list[Run]:
        return [(p, Scenario(s)) for p in (DECAY, WINDOW) for s in range(self.headline_seeds)]

    def noise(self, level: int) -> list[Run]:
        return [
            (p, Scenario(s, noise=level)) for p in (DECAY, WINDOW) for s in range(self.sweep_seeds)
        ]

    def sensitivity(self, policy: Policy) -> list[Run]:
        return [(policy, Scenario(s)) for s in range(self.sweep_seeds)]

    def failure(self) -> list[Run]:
        # No recalls: no randomness left, every seed is the same session.
        return [(p, Scenario(0, recalled=False)) for p in (DECAY, WINDOW)]

    def all_runs(self) -> list[Run]:
        runs = [*self.headline(), *self.failure()]
        for level in NOISE_LEVELS:
            runs += self.noise(level)
        for policy in SENSITIVITY_POLICIES:
            runs += self.sensitivity(policy)
        return list(dict.fromkeys(runs))  # distinct, in order


NOISE_LEVELS = (1, 5, 10, 20)
THRESHOLDS = (0.10, 0.20, 0.30)
WINDOWS = (10, 15, 20, 30, 50)
SENSITIVITY_POLICIES: tuple[Policy, ...] = (
    *(DecayPolicy(threshold=t, baseline_stability=8.0) for t in THRESHOLDS),
    *(WindowPolicy(window=w) for w in WINDOWS),
)
TRACE: Run = (DECAY, Scenario(0))


def label(policy: Policy) -> str:
    if isinstance(policy, DecayPolicy):
        return f"decay(threshold {policy.threshold:.2f}, S0 {policy.baseline_stability:g})"
    return f"window({policy.window})"


# --- tables ---------------------------------------------------------------------

Results: TypeAlias = dict[Run, Outcome]


@dataclass(frozen=True, slots=True)
class Summary:
    retention_mean: float
    retention_stdev: float
    retention_min: float
    retention_max: float
    core_evicted: float
    failed: float
    footprint: float

    @classmethod
    def of(cls, outcomes: Sequence[Outcome]) -> Summary:
        values = [r for o in outcomes for r in o.retention]
        return cls(
            statistics.fmean(values),
            statistics.stdev(values) if len(values) > 1 else 0.0,
            min(values),
            max(values),
            statistics.fmean(sum(t is not None for t in o.evicted_at) for o in outcomes),
            statistics.fmean(len(o.failed) for o in outcomes),
            statistics.fmean(o.footprint for o in outcomes),
        )

    def cells(self) -> list[str]:
        return [
            f"{self.retention_mean:.3f}",
            f"{self.retention_stdev:.3f}",
            f"{self.retention_min:.3f}",
            f"{self.retention_max:.3f}",
            f"{self.core_evicted:.2f}",
            f"{self.failed:.2f}",
            f"{self.footprint:.1%}",
        ]


SUMMARY_HEADER = [
    "retention mean",
    "stdev",
    "min",
    "max",
    "core evicted/session",
    "failed recalls/session",
    "footprint reduction",
]


def summary(results: Results, runs: Sequence[Run]) -> Summary:
    return Summary.of([results[r] for r in runs])


def render_tables(results: Results, trace: dict[Policy, Outcome], plan: Plan) -> str:
    """Every table, as text: a pure function of the session outcomes."""
    parts: list[str] = []

    def section(title: str, body: str) -> None:
        parts.append(f"## {title}\n\n{body}\n")

    rows = []
    for policy in (DECAY, WINDOW):
        runs = [r for r in plan.headline() if r[0] == policy]
        rows.append([label(policy), *summary(results, runs).cells()])
    section(
        f"Headline: {plan.headline_seeds} seeds, {TURNS} turns, 3 core facts recalled 4 times, "
        f"{NOISE} noise items per turn\n(core-fact retention after the last step; "
        "window retention is 1 inside the window, 0 outside)",
        format_table(["policy", *SUMMARY_HEADER], rows),
    )

    rows = []
    for level in NOISE_LEVELS:
        for policy in (DECAY, WINDOW):
            runs = [r for r in plan.noise(level) if r[0] == policy]
            rows.append([str(level), label(policy), *summary(results, runs).cells()])
    section(
        f"Noise sweep: noise items per turn, {plan.sweep_seeds} seeds each\n"
        "(neither policy has a capacity, so noise never pushes a core fact out: "
        "only the footprint moves)",
        format_table(["noise/turn", "policy", *SUMMARY_HEADER], rows),
    )

    rows = []
    by_policy: dict[Policy, Summary] = {}
    for policy in SENSITIVITY_POLICIES:
        by_policy[policy] = summary(results, plan.sensitivity(policy))
        rows.append([label(policy), *by_policy[policy].cells()])
    matrix = []
    for t in THRESHOLDS:
        d = by_policy[DecayPolicy(threshold=t, baseline_stability=8.0)]
        line = [f"decay {t:.2f}"]
        for w in WINDOWS:
            win = by_policy[WindowPolicy(window=w)]
            kept = (3 - d.core_evicted) - (3 - win.core_evicted)
            line.append(f"{kept:+.2f} / {d.footprint - win.footprint:+.1%}")
        matrix.append(line)
    section(
        f"Sensitivity: thresholds x windows, {plan.sweep_seeds} seeds each",
        format_table(["policy", *SUMMARY_HEADER], rows)
        + "\ndecay minus window: core facts kept at end per session / footprint reduction\n\n"
        + format_table(["", *(f"window {w}" for w in WINDOWS)], matrix),
    )

    rows = []
    fail = {
        policy: summary(results, [r for r in plan.failure() if r[0] == policy])
        for policy in (DECAY, WINDOW)
    }
    for policy in (DECAY, WINDOW):
        out = results[next(r for r in plan.failure() if r[0] == policy)]
        first = min(t for t in out.evicted_at if t is not None) if any(out.evicted_at) else None
        rows.append([label(policy), *fail[policy].cells(), "-" if first is None else str(first)])
    advantage = fail[WINDOW].core_evicted - fail[DECAY].core_evicted
    section(
        "Failure case: core facts stated once and never recalled\n"
        "(no randomness left: every seed is the same session)",
        format_table(["policy", *SUMMARY_HEADER, "core evicted at turn"], rows)
        + f"\ndecay advantage in core facts kept: {advantage:+.2f} per session"
        + (" (none: an unused fact gets no protection)" if advantage <= 0 else "")
        + "\n",
    )

    _, scenario = TRACE
    lines = []
    schedule = scenario.schedule()
    for core, name in enumerate(CORE):
        turns = ", ".join(str(t) for t in schedule[core])
        lines.append(f"{name}: registered at turn 1, recalls scheduled at turns {turns}")
        for policy in (DECAY, WINDOW):
            out = trace[policy]
            events: list[str] = []
            evicted = out.evicted_at[core]
            for turn, ok, stability in out.recalls[core]:
                if (
                    evicted is not None
                    and evicted < turn
                    and not any("evicted" in e for e in events)
                ):
                    events.append(f"evicted by the step of turn {evicted}")
                if ok:
                    s = "" if stability is None else f" S={stability:.1f}"
                    events.append(f"t{turn} recall ok{s}")
                else:
                    events.append(f"t{turn} recall FAILS")
            if evicted is not None and not any("evicted" in e for e in events):
                events.append(f"evicted by the step of turn {evicted}")
            end = f"end: retention {out.retention[core]:.3f}" if evicted is None else "end: gone"
            lines.append(f"  {label(policy):34} " + " | ".join([*events, end]))
    section(f"Trace: seed {scenario.seed}, one session per policy", "\n".join(lines) + "\n")
    return "\n".join(parts)


# --- running sessions on each engine ---------------------------------------------


def run_in_memory(runs: Sequence[Run]) -> Results:
    return {run: run_session(InMemoryMemory(run[0]), run[1]) for run in runs}


def _configure(conn: psycopg.Connection[Any]) -> None:
    # The sessions measure semantics, not durability: don't wait for the WAL flush.
    conn.execute("SET synchronous_commit = off")


def run_in_postgres(url: str, runs: Sequence[Run], tag: str, connections: int = 2) -> Results:
    """Each run in its own namespace, spread over ``connections`` connections."""
    local = threading.local()
    stores: list[Store] = []
    lock = threading.Lock()

    def store() -> Store:
        if not hasattr(local, "store"):
            conn = psycopg.connect(url, autocommit=True)
            _configure(conn)
            local.store = Store(conn, owns_connection=True)
            with lock:
                stores.append(local.store)
        return local.store  # type: ignore[no-any-return]

    def one(indexed: tuple[int, Run]) -> tuple[Run, Outcome]:
        i, run = indexed
        memory = store().memory(f"bench-{tag}-{i}", run[0])
        return run, run_session(memory, run[1])

    try:
        with ThreadPoolExecutor(max_workers=connections) as pool:
            return dict(pool.map(one, enumerate(runs)))
    finally:
        for s in stores:
            s.close()


def traces(memory_factory: Callable[[Policy], AnyMemory]) -> dict[Policy, Outcome]:
    """The trace session on each policy, with stability read after every recall."""
    _, scenario = TRACE
    return {p: run_session(memory_factory(p), scenario, trace=True) for p in (DECAY, WINDOW)}


# --- timings --------------------------------------------------------------------

DUE_PER_STEP = 10
MEASURED_STEPS = 15
LONG_LIVED = 1e9


def _grow(memory: AnyMemory, start: int, stop: int, chunk: int = 50_000) -> None:
    """Add long-lived items ``bulk-start`` .. ``bulk-(stop-1)`` (S = 1e9 turns: never due here)."""
    for first in range(start, stop, chunk):
        memory.register_many(
            [f"bulk-{i}" for i in range(first, min(stop, first + chunk))], stability=LONG_LIVED
        )


def _timed_steps(memory: AnyMemory, steps: int) -> list[float]:
    """Time ``steps`` steps, each evicting DUE_PER_STEP items registered the turn before."""
    timings = []
    for k in range(steps + 2):
        # S = 0.5: crossing 0.8 turns after registration, so due at the next step.
        memory.register_many([f"due-{k}-{i}" for i in range(DUE_PER_STEP)], stability=0.5)
        start = time.perf_counter()
        gone = memory.step()
        elapsed = time.perf_counter() - start
        if k >= 2:
            if len(gone) != DUE_PER_STEP:
                raise AssertionError(f"expected {DUE_PER_STEP} evictions, got {len(gone)}")
            timings.append(elapsed)
    return timings


def measure_steps(
    url: str, sizes: Sequence[int], out: Callable[[str], None]
) -> list[dict[str, float]]:
    """Median step time per working-set size (seconds), growing one namespace per engine."""
    results = []
    present = 0
    with psycopg.connect(url, autocommit=True) as conn:
        memory = Store(conn).memory(f"steps-{uuid.uuid4().hex[:8]}", DECAY)
        reference = InMemoryMemory(DECAY)
        for n in sorted(sizes):
            t0 = time.perf_counter()
            _grow(memory, present, n)
            conn.execute("ANALYZE bitemporal.memory_item")
            fill_pg = time.perf_counter() - t0
            t0 = time.perf_counter()
            _grow(reference, present, n)
            fill_mem = time.perf_counter() - t0
            present = n
            results.append(
                {
                    "present_items": n,
                    "postgres_step_s": statistics.median(_timed_steps(memory, MEASURED_STEPS)),
                    "in_memory_step_s": statistics.median(_timed_steps(reference, 3)),
                    "postgres_fill_s": fill_pg,
                    "in_memory_fill_s": fill_mem,
                }
            )
            out(f"  measured {n:,} present items")
    return results


STEP_HEADERS = [
    "present items",
    "PostgreSQL step",
    "vs smallest",
    "in-memory full scan",
    "in-memory / PostgreSQL",
    "grown by (PostgreSQL / in-memory)",
]


def step_rows(results: Sequence[dict[str, float]]) -> list[list[str]]:
    """The step timings as table rows (see STEP_HEADERS)."""
    base = results[0]["postgres_step_s"] if results else 1.0
    return [
        [
            f"{r['present_items']:,}",
            f"{r['postgres_step_s'] * 1e3:.2f} ms",
            f"{r['postgres_step_s'] / base:.2f}x",
            f"{r['in_memory_step_s'] * 1e3:.1f} ms",
            f"{r['in_memory_step_s'] / r['postgres_step_s']:.1f}x",
            f"{r['postgres_fill_s']:.1f} s / {r['in_memory_fill_s']:.1f} s",
        ]
        for r in results
    ]


def recall_rates(url: str, seconds: float) -> list[list[str]]:
    """Recalls per second with the server's own commit settings (durable by default)."""
    items = 1000
    with psycopg.connect(url, autocommit=True) as conn:
        namespace = f"recalls-{uuid.uuid4().hex[:8]}"
        Store(conn).memory(namespace, DECAY).register_many(
            [f"item-{i}" for i in range(2 * items)], stability=LONG_LIVED
        )

    def worker(offset: int, stop: float, counts: list[int], slot: int) -> None:
        with psycopg.connect(url, autocommit=True) as c:
            memory = Store(c).memory(namespace, DECAY)
            rng = random.Random(offset)
            n = 0
            while time.perf_counter() < stop:
                if not memory.recall(f"item-{offset + rng.randrange(items)}"):
                    raise AssertionError("a present item failed to be recalled")
                n += 1
            counts[slot] = n

    rows = []
    for threads in (1, 2):
        counts = [0] * threads
        stop = time.perf_counter() + seconds
        pool = [
            threading.Thread(target=worker, args=(k * items, stop, counts, k))
            for k in range(threads)
        ]
        start = time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        elapsed = time.perf_counter() - start
        rows.append([f"{threads}", f"{sum(counts) / elapsed:,.0f}"])
    return rows


# --- main -----------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks decay", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--url",
        help="database URL (default: $BITEMPORAL_DATABASE_URL, "
        "$DATABASE_URL, else the embedded PostgreSQL 18)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="5 headline seeds, 3 per sweep, step timings at 10k only",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="step timings at 10k, 100k and 1M present items (filling 1M "
        "takes tens of seconds, so the default stops at 100k)",
    )
    parser.add_argument(
        "--sizes",
        help="comma-separated working-set sizes for the step timings "
        "(default 10000,100000; --full: 10000,100000,1000000)",
    )
    parser.add_argument(
        "--tables-only",
        action="store_true",
        help="print only the reproducible tables (for diffing runs)",
    )
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="use the database itself instead of a scratch database "
        "(leaves the benchmark's namespaces behind)",
    )
    parser.add_argument(
        "--connections",
        type=int,
        default=2,
        help="connections the PostgreSQL sessions are spread over (default 2)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0 when both engines printed identical tables."""
    args = parse_args(argv)
    plan = Plan(5, 3) if args.quick else Plan()
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",") if s]
    else:
        sizes = [10_000] if args.quick else [10_000, 100_000]
        if args.full:
            sizes = [10_000, 100_000, 1_000_000]
    write = sys.stdout.write

    def progress(message: str) -> None:
        if not args.tables_only:
            sys.stderr.write(message + "\n")
            sys.stderr.flush()

    url = database_url(args.url)
    if args.in_place:
        return _run(psycopg_url(url), plan, sizes, args, write, progress)
    with scratch_database(url, "bitemporal_bench") as scratch:
        migrate(scratch)
        return _run(psycopg_url(scratch), plan, sizes, args, write, progress)


def _run(
    url: str,
    plan: Plan,
    sizes: Sequence[int],
    args: argparse.Namespace,
    write: Callable[[str], object],
    progress: Callable[[str], None],
) -> int:
    runs = plan.all_runs()
    tag = uuid.uuid4().hex[:8]
    started = time.perf_counter()

    progress(f"{len(runs)} sessions on the in-memory engine ...")
    mem_results = run_in_memory(runs)
    mem_tables = render_tables(mem_results, traces(InMemoryMemory), plan)
    mem_seconds = time.perf_counter() - started

    progress(f"{len(runs)} sessions on PostgreSQL over {args.connections} connections ...")
    t0 = time.perf_counter()
    pg_results = run_in_postgres(url, runs, tag, args.connections)
    with psycopg.connect(url, autocommit=True) as conn:
        _configure(conn)
        store = Store(conn)
        counter = iter(range(10**9))
        pg_tables = render_tables(
            pg_results,
            traces(lambda p: store.memory(f"bench-{tag}-trace-{next(counter)}", p)),
            plan,
        )
        server = conn.execute("SHOW server_version").fetchone()
    pg_seconds = time.perf_counter() - t0

    digest = hashlib.sha256(pg_tables.encode()).hexdigest()[:16]
    write("# python -m benchmarks decay: working memory, decay vs sliding window\n\n")
    write(pg_tables)
    if pg_tables == mem_tables:
        write(
            f"Both engines printed these tables byte for byte (PostgreSQL engine == in-memory "
            f"engine; sha256 {digest}).\n"
        )
    else:
        write("MISMATCH: the in-memory engine printed different tables:\n\n")
        write(mem_tables)
        return 1
    if args.tables_only:
        return 0

    write("\n# Timings (depend on the machine; not part of the reproducible tables)\n\n")
    write(f"server: PostgreSQL {server[0] if server else '?'}\n")
    write(
        f"sessions: {len(runs)} per engine; in-memory {mem_seconds:.1f} s, PostgreSQL "
        f"{pg_seconds:.1f} s over {args.connections} connections (synchronous_commit off)\n\n"
    )
    progress("step timings ...")
    rows = step_rows(measure_steps(url, sizes, progress))
    write(
        f"step() with N present items, each step evicting {DUE_PER_STEP} due items "
        f"(median of {MEASURED_STEPS} PostgreSQL steps / 3 in-memory steps, end to end from Python)\n\n"
    )
    write(format_table(STEP_HEADERS, rows))
    if max(sizes) < 1_000_000:
        write("(1,000,000 present items: run with --full; filling them takes tens of seconds)\n")
    progress("recall rates ...")
    seconds = 1.0 if args.quick else 2.0
    write(f"\nrecalls per second, durable commits (server defaults), {seconds:.0f} s each\n\n")
    write(format_table(["connections", "recalls/s"], recall_rates(url, seconds)))
    write(f"\ntotal {time.perf_counter() - started:.1f} s\n")
    return 0
