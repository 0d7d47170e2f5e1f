"""Fact-store benchmark: lookups, audits, timelines and writes against named
baselines measured in the same run, over a series of store sizes; ingestion
against plain ``COPY``; decay steps at scale.

    python -m benchmarks facts [--sizes 10k,1m,10m] [--changes N] [--samples N]
                               [--plot PNG] [--json FILE]
    python -m benchmarks facts --ingest [--ingest-rows N] [--batch-size N] [--record-rows N]
    python -m benchmarks facts --all [--decay-sizes 10k,100k,1m] ...
    python -m benchmarks facts --fill-only [--sizes 10m]

For each size (a number of versions: ``10k``, ``1m``, ``10m``) it fills a
scratch database of its own with keys that each changed ``--changes`` times,
each change closing the key's open version and re-recording its remainder
(what record() leaves behind: ``2*changes - 1`` versions per key), and a plain
table with the same number of rows and a bigint primary key (the baseline).
Then, for random keys, it measures

* on the server: ``EXPLAIN (ANALYZE)`` execution time of the as-of lookup, for
  current knowledge and for a past knowledge time, of ``resolve()`` and of the
  primary-key lookup;
* end to end from Python: ``store.facts.resolve`` and a primary-key ``SELECT``;
* the designs people use instead, built from the same data: a "latest row per
  key" table, a single-axis (valid-time only) history and, where the server
  has it, the ``periods`` extension (SQL:2011 periods and system versioning);
  the report counts how often each answers differently from ``as_of``;
* writes, one change per transaction: ``record`` against a primary-key
  ``UPDATE`` (and the same change in ``periods``);
* last, ingestion into that store: ``record_many`` of ``--ingest-rows`` rows of
  each workload below (new keys, keys with history) in batches of
  ``--batch-size``, against ``COPY`` of the same rows into a plain table of the
  same database (record_many's goals are judged at every size from these).

At every size it also times a retrospective audit (the as-of answers of
``--audit-keys`` keys at one past knowledge time, against as many rows by
primary key) and the timeline of one key with ``--timeline-versions`` versions
(``bitemporal.history``, against a primary-key range scan of as many rows; that
key is part of every size's fill), from Python also with the garbage collector's
first threshold raised (``LAZY_COLLECTOR``), to show what Python's cyclic collector
takes of it (a history builds three objects per version). It prints medians, p99s
and ratios to the baselines per size, then the lookup times against the number of versions, with
their ratios to the primary key and to the smallest size (flatness), and issue
15's goals (``GOALS``: a row per goal, a column per size, each figure marked met
or not; the fill's time is judged at 10M versions only; ``--fill-only`` times the fills
alone, phase by phase, and judges that goal without the rest). Ratios are what to compare across
machines: absolute times on shared machines are noisy.

``--ingest`` compares ingestion methods instead (and only that; ``--all`` adds it to
the lookups): the same rows written by each method, each method
in a fresh scratch database of its own, timed end to end from Python
(conversion of the rows included), for two workloads:

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
record_many, untimed, so that it writes into a table of the same size); and, for
new keys, a bare ``INSERT ... SELECT`` of the rows into ``fact_key`` and
``fact_version`` with no merge and no checks (what the table's indexes alone
cost: the ceiling of any ingestion path). It prints rows and versions per
second, the ratios to ``COPY`` and to ``record``, and whether record_many meets
the goals (new keys: at least 50,000 versions per second and a quarter of COPY's
rows per second; history: at least 25,000 versions per second).

``--all`` runs the lookups, ingestion and the decay benchmark's step timings
(see benchmarks/decay.py) at ``--decay-sizes`` present items, in one
report and one JSON file.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from bitemporal import Key, Store, migrate
from bitemporal.database import database_url, psycopg_url, scratch_database
from bitemporal.formatting import format_table

from . import decay
from . import periods_extension as periods
from .arguments import count
from .chart import draw_lookups

EPOCH = datetime(2020, 1, 1, tzinfo=UTC)

# Change i of key prefix||k: value i valid from day i, known from hour i; it
# closes the previous open version and re-records its remainder [day i-1, day i).
# The key's integer is k (with the triggers off, nothing sets it): unique within
# the entity, as the store needs it.
FILL = (
    """INSERT INTO bitemporal.fact_key
              (entity, attribute, first_known_at, last_known_at, last_txid, key_id)
       SELECT %(prefix)s || k, 'a', %(epoch)s, %(epoch)s + (%(changes)s - 1) * interval '1 hour',
              pg_current_xact_id(), k
         FROM generate_series(1, %(keys)s) k""",
    """INSERT INTO bitemporal.fact_version
                   (entity, attribute, source, value, valid_period, known_period, key_id)
       SELECT %(prefix)s || k, 'a', 's', to_jsonb(i),
              tstzrange(%(epoch)s + i * interval '1 day', NULL, '[)'),
              tstzrange(%(epoch)s + i * interval '1 hour',
                        CASE WHEN i < %(changes)s - 1
                             THEN %(epoch)s + (i + 1) * interval '1 hour' END, '[)'), k
         FROM generate_series(1, %(keys)s) k, generate_series(0, %(changes)s - 1) i
       UNION ALL
       SELECT %(prefix)s || k, 'a', 's', to_jsonb(i),
              tstzrange(%(epoch)s + i * interval '1 day',
                        %(epoch)s + (i + 1) * interval '1 day', '[)'),
              tstzrange(%(epoch)s + (i + 1) * interval '1 hour', NULL, '[)'), k
         FROM generate_series(1, %(keys)s) k, generate_series(0, %(changes)s - 2) i
        ORDER BY 1, 5""",
)
TIMELINE_ENTITY = "timeline1"

# The constraints, indexes (with their comments) and triggers of the two
# tables the fill writes: the same before and after it. (A foreign key's
# internal triggers are named after OIDs; the constraint stands for them.)
SCHEMA = """
SELECT 'constraint', conrelid::regclass::text, conname, pg_get_constraintdef(oid),
       convalidated::text, obj_description(oid, 'pg_constraint')
  FROM pg_constraint
 WHERE conrelid IN ('bitemporal.fact_version'::regclass, 'bitemporal.fact_key'::regclass)
UNION ALL
SELECT 'index', indrelid::regclass::text, indexrelid::regclass::text, pg_get_indexdef(indexrelid),
       indisvalid::text, obj_description(indexrelid, 'pg_class')
  FROM pg_index
 WHERE indrelid IN ('bitemporal.fact_version'::regclass, 'bitemporal.fact_key'::regclass)
