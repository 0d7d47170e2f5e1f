"""Citus benchmark: single-key reads and writes and record_many on a Citus cluster, against
plain PostgreSQL, measured in the same run.

    python -m benchmarks citus [--citus-url URL] [--plain-url URL] [--keys N] [--samples N]
                               [--rows N] [--batch-size N] [--shards N] [--json FILE]

Two scratch databases: one on the Citus cluster of ``--citus-url`` (a database with
the ``citus`` extension, its workers added; the scratch database is created on the
coordinator and on every worker, with the extension on each, the workers added to it,
then migrated with ``migrate(url, citus=True)``: the store distributed by entity over
``--shards`` shards) and one on the plain PostgreSQL server of ``--plain-url``
(``migrate(url)``). Both are loaded with the same ``--keys`` keys, ten changes each in
time order (each change closes the key's open version and re-records its remainder: 19
versions per key; the *history* rows of ``python -m benchmarks facts --ingest``), by
record_many. Then, for ``--samples`` random keys and valid times, the same questions on
both, interleaved in random order (so that a load on the machine falls on both alike):

* ``as_of`` (current knowledge) and ``resolve``: the server's ``EXPLAIN (ANALYZE)``
  execution time (on Citus the coordinator's, which includes its round trip to the
  worker holding the key) and end to end from Python (``store.facts.as_of``,
  ``store.facts.resolve``); the answers of the two databases are compared (values and
  statuses: version ids come from different sequences);
* ``record``: one change per transaction, end to end from Python, on keys of the
  loaded data (each closes the key's open version: 1 closed, 2 new);
* ``record_many`` throughput, versions per second, ``--rows`` rows in batches of
  ``--batch-size``, each batch its own transaction: new keys (one version per row) and
  keys with history (the load's rows for keys of their own).

It prints medians and p95s per database and the ratios Citus / plain. An operation that
fails on Citus is reported as unsupported there, with the error, and the run goes on
(its loading falls back to ``record`` one row at a time if record_many fails). The
scratch databases are dropped at the end, on every node. The exit status is 1 if the
answers of the two databases differ.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from bitemporal import BitemporalError, Key, Store, migrate
from bitemporal.database import psycopg_url, scratch_database
from bitemporal.formatting import format_table

from .arguments import count
from .facts import (
    EPOCH,
    HISTORY_CHANGES,
    _versions,
    client_ms,
    ingest_rows,
    machine,
    server_ms,
)

CITUS_URL = "postgresql://127.0.0.1:9700/citus"
PLAIN_URL = "postgresql://127.0.0.1:5432/test"
PREFIX = "bitemporal_bench_citus"
DATABASES = ("plain", "citus")
LABELS = {"plain": "plain PostgreSQL", "citus": "Citus"}
SERVER, PYTHON = "(server)", "(Python, end to end)"
AS_OF = "SELECT * FROM bitemporal.as_of(%s, 'a', %s)"
RESOLVE = "SELECT * FROM bitemporal.resolve(%s, 'a', %s)"
LOOKUPS = (
    f"as_of, current knowledge {SERVER}",
    f"resolve {SERVER}",
    f"as_of, current knowledge {PYTHON}",
    f"resolve {PYTHON}",
)
RECORD = f"record, one change per transaction {PYTHON}"
WORKLOADS = ("new keys", "history")
# What a failed operation is caught as: the store's errors and the driver's.
FAILURES = (BitemporalError, psycopg.Error)


def error_text(exc: BaseException) -> str:
    """The error as the store raised it, with the server's detail and the innermost line of
    its context (the function and statement, or the node) where the driver has them."""
    if isinstance(exc, psycopg.Error):
        text = f"{type(exc).__name__}: {exc.diag.message_primary} (SQLSTATE {exc.sqlstate})"
    else:
        text = f"{type(exc).__name__}: {exc}"
    cause = exc if isinstance(exc, psycopg.Error) else exc.__cause__
    if isinstance(cause, psycopg.Error):
        if cause.diag.message_detail:
            text += f" DETAIL: {cause.diag.message_detail}"
        if cause.diag.context:
            text += f" CONTEXT: {cause.diag.context.strip().splitlines()[-1]}"
    return text


# -- the scratch database on every node of the cluster -------------------------------------


def with_node(
    url: str, database: str | None = None, host: str | None = None, port: int | None = None
) -> str:
    """``url`` with another database, host or port."""
    parsed = make_url(psycopg_url(url)).set(drivername="postgresql")
    changes: dict[str, Any] = {}
    if database is not None:
        changes["database"] = database
    if host is not None:
        changes["host"] = host
    if port is not None:
        changes["port"] = port
    return parsed.set(**changes).render_as_string(hide_password=False)


class NotACitusCluster(ValueError):
    """``--citus-url`` names no Citus coordinator database with workers."""


def citus_workers(url: str) -> list[tuple[str, int]]:
    """The (host, port) of each primary worker of the coordinator database ``url``; raises
    NotACitusCluster if it has no citus extension or no workers."""
    with psycopg.connect(psycopg_url(url)) as conn:
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone()
        if row is None:
            raise NotACitusCluster(
                f"--citus-url {url}: the database has no citus extension "
                "(it must be a Citus coordinator's database with its workers added)"
            )
        nodes = conn.execute(
            "SELECT nodename, nodeport FROM pg_catalog.pg_dist_node"
            " WHERE noderole = 'primary' AND groupid <> 0 ORDER BY nodeid"
        ).fetchall()
    if not nodes:
        raise NotACitusCluster(
            f"--citus-url {url}: no worker in pg_dist_node (citus_add_node first)"
        )
    return [(str(host), int(port)) for host, port in nodes]


@contextmanager
def citus_scratch_database(url: str, shards: int) -> Iterator[str]:
    """A new, empty database on the coordinator of ``url`` and on every worker, with the
    citus extension on each and the workers added, its distributed tables to have
    ``shards`` shards; dropped on every node afterwards."""
    workers = citus_workers(url)
    coordinator = make_url(psycopg_url(url))
    nodes = [with_node(url), *(with_node(url, host=host, port=port) for host, port in workers)]
    name = f"{PREFIX}_{uuid.uuid4().hex[:8]}"
    created: list[str] = []
    try:
        for node in nodes:
            with psycopg.connect(node, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            created.append(node)
            with psycopg.connect(with_node(node, database=name), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION citus")
        scratch = with_node(url, database=name)
        with psycopg.connect(scratch, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER DATABASE {} SET citus.shard_count = {}").format(
                    sql.Identifier(name), sql.Literal(shards)
                )
            )
            conn.execute(
                "SELECT citus_set_coordinator_host(%s, %s)",
                (coordinator.host or "localhost", coordinator.port or 5432),
            )
            for host, port in workers:
                conn.execute("SELECT citus_add_node(%s, %s)", (host, port))
        yield scratch
    finally:
        for node in created:
            with psycopg.connect(node, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


# -- measuring -----------------------------------------------------------------------------


def quantiles(samples: list[float]) -> tuple[float, float]:
    """Median and p95."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def write_rows(store: Store, rows: list[dict[str, Any]], batch_size: int) -> None:
    """record_many in batches, each its own transaction."""
    for first in range(0, len(rows), batch_size):
        store.facts.record_many(rows[first : first + batch_size])


