"""What a temporal reference costs a write: a child table's writes with it and without it.

    python -m benchmarks references [--url URL] [--citus-url URL] [--seconds 5] [--rounds 3]

A parent table ``customer (id)`` and a child ``purchase (customer_id, purchase_id)``, one
current version of each key; one writer supersedes a purchase's version, one change a
transaction, through the Python API (``store.app_tables.record``), with the temporal
reference ``purchase (customer_id) -> customer`` and without it (the baseline), taking turns
round after round (each round in the other order; the reference is dropped and added
again between them). On plain PostgreSQL (``--url``, a scratch database) the reference is
a pair of constraint triggers; on Citus (``--citus-url``, a scratch database on every node)
both tables are distributed and co-located, and the write function checks the written
key on its worker (migration 0030). It prints the writes per second of each and the ratio
of checked to unchecked.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from bitemporal import Store, migrate
from bitemporal.database import database_url, psycopg_url, scratch_database
from bitemporal.formatting import format_table

from .arguments import count
from .citus import citus_scratch_database, migrate_citus
from .turns import turns

SINCE = datetime(2026, 1, 1, tzinfo=UTC)
CHANGED = datetime(2026, 6, 1, tzinfo=UTC)
REFERENCE = "purchase_customer"


@dataclass(frozen=True)
class Phase:
    """One timed phase: the writer on ``target`` for ``seconds``, with the reference or not."""

    target: str
    reference: bool
    round: int
    writes: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.writes / self.seconds


def prepare(url: str, keys: int, distributed: bool) -> None:
    """The two tables, distributed on Citus, and one version of every key from ``SINCE`` on."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE customer (id integer, name text)")
        conn.execute(
            "CREATE TABLE purchase (customer_id integer, purchase_id integer, amount numeric)"
        )
        conn.execute("SELECT bitemporal.enable_table('customer', ARRAY['id'])")
        conn.execute(
            "SELECT bitemporal.enable_table('purchase', ARRAY['customer_id', 'purchase_id'])"
        )
        if distributed:
            conn.execute("SELECT bitemporal.distribute_table('customer')")
            conn.execute("SELECT bitemporal.distribute_table('purchase')")
        conn.execute(
            "SELECT count(customer_record(g, 'c', valid_from => %s)) FROM generate_series(1, %s) g",
            (SINCE, keys),
        )
        conn.execute(
            "SELECT count(purchase_record(g, 1, 0, valid_from => %s))"
            " FROM generate_series(1, %s) g",
            (SINCE, keys),
        )


def set_reference(url: str, on: bool) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        present = conn.execute(
            "SELECT count(*) FROM bitemporal.app_reference WHERE name = %s", (REFERENCE,)
        ).fetchone()
        if on and present == (0,):
            conn.execute(
                "SELECT bitemporal.add_reference('purchase', ARRAY['customer_id'], 'customer', %s)",
                (REFERENCE,),
            )
        elif not on and present == (1,):
            conn.execute("SELECT bitemporal.drop_reference('purchase', %s)", (REFERENCE,))


def phase(url: str, target: str, keys: int, seconds: float, reference: bool, round_: int) -> Phase:
    set_reference(url, reference)
    rng = random.Random(round_)
    with psycopg.connect(url, autocommit=True) as conn:
        store = Store(conn)
        writes = 0
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            writes += 1
            row = {"customer_id": rng.randint(1, keys), "purchase_id": 1, "amount": writes}
            store.app_tables.record("public.purchase", row, valid_from=CHANGED)
        elapsed = time.perf_counter() - began
    return Phase(target, reference, round_, writes, elapsed)


def run(url: str, target: str, keys: int, seconds: float, rounds: int) -> list[Phase]:
    """Every phase on one prepared database, the states taking turns."""
    phases = []
    for r in range(rounds):
        for reference in (False, True) if r % 2 == 0 else (True, False):
            phases.append(phase(url, target, keys, seconds, reference, r + 1))
    return phases


def _note(message: str) -> None:
    sys.stderr.write(message + "\n")


@contextmanager
def target_database(url: str, citus: bool) -> Iterator[str]:
    """A migrated scratch database: on Citus, on every node and distributed."""
    if citus:
        with citus_scratch_database(url, shards=4) as scratch:
            migrate_citus(scratch, _note)
            yield psycopg_url(scratch)
    else:
        with scratch_database(database_url(url), "bitemporal_references") as scratch:
            migrate(scratch)
            yield psycopg_url(scratch)


def summary(phases: Sequence[Phase]) -> list[dict[str, Any]]:
    """Per target: the median writes/s without the reference and with it, and the ratio of
    with to without (each round's, and the medians')."""
    rows = []
    for target in dict.fromkeys(p.target for p in phases):
        t = turns(
            [p.per_second for p in phases if p.target == target and not p.reference],
            [p.per_second for p in phases if p.target == target and p.reference],
        )
        rows.append(
            {
                "target": target,
                "unchecked_writes_per_s": t.baseline,
                "checked_writes_per_s": t.other,
                "checked_vs_unchecked": t.ratio,
                "checked_vs_unchecked_by_round": t.by_round,
            }
        )
    return rows


def report(rows: Sequence[dict[str, Any]]) -> str:
    table = format_table(
        (
            "target",
            "no reference (baseline) writes/s",
            "with reference writes/s",
            "ratio",
            "rounds",
        ),
        [
            (
                r["target"],
                f"{r['unchecked_writes_per_s']:,.0f}",
                f"{r['checked_writes_per_s']:,.0f}",
                f"{r['checked_vs_unchecked']:.2f}x",
                ", ".join(f"{x:.2f}x" for x in r["checked_vs_unchecked_by_round"]),
            )
            for r in rows
        ],
    )
    return (
        "A child's write, one change a transaction, with its temporal reference and without\n"
        + table
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks references", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", help="server to create a scratch database on (default: as for connect)"
    )
    parser.add_argument(
        "--citus-url", help="a Citus coordinator's database with its workers added (optional)"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="per phase")
    parser.add_argument("--rounds", type=count, default=3)
    parser.add_argument("--keys", type=count, default=1000)
    parser.add_argument("--json", help="write every phase and the summary to this file")
    args = parser.parse_args(argv)
    targets = [("PostgreSQL", args.url, False)]
    if args.citus_url:
        targets.append(("Citus", args.citus_url, True))
    phases: list[Phase] = []
    for label, url, citus in targets:
        with target_database(url, citus) as scratch:
            with psycopg.connect(scratch) as conn:
                server = (conn.info.parameter_status("server_version") or "?").split()[0]
            prepare(scratch, args.keys, citus)
            phases += run(scratch, f"{label} {server}", args.keys, args.seconds, args.rounds)
    rows = summary(phases)
    sys.stdout.write(report(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "command": "python -m benchmarks references " + " ".join(argv or sys.argv[1:]),
                    "phases": [asdict(p) | {"per_second": p.per_second} for p in phases],
                    "summary": rows,
                },
                f,
                indent=1,
            )
    return 0
