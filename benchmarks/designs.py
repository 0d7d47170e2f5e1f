"""Candidate storage designs for the version table, side by side (issue 15).

    python -m benchmarks designs [--url URL] [--design NAME ...] [--keys N] [--changes N]
                                 [--rounds N] [--samples N]

Issue 15 asks for the version table's storage to change where it is the limit, decided by
figures. This builds, in one scratch database, the version table's storage alone (its
columns, the exclusion constraint against overlapping validity and its indexes as
``bitemporal.fact_version`` has them; no trigger, no foreign key, none of the store's
functions) in each design:

* ``text key`` (as migrated): ``entity``, ``attribute`` and ``source`` (text) in the
  exclusion constraint's GiST index, in the GiST index of current versions (what writes
  read) and in the btree of current versions (what current lookups read);
* ``integer key``: one ``bigint`` for (entity, attribute), the identity of a key table,
  in their place; the source stays text;
* ``integer key, entity kept``: the integer key first, then ``entity`` (text), then the
  source: the form the partitioned layout and Citus need, where the exclusion constraint
  must compare the partitioning (distribution) column ``entity`` with ``=``; the integer
  leads, so that the GiST index compares it first;
* ``integer series``: one ``bigint`` for (entity, attribute, source);
* ``integer series, one GiST``: the same without the GiST index of current versions
  (writes would find the versions they cut through the btree);
* ``current-only constraint``: one ``bigint`` for (entity, attribute, source), and the
  exclusion constraint over current versions only (the versions whose knowledge is open),
  which is also what writes read: per key, knowledge only moves forward, so two versions
  that overlap in both periods would have overlapped while both were current. Closed
  versions are not in any GiST index; a past-knowledge lookup reads the current versions'
  btree and a btree of the closed versions by (series, end of knowledge), that is every
  version of the series closed after the question's knowledge time.
* ``current table, text key``, ``current table, integer key`` and ``current table, integer
  series``: the current versions in a table of their own, with the exclusion constraint
  over them (sufficient, as above) and the btree current lookups read; the closed versions
  in a second table (``{t}_closed``) with a GiST index for past-knowledge lookups and no
  constraint, as the ``periods`` extension lays out a table and its history. A write that
  closes a version moves it from one table to the other.
* ``store layout (0034)``: the store's own layout since migration 0034: the integer key, then
  ``entity``, then the source; the exclusion constraint over current versions; the current
  versions' btree by the text key, which current lookups read without the integer (as
  ``as_of`` does); a GiST index of the key and both periods over every version, which past
  lookups read;
* ``store layout, GiST of closed versions``: the same with that GiST index over closed
  versions only: a current version goes into the constraint's GiST index, a version closed by
  a write into the other, and no write moves a row; a past lookup reads the current versions'
  btree and the closed versions' GiST.
* ``store layout, entity in the periods' GiST only`` and ``store layout, no entity in
  GiST``: the store's layout without ``entity`` in the constraint, or in both GiST indexes,
  as a plain table could have them if its key integers were unique across entities (these
  designs' are); lookups still name ``entity``, checked after the index.
* ``current table, closed by btree``: the text key's current table, and the closed versions
  in a btree by key and start of validity, as ``periods`` leaves its history table to be
  indexed: a past-knowledge lookup reads the key's closed versions valid from before the
  question's valid time (no GiST insert when a version closes; a cost growing with the
  key's history).

Each design gets the same histories, ``--rounds`` times ``--keys`` keys of two sources
with ``--changes`` changes each, shaped as ``record`` leaves them (each change closes the
open version and re-records its remainder: ``2 * changes - 1`` versions a source), twice,
in tables of their own, a round at a time, the designs taking turns (a busy spell of the
machine spreads over all of them):

* *inserted*: the finished rows, closed ones already closed, in knowledge-time order: what
  the indexes and the constraint cost an insert;
* *written*: change by change, as the store writes them, one transaction a change for all
  the round's keys: an ``UPDATE`` closes each open version (a new row version, which every
  index whose condition it meets takes in), an ``INSERT`` re-records its remainder and adds
  the new version. The written tables must hold exactly the inserted rows.

It prints, per design:

* the insert rate of the rounds (median rows/s), against the same ``INSERT`` into a table
  of the same columns without any index;
* the write rate (median versions/s), against the design as migrated;
* the server time (``EXPLAIN ANALYZE``, median of ``--samples`` random questions, each
  asked once untimed first, so its pages are in shared buffers) of an as-of lookup of one
  key about current knowledge (through the btree of current versions) and about a past
  knowledge time (through the exclusion constraint's GiST index, or the btrees of the
  current-only design), the integer designs reading the key table first, against a
  primary-key lookup in a table of as many rows in the same database;
* the size of the indexes, inserted and written (of both tables, for a current table).

Every design must give the same answers to every question, and write the same rows (exit
status 1 otherwise). What it leaves out (the triggers, the foreign key, the gate of
``as_of`` on the key's latest knowledge, the functions' own cost) is the same for every
design.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from bitemporal.database import database_url, scratch_database
from bitemporal.formatting import format_table

from .arguments import count
from .facts import server_ms

#: Days of valid time and seconds of knowledge time the histories start at.
VALID_START = datetime(2020, 1, 1, tzinfo=UTC)
KNOWN_START = datetime(2021, 1, 1, tzinfo=UTC)
SOURCES = 2

# Each design: the DDL of its table ``{t}``, the columns an insert fills from the history's
# rows, and how a lookup finds the key's versions (an integer design reads the key's
# integers first, once: the store's functions read the key's row anyway). A lookup's
# parameters: entity, attribute, valid_at, known_at.
_CURRENT = (
    "upper_inf(v.known) AND (coalesce(upper(v.valid), 'infinity'), "
    "coalesce(lower(v.valid), '-infinity')) >= (%(valid_at)s, '-infinity'::timestamptz) "
    "AND coalesce(lower(v.valid), '-infinity') <= %(valid_at)s "
    "AND range_contains_elem(v.valid, %(valid_at)s) AND range_contains_elem(v.known, %(known_at)s)"
)
_PAST = "v.valid @> %(valid_at)s AND v.known @> %(known_at)s"
# A lookup's branches: each the suffix of the table it reads (after the design's table
# name) and its condition on a row ``v`` of it.
_BY_GIST = (("", _PAST),)
# Past knowledge without a GiST index of closed versions: the current versions known then
# (their btree), and the closed versions whose knowledge ended after the question's.
_PAST_BY_BTREES = (
    ("", _CURRENT),
    ("", f"NOT upper_inf(v.known) AND upper(v.known) > %(known_at)s AND {_PAST}"),
)
# Past knowledge in a current table's design: its btree, and the closed versions' GiST.
_CLOSED = "_closed"
_PAST_BY_TABLES = (("", _CURRENT), (_CLOSED, _PAST))
_PAST_BY_TABLES_BTREE = (
    ("", _CURRENT),
    (_CLOSED, f"coalesce(lower(v.valid), '-infinity') <= %(valid_at)s AND {_PAST}"),
)
_KNOWN_INDEXES = (
    "CREATE INDEX ON {t} (lower(known))",
    "CREATE INDEX ON {t} (upper(known)) WHERE NOT upper_inf(known)",
)


def _design(
    key_columns: str, key_types: str, current_gist: bool, current_only: bool = False
) -> list[str]:
    """DDL of a design's table ``{t}`` keyed by ``key_columns``; ``current_only``: the
    exclusion constraint over current versions, and a btree of the closed ones."""
    equal = ", ".join(f"{c} WITH =" for c in key_columns.split(", "))
    key = key_columns.replace(", source", "")
    constraint = (
        f"EXCLUDE USING gist ({equal}, valid WITH &&) WHERE (upper_inf(known))"
        if current_only
        else f"EXCLUDE USING gist ({equal}, valid WITH &&, known WITH &&)"
    )
    ddl = [
        (
            f"CREATE TABLE {{t}} (version_id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "
            f"{key_types}, value jsonb, "
            f"valid tstzrange NOT NULL, known tstzrange NOT NULL, {constraint})"
        ),
        (
            f"CREATE INDEX ON {{t}} ({key}, coalesce(upper(valid), 'infinity'), "
            "coalesce(lower(valid), '-infinity')) WHERE upper_inf(known)"
        ),
        *_KNOWN_INDEXES,
    ]
    if current_only:
        ddl.append(f"CREATE INDEX ON {{t}} ({key}, upper(known)) WHERE NOT upper_inf(known)")
    if current_gist:
        ddl.append(
            f"CREATE INDEX ON {{t}} USING gist ({key_columns}, valid) WHERE upper_inf(known)"
        )
    return ddl


def _current_table(key_columns: str, key_types: str, closed_gist: bool = True) -> list[str]:
    """DDL of a design whose current versions are in ``{t}`` and closed ones in
    ``{t}_closed``, keyed by ``key_columns``; the closed ones in a GiST index of the key and
    both periods, or else (``closed_gist`` false) a btree of the key and start of validity."""
    equal = ", ".join(f"{c} WITH =" for c in key_columns.split(", "))
    key = key_columns.replace(", source", "")
    columns = (
        f"version_id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, {key_types}, "
        "value jsonb, valid tstzrange NOT NULL, known tstzrange NOT NULL"
    )
    return [
        (
            f"CREATE TABLE {{t}} ({columns}, CHECK (upper_inf(known)), "
            f"EXCLUDE USING gist ({equal}, valid WITH &&))"
        ),
        (
            f"CREATE INDEX ON {{t}} ({key}, coalesce(upper(valid), 'infinity'), "
            "coalesce(lower(valid), '-infinity'))"
        ),
        "CREATE INDEX ON {t} (lower(known))",
        f"CREATE TABLE {{t}}{_CLOSED} ({columns}, CHECK (NOT upper_inf(known)))",
        (
            f"CREATE INDEX ON {{t}}{_CLOSED} USING gist ({key}, valid, known)"
            if closed_gist
            else f"CREATE INDEX ON {{t}}{_CLOSED} ({key}, coalesce(lower(valid), '-infinity'))"
        ),
        *(ddl.replace("{t}", f"{{t}}{_CLOSED}") for ddl in _KNOWN_INDEXES),
    ]


def _store_layout(
    closed_only: bool = False,
    entity_in_constraint: bool = True,
    entity_in_periods: bool = True,
) -> list[str]:
    """DDL of the store's own layout since migration 0034 (``{t}`` keyed by the integer key,
    then entity, then source): the exclusion constraint over current versions, the current
    versions' btree by the text key (here entity alone: one attribute a key), which current
    lookups read without the integer, as ``as_of`` does, and a GiST index of the key and both
    periods for past lookups, over every version or (``closed_only``) over closed versions
    only. Then a current version enters one GiST index, the constraint's, and a closed one
    the other, as in a current table's design, without a write moving rows between
    tables. ``entity_in_constraint`` and ``entity_in_periods``: whether each GiST index
    holds the text column ``entity`` last. A partitioned or distributed table's constraint
    must compare it; a plain table's need not, if its key integers are unique across
    entities."""
    return [
        (
            "CREATE TABLE {t} (version_id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "
            "key_id bigint, entity text, source text, value jsonb, "
            "valid tstzrange NOT NULL, known tstzrange NOT NULL, "
            "EXCLUDE USING gist (key_id WITH =, source WITH =, valid WITH &&, known WITH &&"
            + (", entity WITH =" if entity_in_constraint else "")
            + ") WHERE (upper_inf(known)))"
        ),
        (
            "CREATE INDEX ON {t} (entity, coalesce(upper(valid), 'infinity'), "
            "coalesce(lower(valid), '-infinity')) WHERE upper_inf(known)"
        ),
        "CREATE INDEX ON {t} USING gist (key_id, known, valid"
        + (", entity)" if entity_in_periods else ")")
        + (" WHERE NOT upper_inf(known)" if closed_only else ""),
        *_KNOWN_INDEXES,
    ]


@dataclass(frozen=True)
class Design:
    """A design of the version table: its DDL (of a table ``{t}``), the columns that name a
    version's series (a key and source), how a row ``v`` of it matches a row ``s`` of
    ``d_series``, how a lookup finds a key's versions, the branches of a past-knowledge
    lookup, and whether closed versions are in a table of their own (``{t}_closed``)."""

    ddl: list[str]
    key_columns: str
    match: str
    where: str
    past: tuple[tuple[str, str], ...] = _BY_GIST
    current_table: bool = False
    #: How the current versions' branch finds the key's versions, if not by ``where``.
    current_where: str | None = None

    def tables(self, table: str) -> list[str]:
        """The tables of this design named ``table``."""
        return [table, f"{table}{_CLOSED}"] if self.current_table else [table]


_BY_SERIES = (
    "v.series_id = ANY (ARRAY(SELECT k.series_id FROM d_series k "
    "WHERE k.entity = %(entity)s AND k.attribute = %(attribute)s))"
)
_BY_KEY_AND_ENTITY = (
    "v.key_id = (SELECT k.key_id FROM d_key k "
    "WHERE k.entity = %(entity)s AND k.attribute = %(attribute)s) AND v.entity = %(entity)s"
)
_BY_ENTITY = "v.entity = %(entity)s"


def _store_design(ddl: list[str], past: tuple[tuple[str, str], ...] = _BY_GIST) -> Design:
    """A design of the store's layout (:func:`_store_layout`): keyed by the integer key,
    entity and source, its current versions found by entity (the btree)."""
    return Design(
        ddl,
        "key_id, entity, source",
        "v.key_id = s.key_id AND v.entity = s.entity AND v.source = s.source",
        _BY_KEY_AND_ENTITY,
        past,
        current_where=_BY_ENTITY,
    )


DESIGNS: dict[str, Design] = {
    "text key (as migrated)": Design(
        _design("entity, attribute, source", "entity text, attribute text, source text", True),
        "entity, attribute, source",
        "v.entity = s.entity AND v.attribute = s.attribute AND v.source = s.source",
        "v.entity = %(entity)s AND v.attribute = %(attribute)s",
    ),
    "integer key": Design(
        _design("key_id, source", "key_id bigint, source text", True),
        "key_id, source",
        "v.key_id = s.key_id AND v.source = s.source",
        "v.key_id = (SELECT k.key_id FROM d_key k "
        "WHERE k.entity = %(entity)s AND k.attribute = %(attribute)s)",
    ),
    "integer key, entity kept": Design(
        _design("key_id, entity, source", "key_id bigint, entity text, source text", True),
        "key_id, entity, source",
        "v.key_id = s.key_id AND v.entity = s.entity AND v.source = s.source",
        _BY_KEY_AND_ENTITY,
    ),
    "integer series": Design(
        _design("series_id", "series_id bigint", True),
        "series_id",
        "v.series_id = s.series_id",
        _BY_SERIES,
    ),
    "integer series, one GiST": Design(
        _design("series_id", "series_id bigint", False),
        "series_id",
        "v.series_id = s.series_id",
        _BY_SERIES,
    ),
    "current-only constraint": Design(
        _design("series_id", "series_id bigint", False, current_only=True),
        "series_id",
        "v.series_id = s.series_id",
        _BY_SERIES,
        _PAST_BY_BTREES,
    ),
    "current table, text key": Design(
        _current_table("entity, attribute, source", "entity text, attribute text, source text"),
        "entity, attribute, source",
        "v.entity = s.entity AND v.attribute = s.attribute AND v.source = s.source",
        "v.entity = %(entity)s AND v.attribute = %(attribute)s",
        _PAST_BY_TABLES,
        current_table=True,
    ),
    "current table, closed by btree": Design(
        _current_table(
            "entity, attribute, source",
            "entity text, attribute text, source text",
            closed_gist=False,
        ),
        "entity, attribute, source",
        "v.entity = s.entity AND v.attribute = s.attribute AND v.source = s.source",
        "v.entity = %(entity)s AND v.attribute = %(attribute)s",
        _PAST_BY_TABLES_BTREE,
        current_table=True,
    ),
    "current table, integer key": Design(
        _current_table("key_id, source", "key_id bigint, source text"),
        "key_id, source",
        "v.key_id = s.key_id AND v.source = s.source",
        "v.key_id = (SELECT k.key_id FROM d_key k "
        "WHERE k.entity = %(entity)s AND k.attribute = %(attribute)s)",
        _PAST_BY_TABLES,
        current_table=True,
    ),
    "current table, integer series": Design(
        _current_table("series_id", "series_id bigint"),
        "series_id",
        "v.series_id = s.series_id",
        _BY_SERIES,
        _PAST_BY_TABLES,
        current_table=True,
    ),
    "store layout (0034)": _store_design(_store_layout()),
    "store layout, GiST of closed versions": _store_design(
        _store_layout(closed_only=True),
        (("", _CURRENT), ("", f"NOT upper_inf(v.known) AND {_PAST}")),
    ),
    "store layout, entity in the periods' GiST only": _store_design(
        _store_layout(entity_in_constraint=False)
    ),
    "store layout, no entity in GiST": _store_design(
        _store_layout(entity_in_constraint=False, entity_in_periods=False)
    ),
}

# The histories: for series s (key k, source) and change c, the version opened at
# knowledge time c (valid from day c, open) and closed at c + 1, whose remainder
# [day c, day c + 1) is re-recorded at c + 1 and stays known; the last change's version
# stays open. Knowledge times are distinct per key and increasing with c.
_HISTORY = """
CREATE UNLOGGED TABLE d_history AS
SELECT row_number() OVER (ORDER BY known_from, series_id, kind) AS version_id, *
  FROM (SELECT s.series_id, s.key_id, s.entity, s.attribute, s.source, s.round, kind,
               pg_catalog.to_jsonb(c) AS value,
               CASE kind WHEN 0 THEN tstzrange(%(valid)s + c * interval '1 day', NULL, '[)')
                         ELSE tstzrange(%(valid)s + c * interval '1 day',
                                        %(valid)s + (c + 1) * interval '1 day', '[)')
               END AS valid,
               CASE kind WHEN 0 THEN tstzrange(at_c, CASE WHEN c < %(changes)s - 1
                                                          THEN at_next END, '[)')
                         ELSE tstzrange(at_next, NULL, '[)') END AS known,
               CASE kind WHEN 0 THEN at_c ELSE at_next END AS known_from
          FROM d_series s
         CROSS JOIN generate_series(0, %(changes)s - 1) c
         CROSS JOIN LATERAL (
             SELECT %(known)s + (c * %(all_keys)s + s.key_id) * interval '1 second' AS at_c,
                    %(known)s + ((c + 1) * %(all_keys)s + s.key_id) * interval '1 second'
                        AS at_next) t
         CROSS JOIN generate_series(0, 1) kind
         WHERE kind = 0 OR c < %(changes)s - 1) x