def record_each(store: Store, rows: list[dict[str, Any]]) -> None:
    """The same rows by record, one call (one transaction) at a time."""
    for r in rows:
        store.facts.record(
            Key(r["entity"], r["attribute"]),
            r["value"],
            source=r["source"],
            valid_from=r.get("valid_from"),
            known_at=r.get("known_at"),
        )


def load(
    stores: dict[str, Store], keys: int, batch_size: int, progress: Callable[[str], None]
) -> dict[str, Any]:
    """The same keys with history in each database: record_many, else record row by row."""
    rows = ingest_rows("history", keys * HISTORY_CHANGES, "e")
    out: dict[str, Any] = {"keys": keys, "rows": len(rows)}
    for db, store in stores.items():
        started = time.perf_counter()
        try:
            with store.transaction():
                write_rows(store, rows, batch_size)
            method = "record_many"
        except FAILURES as exc:
            out[f"{db}_record_many_error"] = error_text(exc)
            progress(f"{db}: record_many failed ({error_text(exc)}); loading with record ...")
            record_each(store, rows)
            method = "record, one row at a time"
        conn = store.connection
        conn.execute("ANALYZE bitemporal.fact_version")
        conn.execute("ANALYZE bitemporal.fact_key")
        out[db] = {
            "method": method,
            "versions": _versions(conn),
            "seconds": time.perf_counter() - started,
        }
    return out


