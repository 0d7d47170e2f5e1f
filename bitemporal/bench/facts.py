"""Fact-store benchmark: as-of lookups against a primary-key lookup, and ingestion
against plain ``COPY``, each in the same run.

    bitemporal bench facts [--keys N] [--changes N] [--samples N] [--json FILE]
    bitemporal bench facts --ingest [--ingest-rows N] [--batch-size N] [--record-rows N] [--json FILE]

It fills a scratch database with ``keys x changes`` changes, each of which
closes the key's open version and re-records its remainder (what record()
leaves behind: ``2*changes - 1`` versions per key), and a plain table with the
same number of rows and a bigint primary key (the baseline). Then, for random
keys, it measures

* on the server: ``EXPLAIN (ANALYZE)`` execution time of the as-of lookup, for
  current knowledge and for a past knowledge time, and of ``resolve()``;
* end to end from Python: ``store.facts.resolve`` and a primary-key ``SELECT``,

and prints medians, p99s and ratios to the primary-key lookup. The same
questions go to the designs people use instead, built from the same data: a
"latest row per key" table and a single-axis (valid-time only) history; the
report counts how often each answers differently from ``as_of``. Ratios are
what to compare across machines: absolute times on shared machines are noisy.

``--ingest`` measures ingestion instead (and only that): the same rows written
by each method, each method in a fresh scratch database of its own, timed end
to end from Python (conversion of the rows included), for two workloads:

* *new keys*: ``--ingest-rows`` rows, one per key, knowledge time the
  transaction's (a snapshot import: every row is one new version);
* *history*: ``--ingest-rows`` rows, ten changes for each of a tenth as many
  keys, in time order (all keys' first change, then all second changes, ...),
  change i valid from day i and known from hour i (explicit knowledge times):
  each change closes the key's open version and re-records its remainder, so
  n changes leave 2n-1 versions.

The methods: ``COPY`` of the rows into a plain table with no constraints or
indexes (the baseline); ``record_many`` in batches of ``--batch-size`` rows,
each batch its own transaction; ``record``, one call (one transaction) at a
time on one connection, timed for the last ``--record-rows`` rows of the same
workload only (it is slow; the rows before them are loaded first with
record_many, untimed, so that it writes into a table of the same size); and, for new keys, a bare ``INSERT ... SELECT`` of the
rows into ``fact_key`` and ``fact_version`` with no merge and no checks (what
the table's indexes alone cost: the ceiling of any ingestion path). It prints
rows and versions per second, the ratios to ``COPY`` and to ``record``, and
whether record_many meets the goals (at least a quarter of COPY's speed, at
least 50,000 versions per second).
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
from psycopg import sql

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

    The exclusion constraint and the secondary indexes are dropped during the
    load and re-created after it from their own definitions (re-adding the
    constraint validates every row): building a GiST index once is much faster
    than growing it row by row. Bulk ingestion proper is record_many's job.
    """
    params = {"keys": keys, "changes": changes, "epoch": EPOCH}
    with conn.transaction():
        constraint = conn.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conname = 'fact_version_no_overlap' AND conrelid = 'bitemporal.fact_version'::regclass"
        ).fetchone()
        indexes = conn.execute(
            "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index i "
            "WHERE indrelid = 'bitemporal.fact_version'::regclass AND NOT indisprimary "
            "AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conindid = i.indexrelid)"
        ).fetchall()
        assert constraint is not None
        conn.execute("ALTER TABLE bitemporal.fact_version DROP CONSTRAINT fact_version_no_overlap")
        for name, _ in indexes:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.SQL(name)))
        for statement in FILL:
            conn.execute(statement, params)
        conn.execute(sql.SQL("ALTER TABLE bitemporal.fact_version ADD CONSTRAINT fact_version_no_overlap {}")
                     .format(sql.SQL(constraint[0])))
        for _, definition in indexes:
            conn.execute(sql.SQL(definition))
    conn.execute("VACUUM ANALYZE bitemporal.fact_version")
    conn.execute("VACUUM ANALYZE bitemporal.fact_key")
    row = conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()
    assert row is not None
    return int(row[0])


def fill_baseline(conn: psycopg.Connection[Any], rows: int) -> None:
    conn.execute("CREATE TABLE bench_plain (id bigint PRIMARY KEY, value jsonb NOT NULL)")
    conn.execute("INSERT INTO bench_plain SELECT g, to_jsonb(g) FROM generate_series(1, %s) g", (rows,))
    conn.execute("VACUUM ANALYZE bench_plain")


