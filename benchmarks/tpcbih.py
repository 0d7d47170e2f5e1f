"""A realistic workload: a TPC-BiH-style history of TPC-H-like entities replayed into
bitemporal application tables, against plain current-state tables of the same data, in the
same database and the same run.

    python -m benchmarks tpcbih [--url URL] [--scenarios 100k,1m] [--seed N] [--json FILE]

For each number of scenarios it creates a scratch database and generates the history
(benchmarks/tpcbih_generator.py: an initial population of customers, suppliers, parts and
their suppliers, then new orders, cancellations, deliveries, payments, price and
availability changes, supplier and customer updates and a few retroactive corrections,
``per_day`` scenarios per simulated day, each with its explicit knowledge time). It loads the
history three times:

* into five bitemporal application tables (schema ``tpch``, made bitemporal with
  ``bitemporal.enable_table``): each write is a call of the table's generated
  ``<table>_record`` (or ``<table>_retract`` for a cancelled order) with the write's valid
  time and knowledge time, one transaction per simulated day, the calls sent in a pipeline;
* into plain tables of the same columns with a primary key and an indexed ``updated_at``
  (schema ``tpch_plain``): what an application keeping only the current row does, an
  ``INSERT ... ON CONFLICT DO UPDATE`` (or a ``DELETE``) per write, a scheduled price applied
  when it falls due; the same transactions and pipeline. This is the baseline;
* for the load only, into tables of the same columns with the write's valid time and
  knowledge time and no key, index or check (``tpch_log``), every write appended: a
  hand-rolled history.

It then checks the answers (the run stops if one differs): every table as of the end of the
history, as known now, equals the current-state table; every table as of a past knowledge
time (the middle of the history), valid then and three days earlier, and the two aggregates
below at that time, equal a pure-Python replay of the generated history
(``tpcbih_generator.Replay``).

And it times, as the server's ``EXPLAIN (ANALYZE)`` execution time and end to end from
Python, medians and ratios to the named baseline measured in the same database:

* time travel: one customer as of now and as of a past knowledge time (valid then), through
  ``customer_as_of``, against a primary-key lookup in the current-state table;
* key history: every version of one customer (``customer_history``) against a primary-key
  range scan of as many rows of the current-state orders;
* knowledge-window changes: what the five tables learned, superseded or retracted in one
  simulated day (``<table>_changes``) against an ``updated_at`` range scan of the five
  current-state tables (which finds only the rows not changed again since);
* two TPC-H-style aggregates: revenue of the delivered orders per market segment (orders
  joined to customers) and the supply value per brand (``sum(ps_supplycost * ps_availqty)``,
  parts joined to partsupp), as of a past knowledge time and as of now, against the same
  query over the current-state tables;
* the load: writes and versions per second, against the current-state upserts (and the
  appends to the history tables).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import psycopg
from psycopg import sql

from bitemporal import Store, migrate
from bitemporal.database import database_url, psycopg_url, scratch_database
from bitemporal.formatting import format_table

from .arguments import count
from .facts import client_ms, fetch_ms, machine, parse_size, server_ms, summarise
from .tpcbih_generator import (
    DAY,
    MIX,
    TABLES,
    History,
    Replay,
    Table,
    Write,
    current_state,
    generate,
)

STORE, PLAIN, LOG = "tpch", "tpch_plain", "tpch_log"


def _cols(t: Table) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(c) for c, _ in t.columns)


def create_tables(conn: psycopg.Connection[Any]) -> None:
    """The five tables, bitemporal in ``tpch`` and current-state in ``tpch_plain``."""
    for schema in (STORE, PLAIN, LOG):
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    for t in TABLES.values():
        columns = sql.SQL(", ").join(
            sql.SQL("{} {}{}").format(
                sql.Identifier(c), sql.SQL(kind), sql.SQL(" NOT NULL" if c in t.key else "")
            )
            for c, kind in t.columns
        )
        key = sql.SQL(", ").join(sql.Identifier(c) for c in t.key)
        conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(STORE, t.name), columns))
        conn.execute(
            "SELECT bitemporal.enable_table(%s::regclass, %s)", (f"{STORE}.{t.name}", list(t.key))
        )
        plain = sql.Identifier(PLAIN, t.name)
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} ({}, updated_at timestamptz NOT NULL, PRIMARY KEY ({}))"
            ).format(plain, columns, key)
        )
        conn.execute(sql.SQL("CREATE INDEX ON {} (updated_at)").format(plain))
        # A hand-rolled history: every write appended, no key, no index, no check.
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} ({}, valid_from timestamptz NOT NULL, "
                "known_at timestamptz NOT NULL, deleted boolean NOT NULL)"
            ).format(
                sql.Identifier(LOG, t.name),
                sql.SQL(", ").join(
                    sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(kind))
                    for c, kind in t.columns
                ),
            )
        )


def _args(columns: Iterable[tuple[str, str]]) -> sql.Composable:
    return sql.SQL(", ").join(
        sql.SQL("{} => %s::{}").format(sql.Identifier(c), sql.SQL(kind)) for c, kind in columns
    )


def _statements(t: Table) -> dict[str, sql.Composed]:
    keys = [(c, k) for c, k in t.columns if c in t.key]
    plain = sql.Identifier(PLAIN, t.name)
    return {
        "record": sql.SQL(
            "SELECT {}({}, valid_from => %s, valid_to => NULL, known_at => %s)"
        ).format(sql.Identifier(STORE, f"{t.name}_record"), _args(t.columns)),
        "retract": sql.SQL(
            "SELECT {}({}, valid_from => %s, valid_to => NULL, known_at => %s)"
        ).format(sql.Identifier(STORE, f"{t.name}_retract"), _args(keys)),
        "upsert": sql.SQL(
            "INSERT INTO {} ({}, updated_at) VALUES ({}, %s) ON CONFLICT ({}) DO UPDATE SET {}"
        ).format(
            plain,
            _cols(t),
            sql.SQL(", ").join(sql.Placeholder() for _ in t.columns),
            sql.SQL(", ").join(sql.Identifier(c) for c in t.key),
            sql.SQL(", ").join(
                sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c))
                for c in (*t.values, "updated_at")
            ),
        ),
        "append": sql.SQL("INSERT INTO {} ({}, valid_from, known_at, deleted) VALUES ({})").format(
            sql.Identifier(LOG, t.name),
            _cols(t),
            sql.SQL(", ").join(sql.Placeholder() for _ in range(len(t.columns) + 3)),
        ),
        "delete": sql.SQL("DELETE FROM {} WHERE {}").format(
            plain,
            sql.SQL(" AND ").join(sql.SQL("{} = %s").format(sql.Identifier(c)) for c in t.key),
        ),
    }


STATEMENTS = {name: _statements(t) for name, t in TABLES.items()}


def _row_values(w: Write) -> list[Any]:
    assert w.row is not None
    return [w.row[c] for c, _ in TABLES[w.table].columns]


def _by_day(items: Iterable[tuple[datetime, Write]]) -> Iterable[list[tuple[datetime, Write]]]:
    """Consecutive items of one simulated day (day 0: the initial population)."""
    day: list[tuple[datetime, Write]] = []
    current = None
    for at, w in items:
        d = at.date()
        if day and d != current:
            yield day
            day = []
        current = d
        day.append((at, w))
    if day:
        yield day


def load_store(conn: psycopg.Connection[Any], history: History) -> float:
    """Every write through the tables' generated functions; returns the seconds taken."""
    start = time.perf_counter()
    for day in _by_day((w.known_at, w) for w in history.writes):
        with conn.transaction(), conn.pipeline():
            for _, w in day:
                statements = STATEMENTS[w.table]
                if w.row is None:
                    conn.execute(statements["retract"], [*w.key, w.valid_from, w.known_at])
                else:
                    conn.execute(statements["record"], [*_row_values(w), w.valid_from, w.known_at])
    return time.perf_counter() - start