def _answer(store: Store, key: Key, valid_at: Any, kind: str) -> Any:
    if kind == "as_of":
        return [v.value for v in store.facts.as_of(key, valid_at=valid_at)]
    answer = store.facts.resolve(key, valid_at=valid_at)
    return (answer.status, answer.values)


def lookups(
    stores: dict[str, Store], keys: int, samples: int, rng: random.Random
) -> dict[str, Any]:
    """as_of and resolve on the same questions in both databases, interleaved."""
    questions = [
        (rng.randrange(keys), rng.randrange(HISTORY_CHANGES), rng.random() < 0.5)
        for _ in range(samples)
    ]
    timings: dict[str, dict[str, list[float]]] = {db: {op: [] for op in LOOKUPS} for db in stores}
    errors: dict[str, dict[str, str]] = {db: {} for db in stores}
    differ = {"as_of": 0, "resolve": 0}

    def attempt(db: str, op: str, measure: Callable[..., float], *args: Any, **kw: Any) -> None:
        if op in errors[db]:
            return
        try:
            value = measure(*args, **kw)
        except FAILURES as exc:
            errors[db][op] = error_text(exc)
            conn = stores[db].connection
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            return
        if not warm:
            timings[db][op].append(value)

    for warm in (True, False):  # warm caches and plans first
        for k, change, plain_first in questions:
            entity = f"e{k}"
            key = Key(entity, "a")
            valid_at = EPOCH + timedelta(days=change, hours=12)
            for db in DATABASES if plain_first else DATABASES[::-1]:
                store = stores[db]
                attempt(db, LOOKUPS[0], server_ms, store.connection, AS_OF, (entity, valid_at))
                attempt(db, LOOKUPS[1], server_ms, store.connection, RESOLVE, (entity, valid_at))
                attempt(db, LOOKUPS[2], client_ms, store.facts.as_of, key, valid_at=valid_at)
                attempt(db, LOOKUPS[3], client_ms, store.facts.resolve, key, valid_at=valid_at)
            if warm:
                continue
            for kind in differ:
                answers = []
                for db in DATABASES:
                    try:
                        answers.append(_answer(stores[db], key, valid_at, kind))
                    except FAILURES:
                        answers.append(None)  # the failure is reported with its timing
                if None not in answers and answers[0] != answers[1]:
                    differ[kind] += 1
    return {"samples": samples, "timings_ms": timings, "errors": errors, "answers_differ": differ}


def records(
    stores: dict[str, Store], keys: int, samples: int, rng: random.Random
) -> dict[str, Any]:
    """record, one change per transaction, on the same keys in both databases."""
    chosen = rng.sample(range(keys), min(samples + 1, keys))
    valid_from = EPOCH + timedelta(days=HISTORY_CHANGES + 1)
    timings: dict[str, list[float]] = {db: [] for db in stores}
    errors: dict[str, str] = {}
    for i, k in enumerate(chosen):
        order = list(DATABASES)
        rng.shuffle(order)
        for db in order:
            if db in errors:
                continue
            store = stores[db]
            try:
                ms = client_ms(
                    store.facts.record, Key(f"e{k}", "a"), -1, source="s", valid_from=valid_from
                )
            except FAILURES as exc:
                errors[db] = error_text(exc)
                continue
            if i > 0:  # the first warms the caches
                timings[db].append(ms)
    return {"samples": len(chosen) - 1, "timings_ms": {RECORD: timings}, "errors": errors}


