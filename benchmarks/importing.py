"""``bitemporal import`` against the bulk path under it, on the same rows, in the same run.

    python -m benchmarks import [--url URL] [--rows N] [--batch-size N]
                                [--workload new|history|changes] [--jobs N]

One CSV file of ``--rows`` rows (the workloads of ``python -m benchmarks facts --ingest``:
*new keys*, one row per key with the default knowledge time; *history*, ten changes of each
of a tenth as many keys, each with its ``known_at``; *changes*, the same rows without
``known_at``: each batch's transaction time). Each method runs in a fresh scratch database
on the server:

* ``record_many``: the file's rows, read into memory beforehand (untimed), recorded
  ``--batch-size`` rows per call;
* ``bitemporal import``: the command itself (``cli.main``) on the file, same batch size:
  reading, parsing and checking the file are timed, as a user waits for them;
* ``bitemporal import`` again on the same file: every row is already recorded, and it
  must write no version;
* ``bitemporal import --jobs N`` on the file, in a fresh database: ``N`` lanes of batches
  at once, each key's rows in one lane (the same versions for rows with ``known_at``).

It prints rows/s of each, the ratio of the import's time to record_many's (the goal is at
most 1.5) and the parallel import's speed-up over the import, and exits 1 if the re-import
wrote a version.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from bitemporal import Store, cli, migrate
from bitemporal.database import database_url, scratch_database
from bitemporal.formatting import format_table
from bitemporal.importing import read_csv
from bitemporal.jsonvalues import dumps
from bitemporal.record_many import FIELDS

from .arguments import count
from .facts import EPOCH, HISTORY_CHANGES

GOAL_RATIO = 1.5


def write_csv(path: Path, workload: str, count: int) -> None:
    """The workload's rows as a CSV file ``bitemporal import`` reads."""
    with path.open("w", encoding="utf-8", newline="") as file:
        out = csv.writer(file)
        out.writerow(FIELDS)
        if workload == "new":
            for i in range(count):
                out.writerow((f"e{i}", "a", "s", i, EPOCH.isoformat(), "", "", ""))
            return
        keys = max(count // HISTORY_CHANGES, 1)
        for c in range(HISTORY_CHANGES):
            known_at = (EPOCH + timedelta(hours=c)).isoformat() if workload == "history" else ""
            for k in range(keys):
                out.writerow(
                    (
                        f"e{k}",
                        "a",
                        "s",
                        c,
                        (EPOCH + timedelta(days=c)).isoformat(),
                        "",
                        known_at,
                        "",
                    )
                )


def _versions(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()
    assert row is not None
    return int(row[0])


def _import(url: str, path: Path, batch_size: int, jobs: int = 1) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(
            [
                *("--url", url, "import", str(path)),
                *("--batch-size", str(batch_size), "--jobs", str(jobs), "--quiet"),
            ]
        )
    seconds = time.perf_counter() - start
    if code:
        raise SystemExit(f"bitemporal import failed (exit {code})")
    return seconds


def measure(url: str, rows: int, batch_size: int, workload: str, jobs: int) -> dict[str, Any]:
    """Seconds and versions written for record_many, import, re-import and the import in
    ``jobs`` lanes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "facts.csv"
        write_csv(path, workload, rows)
        with path.open(encoding="utf-8", newline="") as file:
            rows_read = [row for _, row in read_csv(file)]
        data = [row for row in rows_read if isinstance(row, dict)]
        assert len(data) == len(rows_read), "the benchmark's file has no bad row"
        results: dict[str, Any] = {
            "rows": len(data),
            "batch_size": batch_size,
            "workload": workload,
            "jobs": jobs,
        }
        with scratch_database(url, "bitemporal_bench_import_many") as db:
            migrate(db)
            with psycopg.connect(db, autocommit=True) as conn:
                results["server_version"] = conn.info.server_version // 10000
                facts = Store(conn).facts
                start = time.perf_counter()
                for first in range(0, len(data), batch_size):
                    facts.record_many(data[first : first + batch_size])
                results["record_many"] = (time.perf_counter() - start, _versions(db))
        with scratch_database(url, "bitemporal_bench_import_file") as db:
            migrate(db)
            seconds = _import(db, path, batch_size)
            results["import"] = (seconds, _versions(db))
            seconds = _import(db, path, batch_size)
            results["re-import"] = (seconds, _versions(db) - results["import"][1])
        with scratch_database(url, "bitemporal_bench_import_jobs") as db:
            migrate(db)
            results["parallel-import"] = (_import(db, path, batch_size, jobs), _versions(db))
    return results


def report(results: dict[str, Any]) -> str:
    rows = results["rows"]
    table = format_table(
        ("method", "seconds", "rows/s", "versions written"),
        [
            (name, f"{seconds:.2f}", f"{rows / seconds:,.0f}", f"{versions:,}")
            for name in ("record_many", "import", "re-import", "parallel-import")
            for seconds, versions in [results[name]]
        ],
    )
    ratio = results["import"][0] / results["record_many"][0]
    speedup = results["import"][0] / results["parallel-import"][0]
    return (
        f"{rows:,} rows ({results['workload']}), batches of {results['batch_size']:,}, "
        f"PostgreSQL {results['server_version']}; parallel-import: --jobs {results['jobs']}\n"
        f"{table}"
        f"import / record_many: {ratio:.2f}x (goal: at most {GOAL_RATIO}x); "
        f"re-import wrote {results['re-import'][1]} versions (goal: 0); "
        f"parallel-import: {speedup:.2f}x the rows/s of import\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks import", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", help="server (default: $BITEMPORAL_DATABASE_URL, $DATABASE_URL, embedded)"
    )
    parser.add_argument("--rows", type=count, default=100_000)
    parser.add_argument("--batch-size", type=count, default=10_000)
    parser.add_argument("--workload", choices=("new", "history", "changes"), default="history")
    parser.add_argument("--jobs", type=count, default=2, help="lanes of the parallel import")
    args = parser.parse_args(argv)
    results = measure(database_url(args.url), args.rows, args.batch_size, args.workload, args.jobs)
    sys.stdout.write(report(results))
    print(dumps(results))
    return 1 if results["re-import"][1] else 0
