"""Concurrent writers with the invalidation NOTIFY on (as migrated) and off.

    python -m benchmarks notify [--url URL] [--writers 1,8] [--seconds 5] [--rounds 3]

PostgreSQL commits the transactions that sent a ``NOTIFY`` one at a time (each holds a lock
from just before its commit record until after it), so writers whose changes supersede
versions wait for one another's commits. Each writer has a connection and keys of its own
(no two writers share a key: only their commits meet) and supersedes the one current
version of a key per transaction, through the Python API. The two states take turns, round
after round, in one scratch database (each round in the other order); it prints the writes
per second of each and the ratio of off to on, the baseline, per number of writers.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from bitemporal import Key, Store, migrate
from bitemporal.database import database_url, psycopg_url, scratch_database
from bitemporal.formatting import format_table

from .arguments import count
from .turns import turns

SINCE = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Phase:
    """One timed phase: ``writers`` writers for ``seconds`` with the NOTIFY ``notify``."""

    writers: int
    notify: bool
    round: int
    writes: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.writes / self.seconds


def _keys(writer: int, keys_per_writer: int) -> list[Key]:
    return [Key(f"notify:{writer}:{k}", "a") for k in range(keys_per_writer)]


def fill(url: str, writers: int, keys_per_writer: int) -> None:
    """One current version (valid from ``SINCE`` on) of every key a writer will change."""
    entities = [k.entity for w in range(writers) for k in _keys(w, keys_per_writer)]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT count(*) FROM unnest(%s::text[]) e, bitemporal.record(e, 'a', 's', '0', %s)",
            (entities, SINCE),
        )


def _writer(
    url: str, keys: list[Key], start: threading.Barrier, stop: threading.Event, counts: list[int]
) -> None:
    rng = random.Random(keys[0].entity)
    with psycopg.connect(url, autocommit=True) as conn:
        store = Store(conn)
        start.wait()
        n = 0
        while not stop.is_set():
            n += 1
            store.facts.record(rng.choice(keys), n, source="s", valid_from=SINCE)
        counts.append(n)


def phase(
    url: str, writers: int, keys_per_writer: int, seconds: float, notify: bool, round_: int
) -> Phase:
    with psycopg.connect(url, autocommit=True) as conn:
        Store(conn).provenance.set_notify(notify)
    # A writer that cannot connect breaks the barrier instead of leaving the others waiting.
    start = threading.Barrier(writers + 1, timeout=60)
    stop = threading.Event()
    counts: list[int] = []
    threads = [
        threading.Thread(target=_writer, args=(url, _keys(w, keys_per_writer), start, stop, counts))
        for w in range(writers)
    ]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    if len(counts) != writers:
        raise RuntimeError(f"{writers - len(counts)} of {writers} writers failed")
    return Phase(writers, notify, round_, sum(counts), elapsed)


def run(
    url: str, writer_counts: Sequence[int], seconds: float, rounds: int, keys_per_writer: int
) -> list[Phase]:
    """Every phase, the states taking turns (each round in the other order); the NOTIFY is
    on again at the end."""
    fill(url, max(writer_counts), keys_per_writer)
    phases = []
    try:
        for writers in writer_counts:
            for r in range(rounds):
                for notify in (True, False) if r % 2 == 0 else (False, True):
                    phases.append(phase(url, writers, keys_per_writer, seconds, notify, r + 1))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            Store(conn).provenance.set_notify(True)
    return phases


def summary(phases: Sequence[Phase]) -> list[dict[str, Any]]:
    """Per number of writers: the median writes/s with the NOTIFY on and off, and the
    ratio of off to on (each round's, and the medians')."""
    rows = []
    for writers in sorted({p.writers for p in phases}):
        t = turns(
            [p.per_second for p in phases if p.writers == writers and p.notify],
            [p.per_second for p in phases if p.writers == writers and not p.notify],
        )
        rows.append(
            {
                "writers": writers,
                "on_writes_per_s": t.baseline,
                "off_writes_per_s": t.other,
                "off_vs_on": t.ratio,
                "off_vs_on_by_round": t.by_round,
            }
        )
    return rows


def report(rows: Sequence[dict[str, Any]], server: str) -> str:
    table = format_table(
        ("writers", "NOTIFY on (baseline) writes/s", "NOTIFY off writes/s", "off vs on", "rounds"),
        [
            (
                r["writers"],
                f"{r['on_writes_per_s']:,.0f}",
                f"{r['off_writes_per_s']:,.0f}",
                f"{r['off_vs_on']:.2f}x",
                ", ".join(f"{x:.2f}x" for x in r["off_vs_on_by_round"]),
            )
            for r in rows
        ],
    )
    return (
        f"Writers superseding versions, one change a transaction, PostgreSQL {server}: "
        "medians of the rounds\n" + table
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks notify", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", help="server to create a scratch database on (default: as for connect)"
    )
    parser.add_argument(
        "--writers", default="1,8", help="numbers of concurrent writers (default 1,8)"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="per phase")
    parser.add_argument("--rounds", type=count, default=3)
    parser.add_argument("--keys-per-writer", type=count, default=500)
    parser.add_argument("--json", help="write every phase and the summary to this file")
    args = parser.parse_args(argv)
    writer_counts = [int(w) for w in args.writers.split(",") if w]
    with scratch_database(database_url(args.url), "bitemporal_notify") as scratch:
        migrate(scratch)
        url = psycopg_url(scratch)
        with psycopg.connect(url) as conn:
            server = conn.info.parameter_status("server_version") or "?"
        phases = run(url, writer_counts, args.seconds, args.rounds, args.keys_per_writer)
    rows = summary(phases)
    sys.stdout.write(report(rows, server))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "server": server,
                    "command": "python -m benchmarks notify " + " ".join(argv or sys.argv[1:]),
                    "phases": [asdict(p) | {"per_second": p.per_second} for p in phases],
                    "summary": rows,
                },
                f,
                indent=1,
            )
    return 0