"""
_KEYS = (
    (
        "CREATE TABLE d_key AS SELECT g::bigint AS key_id, 'entity:' || g AS entity, "
        "'attribute'::text AS attribute, (g - 1) / %(keys)s AS round "
        "FROM generate_series(1, %(all_keys)s) g"
    ),
    "ALTER TABLE d_key ADD PRIMARY KEY (key_id)",
    "CREATE UNIQUE INDEX ON d_key (entity, attribute)",
    (
        "CREATE TABLE d_series AS SELECT (k.key_id - 1) * %(sources)s + s::bigint AS series_id, "
        "k.key_id, k.entity, k.attribute, 'source:' || s AS source, k.round "
        "FROM d_key k CROSS JOIN generate_series(1, %(sources)s) s"
    ),
    "ALTER TABLE d_series ADD PRIMARY KEY (series_id)",
    "CREATE UNIQUE INDEX ON d_series (entity, attribute, source)",
)
_PLAIN = (
    "CREATE TABLE d_plain (version_id bigint, entity text, attribute text, source text, "
    "value jsonb, valid tstzrange, known tstzrange)"
)
_PRIMARY_KEY_TABLE = (
    "CREATE TABLE d_pk AS SELECT g AS id, to_jsonb(g) AS value FROM generate_series(1, %s) g",
    "ALTER TABLE d_pk ADD PRIMARY KEY (id)",
)
PRIMARY_KEY = "SELECT value FROM d_pk WHERE id = %(id)s"


def _table(index: int) -> str:
    return f"d_{index}"


def _written(index: int) -> str:
    return f"w_{index}"


def _finding(design: Design, condition: str) -> str:
    """How the branch of ``condition`` finds the key's versions."""
    if condition == _CURRENT and design.current_where is not None:
        return design.current_where
    return design.where


