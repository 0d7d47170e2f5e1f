"""What each index, constraint and trigger of ``bitemporal.fact_version`` costs a write.

    python -m benchmarks storage [--url URL] [--rows N] [--repeat N] [--prefill N]

In a scratch database migrated to head it times one set-based ``INSERT INTO
bitemporal.fact_version ... SELECT`` of ``--rows`` versions of new keys (each key
already in ``fact_key`` with the inserting transaction as its latest knowledge,
open knowledge from ``now()``: what ``record()`` inserts for a new key), once as
migrated and once with each of the table's indexes, constraints and triggers
(as the catalog lists them) removed in turn, then with all of them removed, and
with each of them alone (all the others removed). Each variant runs in a fresh
copy (``CREATE DATABASE ... TEMPLATE``) of one migrated database holding
``--prefill`` versions of other keys, so every variant starts from the same
table, and the variants take turns, round after round. Baselines, in the same
run: the same ``INSERT ... SELECT`` into a plain table with the same columns
and no index, constraint or trigger, and ``COPY`` of the rows into that table.
It prints the median rows/s of each variant over ``--repeat`` runs and its ratio
to both baselines.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from bitemporal import migrate
from bitemporal.database import database_url, psycopg_url, scratch_database
from bitemporal.formatting import format_table

# The rows: one version per new key, staged once in an unlogged table.
_STAGE = (
    "CREATE UNLOGGED TABLE bench_stage AS "
    "SELECT 'e' || g AS entity, 'a'::text AS attribute, 's'::text AS source, "
    "pg_catalog.to_jsonb(g) AS value, g::bigint AS key_id FROM pg_catalog.generate_series(1, %s) g"
)
_KEYS = (
    "INSERT INTO bitemporal.fact_key "
    "(entity, attribute, first_known_at, last_known_at, last_txid, key_id) "
    "SELECT entity, attribute, now(), now(), pg_current_xact_id(), key_id FROM {stage}"
)
# key_id given too (each key's own: unique within the entity, as the store needs it), for
# the variants without the trigger that sets it.
_COLUMNS = "entity, attribute, source, value, valid_period, known_period, key_id"
_SELECT = (
    "SELECT entity, attribute, source, value, tstzrange('2026-01-01', NULL, '[)'), "
    "tstzrange(now(), NULL, '[)'), key_id FROM bench_stage"
)
_PLAIN = (
    "CREATE TABLE bench_plain (LIKE bitemporal.fact_version INCLUDING DEFAULTS INCLUDING IDENTITY)"
)

# What an insert maintains, each with the DDL that removes it, read from the catalog (so
# that the script measures whatever the migrations made): constraints, indexes that back no
# constraint, triggers that fire on INSERT.
_OBJECTS = """
SELECT c.conname || ' (' || CASE c.contype WHEN 'x' THEN 'exclusion, ' || am.amname
                                           WHEN 'p' THEN 'primary key' WHEN 'f' THEN 'foreign key'
                                           ELSE 'unique' END || ')',
       format('ALTER TABLE bitemporal.fact_version DROP CONSTRAINT %I CASCADE', c.conname)
  FROM pg_constraint c
  LEFT JOIN pg_class i ON i.oid = c.conindid LEFT JOIN pg_am am ON am.oid = i.relam
 WHERE c.conrelid = 'bitemporal.fact_version'::regclass AND c.contype IN ('p', 'u', 'x', 'f')
UNION ALL
SELECT c.conname || ' (CHECK)',
       format('ALTER TABLE bitemporal.fact_version DROP CONSTRAINT %I', c.conname)
  FROM pg_constraint c
 WHERE c.conrelid = 'bitemporal.fact_version'::regclass AND c.contype = 'c'
UNION ALL
SELECT i.relname || ' (index, ' || am.amname
       || CASE WHEN x.indpred IS NOT NULL THEN ', partial' ELSE '' END || ')',
       format('DROP INDEX bitemporal.%I', i.relname)
  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam
 WHERE x.indrelid = 'bitemporal.fact_version'::regclass
   AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conindid = x.indexrelid)
UNION ALL
SELECT t.tgname || ' (trigger)',
       format('ALTER TABLE bitemporal.fact_version DISABLE TRIGGER %I', t.tgname)
  FROM pg_trigger t
 WHERE t.tgrelid = 'bitemporal.fact_version'::regclass AND NOT t.tgisinternal
   AND t.tgtype & 4 <> 0  -- fires on INSERT
