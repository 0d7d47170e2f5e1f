"""Fact-store benchmark: as-of lookups against a primary-key lookup, in the same run.

    bitemporal bench facts [--keys N] [--changes N] [--samples N] [--json FILE]

It fills a scratch database with ``keys x changes`` changes, each of which
closes the key's open version and re-records its remainder (what record()
leaves behind: ``2*changes - 1`` versions per key), and a plain table with the
same number of rows and a bigint primary key (the baseline). Then, for random
keys, it measures

* on the server: ``EXPLAIN (ANALYZE)`` execution time of the as-of lookup, for
  current knowledge and for a past knowledge time, and of ``resolve()``;
* end to end from Python: ``store.facts.resolve`` and a primary-key ``SELECT``,

and prints medians, p99s and ratios to the primary-key lookup. Ratios are
what to compare across machines: absolute times on shared machines are noisy.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from ..database import database_url, scratch_database
from ..facts import Key
from ..migrations import migrate
from ..report import format_table
from ..store import Store

EPOCH = datetime(2020, 1, 1, tzinfo=UTC)

# Change i of key k: value i valid from day i, known from hour i; it closes the
# previous open version and re-records its remainder [day i-1, day i).
FILL = (
    """INSERT INTO bitemporal.fact_key
       SELECT 'e' || k, 'a', %(epoch)s, %(epoch)s + (%(changes)s - 1) * interval '1 hour', pg_current_xact_id()
         FROM generate_series(1, %(keys)s) k""",
    """INSERT INTO bitemporal.fact_version (entity, attribute, source, value, valid_period, known_period)
       SELECT 'e' || k, 'a', 's', to_jsonb(i),
              tstzrange(%(epoch)s + i * interval '1 day', NULL, '[)'),
              tstzrange(%(epoch)s + i * interval '1 hour',
                        CASE WHEN i < %(changes)s - 1 THEN %(epoch)s + (i + 1) * interval '1 hour' END, '[)')
         FROM generate_series(1, %(keys)s) k, generate_series(0, %(changes)s - 1) i
       UNION ALL
       SELECT 'e' || k, 'a', 's', to_jsonb(i),
              tstzrange(%(epoch)s + i * interval '1 day', %(epoch)s + (i + 1) * interval '1 day', '[)'),
              tstzrange(%(epoch)s + (i + 1) * interval '1 hour', NULL, '[)')
         FROM generate_series(1, %(keys)s) k, generate_series(0, %(changes)s - 2) i
        ORDER BY 1, 5""",
)


def fill(conn: psycopg.Connection[Any], keys: int, changes: int) -> int:
    """Fill an empty, migrated store; returns the number of versions.

    The exclusion constraint is dropped during the load and re-added after it
    (which validates every row): building the GiST index once is much faster
    than growing it row by row. Bulk ingestion proper is record_many's job.
    """
    params = {"keys": keys, "changes": changes, "epoch": EPOCH}
    with conn.transaction():
        conn.execute("ALTER TABLE bitemporal.fact_version DROP CONSTRAINT fact_version_no_overlap")
        for statement in FILL:
            conn.execute(statement, params)
        conn.execute(
            "ALTER TABLE bitemporal.fact_version ADD CONSTRAINT fact_version_no_overlap "
            "EXCLUDE USING gist (entity WITH =, attribute WITH =, source WITH =, "
            "valid_period WITH &&, known_period WITH &&)"
        )
    conn.execute("VACUUM ANALYZE bitemporal.fact_version")
    conn.execute("VACUUM ANALYZE bitemporal.fact_key")
    row = conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()
    assert row is not None
    return int(row[0])


def fill_baseline(conn: psycopg.Connection[Any], rows: int) -> None:
    conn.execute("CREATE TABLE bench_plain (id bigint PRIMARY KEY, value jsonb NOT NULL)")
    conn.execute("INSERT INTO bench_plain SELECT g, to_jsonb(g) FROM generate_series(1, %s) g", (rows,))
    conn.execute("VACUUM ANALYZE bench_plain")


def server_ms(conn: psycopg.Connection[Any], query: str, params: Sequence[Any]) -> float:
    row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}", params).fetchone()
    assert row is not None
    return float(row[0][0]["Execution Time"])


def client_ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def measure(url: str, keys: int, changes: int, samples: int, seed: int) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        versions = fill(conn, keys, changes)
        fill_baseline(conn, versions)
        server = conn.info.server_version // 10000
        store = Store(conn)
        rng = random.Random(seed)
        questions = [
            (rng.randrange(1, keys + 1), rng.randrange(0, changes), rng.randrange(1, versions + 1))
            for _ in range(samples)
        ]
        # Warm caches and plans first; then every operation runs on the same questions.
        timings: dict[str, list[float]] = {name: [] for name in OPERATIONS}
        for warm in (True, False):
            for k, change, pk in questions:
                valid_at = EPOCH + timedelta(days=change, hours=12)
                past = EPOCH + timedelta(hours=change, minutes=30)
                entity = f"e{k}"
                results = {
                    "primary key (server)": server_ms(
                        conn, "SELECT value FROM bench_plain WHERE id = %s", (pk,)),
                    "as_of, current knowledge (server)": server_ms(
                        conn, "SELECT * FROM bitemporal.as_of(%s, 'a', %s)", (entity, valid_at)),
                    "as_of, past knowledge (server)": server_ms(
                        conn, "SELECT * FROM bitemporal.as_of(%s, 'a', %s, %s)", (entity, valid_at, past)),
                    "resolve (server)": server_ms(
                        conn, "SELECT * FROM bitemporal.resolve(%s, 'a', %s)", (entity, valid_at)),
                    "primary key (Python, end to end)": client_ms(
                        lambda: conn.execute("SELECT value FROM bench_plain WHERE id = %s", (pk,)).fetchone()),
                    "resolve (Python, end to end)": client_ms(
                        lambda: store.facts.resolve(Key(entity, "a"), valid_at=valid_at)),
                }
                if not warm:
                    for name, value in results.items():
                        timings[name].append(value)
        plan = "\n".join(
            row[0] for row in conn.execute(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                "SELECT * FROM bitemporal.as_of(%s, 'a', %s)",
                (f"e{questions[0][0]}", EPOCH + timedelta(days=questions[0][1], hours=12)),
            ))
    return {"server_version": server, "versions": versions, "keys": keys, "samples": samples,
            "timings_ms": timings, "as_of_plan": plan}


OPERATIONS = (
    "primary key (server)",
    "as_of, current knowledge (server)",
    "as_of, past knowledge (server)",
    "resolve (server)",
    "primary key (Python, end to end)",
    "resolve (Python, end to end)",
)
BASELINE = {"(server)": "primary key (server)", "(Python, end to end)": "primary key (Python, end to end)"}


def report(result: dict[str, Any]) -> str:
    rows = []
    timings = result["timings_ms"]
    for name in OPERATIONS:
        median, p99 = summary(timings[name])
        baseline = next(b for suffix, b in BASELINE.items() if name.endswith(suffix))
        ratio = median / summary(timings[baseline])[0]
        rows.append((name, f"{median:.3f}", f"{p99:.3f}", f"{ratio:.1f}x"))
    head = (f"PostgreSQL {result['server_version']}, {result['versions']:,} versions "
            f"({result['keys']:,} keys), {result['samples']} random lookups each\n")
    table = format_table(("operation", "median ms", "p99 ms", "vs primary key"), rows)
    return f"{head}{table}\nPlan of one as-of lookup:\n{result['as_of_plan']}\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bitemporal bench facts", description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="server to create a scratch database on (default: as for connect)")
    parser.add_argument("--keys", type=int, default=5000)
    parser.add_argument("--changes", type=int, default=100, help="changes per key (versions = 2*changes-1)")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="also write the raw timings here")
    args = parser.parse_args(argv)
    with scratch_database(database_url(args.url), "bitemporal_bench") as url:
        migrate(url)
        result = measure(url, args.keys, args.changes, args.samples, args.seed)
    sys.stdout.write(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 0