def _lookup(design: Design, table: str, past: bool) -> str:
    """A lookup of one key: the union of its branches, each a condition on ``v``."""
    union = " UNION ALL ".join(
        f"SELECT v.value, v.valid, v.known FROM {table}{suffix} v "
        f"WHERE {_finding(design, condition)} AND {condition}"
        for suffix, condition in (design.past if past else (("", _CURRENT),))
    )
    return f"SELECT * FROM ({union}) l ORDER BY l.valid, l.value::text"


def _insert_round(conn: psycopg.Connection[Any], table: str, design: Design, r: int) -> float:
    columns = design.key_columns
    # A current table's design: the current versions into it, the closed ones beside.
    into = (
        ((table, "upper_inf(known)"), (f"{table}{_CLOSED}", "NOT upper_inf(known)"))
        if design.current_table
        else ((table, "true"),)
    )
    start = time.perf_counter()
    for target, which in into:
        conn.execute(
            f"INSERT INTO {target} (version_id, {columns}, value, valid, known) "
            f"SELECT version_id, {columns}, value, valid, known "
            f"FROM d_history WHERE round = %s AND {which} ORDER BY version_id",
            (r,),
        )
    return time.perf_counter() - start


# A round's histories written as record() writes them: at step c (c >= 1) each series
# closes its open version (valid from day c - 1) and re-records its remainder up to day c;
# then every step opens the version valid from day c. A series' knowledge time at step c
# is the one _HISTORY gives change c. The result is _HISTORY's rows (version ids aside).
_AT_STEP = "%(known)s + (%(c)s::integer * %(all_keys)s + s.key_id) * interval '1 second'"
_CLOSE = (
    "UPDATE {t} v SET known = tstzrange(lower(v.known), " + _AT_STEP + ", '[)') "
    "FROM d_series s WHERE s.round = %(round)s AND {match} AND upper_inf(v.known) "
    "AND coalesce(upper(v.valid), 'infinity') = 'infinity'"
)
# A current table's design closes a version by moving it to the closed versions' table.
_MOVE = (
    "WITH moved AS (DELETE FROM {t} v USING d_series s "
    "WHERE s.round = %(round)s AND {match} "
    "AND coalesce(upper(v.valid), 'infinity') = 'infinity' "
    "RETURNING v.version_id, {v_columns}, v.value, v.valid, "
    "tstzrange(lower(v.known), " + _AT_STEP + ", '[)') AS known) "
    "INSERT INTO {t}" + _CLOSED + " (version_id, {columns}, value, valid, known) "
    "SELECT * FROM moved"
)
_OPEN = (
    "INSERT INTO {t} ({columns}, value, valid, known) "
    "SELECT {from_series}, x.value, x.valid, tstzrange(" + _AT_STEP + ", NULL, '[)') "
    "FROM d_series s CROSS JOIN LATERAL (VALUES {versions}) x(value, valid) "
    "WHERE s.round = %(round)s ORDER BY s.series_id, lower(x.valid)"
)
_REMAINDER = (
    "(to_jsonb(%(c)s::integer - 1), tstzrange(%(valid)s + (%(c)s::integer - 1) * interval '1 day', "
    "%(valid)s + %(c)s::integer * interval '1 day', '[)'))"
)
_NEW = (
    "(to_jsonb(%(c)s::integer), "
    "tstzrange(%(valid)s + %(c)s::integer * interval '1 day', NULL, '[)'))"
)