def throughput(stores: dict[str, Store], rows: int, batch_size: int) -> dict[str, Any]:
    """record_many, versions per second, new keys and keys with history, in both databases."""
    results: dict[str, Any] = {}
    for workload in WORKLOADS:
        results[workload] = {}
        for db, store in stores.items():
            data = ingest_rows(workload, rows, f"t{workload[:3]}-")
            conn = store.connection
            before = _versions(conn)
            started = time.perf_counter()
            try:
                write_rows(store, data, batch_size)
            except FAILURES as exc:
                results[workload][db] = {"error": error_text(exc)}
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.rollback()
                continue
            seconds = time.perf_counter() - started
            versions = _versions(conn) - before
            results[workload][db] = {
                "rows": len(data),
                "versions": versions,
                "seconds": seconds,
                "versions_per_s": versions / seconds,
            }
    return {"rows": rows, "batch_size": batch_size, "workloads": results}


def cluster(url: str) -> dict[str, Any]:
    with psycopg.connect(psycopg_url(url)) as conn:
        row = conn.execute(
            "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'citus'),"
            " (SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND groupid <> 0),"
            " (SELECT count(*) FROM pg_dist_shard"
            "   WHERE logicalrelid = 'bitemporal.fact_version'::regclass)"
        ).fetchone()
        release = conn.execute("SELECT citus_version()").fetchone()
    assert row is not None and release is not None
    return {
        "extension": row[0],
        "workers": int(row[1]),
        "version_shards": int(row[2]),
        "citus_version": str(release[0]).split(" on ")[0].removeprefix("Citus "),
    }


@contextmanager
def sessions(urls: dict[str, str]) -> Iterator[dict[str, Store]]:
    """A store on a new autocommit connection to each database."""
    with (
        psycopg.connect(psycopg_url(urls["plain"]), autocommit=True) as plain,
        psycopg.connect(psycopg_url(urls["citus"]), autocommit=True) as citus,
    ):
        yield {"plain": Store(plain), "citus": Store(citus)}


def migrate_citus(url: str, progress: Callable[[str], None], attempts: int = 3) -> None:
    """migrate(url, citus=True), again if it fails: on a fresh database, a worker's catalog
    may still be changing under it ("tuple concurrently updated"). A failed migration
    leaves nothing behind (one transaction) and can be run again."""
    for attempt in range(1, attempts + 1):
        try:
            migrate(url, citus=True)
            return
        except BitemporalError as exc:
            if attempt == attempts:
                raise
            progress(f"migrate(citus=True) failed ({error_text(exc)}); again ...")
            time.sleep(1)