UNION ALL
SELECT 'trigger', tgrelid::regclass::text, tgname, pg_get_triggerdef(oid), tgenabled::text, NULL
  FROM pg_trigger
 WHERE tgrelid IN ('bitemporal.fact_version'::regclass, 'bitemporal.fact_key'::regclass)
   AND NOT tgisinternal
ORDER BY 1, 2, 3"""
# What the fill drops and re-creates on fact_version: the exclusion and
# foreign-key constraints, and the indexes that belong to no constraint.
DEFERRED = """
SELECT 'constraint', conname, pg_get_constraintdef(oid), obj_description(oid, 'pg_constraint'),
       CASE WHEN contype = 'x' THEN obj_description(conindid, 'pg_class') END
  FROM pg_constraint WHERE conrelid = 'bitemporal.fact_version'::regclass AND contype IN ('x', 'f')
UNION ALL
SELECT 'index', indexrelid::regclass::text, pg_get_indexdef(indexrelid),
       obj_description(indexrelid, 'pg_class'), NULL
  FROM pg_index i WHERE indrelid = 'bitemporal.fact_version'::regclass AND NOT indisprimary
   AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conindid = i.indexrelid)"""


def fill(
    conn: psycopg.Connection[Any], keys: int, changes: int, timeline_versions: int = 0
) -> dict[str, Any]:
    """Fill an empty, migrated store; returns the number of versions and the seconds per phase.

    ``timeline_versions`` adds one key (TIMELINE_ENTITY) with about that many
    versions. The exclusion and foreign-key constraints and the secondary
    indexes are dropped during the load and re-created after it from their own
    definitions (re-adding a constraint validates every row): building a GiST
    index once is much faster than growing it row by row. The schema is checked
    to be the migrated one afterwards. Bulk ingestion proper is record_many's job.
    """
    phases: dict[str, float] = {}
    started = time.perf_counter()
    schema = conn.execute(SCHEMA).fetchall()
    with conn.transaction():
        # Session settings for the sort and the index builds, not the server's.
        conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
        conn.execute("SET LOCAL work_mem = '256MB'")
        deferred = conn.execute(DEFERRED).fetchall()
        for kind, name, _, _, _ in deferred:
            conn.execute(
                sql.SQL(
                    "ALTER TABLE bitemporal.fact_version DROP CONSTRAINT {}"
                    if kind == "constraint"
                    else "DROP INDEX {}"
                ).format(sql.SQL(name))
            )
        fills = [("e", keys, changes)]
        if timeline_versions:
            fills.append((TIMELINE_ENTITY[:-1], 1, (timeline_versions + 1) // 2))
        # A synthetic past, written as the owner with the triggers off: they refuse knowledge
        # earlier than a key's latest (which the fill sets first), and would slow the load.
        conn.execute("ALTER TABLE bitemporal.fact_version DISABLE TRIGGER USER")
        for prefix, n, c in fills:
            for statement in FILL:
                conn.execute(statement, {"prefix": prefix, "keys": n, "changes": c, "epoch": EPOCH})
        conn.execute("ALTER TABLE bitemporal.fact_version ENABLE TRIGGER USER")
        phases["insert"] = time.perf_counter() - started
        for kind, name, definition, comment, index_comment in deferred:
            t0 = time.perf_counter()
            if kind == "constraint":
                conn.execute(
                    sql.SQL("ALTER TABLE bitemporal.fact_version ADD CONSTRAINT {} {}").format(
                        sql.SQL(name), sql.SQL(definition)
                    )
                )
                if comment is not None:
                    conn.execute(
                        sql.SQL("COMMENT ON CONSTRAINT {} ON bitemporal.fact_version IS {}").format(
                            sql.SQL(name), sql.Literal(comment)
                        )
                    )
                if index_comment is not None:  # an exclusion constraint's own index
                    conn.execute(
                        sql.SQL("COMMENT ON INDEX bitemporal.{} IS {}").format(
                            sql.Identifier(name), sql.Literal(index_comment)
                        )
                    )
            else:
                conn.execute(sql.SQL(definition))
                if comment is not None:
                    conn.execute(
                        sql.SQL("COMMENT ON INDEX {} IS {}").format(
                            sql.SQL(name), sql.Literal(comment)
                        )
                    )
            phases[name] = time.perf_counter() - t0
    t0 = time.perf_counter()
    conn.execute("VACUUM ANALYZE bitemporal.fact_version")
    conn.execute("VACUUM ANALYZE bitemporal.fact_key")
    phases["vacuum analyze"] = time.perf_counter() - t0
    if conn.execute(SCHEMA).fetchall() != schema:
        raise AssertionError("the bulk fill left a schema unlike the migrated one")
    row = conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()
    assert row is not None
    return {"versions": int(row[0]), "seconds": time.perf_counter() - started, "phases": phases}


def fill_baseline(conn: psycopg.Connection[Any], rows: int) -> None:
    conn.execute("CREATE TABLE bench_plain (id bigint PRIMARY KEY, value jsonb NOT NULL)")
    conn.execute(
        "INSERT INTO bench_plain SELECT g, to_jsonb(g) FROM generate_series(1, %s) g", (rows,)
    )
    conn.execute("VACUUM ANALYZE bench_plain")


# The designs people use instead, built from the same versions: "keep the
# latest row" (one row per key: the value recorded last) and a single-axis
# history (valid time only, i.e. what the store knows now).
NAIVE = (
    """CREATE TABLE bench_latest AS
       SELECT DISTINCT ON (entity, attribute) entity, attribute, value FROM bitemporal.fact_version
        ORDER BY entity, attribute, lower(known_period) DESC,
                 lower(valid_period) DESC NULLS LAST""",
    "ALTER TABLE bench_latest ADD PRIMARY KEY (entity, attribute)",
    """CREATE TABLE bench_history AS
       SELECT entity, attribute, lower(valid_period) AS valid_from,
              upper(valid_period) AS valid_to, value
         FROM bitemporal.fact_version WHERE upper_inf(known_period)""",
    "CREATE INDEX ON bench_history (entity, attribute, valid_from)",
    "VACUUM ANALYZE bench_latest",
    "VACUUM ANALYZE bench_history",
)
PRIMARY_KEY = "SELECT value FROM bench_plain WHERE id = %s"
LATEST = "SELECT value FROM bench_latest WHERE entity = %s AND attribute = 'a'"
SINGLE_AXIS = """SELECT value FROM bench_history WHERE entity = %s AND attribute = 'a'
                    AND valid_from <= %s AND (valid_to IS NULL OR valid_to > %s)
                  ORDER BY valid_from DESC LIMIT 1"""
AS_OF = "SELECT value FROM bitemporal.as_of(%s, 'a', %s, %s)"
AUDIT = """SELECT v.*
             FROM unnest(%(entities)s::text[], %(valid_ats)s::timestamptz[]) q(entity, valid_at)
           CROSS JOIN LATERAL bitemporal.as_of(q.entity, 'a', q.valid_at, %(known_at)s) v"""
AUDIT_BASELINE = "SELECT * FROM bench_plain WHERE id = ANY(%(ids)s)"
TIMELINE = "SELECT * FROM bitemporal.history(%(entity)s, 'a')"
TIMELINE_BASELINE = "SELECT * FROM bench_plain WHERE id BETWEEN %(first)s AND %(last)s ORDER BY id"


def _value(conn: psycopg.Connection[Any], query: str, params: Any) -> Any:
    row = conn.execute(query, params).fetchone()
    return None if row is None else row[0]


def server_times(conn: psycopg.Connection[Any], query: str, params: Any) -> tuple[float, float]:
    """The server's planning and execution time of one run of ``query``, in ms."""
    row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}", params).fetchone()
    assert row is not None
    return float(row[0][0]["Planning Time"]), float(row[0][0]["Execution Time"])


