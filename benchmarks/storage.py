"""What each index, constraint and trigger of ``bitemporal.fact_version`` costs a write.

    python -m benchmarks storage [--url URL] [--rows N] [--repeat N] [--prefill N] [--json F]

In a scratch database migrated to head it times one set-based ``INSERT INTO
bitemporal.fact_version ... SELECT`` of ``--rows`` versions of new keys (each key
already in ``fact_key`` with the inserting transaction as its latest knowledge,
open knowledge from ``now()``: what ``record()`` inserts for a new key; in the
order of a hash of their keys, as ``record_many`` inserts them), once as
migrated and once with each of the table's indexes, constraints and triggers
(as the catalog lists them) removed in turn, then with all of them removed, and
with each of them alone (all the others removed). Each variant runs in a fresh
copy (``CREATE DATABASE ... TEMPLATE``) of one migrated database holding
``--prefill`` versions of other keys, so every variant starts from the same
table, and the variants take turns, round after round. Baselines, in the same
run: the same ``INSERT ... SELECT`` into a plain table with the same columns
and no index, constraint or trigger, ``COPY`` of the rows into that table, and
the floor: the same ``INSERT`` into a table with the same columns and only the
exclusion constraint the design requires, on one integer (``key_id``) and the
valid period, over current versions (what no storage design can do without);
and the same for changes of keys with history: each key's current version
closed, its remainder and the new version inserted, on a plain table and at the
floor. Two designs run beside the removals: the INSERT triggers' work done once
per statement over a transition table, the knowledge rule alone and with the
stamping trigger's checks. It prints the median rows/s of each variant over
``--repeat`` runs and its ratio to the baselines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
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

from .facts import GOAL_COPY_FRACTION, GOAL_VERSIONS_PER_S

# The rows: one version per new key, staged once in an unlogged table, in the order of a
# hash of the key's integer: the order in which record_many inserts a round (migration
# 0032), where key order makes GiST split page after page at one end of each index.
STAGE = (
    "CREATE UNLOGGED TABLE {stage} AS "
    "SELECT %(prefix)s::text || g AS entity, 'a'::text AS attribute, 's'::text AS source, "
    "pg_catalog.to_jsonb(g) AS value, (g + %(offset)s)::bigint AS key_id "
    "FROM pg_catalog.generate_series(1, %(rows)s) g ORDER BY pg_catalog.hashint8(g::bigint)"
)
_KEYS = (
    "INSERT INTO bitemporal.fact_key "
    "(entity, attribute, first_known_at, last_known_at, last_txid, key_id) "
    "SELECT entity, attribute, now(), now(), pg_current_xact_id(), key_id FROM {stage}"
)
# key_id given too (each key's own: unique within the entity, as the store needs it), for
# the variants without the trigger that sets it.
COLUMNS = "entity, attribute, source, value, valid_period, known_period, key_id"
SELECT = (
    "SELECT entity, attribute, source, value, tstzrange('2026-01-01 00:00+00', NULL, '[)'), "
    "tstzrange(now(), NULL, '[)'), key_id FROM bench_stage"
)
_VALID = "[2026-01-01 00:00+00,)"  # the valid period of every staged version
_PLAIN = (
    "CREATE TABLE bench_plain (LIKE bitemporal.fact_version INCLUDING DEFAULTS INCLUDING IDENTITY)"
)
# The least any design may maintain: the design card requires an exclusion constraint
# against overlapping validity, here on one integer per key and source (a compact surrogate
# key) and over current versions only. No version table can take inserts faster than this.
FLOOR = "floor: the exclusion constraint alone"
FLOOR_TABLE = (
    "CREATE TABLE bench_floor (LIKE bitemporal.fact_version INCLUDING DEFAULTS INCLUDING IDENTITY, "
    "EXCLUDE USING gist (key_id WITH =, valid_period WITH &&) WHERE (upper_inf(known_period)))"
)
# The floor for keys with history: each key holds one current version, and each change
# closes it and inserts its remainder and the new version (what record_many writes for a
# change from a date on), in one transaction for every key; against the same statements on
# a plain table.
CHANGES = {"plain, changes": "bench_plain_changes", "floor, changes": "bench_floor_changes"}
CHANGE = (
    "UPDATE {table} f SET known_period = tstzrange(lower(f.known_period), now(), '[)') "
    "FROM bench_stage s WHERE f.key_id = s.key_id AND upper_inf(f.known_period); "
    f"INSERT INTO {{table}} ({COLUMNS}) "
    "SELECT s.entity, s.attribute, s.source, s.value, p.valid, tstzrange(now(), NULL, '[)'), "
    "s.key_id FROM bench_stage s CROSS JOIN LATERAL (VALUES "
    "(tstzrange('2026-01-01 00:00+00', '2026-06-01 00:00+00', '[)')), "
    "(tstzrange('2026-06-01 00:00+00', NULL, '[)'))) p(valid)"
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

# Two designs measured beside the removals: the work of the INSERT row triggers done once per
# statement over a transition table, where each row trigger runs queries and function calls
# for every row. First the knowledge rule of fact_version_knowledge (the per-key rule, the
# key's integer, the stamp recorded_at); then also fact_version_stamp_insert's (the writing
# transaction, the JSON values, a value only for an erased version's remainder). Not the
# store's: what doing the triggers' work per statement would save an insert.
PER_STATEMENT = "design: the knowledge rule per statement"
PER_STATEMENT_BOTH = "design: both INSERT triggers' work per statement"
_KNOWLEDGE_RULE = """
            k.key_id IS DISTINCT FROM n.key_id
            OR n.recorded_at IS DISTINCT FROM pg_catalog.transaction_timestamp()
            OR n.closed_at IS NOT NULL AND upper_inf(n.known_period)
            OR lower(n.known_period) < k.last_known_at
            OR lower(n.known_period) = k.last_known_at AND k.last_txid <> me
            OR coalesce(upper(n.known_period), lower(n.known_period))
               > pg_catalog.clock_timestamp()"""
_STAMP_RULE = """
            OR n.recorded_in IS DISTINCT FROM me
            OR (n.value IS NULL OR n.erasure_id IS NOT NULL OR n.erased_at IS NOT NULL)
               AND NOT EXISTS (
                   SELECT FROM bitemporal.fact_version o
                    WHERE o.version_id = n.carried_from AND o.entity = n.entity
                      AND o.attribute = n.attribute AND n.value IS NULL
                      AND o.erasure_id = n.erasure_id AND o.erased_at = n.erased_at)"""
_PER_STATEMENT_FUNCTION = """
CREATE FUNCTION bitemporal_internal.bench_{name}() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me  xid8 := pg_catalog.pg_current_xact_id();
    bad record;