def _write_round(
    conn: psycopg.Connection[Any],
    table: str,
    design: Design,
    r: int,
    changes: int,
    params: dict[str, Any],
) -> float:
    """Seconds to write round ``r``'s histories change by change, a transaction a step."""
    from_series = ", ".join(f"s.{c}" for c in design.key_columns.split(", "))
    close = (
        _MOVE.format(
            t=table,
            match=design.match,
            columns=design.key_columns,
            v_columns=", ".join(f"v.{c}" for c in design.key_columns.split(", ")),
        )
        if design.current_table
        else _CLOSE.format(t=table, match=design.match)
    )
    start = time.perf_counter()
    for c in range(changes):
        step = {**params, "round": r, "c": c}
        versions = f"{_REMAINDER}, {_NEW}" if c else _NEW
        with conn.transaction():
            if c:
                conn.execute(close, step)
            conn.execute(
                _OPEN.format(
                    t=table,
                    columns=design.key_columns,
                    from_series=from_series,
                    versions=versions,
                ),
                step,
            )
    return time.perf_counter() - start


def _differences(conn: psycopg.Connection[Any], table: str, design: Design) -> int:
    """Rows of ``table`` not in the histories, and rows of the histories not in it."""
    columns = f"{design.key_columns}, value, valid, known"
    ours = " UNION ALL ".join(f"SELECT {columns} FROM {t}" for t in design.tables(table))
    theirs = f"SELECT {columns} FROM d_history"
    return _value(
        conn,
        f"SELECT (SELECT count(*) FROM ({ours} EXCEPT ALL {theirs}) a) "
        f"+ (SELECT count(*) FROM ({theirs} EXCEPT ALL ({ours})) b)",
    )


