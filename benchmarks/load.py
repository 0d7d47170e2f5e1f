"""Load run: concurrent writers and readers, then every invariant checked.

    python -m benchmarks load [--writers 8] [--readers 8] [--seconds 60] [--keys 10000]

Two phases, each for ``--seconds``: all writers on one hot key, then writers
spread over ``--keys`` keys. Writers record random values over random valid
periods (splitting each other's versions) and sometimes retract; readers ask
``resolve`` at random (valid_at, known_at), including knowledge times already
in the past, and keep those answers. Afterwards it verifies that no source
holds overlapping versions within a knowledge period, that no known period is
empty, and that every answer captured for a past knowledge time is unchanged.
It reports operations per second, p50/p99 latency and errors (deadlocks and
serialization failures included; the goal is none).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from bitemporal import Key, Store, migrate
from bitemporal.database import database_url, scratch_database
from bitemporal.formatting import format_table

DAY0 = datetime(2026, 1, 1, tzinfo=UTC)

SETTLED = """SELECT least(now(), min(xact_start)) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid()"""


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, exc: BaseException) -> None:
        name = type(exc).__name__
        self.errors[name] = self.errors.get(name, 0) + 1


@dataclass
class Phase:
    name: str
    seconds: float
    writes: Tally
    reads: Tally
    # (key, valid_at, known_at, values, version ids) captured for past knowledge times.
    captured: list[tuple[Key, datetime, datetime, tuple[Any, ...], tuple[int, ...]]]


def _writer(url: str, keys: list[Key], stop: threading.Event, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    with psycopg.connect(url, autocommit=True) as conn:
        store = Store(conn)
        while not stop.is_set():
            key = rng.choice(keys)
            start = rng.randrange(0, 60)
            valid_from, valid_to = (
                DAY0 + timedelta(days=start),
                DAY0 + timedelta(days=start + rng.randrange(1, 30)),
            )
            began = time.perf_counter()
            try:
                if rng.random() < 0.1:
                    store.facts.retract(
                        key, source=f"s{rng.randrange(2)}", valid_from=valid_from, valid_to=valid_to
                    )
                else:
                    store.facts.record(
                        key,
                        rng.randrange(5),
                        source=f"s{rng.randrange(2)}",
                        valid_from=valid_from,
                        valid_to=valid_to,
                    )
            except Exception as exc:  # noqa: BLE001 - counted and reported
                tally.error(exc)
                continue
            tally.latencies_ms.append((time.perf_counter() - began) * 1000)


def _reader(
    url: str, keys: list[Key], stop: threading.Event, seed: int, tally: Tally, captured: list[Any]
) -> None:
    rng = random.Random(seed)
    with psycopg.connect(url, autocommit=True) as conn:
        store = Store(conn)
        while not stop.is_set():
            key = rng.choice(keys)
            valid_at = DAY0 + timedelta(days=rng.uniform(0, 90))
            # Knowledge time is the writing transaction's start, so an answer is
            # final only for knowledge times before every running transaction began.
            settled = conn.execute(SETTLED).fetchone()
            assert settled is not None
            known_at = settled[0] - timedelta(milliseconds=rng.uniform(0, 500))
            began = time.perf_counter()
            try:
                answer = store.facts.resolve(key, valid_at=valid_at, known_at=known_at)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                tally.error(exc)
                continue
            tally.latencies_ms.append((time.perf_counter() - began) * 1000)
            if len(captured) < 5000:
                captured.append(
                    (
                        key,
                        valid_at,
                        known_at,
                        answer.values,
                        tuple(v.version_id for v in answer.versions),
                    )
                )


def run_phase(
    url: str, name: str, keys: list[Key], writers: int, readers: int, seconds: float
) -> Phase:
    with psycopg.connect(url, autocommit=True) as conn:
        store = Store(conn)
        for key in keys:  # every key exists before readers ask about it
            store.facts.record(key, 0, source="s0")
    stop = threading.Event()
    writes, reads = Tally(), Tally()
    captured: list[Any] = []
    threads = [
        threading.Thread(target=_writer, args=(url, keys, stop, i, writes)) for i in range(writers)
    ]
    threads += [
        threading.Thread(target=_reader, args=(url, keys, stop, 1000 + i, reads, captured))
        for i in range(readers)
    ]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return Phase(name, seconds, writes, reads, captured)


def verify(url: str, phases: list[Phase]) -> dict[str, int]:
    """Counts of invariant violations (all must be zero)."""
    with psycopg.connect(url, autocommit=True) as conn:
        overlaps = conn.execute(
            """SELECT count(*) FROM bitemporal.fact_version a JOIN bitemporal.fact_version b
                 ON a.entity = b.entity AND a.attribute = b.attribute AND a.source = b.source
                AND a.version_id < b.version_id
                AND a.valid_period && b.valid_period AND a.known_period && b.known_period"""
        ).fetchone()
        empty = conn.execute(
            "SELECT count(*) FROM bitemporal.fact_version WHERE isempty(known_period) OR isempty(valid_period)"
        ).fetchone()
        store = Store(conn)
        changed = 0
        for phase in phases:
            for key, valid_at, known_at, values, ids in phase.captured:
                again = store.facts.resolve(key, valid_at=valid_at, known_at=known_at)
                if again.values != values or tuple(v.version_id for v in again.versions) != ids:
                    changed += 1
    assert overlaps is not None and empty is not None
    return {
        "overlapping versions": overlaps[0],
        "empty periods": empty[0],
        "past answers changed": changed,
    }


def _stats(tally: Tally, seconds: float) -> tuple[str, str, str, str]:
    if not tally.latencies_ms:
        return ("0", "-", "-", str(sum(tally.errors.values())))
    ordered = sorted(tally.latencies_ms)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{len(ordered) / seconds:,.0f}",
        f"{statistics.median(ordered):.2f}",
        f"{p99:.2f}",
        str(sum(tally.errors.values())),
    )


def report(phases: list[Phase], violations: dict[str, int], server: int) -> str:
    rows = []
    for phase in phases:
        rows.append((phase.name, "record/retract", *_stats(phase.writes, phase.seconds)))
        rows.append((phase.name, "resolve", *_stats(phase.reads, phase.seconds)))
    errors = {
        name: n
        for phase in phases
        for tally in (phase.writes, phase.reads)
        for name, n in tally.errors.items()
    }
    text = f"PostgreSQL {server}\n" + format_table(
        ("phase", "operation", "ops/s", "p50 ms", "p99 ms", "errors"), rows
    )
    text += (
        "errors by kind: "
        + (", ".join(f"{k}={v}" for k, v in sorted(errors.items())) or "none")
        + "\n"
    )
    text += "invariants: " + ", ".join(f"{k}={v}" for k, v in violations.items()) + "\n"
    return text


def run(
    url: str, writers: int, readers: int, seconds: float, keys: int
) -> tuple[list[Phase], dict[str, int], int]:
    with psycopg.connect(url) as conn:
        server = conn.info.server_version // 10000
    phases = [
        run_phase(url, "one hot key", [Key("load:hot", "a")], writers, readers, seconds),
        run_phase(
            url,
            f"{keys:,} keys",
            [Key(f"load:{n}", "a") for n in range(keys)],
            writers,
            readers,
            seconds,
        ),
    ]
    return phases, verify(url, phases), server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks load", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", help="server to create a scratch database on (default: as for connect)"
    )
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--keys", type=int, default=10_000)
    args = parser.parse_args(argv)
    with scratch_database(database_url(args.url), "bitemporal_load") as url:
        migrate(url)
        phases, violations, server = run(url, args.writers, args.readers, args.seconds, args.keys)
    sys.stdout.write(report(phases, violations, server))
    failed = any(violations.values()) or any(t.errors for p in phases for t in (p.writes, p.reads))
    return 1 if failed else 0