ORDER BY 1"""
ALL = "all of them"


@contextlib.contextmanager
def _clone(template: str) -> Iterator[str]:
    """A new database copied from ``template`` (no session may be connected to it)."""
    name = f"bitemporal_bench_storage_{uuid.uuid4().hex[:8]}"
    admin = psycopg_url(template)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(make_url(admin).database or "")
            )
        )
    try:
        yield make_url(admin).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _timed(template: str, setup: Sequence[str], statement: str) -> float:
    """Seconds of ``statement`` (with the keys it needs) in a fresh copy of ``template``
    changed by ``setup``."""
    with _clone(template) as db, psycopg.connect(db) as conn:
        for ddl in setup:
            conn.execute(ddl)
        conn.commit()
        if statement.startswith("COPY"):
            data = conn.execute(
                "SELECT entity, attribute, source, value::text, key_id FROM bench_stage"
            )
            rows = data.fetchall()
            start = time.perf_counter()
            with conn.cursor().copy(statement) as copy:
                for *row, key_id in rows:
                    copy.write_row((*row, "[2026-01-01,)", "[2026-12-01,)", key_id))
            seconds = time.perf_counter() - start
        else:
            conn.execute(_KEYS.format(stage="bench_stage"))
            start = time.perf_counter()
            conn.execute(statement)
            seconds = time.perf_counter() - start
        conn.commit()
        return seconds


def measure(url: str, rows: int, repeat: int, prefill: int) -> dict[str, Any]:
    """Median seconds of each variant and of the baselines, the variants of each round in
    turn (so that a busy spell of the machine spreads over all of them)."""
    variants: dict[str, tuple[list[str], str]] = {
        "plain": ([], f"INSERT INTO bench_plain ({_COLUMNS}) {_SELECT}"),
        "copy": ([], f"COPY bench_plain ({_COLUMNS}) FROM STDIN"),
    }
    insert = f"INSERT INTO bitemporal.fact_version ({_COLUMNS}) {_SELECT}"
    variants["as migrated"] = ([], insert)
    with scratch_database(url, "bitemporal_bench_storage") as template:
        migrate(template)
        with psycopg.connect(template, autocommit=True) as conn:
            server = conn.info.server_version // 10000
            removals = {name: ddl.split("; ") for name, ddl in conn.execute(_OBJECTS)}
            variants.update((name, (ddl, insert)) for name, ddl in removals.items())
            variants[ALL] = ([d for ddl in removals.values() for d in ddl], insert)
            variants.update(
                (
                    f"only {kept}",
                    ([d for name, ddl in removals.items() if name != kept for d in ddl], insert),
                )
                for kept in removals
            )
            conn.execute(_PLAIN)
            if prefill:
                conn.execute(
                    _STAGE.replace("bench_stage", "bench_prefill").replace("'e'", "'p'"), (prefill,)
                )
                with conn.transaction():
                    conn.execute(_KEYS.format(stage="bench_prefill"))
                    conn.execute(
                        f"INSERT INTO bitemporal.fact_version ({_COLUMNS}) "
                        + _SELECT.replace("bench_stage", "bench_prefill")
                    )
            conn.execute(_STAGE, (rows,))
            conn.execute("VACUUM ANALYZE")
        seconds: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(repeat):
            for name, (setup, statement) in variants.items():
                seconds[name].append(_timed(template, setup, statement))
    return {
        "server_version": server,
        "rows": rows,
        "prefill": prefill,
        "repeat": repeat,
        "seconds": {name: statistics.median(s) for name, s in seconds.items()},
    }


def report(result: dict[str, Any]) -> str:
    rows = result["rows"]
    seconds = result["seconds"]
    plain = rows / seconds["plain"]
    copy = rows / seconds["copy"]
    lines = [
        (name, f"{rows / s:,.0f}", f"{rows / s / plain:.3f}", f"{rows / s / copy:.3f}")
        for name, s in seconds.items()
    ]
    return (
        f"INSERT ... SELECT of {rows:,} new-key versions into fact_version holding "
        f"{result['prefill']:,}, PostgreSQL {result['server_version']}, median of "
        f"{result['repeat']}; plain = the same INSERT into a table with no index, "
        f"constraint or trigger; copy = COPY into that table\n"
        + format_table(("removed / design", "rows/s", "x plain", "x copy"), lines)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks storage", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", help="server (default: $BITEMPORAL_DATABASE_URL, $DATABASE_URL, embedded)"
    )
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--prefill", type=int, default=0)
    args = parser.parse_args(argv)
    sys.stdout.write(report(measure(database_url(args.url), args.rows, args.repeat, args.prefill)))
    return 0