def _taking_turns(names: list[str], r: int) -> list[str]:
    """``names`` rotated by ``r``: round after round, each goes first in turn."""
    return names[r % len(names) :] + names[: r % len(names)]


def measure(
    url: str, names: list[str], keys: int, changes: int, rounds: int, samples: int, seed: int
) -> dict[str, Any]:
    """Insert and write rates, lookup times and index sizes of the designs ``names`` (see
    the docstring)."""
    rng = random.Random(seed)
    params = {
        "keys": keys,
        "all_keys": keys * rounds,
        "changes": changes,
        "sources": SOURCES,
        "valid": VALID_START,
        "known": KNOWN_START,
    }
    with (
        scratch_database(url, "bitemporal_bench_designs") as db,
        psycopg.connect(db, autocommit=True) as conn,
    ):
        server = conn.info.server_version // 10000
        conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
        for statement in _KEYS:
            conn.execute(statement, params)
        conn.execute(_HISTORY, params)
        conn.execute("CREATE INDEX ON d_history (round, version_id)")
        conn.execute("VACUUM ANALYZE d_history")
        conn.execute(_PLAIN)
        for i, name in enumerate(names):
            for ddl in DESIGNS[name].ddl:
                conn.execute(ddl.format(t=_table(i)))
                conn.execute(ddl.format(t=_written(i)))
        rows_per_round = _value(conn, "SELECT count(*) FROM d_history WHERE round = 0")
        seconds: dict[str, list[float]] = {name: [] for name in ["plain", *names]}
        for r in range(rounds):
            for name in _taking_turns(["plain", *names], r):
                if name == "plain":
                    start = time.perf_counter()
                    conn.execute(
                        "INSERT INTO d_plain SELECT version_id, entity, attribute, source, "
                        "value, valid, known FROM d_history WHERE round = %s "
                        "ORDER BY version_id",
                        (r,),
                    )
                    seconds[name].append(time.perf_counter() - start)
                else:
                    i = names.index(name)
                    seconds[name].append(_insert_round(conn, _table(i), DESIGNS[name], r))
        write_seconds: dict[str, list[float]] = {name: [] for name in names}
        for r in range(rounds):
            for name in _taking_turns(names, r):
                i = names.index(name)
                write_seconds[name].append(
                    _write_round(conn, _written(i), DESIGNS[name], r, changes, params)
                )
        written_differently = {
            name: _differences(conn, _written(i), DESIGNS[name]) for i, name in enumerate(names)
        }
        total = _value(conn, "SELECT count(*) FROM d_history")
        conn.execute(_PRIMARY_KEY_TABLE[0], (total,))
        conn.execute(_PRIMARY_KEY_TABLE[1])
        sizes = {
            name: {
                "inserted": _indexes_size(conn, DESIGNS[name].tables(_table(i))),
                "written": _indexes_size(conn, DESIGNS[name].tables(_written(i))),
            }
            for i, name in enumerate(names)
        }
        for i, name in enumerate(names):
            conn.execute(f"VACUUM ANALYZE {', '.join(DESIGNS[name].tables(_table(i)))}")
        conn.execute("VACUUM ANALYZE d_key, d_series, d_pk")

        lookups: dict[str, list[float]] = {"primary key": []}
        differ = 0
        for kind in ("current", "past"):
            for name in names:
                lookups[f"{name}: {kind}"] = []
        horizon = KNOWN_START + timedelta(seconds=(changes + 1) * keys * rounds)
        for _ in range(samples):
            key_id = rng.randrange(1, keys * rounds + 1)
            day = rng.randrange(0, changes + 2)
            question = {
                "entity": f"entity:{key_id}",
                "attribute": "attribute",
                "valid_at": VALID_START + timedelta(days=day, hours=12),
            }
            # Each question is asked once before it is timed (its answer kept): the time is
            # the lookup's, not that of reading its pages into shared buffers.
            conn.execute(PRIMARY_KEY, {"id": key_id}).fetchall()
            lookups["primary key"].append(server_ms(conn, PRIMARY_KEY, {"id": key_id}))
            past = KNOWN_START + timedelta(seconds=rng.randrange(0, changes * keys * rounds))
            for kind, known_at in (("current", horizon), ("past", past)):
                answers = set()
                for i, name in enumerate(names):
                    query = _lookup(DESIGNS[name], _table(i), past=kind == "past")
                    asked = {**question, "known_at": known_at}
                    answers.add(json.dumps(conn.execute(query, asked).fetchall(), default=str))
                    lookups[f"{name}: {kind}"].append(server_ms(conn, query, asked))
                differ += len(answers) > 1
    return {
        "server_version": server,
        "designs": names,
        "keys": keys * rounds,
        "versions": total,
        "rows_per_round": rows_per_round,
        "rounds": rounds,
        "samples": samples,
        "insert_seconds": seconds,
        "write_seconds": write_seconds,
        "lookup_ms": lookups,
        "index_bytes": sizes,
        "questions_answered_differently": differ,
        "rows_written_differently": written_differently,
    }