def run(
    citus_url: str,
    plain_url: str,
    *,
    keys: int,
    samples: int,
    rows: int,
    batch_size: int,
    shards: int,
    seed: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Everything, in two scratch databases dropped afterwards."""
    rng = random.Random(seed)
    result: dict[str, Any] = {}
    with (
        scratch_database(plain_url, PREFIX) as plain,
        citus_scratch_database(citus_url, shards) as citus,
    ):
        progress("migrating ...")
        migrate(plain)
        migrate_citus(citus, progress)
        result["machine"] = {
            db: machine(psycopg_url(u)) for db, u in (("plain", plain), ("citus", citus))
        }
        result["cluster"] = cluster(citus)
        urls = {"plain": plain, "citus": citus}
        # Fresh sessions for each phase: after a failed record_many, a Citus session no
        # longer delegates the single-key reads to the worker holding the key (they then
        # run on the coordinator), which would change what the next phase measures.
        progress(f"loading {keys:,} keys x {HISTORY_CHANGES} changes ...")
        with sessions(urls) as stores:
            result["load"] = load(stores, keys, batch_size, progress)
        progress(f"{samples} lookups ...")
        with sessions(urls) as stores:
            result["lookups"] = lookups(stores, keys, samples, rng)
        progress(f"{samples} records ...")
        with sessions(urls) as stores:
            result["writes"] = records(stores, keys, samples, rng)
        progress(f"record_many, {rows:,} rows per workload ...")
        with sessions(urls) as stores:
            result["record_many"] = throughput(stores, rows, batch_size)
    return result


# -- the report ----------------------------------------------------------------------------


def _failed(db: str) -> str:
    return f"unsupported on {LABELS[db]}" if db == "citus" else f"failed on {LABELS[db]}"


def _latency_rows(
    timings: dict[str, dict[str, list[float]]], errors: dict[str, dict[str, str]]
) -> tuple[list[tuple[str, ...]], list[str]]:
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for op in timings["plain"]:
        cells: list[str] = []
        figures: dict[str, tuple[float, float]] = {}
        for db in DATABASES:
            if samples := timings[db][op]:
                figures[db] = quantiles(samples)
                cells += [f"{figures[db][0]:.3f}", f"{figures[db][1]:.3f}"]
            else:
                cells += ["-", "-"]
        if len(figures) == 2:
            cells += [
                f"{figures['citus'][0] / figures['plain'][0]:.2f}x",
                f"{figures['citus'][1] / figures['plain'][1]:.2f}x",
            ]
        else:
            cells += ["-", "-"]
        rows.append((op, *cells))
        for db in DATABASES:
            if op in errors.get(db, {}):
                how = " (EXPLAIN (ANALYZE) of the call)" if op.endswith(SERVER) else ""
                notes.append(f"{op}: {_failed(db)}{how}: {errors[db][op]}")
    return rows, notes


LATENCY_HEADERS = (
    "operation",
    "plain median ms",
    "plain p95 ms",
    "Citus median ms",
    "Citus p95 ms",
    "Citus/plain median",
    "Citus/plain p95",
)


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """Medians, p95s and ratios Citus / plain, per operation and workload."""
    out: dict[str, Any] = {}
    timings = {
        db: {
            **result["lookups"]["timings_ms"][db],
            RECORD: result["writes"]["timings_ms"][RECORD][db],
        }
        for db in DATABASES
    }
    for op in timings["plain"]:
        figures = {db: quantiles(timings[db][op]) for db in DATABASES if timings[db][op]}
        entry: dict[str, Any] = {
            f"{db}_{name}": value
            for db, (median, p95) in figures.items()
            for name, value in (("median_ms", median), ("p95_ms", p95))
        }
        if len(figures) == 2:
            entry["citus_vs_plain_median"] = figures["citus"][0] / figures["plain"][0]
            entry["citus_vs_plain_p95"] = figures["citus"][1] / figures["plain"][1]
        out[op] = entry
    for workload, by_db in result["record_many"]["workloads"].items():
        entry = {
            f"{db}_versions_per_s": r["versions_per_s"]
            for db, r in by_db.items()
            if "error" not in r
        }
        if len(entry) == 2:
            entry["citus_vs_plain"] = entry["citus_versions_per_s"] / entry["plain_versions_per_s"]
        out[f"record_many, {workload}"] = entry
    return out


def report(result: dict[str, Any]) -> str:
    m, c, loaded = result["machine"], result["cluster"], result["load"]
    out = [
        (
            f"python -m benchmarks citus: Citus {c['citus_version']} on PostgreSQL "
            f"{m['citus']['server_version']}, coordinator + {c['workers']} workers, "
            f"{c['version_shards']} shards of fact_version; against plain PostgreSQL "
            f"{m['plain']['server_version']}; {m['plain']['cpus']} CPUs, {m['plain']['platform']}\n"
        ),
        f"Loaded {loaded['keys']:,} keys x {HISTORY_CHANGES} changes ({loaded['rows']:,} rows): "
        + "; ".join(
            f"{LABELS[db]} {loaded[db]['versions']:,} versions in {loaded[db]['seconds']:.1f} s "
            f"({loaded[db]['method']})"
            for db in DATABASES
        )
        + "\n",
    ]
    for db in DATABASES:
        if error := loaded.get(f"{db}_record_many_error"):
            out.append(f"record_many {_failed(db)} (load): {error}\n")
    look, writes = result["lookups"], result["writes"]
    rows, notes = _latency_rows(look["timings_ms"], look["errors"])
    out.append(
        f"\n== Single-key lookups, {look['samples']} random keys and valid times, the same on "
        "both, interleaved (ms)\n" + format_table(LATENCY_HEADERS, rows)
    )
    differ = look["answers_differ"]
    out.append(
        "answers unlike plain PostgreSQL's: "
        + ", ".join(f"{kind} {n} of {look['samples']}" for kind, n in differ.items())
        + "\n"
    )
    rows, write_notes = _latency_rows(
        {db: {RECORD: writes["timings_ms"][RECORD][db]} for db in DATABASES},
        {db: {RECORD: e} for db, e in writes["errors"].items()},
    )
    out.append(
        f"\n== Writes, {writes['samples']} keys, one change each (1 closed, 2 new versions) (ms)\n"
        + format_table(LATENCY_HEADERS, rows)
    )
    many = result["record_many"]
    lines: list[tuple[str, ...]] = []
    for workload, by_db in many["workloads"].items():
        cells: list[str] = []
        for db in DATABASES:
            r = by_db[db]
            if "error" in r:
                cells += ["-", "-"]
                notes.append(f"record_many, {workload}: {_failed(db)}: {r['error']}")
            else:
                cells += [f"{r['versions']:,}", f"{r['versions_per_s']:,.0f}"]
        ok = all("error" not in by_db[db] for db in DATABASES)
        ratio = by_db["citus"]["versions_per_s"] / by_db["plain"]["versions_per_s"] if ok else None
        lines.append((workload, *cells, "-" if ratio is None else f"{ratio:.2f}x"))
    out.append(
        f"\n== record_many, {many['rows']:,} rows per workload in batches of "
        f"{many['batch_size']:,}, each batch a transaction, timed from Python\n"
        + format_table(
            (
                "workload",
                "plain versions",
                "plain versions/s",
                "Citus versions",
                "Citus versions/s",
                "Citus/plain",
            ),
            lines,
        )
    )
    notes += write_notes
    if notes:
        out.append("\n" + "\n".join(notes) + "\n")
    return "".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks citus", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--citus-url",
        default=CITUS_URL,
        help="a Citus coordinator's database with the citus extension and its workers added "
        f"(default {CITUS_URL}); the scratch database is made on every node",
    )
    parser.add_argument(
        "--plain-url",
        default=PLAIN_URL,
        help=f"a plain PostgreSQL server to compare with (default {PLAIN_URL})",
    )
    parser.add_argument("--keys", type=count, default=2_000, help="keys loaded, 19 versions each")
    parser.add_argument(
        "--samples", type=count, default=300, help="random lookups and writes per database"
    )
    parser.add_argument(
        "--rows", type=count, default=20_000, help="record_many rows per throughput workload"
    )
    parser.add_argument(
        "--batch-size", type=count, default=10_000, help="record_many rows per batch"
    )
    parser.add_argument(
        "--shards", type=count, default=32, help="shards per distributed table (citus.shard_count)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every figure measured here")
    args = parser.parse_args(argv)
    try:
        citus_workers(args.citus_url)
    except (NotACitusCluster, psycopg.OperationalError) as exc:
        parser.error(str(exc).strip())
    started = time.perf_counter()

    def progress(message: str) -> None:
        sys.stderr.write(f"[{time.perf_counter() - started:7.1f} s] {message}\n")
        sys.stderr.flush()

    result = run(
        args.citus_url,
        args.plain_url,
        keys=args.keys,
        samples=args.samples,
        rows=args.rows,
        batch_size=args.batch_size,
        shards=args.shards,
        seed=args.seed,
        progress=progress,
    )
    result["summary"] = summary(result)
    result["seconds"] = time.perf_counter() - started
    sys.stdout.write(report(result))
    sys.stdout.write(f"\ntotal {result['seconds']:.1f} s\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 1 if any(result["lookups"]["answers_differ"].values()) else 0