def load_plain(conn: psycopg.Connection[Any], history: History) -> tuple[float, int]:
    """The current-state writes (upserts and deletes); returns the seconds and the writes."""
    start = time.perf_counter()
    count = 0
    for day in _by_day(current_state(history)):
        with conn.transaction(), conn.pipeline():
            for at, w in day:
                statements = STATEMENTS[w.table]
                if w.row is None:
                    conn.execute(statements["delete"], list(w.key))
                else:
                    conn.execute(statements["upsert"], [*_row_values(w), at])
                count += 1
    return time.perf_counter() - start, count


def load_log(conn: psycopg.Connection[Any], history: History) -> float:
    """Every write appended to the history tables; returns the seconds taken."""
    start = time.perf_counter()
    for day in _by_day((w.known_at, w) for w in history.writes):
        with conn.transaction(), conn.pipeline():
            for _, w in day:
                columns = TABLES[w.table].columns
                values = (
                    _row_values(w)
                    if w.row is not None
                    else [
                        dict(zip(TABLES[w.table].key, w.key, strict=True)).get(c)
                        for c, _ in columns
                    ]
                )
                conn.execute(
                    STATEMENTS[w.table]["append"],
                    [*values, w.valid_from, w.known_at, w.row is None],
                )
    return time.perf_counter() - start