# The designs people use instead, built from the same versions: "keep the
# latest row" (one row per key: the value recorded last) and a single-axis
# history (valid time only, i.e. what the store knows now).
NAIVE = (
    """CREATE TABLE bench_latest AS
       SELECT DISTINCT ON (entity, attribute) entity, attribute, value FROM bitemporal.fact_version
        ORDER BY entity, attribute, lower(known_period) DESC, lower(valid_period) DESC NULLS LAST""",
    "ALTER TABLE bench_latest ADD PRIMARY KEY (entity, attribute)",
    """CREATE TABLE bench_history AS
       SELECT entity, attribute, lower(valid_period) AS valid_from, upper(valid_period) AS valid_to, value
         FROM bitemporal.fact_version WHERE upper_inf(known_period)""",
    "CREATE INDEX ON bench_history (entity, attribute, valid_from)",
    "VACUUM ANALYZE bench_latest",
    "VACUUM ANALYZE bench_history",
)
LATEST = "SELECT value FROM bench_latest WHERE entity = %s AND attribute = 'a'"
SINGLE_AXIS = """SELECT value FROM bench_history WHERE entity = %s AND attribute = 'a'
                    AND valid_from <= %s AND (valid_to IS NULL OR valid_to > %s)
                  ORDER BY valid_from DESC LIMIT 1"""


def _value(conn: psycopg.Connection[Any], query: str, params: Sequence[Any]) -> Any:
    row = conn.execute(query, params).fetchone()
    return None if row is None else row[0]


def server_ms(conn: psycopg.Connection[Any], query: str, params: Sequence[Any]) -> float:
    row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}", params).fetchone()
    assert row is not None
    return float(row[0][0]["Execution Time"])