def server_ms(conn: psycopg.Connection[Any], query: str, params: Any) -> float:
    return server_times(conn, query, params)[1]


def client_ms(call: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    start = time.perf_counter()
    call(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


def fetch_ms(conn: psycopg.Connection[Any], query: str, params: Any) -> float:
    return client_ms(lambda: conn.execute(query, params).fetchall())


#: The garbage collector's first threshold for the timeline's last measurement
#: (Python's default: 700 allocations): a collection at every 50,000 allocations
#: rather than every 700, as an application may set with gc.set_threshold.
LAZY_COLLECTOR = 50_000


def lazy_collector_ms(call: Callable[..., object], *args: Any) -> float:
    """client_ms with the collector's first threshold at LAZY_COLLECTOR, then as it was."""
    thresholds = gc.get_threshold()
    gc.set_threshold(LAZY_COLLECTOR, *thresholds[1:])
    try:
        return client_ms(call, *args)
    finally:
        gc.set_threshold(*thresholds)


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


SERVER, PYTHON = "(server)", "(Python, end to end)"


def summarise(timings: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Median, p99 and the ratio to the baseline: the first operation measured the same way
    (on the server, or end to end from Python)."""
    medians = {name: summary(samples) for name, samples in timings.items()}
    baselines = {
        suffix: next(n for n in timings if n.endswith(suffix))
        for suffix in (SERVER, PYTHON)
        if any(n.endswith(suffix) for n in timings)
    }
    out = {}
    for name, (median, p99) in medians.items():
        baseline = baselines[SERVER if name.endswith(SERVER) else PYTHON]
        out[name] = {
            "median_ms": median,
            "p99_ms": p99,
            "baseline": baseline,
            "vs_baseline": median / medians[baseline][0],
        }
    return out


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
PERIODS_OPERATIONS = ("periods, current knowledge (server)", "periods, past knowledge (server)")
# How often the other designs answer differently from as_of, on the same questions.
WRONG = (
    "latest row per key, current knowledge",
    "single-axis history, current knowledge",
    "single-axis history, past knowledge",
)
PERIODS_WRONG = ("periods, current knowledge", "periods, past knowledge")


def lookups(
    conn: psycopg.Connection[Any],
    keys: int,
    changes: int,
    versions: int,
    samples: int,
    rng: random.Random,
    with_periods: bool,
) -> tuple[dict[str, list[float]], dict[str, int]]:
    store = Store(conn)
    # A key, a change (valid from its day), how many changes were known when
    # asked about the past, and a baseline row.
    questions = []
    for _ in range(samples):
        change = rng.randrange(0, changes)
        questions.append(
            (
                rng.randrange(1, keys + 1),
                change,
                rng.randrange(0, change + 1),
                rng.randrange(1, versions + 1),
            )
        )
    operations = OPERATIONS + (PERIODS_OPERATIONS if with_periods else ())
    timings: dict[str, list[float]] = {name: [] for name in operations}
    wrong = dict.fromkeys(WRONG + (PERIODS_WRONG if with_periods else ()), 0)
    # Warm caches and plans first; then every operation runs on the same questions.
    for warm in (True, False):
        for k, change, known_changes, pk in questions:
            valid_at = EPOCH + timedelta(days=change, hours=12)
            past = EPOCH + timedelta(hours=known_changes, minutes=30)
            entity = f"e{k}"
            ask = {"entity": entity, "valid_at": valid_at, "known_at": past}
            results = {
                "primary key (server)": server_ms(conn, PRIMARY_KEY, (pk,)),
                "as_of, current knowledge (server)": server_ms(
                    conn, "SELECT * FROM bitemporal.as_of(%s, 'a', %s)", (entity, valid_at)
                ),
                "as_of, past knowledge (server)": server_ms(
                    conn,
                    "SELECT * FROM bitemporal.as_of(%s, 'a', %s, %s)",
                    (entity, valid_at, past),
                ),
                "resolve (server)": server_ms(
                    conn, "SELECT * FROM bitemporal.resolve(%s, 'a', %s)", (entity, valid_at)
                ),
                "latest row per key (server)": server_ms(conn, LATEST, (entity,)),
                "single-axis history (server)": server_ms(
                    conn, SINGLE_AXIS, (entity, valid_at, valid_at)
                ),
                "primary key (Python, end to end)": client_ms(
                    lambda row: conn.execute(PRIMARY_KEY, (row,)).fetchone(), pk
                ),
                "resolve (Python, end to end)": client_ms(
                    store.facts.resolve, Key(entity, "a"), valid_at=valid_at
                ),
            }
            if with_periods:
                results["periods, current knowledge (server)"] = server_ms(
                    conn, periods.CURRENT, ask
                )
                results["periods, past knowledge (server)"] = server_ms(conn, periods.PAST, ask)
            if warm:
                continue
            for name, value in results.items():
                timings[name].append(value)
            now_answer = _value(conn, AS_OF, (entity, valid_at, None))
            then_answer = _value(conn, AS_OF, (entity, valid_at, past))
            single_axis = _value(conn, SINGLE_AXIS, (entity, valid_at, valid_at))
            wrong["latest row per key, current knowledge"] += (
                _value(conn, LATEST, (entity,)) != now_answer
            )
            wrong["single-axis history, current knowledge"] += single_axis != now_answer
            wrong["single-axis history, past knowledge"] += single_axis != then_answer
            if with_periods:
                wrong["periods, current knowledge"] += (
                    _value(conn, periods.CURRENT, ask) != now_answer
                )
                wrong["periods, past knowledge"] += _value(conn, periods.PAST, ask) != then_answer
    return timings, wrong


def audit(
    conn: psycopg.Connection[Any],
    keys: int,
    changes: int,
    versions: int,
    count: int,
    samples: int,
    rng: random.Random,
    with_periods: bool,
) -> dict[str, Any]:
    """The as-of answers of ``count`` keys at one past knowledge time, against as many rows by
    primary key."""
    count = min(count, keys)
    timings: dict[str, list[float]] = {}
    differ = 0
    for sample in range(-1, samples):  # sample -1 warms the caches
        chosen = rng.sample(range(1, keys + 1), count)
        params = {
            "entities": [f"e{k}" for k in chosen],
            "valid_ats": [EPOCH + timedelta(days=rng.randrange(changes), hours=12) for _ in chosen],
            "known_at": EPOCH + timedelta(hours=rng.randrange(changes), minutes=30),
            "ids": rng.sample(range(1, versions + 1), count),
        }
        results = {
            "primary key, same number of rows (server)": server_ms(conn, AUDIT_BASELINE, params),
            "as_of per key, past knowledge (server)": server_ms(conn, AUDIT, params),
            "primary key, same number of rows (Python, end to end)": fetch_ms(
                conn, AUDIT_BASELINE, params
            ),
            "as_of per key, past knowledge (Python, end to end)": fetch_ms(conn, AUDIT, params),
        }
        if with_periods:
            results["periods __as_of, past knowledge (server)"] = server_ms(
                conn, periods.AUDIT, params
            )
            # Only entity and value: psycopg reads no 'infinity' timestamps.
            ours, theirs = (
                conn.execute(f"SELECT entity, value FROM ({q}) r ORDER BY 1, 2", params).fetchall()
                for q in (AUDIT, periods.AUDIT)
            )
            differ += ours != theirs
        if sample >= 0:
            for name, value in results.items():
                timings.setdefault(name, []).append(value)
    rows = len(conn.execute(AUDIT, params).fetchall())
    return {
        "keys": count,
        "rows": rows,
        "samples": samples,
        "timings_ms": timings,
        "periods_samples_unlike_as_of": differ if with_periods else None,
        "summary": summarise(timings),
    }


def timeline(
    conn: psycopg.Connection[Any],
    versions: int,
    samples: int,
    rng: random.Random,
    with_periods: bool,
) -> dict[str, Any]:
    """bitemporal.history of TIMELINE_ENTITY, against a primary-key range scan of as many rows."""
    store = Store(conn)
    key = Key(TIMELINE_ENTITY, "a")
    rows = len(store.facts.history(key))
    timings: dict[str, list[float]] = {}
    for sample in range(-1, samples):
        first = rng.randrange(1, versions - rows + 2)
        params = {"entity": TIMELINE_ENTITY, "first": first, "last": first + rows - 1}
        results = {
            "primary key range scan, same number of rows (server)": server_ms(
                conn, TIMELINE_BASELINE, params
            ),
            "history (server)": server_ms(conn, TIMELINE, params),
            "primary key range scan, same number of rows (Python, end to end)": fetch_ms(
                conn, TIMELINE_BASELINE, params
            ),
            "history (Python, end to end)": client_ms(store.facts.history, key),
            f"history, gc threshold {LAZY_COLLECTOR:,} (Python, end to end)": lazy_collector_ms(
                store.facts.history, key
            ),
        }
        if with_periods:
            results["periods with_history (server)"] = server_ms(conn, periods.TIMELINE, params)
        if sample >= 0:
            for name, value in results.items():
                timings.setdefault(name, []).append(value)
    periods_rows = (
        _value(conn, f"SELECT count(*) FROM ({periods.TIMELINE}) r", {"entity": TIMELINE_ENTITY})
        if with_periods
        else None
    )
    return {
        "rows": rows,
        "periods_rows": periods_rows,
        "samples": samples,
        "timings_ms": timings,
        "summary": summarise(timings),
    }


def writes(
    conn: psycopg.Connection[Any],
    keys: int,
    changes: int,
    versions: int,
    samples: int,
    rng: random.Random,
    with_periods: bool,
) -> dict[str, Any]:
    """One change per transaction: record(), a primary-key UPDATE and, in periods, the same
    change."""
    store = Store(conn)
    timings: dict[str, list[float]] = {}
    portion_error = None
    change = {"value": json.dumps(-1), "valid_from": EPOCH + timedelta(days=changes + 1)}
    if with_periods:
        # FOR PORTION OF is tried once; where it fails, the same change is timed
        # as the two statements that work.
        try:
            with conn.transaction(force_rollback=True):
                conn.execute(periods.PORTION, {**change, "entity": "e1"})
        except psycopg.Error as exc:
            portion_error = f"{exc.sqlstate} {type(exc).__name__}: {exc.diag.message_primary}"

    def periods_change(entity: str) -> None:
        params = {**change, "entity": entity}
        with conn.transaction():
            if portion_error is None:
                conn.execute(periods.PORTION, params)
            else:
                conn.execute(periods.SHORTEN, params)
                conn.execute(periods.INSERT, params)

    chosen = rng.sample(range(1, keys + 1), min(samples + 1, keys))
    for i, k in enumerate(chosen):
        entity = f"e{k}"
        results = {
            "primary key UPDATE (Python, end to end)": client_ms(
                conn.execute,
                "UPDATE bench_plain SET value = %s WHERE id = %s",
                (change["value"], rng.randrange(1, versions + 1)),
            ),
            "record, one change (Python, end to end)": client_ms(
                store.facts.record,
                Key(entity, "a"),
                -1,
                source="s",
                valid_from=change["valid_from"],
            ),
        }
        if with_periods:
            results["periods, one change (Python, end to end)"] = client_ms(periods_change, entity)
        if i > 0:  # the first warms the caches
            for name, value in results.items():
                timings.setdefault(name, []).append(value)
    return {
        "samples": len(chosen) - 1,
        "timings_ms": timings,
        "summary": summarise(timings) if timings else {},
        "periods_for_portion_of": None if not with_periods else (portion_error or "ok"),
    }


def measure(
    url: str,
    keys: int,
    changes: int,
    samples: int,
    seed: int,
    *,
    with_periods: bool = True,
    audit_keys: int = 1000,
    audit_samples: int = 20,
    timeline_versions: int = 10_000,
    timeline_samples: int = 10,
    write_samples: int = 30,
    ingest_rows: int = 20_000,
    batch_size: int = 10_000,
) -> dict[str, Any]:
    """Everything measured at one size, in the (scratch) database ``url``."""
    started = time.perf_counter()
    rng = random.Random(seed)
    with psycopg.connect(url, autocommit=True) as conn:
        loaded = fill(conn, keys, changes, timeline_versions)
        versions = loaded["versions"]
        fill_baseline(conn, versions)
        for statement in NAIVE:
            conn.execute(statement)
        reason = periods.unavailable(conn) if with_periods else "not asked for (--no-periods)"
        periods_info: dict[str, Any] = {"available": reason is None, "reason": reason}
        if reason is None:
            t0 = time.perf_counter()
            periods_info["version"] = periods.build(conn)
            periods_info["build_seconds"] = time.perf_counter() - t0
        use_periods = reason is None
        prepared = time.perf_counter()
        timings, wrong = lookups(conn, keys, changes, versions, samples, rng, use_periods)
        result: dict[str, Any] = {
            "server_version": conn.info.server_version // 10000,
            "versions": versions,
            "keys": keys,
            "changes": changes,
            "samples": samples,
            "fill": loaded,
            "periods": periods_info,
            "timings_ms": timings,
            "summary": summarise(timings),
            "wrong_answers": wrong,
        }
        result["audit"] = audit(
            conn, keys, changes, versions, audit_keys, audit_samples, rng, use_periods
        )
        result["timeline"] = timeline(conn, versions, timeline_samples, rng, use_periods)
        result["writes"] = writes(conn, keys, changes, versions, write_samples, rng, use_periods)
        result["as_of_plan"] = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                "SELECT * FROM bitemporal.as_of(%s, 'a', %s)",
                ("e1", EPOCH + timedelta(days=changes // 2)),
            )
        )
        # Last: it adds versions that the measurements above must not see.
        result["ingest"] = ingest_into(conn, ingest_rows, batch_size)
        result["prepare_seconds"] = prepared - started
        result["measure_seconds"] = time.perf_counter() - prepared
    return result


def parse_size(text: str) -> int:
    """``10k`` → 10,000; ``1m`` → 1,000,000; ``2500`` → 2,500."""
    text = text.strip().lower().replace("_", "").replace(",", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return round(float(text[:-1] if scale > 1 else text) * scale)


def keys_for(versions: int, changes: int) -> int:
    """The number of keys whose ``2*changes - 1`` versions each come closest to ``versions``."""
    return max(1, round(versions / (2 * changes - 1)))


def machine(url: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        assert row is not None
        return {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "server_version": str(row[0]).split()[0],
        }


def measure_series(
    url: str,
    key_counts: Sequence[int],
    changes: int,
    samples: int,
    seed: int,
    progress: Callable[[str], None],
    **options: Any,
) -> dict[str, Any]:
    """One scratch database per size, smallest first; ratios across sizes."""
    sizes = []
    for i, keys in enumerate(sorted(key_counts)):
        started = time.perf_counter()
        progress(f"{keys * (2 * changes - 1):,} versions ({keys:,} keys) ...")
        with scratch_database(url, "bitemporal_bench") as scratch:
            migrate(scratch)
            size = measure(
                psycopg_url(scratch),
                keys,
                changes,
                samples,
                seed + i,
                **options,
            )
        size["seconds"] = time.perf_counter() - started
        sizes.append(size)
    smallest = sizes[0]["summary"]
    for size in sizes:
        for name, figures in size["summary"].items():
            figures["vs_smallest"] = figures["median_ms"] / smallest[name]["median_ms"]
    return {"machine": machine(psycopg_url(url)), "sizes": sizes, "goals": goal_rows(sizes)}


@dataclass(frozen=True)
class Goal:
    """A goal of issue 15 met at each size: an operation's ratio to its baseline, at most
    ``at_most``. ``section`` is where a size's result holds it (``""``: the lookups)."""

    name: str
    section: str
    operation: str
    at_most: float


GOALS = (
    Goal(
        "as_of, current knowledge (server) / primary key",
        "",
        "as_of, current knowledge (server)",
        1.5,
    ),
    Goal("as_of, past knowledge (server) / primary key", "", "as_of, past knowledge (server)", 2.5),
    Goal("resolve (server) / primary key", "", "resolve (server)", 2.5),
    Goal("resolve (Python) / primary key (Python)", "", "resolve (Python, end to end)", 2.0),
    Goal(
        "one interior change (Python) / primary key UPDATE",
        "writes",
        "record, one change (Python, end to end)",
        3.0,
    ),
    Goal(
        "retrospective audit (server) / same rows by primary key",
        "audit",
        "as_of per key, past knowledge (server)",
        5.0,
    ),
    Goal(
        "history of one key (Python) / same rows by primary key (Python)",
        "timeline",
        "history (Python, end to end)",
        2.0,
    ),
)
# Flatness: as_of about current knowledge at each size against the smallest.
GOAL_FLATNESS = 1.5
FLATNESS_OPERATION = "as_of, current knowledge (server)"
# The fill of a 10M-version store, judged at that size only.
GOAL_FILL = (10_000_000, 300.0)


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def goal_rows(sizes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every goal at every size, with its figure and verdict (``met`` None: not judged here)."""
    rows = []
    for size in sizes:
        for goal in GOALS:
            summary = size[goal.section]["summary"] if goal.section else size["summary"]
            figure = summary[goal.operation]["vs_baseline"]
            rows.append(
                {
                    "goal": goal.name,
                    "versions": size["versions"],
                    "figure": figure,
                    "shown": f"{figure:.2f}x",
                    "target": f"<= {goal.at_most}x",
                    "met": figure <= goal.at_most,
                }
            )
        flat = size["summary"][FLATNESS_OPERATION]["vs_smallest"]
        rows.append(
            {
                "goal": "flatness: as_of, current knowledge / the smallest size",
                "versions": size["versions"],
                "figure": flat,
                "shown": f"{flat:.2f}x",
                "target": f"<= {GOAL_FLATNESS}x",
                "met": flat <= GOAL_FLATNESS,
            }
        )
        rows.append(fill_goal_row(size["fill"]))
        rows.extend(ingest_goal_rows(size["ingest"], size["versions"]))
    return rows


def fill_goal_row(fill: dict[str, Any]) -> dict[str, Any]:
    """The fill goal's row for one fill (``fill()``'s result); judged at 10M versions only."""
    versions, seconds = GOAL_FILL
    judged = fill["versions"] >= 0.99 * versions
    return {
        "goal": "fill (bench), seconds",
        "versions": fill["versions"],
        "figure": fill["seconds"],
        "shown": f"{fill['seconds']:.1f} s",
        "target": f"<= {seconds:.0f} s at {versions:,} versions",
        "met": fill["seconds"] <= seconds if judged else None,
    }


def measure_fills(
    url: str,
    key_counts: Sequence[int],
    changes: int,
    timeline_versions: int,
    progress: Callable[[str], None],
) -> list[dict[str, Any]]:
    """``--fill-only``: each size's fill alone, in a scratch database of its own."""
    fills = []
    for keys in sorted(key_counts):
        progress(f"filling {keys * (2 * changes - 1):,} versions ({keys:,} keys) ...")
        with scratch_database(url, "bitemporal_bench") as scratch:
            migrate(scratch)
            with psycopg.connect(psycopg_url(scratch), autocommit=True) as conn:
                fills.append(fill(conn, keys, changes, timeline_versions))
    return fills


def fills_report(fills: Sequence[dict[str, Any]]) -> str:
    """Each fill's time, its slowest phase and the fill goal."""
    rows = []
    for f in fills:
        row = fill_goal_row(f)
        phase, seconds = max(f["phases"].items(), key=lambda item: item[1])
        rows.append(
            (
                f"{f['versions']:,}",
                row["shown"],
                f"{phase} {seconds:.1f} s",
                "" if row["met"] is None else f"{row['target']}: {_verdict(row['met'])}",
            )
        )
    return format_table(("versions", "fill", "slowest phase", "goal"), rows)


def goals_report(sizes: Sequence[dict[str, Any]]) -> str:
    """Issue 15's table: one row per goal, one column per size."""
    rows = goal_rows(sizes)
    names = list(dict.fromkeys(r["goal"] for r in rows))
    cells = {(r["goal"], r["versions"]): r for r in rows}
    table = []
    for name in names:
        line = [name, next(r["target"] for r in rows if r["goal"] == name)]
        for size in sizes:
            r = cells[name, size["versions"]]
            line.append(r["shown"] if r["met"] is None else f"{r['shown']} {_verdict(r['met'])}")
        table.append(tuple(line))
    return format_table(
        ("goal (issue 15)", "target", *(f"{s['versions']:,} versions" for s in sizes)), table
    )


def _section(title: str, section: dict[str, Any], unit: str) -> str:
    rows = [
        (name, f"{f['median_ms']:.3f}", f"{f['p99_ms']:.3f}", f"{f['vs_baseline']:.1f}x")
        for name, f in section["summary"].items()
    ]
    return f"{title}\n" + format_table(("operation", "median ms", "p99 ms", f"vs {unit}"), rows)


def size_report(result: dict[str, Any]) -> str:
    fill = result["fill"]
    info = result["periods"]
    head = (
        f"PostgreSQL {result['server_version']}, {result['versions']:,} versions "
        f"({result['keys']:,} keys x {2 * result['changes'] - 1} versions"
        f"{', plus the timeline key' if 'timeline' in result else ''}): "
        f"filled in {fill['seconds']:.1f} s"
        + (f", periods tables built in {info['build_seconds']:.1f} s" if info["available"] else "")
        + f"; measured in {result['measure_seconds']:.1f} s\n"
    )
    lookup = _section(f"{result['samples']} random lookups each", result, "primary key")
    wrong = format_table(
        ("other design, question", "answers unlike as_of"),
        [
            (name, f"{n} of {result['samples']} ({100 * n / result['samples']:.0f}%)")
            for name, n in result["wrong_answers"].items()
        ],
    )
    periods_line = (
        f"periods extension {info['version']}: built from the same versions\n"
        if info["available"]
        else f"periods extension: unavailable ({info['reason']})\n"
    )
    out = [
        head,
        lookup,
        "The designs people use instead, on the same questions:\n",
        wrong,
        periods_line,
    ]
    if writes := result["writes"]["summary"]:
        portion = result["writes"]["periods_for_portion_of"]
        note = (
            ""
            if portion is None
            else "periods: UPDATE ... FOR PORTION OF (its view) works\n"
            if portion == "ok"
            else f"periods: UPDATE ... FOR PORTION OF fails here ({portion});\n"
            "  timed instead: UPDATE (shorten the open version) + INSERT, one transaction\n"
        )
        out.append(
            _section(
                f"Writes, one change per transaction, {result['writes']['samples']} keys "
                "(record cuts the open version: 1 closed, 2 new)",
                {"summary": writes},
                "primary key UPDATE",
            )
            + note
        )
    out.append(ingest_into_report(result["ingest"]))
    return "\n".join(s.rstrip("\n") for s in out) + "\n"


def series_report(result: dict[str, Any]) -> str:
    sizes = result["sizes"]
    machine_ = result["machine"]
    out = [
        (
            f"python -m benchmarks facts: PostgreSQL {machine_['server_version']}, "
            f"{machine_['cpus']} CPUs, "
            f"{machine_['platform']}\n"
        )
    ]
    for size in sizes:
        out.append(f"\n== {size['versions']:,} versions\n" + size_report(size))
    names = [n for n in sizes[-1]["summary"] if n.endswith(SERVER)] + [
        n for n in sizes[-1]["summary"] if n.endswith(PYTHON)
    ]
    rows = []
    for name in names:
        cells = []
        for size in sizes:
            f = size["summary"].get(name)
            cells.append(f"{f['median_ms']:.3f} ({f['vs_baseline']:.1f}x)" if f else "-")
        rows.append((name, *cells, f"{sizes[-1]['summary'][name]['vs_smallest']:.2f}x"))
    out.append(
        "\n== Lookup time against versions: median ms "
        "(ratio to the primary key in the same database)\n"
    )
    out.append(
        format_table(
            (
                "operation",
                *(f"{s['versions']:,} versions" for s in sizes),
                f"{sizes[-1]['versions']:,} vs {sizes[0]['versions']:,}",
            ),
            rows,
        )
    )
    out.append("\n== Goals, at every size\n" + goals_report(sizes))
    big = sizes[-1]
    a = big["audit"]
    out.append(
        "\n"
        + _section(
            f"== Retrospective audit at {big['versions']:,} versions: "
            f"the as-of answers of {a['keys']:,} keys "
            f"({a['rows']:,} rows) at one past knowledge time, {a['samples']} samples",
            a,
            "primary key, same rows",
        )
    )
    if a["periods_samples_unlike_as_of"] is not None:
        out.append(
            f"periods answered {a['periods_samples_unlike_as_of']} of {a['samples']} audits "
            "differently from as_of\n"
        )
    t = big["timeline"]
    out.append(
        "\n"
        + _section(
            f"== Timeline of one key with {t['rows']:,} versions (bitemporal.history) "
            f"at {big['versions']:,} "
            f"versions, {t['samples']} samples",
            t,
            "primary key, same rows",
        )
    )
    if t["periods_rows"] is not None:
        out.append(f"periods with_history returned {t['periods_rows']:,} rows\n")
    out.append(
        f"\nPlan of one as-of lookup at {big['versions']:,} versions:\n{big['as_of_plan']}\n"
    )
    return "".join(out)


# -- Ingestion ---------------------------------------------------------------------------

INGEST_WORKLOADS = ("new keys", "history")
HISTORY_CHANGES = 10
# record_many's goals: versions per second for each workload; for new keys, a fraction of
# COPY's rows per second too.
GOAL_VERSIONS_PER_S = {"new keys": 50_000, "history": 25_000}
GOAL_COPY_FRACTION = 0.25


def ingest_rows(workload: str, count: int, prefix: str) -> list[dict[str, Any]]:
    """The rows of a workload (see the module docstring), as record_many takes them."""
    if workload == "new keys":
        return [
            {
                "entity": f"{prefix}{i}",
                "attribute": "a",
                "source": "s",
                "value": i,
                "valid_from": EPOCH,
            }
            for i in range(count)
        ]
    keys = max(count // HISTORY_CHANGES, 1)
    return [
        {
            "entity": f"{prefix}{k}",
            "attribute": "a",
            "source": "s",
            "value": c,
            "valid_from": EPOCH + timedelta(days=c),
            "known_at": EPOCH + timedelta(hours=c),
        }
        for c in range(HISTORY_CHANGES)
        for k in range(keys)
    ]


def _copy_tuples(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            r["entity"],
            r["attribute"],
            r["source"],
            json.dumps(r["value"]),
            r.get("valid_from"),
            r.get("valid_to"),
            r.get("known_at"),
            r.get("recorded_by"),
        )
        for r in rows
    ]


_PLAIN = (
    "CREATE TABLE IF NOT EXISTS bench_ingest_plain (entity text, attribute text, source text, "
    "value jsonb, valid_from timestamptz, valid_to timestamptz, known_at timestamptz, "
    "recorded_by text)"
)
_PLAIN_COPY = (
    "COPY bench_ingest_plain (entity, attribute, source, value, valid_from, valid_to, known_at, "
    "recorded_by) FROM STDIN"
)


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
            "pg_current_xact_id() FROM bench_ingest_plain"
        )
        conn.execute(
            "INSERT INTO bitemporal.fact_version "
            "(entity, attribute, source, value, valid_period, known_period) "
            "SELECT entity, attribute, source, value, tstzrange(valid_from, valid_to, '[)'), "
            "tstzrange(now(), NULL, '[)') FROM bench_ingest_plain"
        )
    return len(rows)


def _record_many(store: Store, rows: list[dict[str, Any]], batch_size: int) -> None:
    """``rows`` through record_many in batches of ``batch_size``, each its own transaction."""
    for first in range(0, len(rows), batch_size):
        store.facts.record_many(rows[first : first + batch_size])


def ingest_into(conn: psycopg.Connection[Any], rows: int, batch_size: int) -> dict[str, Any]:
    """record_many of each workload's ``rows`` into the store ``conn`` holds (filled to a
    size), against COPY of the same rows into a plain table of the same database."""
    store = Store(conn)
    conn.execute(_PLAIN)
    results = []
    for workload in INGEST_WORKLOADS:
        data = ingest_rows(workload, rows, f"ingest-{workload[:3]}-")
        start = time.perf_counter()
        _copy_plain(conn, data)
        copy_seconds = time.perf_counter() - start
        before = _versions(conn)
        start = time.perf_counter()
        _record_many(store, data, batch_size)
        seconds = time.perf_counter() - start
        results.append(
            {
                "workload": workload,
                "rows": len(data),
                "versions": _versions(conn) - before,
                "seconds": seconds,
                "copy_seconds": copy_seconds,
            }
        )
    return {"rows": rows, "batch_size": batch_size, "results": results}


def ingest_goal_rows(ingest: dict[str, Any], versions: int) -> list[dict[str, Any]]:
    """record_many's goals, judged on ``ingest_into``'s figures at a store of ``versions``."""
    rows = []
    for r in ingest["results"]:
        rate = r["versions"] / r["seconds"]
        goal = GOAL_VERSIONS_PER_S[r["workload"]]
        if r["workload"] == "new keys":
            fraction = r["copy_seconds"] / r["seconds"]  # rows/s against COPY's, same rows
            name = "record_many, new keys, versions/s (and of COPY's rate)"
            shown = f"{rate:,.0f} ({fraction:.3f})"
            target = f">= {goal:,} ({GOAL_COPY_FRACTION})"
            met = rate >= goal and fraction >= GOAL_COPY_FRACTION
        else:
            name, shown = "record_many, keys with history, versions/s", f"{rate:,.0f}"
            target, met = f">= {goal:,}", rate >= goal
        rows.append(
            {
                "goal": name,
                "versions": versions,
                "figure": rate,
                "shown": shown,
                "target": target,
                "met": met,
            }
        )
    return rows


def ingest_into_report(ingest: dict[str, Any]) -> str:
    lines = [
        (
            r["workload"],
            f"{r['rows']:,}",
            f"{r['versions']:,}",
            f"{r['seconds']:.2f}",
            f"{r['versions'] / r['seconds']:,.0f}",
            f"{r['copy_seconds'] / r['seconds']:.3f}x",
        )
        for r in ingest["results"]
    ]
    return (
        f"record_many into this store, batches of {ingest['batch_size']:,} "
        "(against COPY of the same rows into a plain table)\n"
        + format_table(
            ("workload", "rows", "versions", "seconds", "versions/s", "rows/s vs COPY"), lines
        )
    )


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
                            store.facts.record_many(
                                data[first : min(first + batch_size, len(data) - record_rows)]
                            )
                        data = data[len(data) - record_rows :]
                    before = _versions(conn)
                    start = time.perf_counter()
                    if method == "copy":
                        _copy_plain(conn, data)
                    elif method == "bare insert":
                        _bare_insert(conn, data)
                    elif method == "record_many":
                        _record_many(store, data, batch_size)
                    else:
                        for r in data:
                            store.facts.record(
                                Key(r["entity"], r["attribute"]),
                                r["value"],
                                source=r["source"],
                                valid_from=r.get("valid_from"),
                                known_at=r.get("known_at"),
                            )
                    seconds = time.perf_counter() - start
                    versions = len(data) if method == "copy" else _versions(conn) - before
                    results.append(
                        {
                            "workload": workload,
                            "method": method,
                            "rows": len(data),
                            "versions": versions,
                            "seconds": seconds,
                        }
                    )
    return {
        "server_version": server,
        "rows": rows,
        "batch_size": batch_size,
        "record_rows": record_rows,
        "results": results,
    }


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
            lines.append(
                (
                    workload,
                    label,
                    f"{r['rows']:,}",
                    f"{r['versions']:,}",
                    f"{r['seconds']:.2f}",
                    f"{rate:,.0f}",
                    f"{r['versions'] / r['seconds']:,.0f}",
                    f"{rate / copy_rate:.3f}x",
                    vs_record,
                )
            )
        many = by[workload, "record_many"]
        versions_rate = many["versions"] / many["seconds"]
        fraction = (many["rows"] / many["seconds"]) / copy_rate
        goal = GOAL_VERSIONS_PER_S[workload]
        verdict = (
            f"  {workload}: {versions_rate:,.0f} versions/s "
            f"({_verdict(versions_rate >= goal)}: goal {goal:,})"
        )
        if workload == "new keys":
            verdict += (
                f"; {fraction:.3f} of COPY's rows/s "
                f"({_verdict(fraction >= GOAL_COPY_FRACTION)}: goal {GOAL_COPY_FRACTION})"
            )
        verdicts.append(verdict)
    head = (
        f"Ingestion, PostgreSQL {result['server_version']}: {result['rows']:,} rows per workload "
        f"(record: the last {result['record_rows']:,}, after the others); each method in a fresh "
        "database, timed from Python\n"
    )
    table = format_table(
        (
            "workload",
            "method",
            "rows",
            "versions",
            "seconds",
            "rows/s",
            "versions/s",
            "vs COPY",
            "vs record",
        ),
        lines,
    )
    return head + table + "Goals for record_many:\n" + "\n".join(verdicts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks facts", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", help="server to create scratch databases on (default: as for connect)"
    )
    parser.add_argument(
        "--sizes",
        default="10k,100k,1m",
        help="store sizes in versions, smallest first: 10k,1m,10m (default 10k,100k,1m)",
    )
    parser.add_argument(
        "--keys", type=count, help="one size only, of this many keys (instead of --sizes)"
    )
    parser.add_argument(
        "--changes", type=count, default=50, help="changes per key (versions = 2*changes-1)"
    )
    parser.add_argument("--samples", type=count, default=300, help="random lookups per size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--audit-keys", type=count, default=1000, help="keys in the retrospective audit"
    )
    parser.add_argument("--audit-samples", type=count, default=20)
    parser.add_argument(
        "--timeline-versions",
        type=count,
        default=10_000,
        help="versions of the one key whose timeline is read (about: 2*changes-1)",
    )
    parser.add_argument("--timeline-samples", type=count, default=10)
    parser.add_argument(
        "--write-samples", type=count, default=30, help="changes timed per design and size"
    )
    parser.add_argument("--no-periods", action="store_true", help="skip the periods extension")
    parser.add_argument("--json", help="write every figure measured here")
    parser.add_argument(
        "--plot", help="draw lookup time against versions to this PNG (needs matplotlib)"
    )
    parser.add_argument(
        "--ingest",
        action="store_true",
        help="measure ingestion (record, record_many, COPY) instead of lookups",
    )
    parser.add_argument(
        "--ingest-rows",
        type=count,
        default=20_000,
        help="rows per ingestion workload (at every size, and for --ingest)",
    )
    parser.add_argument(
        "--batch-size", type=count, default=10_000, help="record_many rows per batch"
    )
    parser.add_argument(
        "--record-rows",
        type=count,
        default=2_000,
        help="rows timed for record, one call at a time (the last of the workload)",
    )
    parser.add_argument(
        "--all", action="store_true", help="lookups, ingestion and decay steps in one report"
    )
    parser.add_argument(
        "--decay-sizes", default="10k,100k,1m", help="present items (default 10k,100k,1m)"
    )
    parser.add_argument(
        "--fill-only",
        action="store_true",
        help="only fill each size, timed by phase, against the fill goal (judged at 10M)",
    )
    args = parser.parse_args(argv)
    if args.fill_only and (args.all or args.ingest):
        parser.error("--fill-only times the fills alone: not with --all or --ingest")
    url = database_url(args.url)
    started = time.perf_counter()

    def progress(message: str) -> None:
        sys.stderr.write(f"[{time.perf_counter() - started:7.1f} s] {message}\n")
        sys.stderr.flush()

    result: dict[str, Any] = {}
    key_counts = (
        [args.keys]
        if args.keys
        else [keys_for(parse_size(s), args.changes) for s in args.sizes.split(",") if s.strip()]
    )
    if args.fill_only:
        result["fills"] = measure_fills(
            url, key_counts, args.changes, args.timeline_versions, progress
        )
        sys.stdout.write(fills_report(result["fills"]))
    elif args.all or not args.ingest:
        result.update(
            measure_series(
                url,
                key_counts,
                args.changes,
                args.samples,
                args.seed,
                progress,
                with_periods=not args.no_periods,
                audit_keys=args.audit_keys,
                audit_samples=args.audit_samples,
                timeline_versions=args.timeline_versions,
                timeline_samples=args.timeline_samples,
                write_samples=args.write_samples,
                ingest_rows=args.ingest_rows,
                batch_size=args.batch_size,
            )
        )
        sys.stdout.write(series_report(result))
        if args.plot:
            draw_lookups(result, args.plot)
            sys.stdout.write(f"plot: {args.plot}\n")
    if args.ingest or args.all:
        progress("ingestion ...")
        result["ingest"] = measure_ingest(url, args.ingest_rows, args.batch_size, args.record_rows)
        sys.stdout.write("\n" + ingest_report(result["ingest"]))
    if args.all:
        progress("decay steps ...")
        with scratch_database(url, "bitemporal_bench") as scratch:
            migrate(scratch)
            steps = decay.measure_steps(
                psycopg_url(scratch), [parse_size(s) for s in args.decay_sizes.split(",")], progress
            )
        result["decay_steps"] = steps
        sys.stdout.write(
            f"\nDecay: step() with N present items, "
            f"each step evicting {decay.DUE_PER_STEP} due items "
            f"(median of {decay.MEASURED_STEPS} PostgreSQL steps / 3 in-memory steps, end to end "
            "from Python)\n" + format_table(decay.STEP_HEADERS, decay.step_rows(steps))
        )
    result["seconds"] = time.perf_counter() - started
    sys.stdout.write(f"\ntotal {result['seconds']:.1f} s\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            # --ingest alone writes the ingestion figures as they always were.
            json.dump(result if args.all or not args.ingest else result["ingest"], f, indent=2)
    return 0