def _count(conn: psycopg.Connection[Any], schema: str) -> int:
    total = 0
    for t in TABLES.values():
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, t.name))
        ).fetchone()
        assert row is not None
        total += int(row[0])
    return total


# -- Questions --------------------------------------------------------------------------

# The casts: psycopg sends a small Python int as smallint, and the GiST index's bigint
# operator class has no cross-type operators, so `c_custkey = 5::smallint` would be a filter.
LOOKUP_PLAIN = "SELECT * FROM tpch_plain.customer WHERE c_custkey = %s::bigint"
LOOKUP_AS_OF = (
    "SELECT * FROM tpch.customer_as_of(%s::timestamptz, %s::timestamptz) "
    "WHERE c_custkey = %s::bigint"
)
HISTORY = "SELECT * FROM tpch.customer_history(c_custkey => %s::bigint)"
RANGE_SCAN = (
    "SELECT * FROM tpch_plain.orders WHERE o_orderkey >= %s::bigint ORDER BY o_orderkey LIMIT %s"
)
CHANGES = " UNION ALL ".join(
    f"SELECT '{t}' AS t, change, version_id "
    f"FROM tpch.{t}_changes(%(from)s::timestamptz, %(to)s::timestamptz)"
    for t in TABLES
)
UPDATED = " UNION ALL ".join(
    f"SELECT '{t}' AS t, updated_at FROM tpch_plain.{t} "
    "WHERE updated_at >= %(from)s AND updated_at < %(to)s"
    for t in TABLES
)
# TPC-H-style aggregates; {orders} etc. are the current-state tables or the as_of functions.
REVENUE = """SELECT c.c_mktsegment, count(*), sum(o.o_totalprice)
               FROM {orders} o JOIN {customer} c ON c.c_custkey = o.o_custkey
              WHERE o.o_orderstatus = 'F'
              GROUP BY c.c_mktsegment ORDER BY c.c_mktsegment"""
SUPPLY = """SELECT p.p_brand, count(*), sum(ps.ps_supplycost * ps.ps_availqty)
              FROM {part} p JOIN {partsupp} ps ON ps.ps_partkey = p.p_partkey
             GROUP BY p.p_brand ORDER BY p.p_brand"""
AGGREGATES = {"revenue per segment": REVENUE, "supply value per brand": SUPPLY}


def _aggregate(query: str, source: str) -> str:
    if source == "plain":
        names = {t: f"tpch_plain.{t}" for t in TABLES}
    else:
        names = {
            t: f"tpch.{t}_as_of(%(valid_at)s::timestamptz, %(known_at)s::timestamptz)"
            for t in TABLES
        }
    return query.format(**names)


def _replay_aggregate(name: str, replay: Replay, at: datetime) -> list[tuple[Any, ...]]:
    """The aggregate computed from the replay, valid and known at ``at``."""
    groups: dict[str, tuple[int, Decimal]] = {}
    if name == "revenue per segment":
        customers = replay.as_of("customer", at, at)
        for o in replay.as_of("orders", at, at).values():
            if o["o_orderstatus"] == "F":
                segment = customers[(o["o_custkey"],)]["c_mktsegment"]
                n, total = groups.get(segment, (0, Decimal(0)))
                groups[segment] = (n + 1, total + o["o_totalprice"])
    else:
        parts = replay.as_of("part", at, at)
        for ps in replay.as_of("partsupp", at, at).values():
            brand = parts[(ps["ps_partkey"],)]["p_brand"]
            n, total = groups.get(brand, (0, Decimal(0)))
            groups[brand] = (n + 1, total + ps["ps_supplycost"] * ps["ps_availqty"])
    return [(g, n, total) for g, (n, total) in sorted(groups.items())]