def client_ms(call: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    start = time.perf_counter()
    call(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def measure(url: str, keys: int, changes: int, samples: int, seed: int) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        versions = fill(conn, keys, changes)
        fill_baseline(conn, versions)
        for statement in NAIVE:
            conn.execute(statement)
        server = conn.info.server_version // 10000
        store = Store(conn)
        rng = random.Random(seed)
        # A key, a change (valid from its day), how many changes were known when
        # asked about the past, and a baseline row.
        questions = []
        for _ in range(samples):
            change = rng.randrange(0, changes)
            questions.append((rng.randrange(1, keys + 1), change, rng.randrange(0, change + 1),
                              rng.randrange(1, versions + 1)))
        # Warm caches and plans first; then every operation runs on the same questions.
        timings: dict[str, list[float]] = {name: [] for name in OPERATIONS}
        wrong = dict.fromkeys(WRONG, 0)
        for warm in (True, False):
            for k, change, known_changes, pk in questions:
                valid_at = EPOCH + timedelta(days=change, hours=12)
                past = EPOCH + timedelta(hours=known_changes, minutes=30)
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
                    "latest row per key (server)": server_ms(conn, LATEST, (entity,)),
                    "single-axis history (server)": server_ms(
                        conn, SINGLE_AXIS, (entity, valid_at, valid_at)),
                    "primary key (Python, end to end)": client_ms(
                        lambda row: conn.execute("SELECT value FROM bench_plain WHERE id = %s", (row,)).fetchone(),
                        pk),
                    "resolve (Python, end to end)": client_ms(
                        store.facts.resolve, Key(entity, "a"), valid_at=valid_at),
                }
                if not warm:
                    for name, value in results.items():
                        timings[name].append(value)
                    now_answer = _value(conn, "SELECT value FROM bitemporal.as_of(%s, 'a', %s)", (entity, valid_at))
                    then_answer = _value(
                        conn, "SELECT value FROM bitemporal.as_of(%s, 'a', %s, %s)", (entity, valid_at, past))
                    single_axis = _value(conn, SINGLE_AXIS, (entity, valid_at, valid_at))
                    wrong["latest row per key, current knowledge"] += _value(conn, LATEST, (entity,)) != now_answer
                    wrong["single-axis history, current knowledge"] += single_axis != now_answer
                    wrong["single-axis history, past knowledge"] += single_axis != then_answer
        plan = "\n".join(
            row[0] for row in conn.execute(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                "SELECT * FROM bitemporal.as_of(%s, 'a', %s)",
                (f"e{questions[0][0]}", EPOCH + timedelta(days=questions[0][1], hours=12)),
            ))
    return {"server_version": server, "versions": versions, "keys": keys, "samples": samples,
            "timings_ms": timings, "as_of_plan": plan, "wrong_answers": wrong}


OPERATIONS = (
    "primary key (server)",
    "as_of, current knowledge (server)",
    "as_of, past knowledge (server)",
    "resolve (server)",
    "latest row per key (server)",
    "single-axis history (server)",
    "primary key (Python, end to end)",
    "resolve (Python, end to end)",
)
# How often the naive designs answer differently from as_of, on the same questions.
WRONG = (
    "latest row per key, current knowledge",
    "single-axis history, current knowledge",
    "single-axis history, past knowledge",
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
    wrong = format_table(
        ("naive design, question", "answers unlike as_of"),
        [(name, f"{n} of {result['samples']} ({100 * n / result['samples']:.0f}%)")
         for name, n in result["wrong_answers"].items()],
    )
    return (f"{head}{table}\nThe designs people use instead, on the same questions:\n{wrong}"
            f"\nPlan of one as-of lookup:\n{result['as_of_plan']}\n")


# -- Ingestion ---------------------------------------------------------------------------

INGEST_WORKLOADS = ("new keys", "history")
HISTORY_CHANGES = 10
GOAL_VERSIONS_PER_S = 50_000
GOAL_COPY_FRACTION = 0.25


def ingest_rows(workload: str, count: int, prefix: str) -> list[dict[str, Any]]:
    """The rows of a workload (see the module docstring), as record_many takes them."""
    if workload == "new keys":
        return [{"entity": f"{prefix}{i}", "attribute": "a", "source": "s", "value": i,
                 "valid_from": EPOCH} for i in range(count)]
    keys = max(count // HISTORY_CHANGES, 1)
    return [{"entity": f"{prefix}{k}", "attribute": "a", "source": "s", "value": c,
             "valid_from": EPOCH + timedelta(days=c), "known_at": EPOCH + timedelta(hours=c)}
            for c in range(HISTORY_CHANGES) for k in range(keys)]


def _copy_tuples(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["entity"], r["attribute"], r["source"], json.dumps(r["value"]), r.get("valid_from"),
             r.get("valid_to"), r.get("known_at"), r.get("recorded_by")) for r in rows]


_PLAIN = ("CREATE TABLE IF NOT EXISTS bench_ingest_plain (entity text, attribute text, source text, "
          "value jsonb, valid_from timestamptz, valid_to timestamptz, known_at timestamptz, recorded_by text)")
_PLAIN_COPY = ("COPY bench_ingest_plain (entity, attribute, source, value, valid_from, valid_to, known_at, "
               "recorded_by) FROM STDIN")


def _versions(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()
    assert row is not None
    return int(row[0])


def _copy_plain(conn: psycopg.Connection[Any], rows: list[dict[str, Any]]) -> int:
    with conn.transaction(), conn.cursor() as cur, cur.copy(_PLAIN_COPY) as copy:
        for row in _copy_tuples(rows):
            copy.write_row(row)
    return len(rows)


def _bare_insert(conn: psycopg.Connection[Any], rows: list[dict[str, Any]]) -> int:
    with conn.transaction():
        _copy_plain(conn, rows)
        conn.execute(
            "INSERT INTO bitemporal.fact_key SELECT DISTINCT entity, attribute, now(), now(), "
            "pg_current_xact_id() FROM bench_ingest_plain")
        conn.execute(
            "INSERT INTO bitemporal.fact_version (entity, attribute, source, value, valid_period, known_period) "
            "SELECT entity, attribute, source, value, tstzrange(valid_from, valid_to, '[)'), "
            "tstzrange(now(), NULL, '[)') FROM bench_ingest_plain")
    return len(rows)


def measure_ingest(url: str, rows: int, batch_size: int, record_rows: int) -> dict[str, Any]:
    """Every method on every workload, each method in a fresh scratch database."""
    record_rows = min(record_rows, rows)
    results: list[dict[str, Any]] = []
    server = 0
    for method in ("copy", "bare insert", "record_many", "record"):
        with scratch_database(url, "bitemporal_bench_ingest") as db:
            migrate(db)
            with psycopg.connect(db, autocommit=True) as conn:
                server = conn.info.server_version // 10000
                conn.execute(_PLAIN)
                store = Store(conn)
                for workload in INGEST_WORKLOADS:
                    if method == "bare insert" and workload != "new keys":
                        continue
                    data = ingest_rows(workload, rows, f"{method[:4]}-{workload[:3]}-")
                    if method == "record":
                        # Only the last rows are timed (record is slow); the rows before
                        # them are loaded first, untimed, so that record writes into a
                        # table as large as record_many's at the end of its run.
                        for first in range(0, len(data) - record_rows, batch_size):
                            store.facts.record_many(data[first:min(first + batch_size, len(data) - record_rows)])
                        data = data[len(data) - record_rows:]
                    before = _versions(conn)
                    start = time.perf_counter()
                    if method == "copy":
                        _copy_plain(conn, data)
                    elif method == "bare insert":
                        _bare_insert(conn, data)
                    elif method == "record_many":
                        for first in range(0, len(data), batch_size):
                            store.facts.record_many(data[first:first + batch_size])
                    else:
                        for r in data:
                            store.facts.record(
                                Key(r["entity"], r["attribute"]), r["value"], source=r["source"],
                                valid_from=r.get("valid_from"), known_at=r.get("known_at"))
                    seconds = time.perf_counter() - start
                    versions = len(data) if method == "copy" else _versions(conn) - before
                    results.append({"workload": workload, "method": method, "rows": len(data),
                                    "versions": versions, "seconds": seconds})
    return {"server_version": server, "rows": rows, "batch_size": batch_size,
            "record_rows": record_rows, "results": results}


INGEST_LABELS = {
    "copy": "COPY into a plain table (baseline)",
    "bare insert": "bare INSERT into fact_version (no merge, no checks)",
    "record_many": "record_many",
    "record": "record, one call at a time",
}


def ingest_report(result: dict[str, Any]) -> str:
    by = {(r["workload"], r["method"]): r for r in result["results"]}
    lines = []
    verdicts = []
    for workload in INGEST_WORKLOADS:
        copy_rate = by[workload, "copy"]["rows"] / by[workload, "copy"]["seconds"]
        record = by.get((workload, "record"))
        record_rate = record["rows"] / record["seconds"] if record else None
        for method in ("copy", "bare insert", "record_many", "record"):
            r = by.get((workload, method))
            if r is None:
                continue
            rate = r["rows"] / r["seconds"]
            label = INGEST_LABELS[method]
            if method == "record_many":
                label += f", batches of {result['batch_size']:,}"
            vs_record = f"{rate / record_rate:.1f}x" if record_rate else "-"
            lines.append((workload, label, f"{r['rows']:,}", f"{r['versions']:,}", f"{r['seconds']:.2f}",
                          f"{rate:,.0f}", f"{r['versions'] / r['seconds']:,.0f}",
                          f"{rate / copy_rate:.3f}x", vs_record))
        many = by[workload, "record_many"]
        versions_rate = many["versions"] / many["seconds"]
        fraction = (many["rows"] / many["seconds"]) / copy_rate
        verdicts.append(
            f"  {workload}: {versions_rate:,.0f} versions/s "
            f"({'met' if versions_rate >= GOAL_VERSIONS_PER_S else 'NOT met'}: goal {GOAL_VERSIONS_PER_S:,}); "
            f"{fraction:.3f} of COPY's rows/s "
            f"({'met' if fraction >= GOAL_COPY_FRACTION else 'NOT met'}: goal {GOAL_COPY_FRACTION})")
    head = (f"Ingestion, PostgreSQL {result['server_version']}: {result['rows']:,} rows per workload "
            f"(record: the last {result['record_rows']:,}, after the others); each method in a fresh "
            "database, timed from Python\n")
    table = format_table(("workload", "method", "rows", "versions", "seconds", "rows/s", "versions/s",
                          "vs COPY", "vs record"), lines)
    return head + table + "Goals for record_many:\n" + "\n".join(verdicts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bitemporal bench facts", description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="server to create a scratch database on (default: as for connect)")
    parser.add_argument("--keys", type=int, default=5000)
    parser.add_argument("--changes", type=int, default=100, help="changes per key (versions = 2*changes-1)")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="also write the raw timings here")
    parser.add_argument("--ingest", action="store_true",
                        help="measure ingestion (record, record_many, COPY) instead of lookups")
    parser.add_argument("--ingest-rows", type=int, default=20_000, help="rows per ingestion workload")
    parser.add_argument("--batch-size", type=int, default=10_000, help="record_many rows per batch")
    parser.add_argument("--record-rows", type=int, default=2_000,
                        help="rows timed for record, one call at a time (the last of the workload)")
    args = parser.parse_args(argv)
    if args.ingest:
        result = measure_ingest(database_url(args.url), args.ingest_rows, args.batch_size,
                                args.record_rows)
        sys.stdout.write(ingest_report(result))
    else:
        with scratch_database(database_url(args.url), "bitemporal_bench") as url:
            migrate(url)
            result = measure(url, args.keys, args.changes, args.samples, args.seed)
        sys.stdout.write(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 0