def _indexes_size(conn: psycopg.Connection[Any], tables: list[str]) -> int:
    return _value(
        conn, "SELECT sum(pg_indexes_size(t::regclass)) FROM unnest(%s::text[]) t", (tables,)
    )


def _value(conn: psycopg.Connection[Any], query: str, params: Any = None) -> int:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


def report(result: dict[str, Any]) -> str:
    rows = result["rows_per_round"]
    plain = rows / statistics.median(result["insert_seconds"]["plain"])
    pk = statistics.median(result["lookup_ms"]["primary key"])
    names = result["designs"]
    baseline = rows / statistics.median(result["write_seconds"][names[0]])
    lines = []
    for name in names:
        rate = rows / statistics.median(result["insert_seconds"][name])
        written = rows / statistics.median(result["write_seconds"][name])
        current = statistics.median(result["lookup_ms"][f"{name}: current"])
        past = statistics.median(result["lookup_ms"][f"{name}: past"])
        sizes = result["index_bytes"][name]
        lines.append(
            (
                name,
                f"{rate:,.0f} ({rate / plain:.3f})",
                f"{written:,.0f} ({written / baseline:.2f}x)",
                f"{current:.3f} ({current / pk:.1f}x)",
                f"{past:.3f} ({past / pk:.1f}x)",
                f"{sizes['inserted'] / 2**20:,.1f} / {sizes['written'] / 2**20:,.1f}",
            )
        )
    table = format_table(
        (
            "design",
            "insert rows/s (of plain)",
            f"write rows/s (of {names[0]})",
            "current lookup ms (of PK)",
            "past lookup ms (of PK)",
            "index MiB inserted / written",
        ),
        lines,
    )
    return (
        f"PostgreSQL {result['server_version']}: {result['versions']:,} versions of "
        f"{result['keys']:,} keys, {SOURCES} sources each, inserted in {result['rounds']} "
        f"rounds of {rows:,}, and written change by change; {result['samples']} questions\n"
        f"baselines: insert into a table without indexes {plain:,.0f} rows/s; "
        f"primary-key lookup {pk:.3f} ms\n{table}"
        f"questions answered differently by the designs: "
        f"{result['questions_answered_differently']}\n"
        f"rows written differently from the histories: "
        f"{sum(result['rows_written_differently'].values())}\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks designs", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", help="server (default: $BITEMPORAL_DATABASE_URL, $DATABASE_URL, embedded)"
    )
    parser.add_argument(
        "--design",
        action="append",
        choices=list(DESIGNS),
        dest="designs",
        help="a design to measure, once for each (default: all); the first is the baseline "
        "of the write rates",
    )
    parser.add_argument("--keys", type=count, default=2_000, help="keys per round")
    parser.add_argument("--changes", type=count, default=25, help="changes per key and source")
    parser.add_argument("--rounds", type=count, default=5)
    parser.add_argument("--samples", type=count, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every figure measured here to this file")
    args = parser.parse_args(argv)
    result = measure(
        database_url(args.url),
        list(dict.fromkeys(args.designs or DESIGNS)),
        args.keys,
        args.changes,
        args.rounds,
        args.samples,
        args.seed,
    )
    sys.stdout.write(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(result, file, indent=1)
    wrong = result["questions_answered_differently"] + sum(
        result["rows_written_differently"].values()
    )
    return 1 if wrong else 0