class AnswerMismatch(AssertionError):
    """The store answered differently from the current-state tables or the replay."""


def _rows(conn: psycopg.Connection[Any], query: str, params: Any = None) -> set[tuple[Any, ...]]:
    return {tuple(r) for r in conn.execute(query, params).fetchall()}


def past_knowledge(history: History) -> datetime:
    """The past knowledge time the checks and the aggregates ask: the middle day, noon."""
    return history.day_start(max(1, history.days // 2)) + timedelta(hours=12)


def check_answers(conn: psycopg.Connection[Any], history: History) -> dict[str, int]:
    """Compare the store with the current-state tables (now) and with the replay (a past
    knowledge time); raises AnswerMismatch. Returns the rows compared, per check."""
    replay = Replay(history.writes)
    past = past_knowledge(history)
    checked: dict[str, int] = Counter()
    for t in TABLES.values():
        cols = ", ".join(c for c, _ in t.columns)
        ours = _rows(conn, f"SELECT {cols} FROM tpch.{t.name}_as_of(%s, NULL)", (history.end,))
        plain = _rows(conn, f"SELECT {cols} FROM tpch_plain.{t.name}")
        if ours != plain:
            raise AnswerMismatch(
                f"{t.name} as of now differs from the current-state table: "
                f"{len(ours - plain)} rows only in the store, {len(plain - ours)} only in the table"
            )
        checked["as of now = current-state table"] += len(ours)
        for valid_at in (past, past - timedelta(days=3)):
            ours = _rows(conn, f"SELECT {cols} FROM tpch.{t.name}_as_of(%s, %s)", (valid_at, past))
            expected = {
                tuple(row[c] for c, _ in t.columns)
                for row in replay.as_of(t.name, valid_at, past).values()
            }
            if ours != expected:
                raise AnswerMismatch(
                    f"{t.name} valid at {valid_at} as known at {past} differs from the replay: "
                    f"{len(ours - expected)} rows only in the store, "
                    f"{len(expected - ours)} only in the replay"
                )
            checked["past knowledge = replay"] += len(ours)
    for name, query in AGGREGATES.items():
        ours_rows = [
            tuple(r)
            for r in conn.execute(
                _aggregate(query, "store"), {"valid_at": past, "known_at": past}
            ).fetchall()
        ]
        if ours_rows != _replay_aggregate(name, replay, past):
            raise AnswerMismatch(f"{name} as known at {past} differs from the replay")
        checked["aggregate groups = replay"] += len(ours_rows)
    return dict(checked)


# -- Timings ----------------------------------------------------------------------------


def _timed(
    rounds: Iterable[dict[str, Callable[[], float]]],
) -> dict[str, list[float]]:
    """Run each round's operations (the first round only warms caches and plans)."""
    timings: dict[str, list[float]] = {}
    for i, operations in enumerate(rounds):
        for name, run in operations.items():
            value = run()
            if i:
                timings.setdefault(name, []).append(value)
    return timings


def _known_at(history: History, rng: random.Random) -> datetime:
    """A random past knowledge time: a random scenario's, in the first nine tenths."""
    return history.scenarios[rng.randrange(max(1, len(history.scenarios) * 9 // 10))].known_at


def time_lookups(
    conn: psycopg.Connection[Any], history: History, samples: int, rng: random.Random
) -> dict[str, Any]:
    store = Store(conn)
    customers = history.sizes.customers

    def round_() -> dict[str, Callable[[], float]]:
        c = rng.randrange(1, customers + 1)
        known = _known_at(history, rng)
        return {
            "primary key, current-state table (server)": lambda: server_ms(
                conn, LOOKUP_PLAIN, (c,)
            ),
            "customer_as_of, current knowledge (server)": lambda: server_ms(
                conn, LOOKUP_AS_OF, (None, None, c)
            ),
            "customer_as_of, past knowledge (server)": lambda: server_ms(
                conn, LOOKUP_AS_OF, (known, known, c)
            ),
            "primary key, current-state table (Python, end to end)": lambda: fetch_ms(
                conn, LOOKUP_PLAIN, (c,)
            ),
            "app_tables.as_of, past knowledge (Python, end to end)": lambda: client_ms(
                store.app_tables.as_of,
                "tpch.customer",
                {"c_custkey": c},
                valid_at=known,
                known_at=known,
            ),
        }

    timings = _timed(round_() for _ in range(samples + 1))
    return {"samples": samples, "timings_ms": timings, "summary": summarise(timings)}


def time_histories(
    conn: psycopg.Connection[Any], history: History, samples: int, rng: random.Random
) -> dict[str, Any]:
    store = Store(conn)
    row = conn.execute("SELECT min(o_orderkey), max(o_orderkey) FROM tpch_plain.orders").fetchone()
    assert row is not None
    low, high = int(row[0]), int(row[1])
    lengths: list[int] = []

    def round_() -> dict[str, Callable[[], float]]:
        c = rng.randrange(1, history.sizes.customers + 1)
        rows = len(conn.execute(HISTORY, (c,)).fetchall())
        lengths.append(rows)
        first = rng.randrange(low, max(low + 1, high - rows))
        return {
            "primary key range scan, same rows (server)": lambda: server_ms(
                conn, RANGE_SCAN, (first, rows)
            ),
            "customer_history (server)": lambda: server_ms(conn, HISTORY, (c,)),
            "primary key range scan, same rows (Python, end to end)": lambda: fetch_ms(
                conn, RANGE_SCAN, (first, rows)
            ),
            "app_tables.history (Python, end to end)": lambda: client_ms(
                store.app_tables.history, "tpch.customer", {"c_custkey": c}
            ),
        }

    timings = _timed(round_() for _ in range(samples + 1))
    return {
        "samples": samples,
        "rows_median": sorted(lengths)[len(lengths) // 2],
        "rows_max": max(lengths),
        "timings_ms": timings,
        "summary": summarise(timings),
    }


def time_changes(
    conn: psycopg.Connection[Any], history: History, samples: int, rng: random.Random
) -> dict[str, Any]:
    found: dict[str, list[int]] = {"changes": [], "updated_at": []}

    def round_() -> dict[str, Callable[[], float]]:
        day = rng.randrange(1, history.days + 1)
        window = {"from": history.day_start(day), "to": history.day_start(day) + DAY}
        found["changes"].append(len(conn.execute(CHANGES, window).fetchall()))
        found["updated_at"].append(len(conn.execute(UPDATED, window).fetchall()))
        return {
            "updated_at range scan, current-state tables (server)": lambda: server_ms(
                conn, UPDATED, window
            ),
            "<table>_changes of the five tables (server)": lambda: server_ms(conn, CHANGES, window),
        }

    timings = _timed(round_() for _ in range(samples + 1))
    return {
        "samples": samples,
        "rows_median": {k: sorted(v)[len(v) // 2] for k, v in found.items()},
        "timings_ms": timings,
        "summary": summarise(timings),
    }


def time_aggregates(
    conn: psycopg.Connection[Any], history: History, samples: int, rng: random.Random
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, query in AGGREGATES.items():
        plain, store = _aggregate(query, "plain"), _aggregate(query, "store")

        def round_(plain: str = plain, store: str = store) -> dict[str, Callable[[], float]]:
            known = history.day_start(rng.randrange(1, history.days + 1)) + timedelta(hours=12)
            past = {"valid_at": known, "known_at": known}
            now = {"valid_at": None, "known_at": None}
            # The same versions as now, asked with explicit times rather than NULL (now()).
            last = {"valid_at": history.end, "known_at": history.end + timedelta(seconds=1)}
            return {
                "current-state tables (server)": lambda: server_ms(conn, plain, None),
                "as_of a past knowledge time (server)": lambda: server_ms(conn, store, past),
                "as_of now (NULL, NULL) (server)": lambda: server_ms(conn, store, now),
                "as_of the last knowledge time, explicit (server)": lambda: server_ms(
                    conn, store, last
                ),
            }

        timings = _timed(round_() for _ in range(samples + 1))
        out[name] = {"samples": samples, "timings_ms": timings, "summary": summarise(timings)}
    return out


def measure(
    url: str, scenarios: int, seed: int, samples: dict[str, int], progress: Callable[[str], None]
) -> dict[str, Any]:
    """Generate, load twice, check, time: one number of scenarios, in the database ``url``."""
    rng = random.Random(seed)
    t0 = time.perf_counter()
    history = generate(scenarios, seed)
    generated = time.perf_counter() - t0
    writes = len(history.initial) + sum(len(s.writes) for s in history.scenarios)
    progress(f"{scenarios:,} scenarios generated ({writes:,} writes, {history.days} days)")
    with psycopg.connect(url, autocommit=True) as conn:
        create_tables(conn)
        plain_seconds, plain_writes = load_plain(conn, history)
        progress(f"current-state tables loaded in {plain_seconds:.1f} s")
        log_seconds = load_log(conn, history)
        progress(f"append-only history tables loaded in {log_seconds:.1f} s")
        store_seconds = load_store(conn, history)
        progress(f"bitemporal tables loaded in {store_seconds:.1f} s")
        for schema in (STORE, PLAIN, LOG):
            for t in TABLES:
                conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, t)))
        versions = _count(conn, STORE)
        current_rows = _count(conn, PLAIN)
        t0 = time.perf_counter()
        checked = check_answers(conn, history)
        progress(f"answers checked in {time.perf_counter() - t0:.1f} s")
        result: dict[str, Any] = {
            "scenarios": scenarios,
            "seed": seed,
            "sizes": {
                "customers": history.sizes.customers,
                "suppliers": history.sizes.suppliers,
                "parts": history.sizes.parts,
                "scenarios_per_day": history.sizes.per_day,
                "days": history.days,
            },
            "mix": dict(Counter(s.kind for s in history.scenarios)),
            "retroactive_writes": sum(
                1 for s in history.scenarios for w in s.writes if w.valid_from < w.known_at
            ),
            "future_writes": sum(
                1 for s in history.scenarios for w in s.writes if w.valid_from > w.known_at
            ),
            "past_knowledge": past_knowledge(history).isoformat(),
            "generate_seconds": generated,
            "load": {
                "writes": writes,
                "versions": versions,
                "current_rows": current_rows,
                "store_seconds": store_seconds,
                "plain_writes": plain_writes,
                "plain_seconds": plain_seconds,
                "log_seconds": log_seconds,
            },
            "checked_rows": checked,
        }
        progress("time travel ...")
        result["lookups"] = time_lookups(conn, history, samples["lookups"], rng)
        progress("key histories ...")
        result["histories"] = time_histories(conn, history, samples["histories"], rng)
        progress("knowledge-window changes ...")
        result["changes"] = time_changes(conn, history, samples["changes"], rng)
        progress("aggregates ...")
        result["aggregates"] = time_aggregates(conn, history, samples["aggregates"], rng)
    return result


# -- Report -----------------------------------------------------------------------------


def _summary_rows(section: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (
            name,
            f"{f['median_ms']:.3f}",
            f"{f['p99_ms']:.3f}",
            f"{f['vs_baseline']:.1f}x",
        )
        for name, f in section["summary"].items()
    ]


# Server: EXPLAIN (ANALYZE) execution time; each ratio is to the first row measured the same
# way (on the server, or end to end from Python), the baseline.
HEADERS = ("operation", "median ms", "p99 ms", "vs baseline")


def run_report(r: dict[str, Any]) -> str:
    load = r["load"]
    s = r["sizes"]
    mix = ", ".join(f"{k} {r['mix'].get(k, 0):,}" for k in MIX)
    out = [
        (
            f"\n== {r['scenarios']:,} scenarios (seed {r['seed']}): {s['days']} simulated days of "
            f"{s['scenarios_per_day']:,}; {s['customers']:,} customers, {s['suppliers']:,} "
            f"suppliers, {s['parts']:,} parts\n"
        ),
        f"mix: {mix}\n",
        (
            f"valid time before knowledge time (retroactive): {r['retroactive_writes']:,} "
            f"writes; after it (scheduled): {r['future_writes']:,}\n"
        ),
        (
            f"loaded: {load['writes']:,} writes -> {load['versions']:,} versions; "
            f"current-state tables: {load['current_rows']:,} rows\n"
        ),
        "checked, identical: "
        + ", ".join(f"{n:,} rows {k}" for k, n in r["checked_rows"].items())
        + f" (past knowledge time {r['past_knowledge']})\n",
    ]
    plain_rate = load["plain_writes"] / load["plain_seconds"]
    store_rate = load["writes"] / load["store_seconds"]
    out.append(
        "\nLoad, one transaction per simulated day, writes pipelined\n"
        + format_table(
            ("method", "writes", "seconds", "writes/s", "versions/s", "vs baseline"),
            [
                (
                    "upsert into current-state tables (baseline)",
                    f"{load['plain_writes']:,}",
                    f"{load['plain_seconds']:.1f}",
                    f"{plain_rate:,.0f}",
                    "-",
                    "1.0x",
                ),
                (
                    "INSERT of every write into append-only history tables",
                    f"{load['writes']:,}",
                    f"{load['log_seconds']:.1f}",
                    f"{load['writes'] / load['log_seconds']:,.0f}",
                    f"{load['writes'] / load['log_seconds']:,.0f}",
                    f"{load['writes'] / load['log_seconds'] / plain_rate:.2f}x",
                ),
                (
                    "<table>_record / _retract into bitemporal tables",
                    f"{load['writes']:,}",
                    f"{load['store_seconds']:.1f}",
                    f"{store_rate:,.0f}",
                    f"{load['versions'] / load['store_seconds']:,.0f}",
                    f"{store_rate / plain_rate:.2f}x",
                ),
            ],
        )
    )
    h = r["histories"]
    c = r["changes"]
    sections = [
        ("Time travel: one customer", r["lookups"]),
        (f"Key history: one customer's versions ({h['rows_median']} rows, median)", h),
        (
            (
                f"Knowledge-window changes: one simulated day "
                f"({c['rows_median']['changes']:,} changes; "
                f"{c['rows_median']['updated_at']:,} rows still carry that day's updated_at)"
            ),
            c,
        ),
        *((f"TPC-H-style aggregate: {name}", a) for name, a in r["aggregates"].items()),
    ]
    for title, section in sections:
        out.append(
            f"\n{title}, {section['samples']} samples\n"
            + format_table(HEADERS, _summary_rows(section))
        )
    return "".join(out)


def report(result: dict[str, Any]) -> str:
    m = result["machine"]
    head = (
        f"python -m benchmarks tpcbih: PostgreSQL {m['server_version']}, {m['cpus']} CPUs, "
        f"{m['platform']}, Python {m['python']}\n"
    )
    return head + "".join(run_report(r) for r in result["runs"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks tpcbih", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", help="server to create scratch databases on (default: as for connect)"
    )
    parser.add_argument(
        "--scenarios", default="100k", help="numbers of scenarios, e.g. 100k,1m (default 100k)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lookups", type=count, default=300, help="time-travel samples")
    parser.add_argument("--histories", type=count, default=100, help="key-history samples")
    parser.add_argument("--changes", type=count, default=30, help="knowledge-window samples")
    parser.add_argument("--aggregates", type=count, default=10, help="samples per aggregate")
    parser.add_argument("--json", help="write every figure measured here")
    args = parser.parse_args(argv)
    url = database_url(args.url)
    started = time.perf_counter()

    def progress(message: str) -> None:
        sys.stderr.write(f"[{time.perf_counter() - started:7.1f} s] {message}\n")
        sys.stderr.flush()

    samples = {
        "lookups": args.lookups,
        "histories": args.histories,
        "changes": args.changes,
        "aggregates": args.aggregates,
    }
    result: dict[str, Any] = {"machine": machine(psycopg_url(url)), "runs": []}
    sys.stdout.write(report(result))
    for size in [parse_size(s) for s in args.scenarios.split(",") if s.strip()]:
        with scratch_database(url, "bitemporal_bench_tpcbih") as scratch:
            migrate(scratch)
            run = measure(psycopg_url(scratch), size, args.seed, samples, progress)
        result["runs"].append(run)
        sys.stdout.write(run_report(run))
        sys.stdout.flush()
    result["seconds"] = time.perf_counter() - started
    sys.stdout.write(f"\ntotal {result['seconds']:.1f} s\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2, default=str)
    return 0