BEGIN
    -- The earliest time announced covers the later ones.
    PERFORM bitemporal_internal.announce_knowledge(min(lower(n.known_period)), false)
       FROM new_rows n HAVING min(lower(n.known_period)) IS NOT NULL;
    {before}
    SELECT n.entity, n.attribute, lower(n.known_period) AS at, k.last_known_at INTO bad
      FROM new_rows n
      LEFT JOIN bitemporal.fact_key k ON k.entity = n.entity AND k.attribute = n.attribute
     WHERE {rule}
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'version of (%, %) known from % refused (the key''s knowledge is at %)',
            bad.entity, bad.attribute, bad.at, bad.last_known_at USING ERRCODE = 'BT006';
    END IF;
    UPDATE bitemporal.fact_key k SET last_known_at = m.latest, last_txid = me
      FROM (SELECT n.entity, n.attribute,
                   max(coalesce(upper(n.known_period), lower(n.known_period))) AS latest
              FROM new_rows n GROUP BY n.entity, n.attribute) m
     WHERE k.entity = m.entity AND k.attribute = m.attribute
       AND (m.latest > k.last_known_at OR k.last_txid <> me);
    RETURN NULL;
END $$"""


def _per_statement(
    name: str,
    triggers: Sequence[str],
    defaults: Sequence[tuple[str, str]],
    rule: str,
    before: str = "",
) -> list[str]:
    """The DDL of a design: ``triggers`` disabled, ``defaults`` (column, expression) set, and
    one statement trigger that runs ``before``, then refuses the rows matching ``rule`` and
    moves the keys."""
    return [
        *(f"ALTER TABLE bitemporal.fact_version DISABLE TRIGGER {t}" for t in triggers),
        *(
            f"ALTER TABLE bitemporal.fact_version ALTER COLUMN {column} SET DEFAULT {expression}"
            for column, expression in defaults
        ),
        _PER_STATEMENT_FUNCTION.format(name=name, rule=rule, before=before),
        (
            f"CREATE TRIGGER bench_{name} AFTER INSERT ON bitemporal.fact_version "
            "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
            f"EXECUTE FUNCTION bitemporal_internal.bench_{name}()"
        ),
    ]


_RECORDED_AT = ("recorded_at", "pg_catalog.transaction_timestamp()")
PER_STATEMENT_DDL = _per_statement(
    "knowledge", ["fact_version_knowledge"], [_RECORDED_AT], _KNOWLEDGE_RULE
)
PER_STATEMENT_BOTH_DDL = _per_statement(
    "both",
    ["fact_version_knowledge", "fact_version_stamp_insert"],
    [_RECORDED_AT, ("recorded_in", "pg_catalog.pg_current_xact_id()")],
    _KNOWLEDGE_RULE + _STAMP_RULE,
    # The store's own check of each value (BT007), as the row trigger calls it.
    "PERFORM bitemporal_internal.check_json_value('value', n.value) FROM new_rows n;",
)


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
                    copy.write_row((*row, _VALID, "[2026-12-01 00:00+00,)", key_id))
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
        "plain": ([], f"INSERT INTO bench_plain ({COLUMNS}) {SELECT}"),
        "copy": ([], f"COPY bench_plain ({COLUMNS}) FROM STDIN"),
        FLOOR: ([], f"INSERT INTO bench_floor ({COLUMNS}) {SELECT}"),
    }
    variants.update((name, ([], CHANGE.format(table=table))) for name, table in CHANGES.items())
    insert = f"INSERT INTO bitemporal.fact_version ({COLUMNS}) {SELECT}"
    variants["as migrated"] = ([], insert)
    with scratch_database(url, "bitemporal_bench_storage") as template:
        migrate(template)
        with psycopg.connect(template, autocommit=True) as conn:
            server = conn.info.server_version // 10000
            removals = {name: ddl.split("; ") for name, ddl in conn.execute(_OBJECTS)}
            variants.update((name, (ddl, insert)) for name, ddl in removals.items())
            variants[ALL] = ([d for ddl in removals.values() for d in ddl], insert)
            variants[PER_STATEMENT] = (PER_STATEMENT_DDL, insert)
            variants[PER_STATEMENT_BOTH] = (PER_STATEMENT_BOTH_DDL, insert)
            variants.update(
                (
                    f"only {kept}",
                    ([d for name, ddl in removals.items() if name != kept for d in ddl], insert),
                )
                for kept in removals
            )
            conn.execute(_PLAIN)
            conn.execute(FLOOR_TABLE)
            conn.execute(_PLAIN.replace("bench_plain", CHANGES["plain, changes"]))
            conn.execute(FLOOR_TABLE.replace("bench_floor", CHANGES["floor, changes"]))
            if prefill:
                conn.execute(
                    STAGE.format(stage="bench_prefill"),
                    {"prefix": "p", "offset": 0, "rows": prefill},
                )
                with conn.transaction():
                    conn.execute(_KEYS.format(stage="bench_prefill"))
                    for table in ("bitemporal.fact_version", "bench_floor", *CHANGES.values()):
                        conn.execute(
                            f"INSERT INTO {table} ({COLUMNS}) "
                            + SELECT.replace("bench_stage", "bench_prefill")
                        )
            conn.execute(
                STAGE.format(stage="bench_stage"), {"prefix": "e", "offset": prefill, "rows": rows}
            )
            for table in CHANGES.values():
                conn.execute(f"INSERT INTO {table} ({COLUMNS}) {SELECT}")
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
    plain, copy, floor = (rows / seconds[name] for name in ("plain", "copy", FLOOR))
    lines = [
        (
            name,
            f"{rows / s:,.0f}",
            f"{rows / s / plain:.3f}",
            f"{rows / s / copy:.3f}",
            f"{rows / s / floor:.3f}",
        )
        for name, s in seconds.items()
        if name not in CHANGES
    ]
    plain_changes, floor_changes = (rows / seconds[name] for name in CHANGES)
    return (
        f"INSERT ... SELECT of {rows:,} new-key versions into fact_version holding "
        f"{result['prefill']:,}, PostgreSQL {result['server_version']}, median of "
        f"{result['repeat']}; plain = the same INSERT into a table with no index, "
        f"constraint or trigger; copy = COPY into that table; floor = the same INSERT into "
        f"a table with only an exclusion constraint (GiST: key_id, valid period; current "
        f"versions)\n"
        + format_table(("removed / design", "rows/s", "x plain", "x copy", "x floor"), lines)
        + f"\nissue 15's ingestion goal for new keys: >= {GOAL_VERSIONS_PER_S['new keys']:,} "
        f"versions/s and >= {GOAL_COPY_FRACTION} of COPY; the floor: {floor:,.0f} rows/s, "
        f"{floor / copy:.3f} of COPY\n"
        f"changes of {rows:,} keys with history (close the current version, insert its "
        f"remainder and the new version): plain {plain_changes:,.0f} changes/s, floor "
        f"{floor_changes:,.0f} changes/s ({floor_changes / plain_changes:.3f} of plain); "
        f"issue 15's goal for keys with history: >= {GOAL_VERSIONS_PER_S['history']:,} "
        f"versions/s\n"
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
    parser.add_argument("--json", help="write the result (every median) to this file")
    args = parser.parse_args(argv)
    result = measure(database_url(args.url), args.rows, args.repeat, args.prefill)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    sys.stdout.write(report(result))
    return 0
