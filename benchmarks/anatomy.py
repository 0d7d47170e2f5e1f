"""Where the time of an as-of lookup, of a history from Python and of a change goes.

    python -m benchmarks anatomy [--url URL] [--keys N] [--changes N] [--samples N]
                                 [--rounds N] [--timeline-versions N]
                                 [--timeline-samples N] [--writes N] [--json FILE]

Issue 15 asks for an as-of lookup within 1.5x (current knowledge) and 2.5x (an earlier
knowledge time) of a primary-key lookup, and for a history from Python within 2x of
fetching as many rows by primary key, and one change within 3x of a primary-key
``UPDATE``. This suite says which part of each misses. In a
scratch store filled as ``python -m benchmarks facts`` fills one (``--keys`` keys of
``2 * --changes - 1`` versions, a key of about ``--timeline-versions``, a plain table of as
many rows with a ``bigint`` primary key), it times on the server (``EXPLAIN ANALYZE``'s
execution time, as ``facts`` does), on the same random questions and in a new random order
for each question, ``bitemporal.as_of`` and the parts it is made of, each part a query of
its own:

- the key's row in ``fact_key`` (its latest knowledge time, the gate, and its integer);
- the key's current versions through their btree (``current_versions``, the first
  branch), alone, then after the key's row, then sorted by version id as ``as_of`` returns
  them: what ``as_of`` does for current knowledge, without its second, gated branch;
- the versions known at an earlier time, through the GiST index of the exclusion
  constraint by the key's integer (the second branch), alone;
- and, beside them, a layout the store does not have: a copy of ``fact_key`` whose row
  also holds the key's current versions, as an array of ``bitemporal.versions`` rows
  (``bench_key_current``, brought up to date and vacuumed before each round), so that a
  lookup about current knowledge is one primary-key descent for the gate, the versions and
  their order. It says how near to a primary-key lookup the gate and the order in one
  descent come.

Each decomposition, and the other layout, is checked to return the versions ``as_of``
returns. The same runs give each part's planning time: ``as_of`` is inlined into the query
that calls it, so every query that is not a prepared statement's generic plan plans it
again, and the goals' execution times leave that out. So, from Python, end to end, it
times a primary-key lookup, ``as_of`` for current and past knowledge, ``resolve``
(PL/pgSQL, whose statements' plans the session keeps) and ``as_of_planned`` (``as_of``
from PL/pgSQL, which the API asks where psycopg never prepares; migration 0037), each as a
prepared statement (psycopg's ``prepare=True``) and not (``prepare=False``, planned at
every call, as through a pooler in transaction mode), and reads from
``pg_prepared_statements`` how many of the prepared runs had a generic plan.

Through the API, it times ``Facts.as_of`` (current and past knowledge) and
``Facts.resolve`` beside the statement each sends, run on a bare psycopg cursor with the
same (binary) result format on the same connection, and a primary-key lookup on one: the
difference is what the API adds to a call (its checks, the runner, the library's loaders,
building the result objects, parsing the versions' values, which the statement returns as
JSON text).

For writes, it times one change of a key (``Facts.record`` from the day after the key's
last change, which closes the key's open version and re-records its remainder, as
``python -m benchmarks facts`` changes one), each its own transaction, against a
primary-key ``UPDATE`` of the plain table: through the API, as its statement on a bare
cursor, and on the server (planning and execution, without the commit), and the API's call
and the ``UPDATE`` again with ``synchronous_commit`` off, which leaves out the wait for the
commit's WAL flush. What remains of a change's time once the API's own cost and the
server's execution are taken away is the commit and the round trip; the commit runs the
version table's deferred trigger (``fact_version_notify_closed``, whose ``NOTIFY`` is sent
then), which ``EXPLAIN ANALYZE`` does not time.

From Python, it also times ``history`` of the long key against the same number of rows
fetched by primary key, and counts the calls during which Python's cyclic collector made a
full collection (the collector at its defaults), giving each kind of call its own median.
``--rounds`` repeats everything; the spread of each part's ratio over the rounds is printed
beside its median, since one run of a 0.02-ms query on a shared machine can be a third off
the next.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, Self

import psycopg

from bitemporal import Facts, Key, Store, migrate
from bitemporal.database import database_url, psycopg_url, scratch_database
from bitemporal.formatting import format_table
from bitemporal.operations import Statement, start

from . import facts
from .arguments import count

PRIMARY_KEY = "primary key"
KEY_ROW = "key row"
CURRENT_ALONE = "current versions (btree) alone"
CURRENT_AFTER_KEY = "key row, then current versions"
CURRENT_SORTED = "key row, then current versions, sorted"
AS_OF_CURRENT = "as_of, current knowledge"
PAST_ALONE = "versions known earlier (GiST, by key_id) alone"
AS_OF_PAST = "as_of, past knowledge"
KEY_ROW_VERSIONS = "one descent: current versions in the key's row (not the store's layout)"

_CURRENT_JOIN = """SELECT c.* FROM bitemporal.fact_key k
  CROSS JOIN LATERAL bitemporal_internal.current_versions(
      k.entity, k.attribute, %(valid_at)s, pg_catalog.now()) c
 WHERE k.entity = %(entity)s AND k.attribute = 'a' AND k.last_known_at <= pg_catalog.now()"""

#: Each part and its query; the parameters are one question (facts.lookups' kind).
PARTS: dict[str, str] = {
    PRIMARY_KEY: "SELECT value FROM bench_plain WHERE id = %(id)s",
    KEY_ROW: "SELECT last_known_at, key_id FROM bitemporal.fact_key "
    "WHERE entity = %(entity)s AND attribute = 'a'",
    CURRENT_ALONE: "SELECT * FROM bitemporal_internal.current_versions("
    "%(entity)s, 'a', %(valid_at)s, pg_catalog.now())",
    CURRENT_AFTER_KEY: _CURRENT_JOIN,
    CURRENT_SORTED: _CURRENT_JOIN + " ORDER BY c.version_id",
    AS_OF_CURRENT: "SELECT * FROM bitemporal.as_of(%(entity)s, 'a', %(valid_at)s)",
    PAST_ALONE: "SELECT * FROM bitemporal.fact_version p WHERE p.key_id = %(key_id)s::bigint "
    "AND p.entity = %(entity)s AND p.valid_period @> %(valid_at)s::timestamptz "
    "AND p.known_period @> %(known_at)s::timestamptz",
    AS_OF_PAST: "SELECT * FROM bitemporal.as_of(%(entity)s, 'a', %(valid_at)s, %(known_at)s)",
    KEY_ROW_VERSIONS: """SELECT u.* FROM bench_key_current k
  CROSS JOIN LATERAL pg_catalog.unnest(k.versions) u
 WHERE k.entity = %(entity)s AND k.attribute = 'a' AND k.last_known_at <= pg_catalog.now()
   AND u.valid_period @> %(valid_at)s::timestamptz AND u.known_period @> pg_catalog.now()
 ORDER BY u.version_id""",
}

#: The other layout: a copy of fact_key with each key's current versions in its row. The
#: changes between rounds write the store, so each round brings the copy up to date first,
#: with an UPDATE (psycopg forgets its prepared statements after a DROP or an ALTER), then
#: a VACUUM: a lookup would otherwise visit every row's old versions too, and without
#: statistics the planner reads the row through a bitmap.
KEY_ROW_TABLE = (
    """CREATE TABLE bench_key_current AS
       SELECT entity, attribute, last_known_at, NULL::bitemporal.versions[] AS versions
         FROM bitemporal.fact_key""",
    "ALTER TABLE bench_key_current ADD PRIMARY KEY (entity, attribute)",
)
KEY_ROW_REFRESH = (
    """UPDATE bench_key_current c
   SET last_known_at = k.last_known_at,
       versions = ARRAY(
           SELECT v FROM bitemporal.versions v
            WHERE v.entity = k.entity AND v.attribute = k.attribute
              AND upper_inf(v.known_period)
            ORDER BY v.version_id)
  FROM bitemporal.fact_key k
 WHERE c.entity = k.entity AND c.attribute = k.attribute""",
    "VACUUM (ANALYZE) bench_key_current",
)

#: A decomposition (or the other layout) and the as_of call whose versions it must return.
SAME_VERSIONS = (
    (CURRENT_SORTED, AS_OF_CURRENT),
    (KEY_ROW_VERSIONS, AS_OF_CURRENT),
    (PAST_ALONE, AS_OF_PAST),
)

RESOLVE = "resolve, current knowledge"
PLANNED_CURRENT = "as_of_planned, current knowledge"
PLANNED_PAST = "as_of_planned, past knowledge"

#: What the Python section runs, with the question's parameters it takes, in order:
#: positional placeholders, so that the prepared statement's text on the server is known
#: (psycopg numbers them $1, $2, ...), and an alias (py), so that no other query of this
#: suite shares that prepared statement.
FROM_PYTHON: dict[str, tuple[str, tuple[str, ...]]] = {
    PRIMARY_KEY: ("SELECT value FROM bench_plain py WHERE id = %s", ("id",)),
    AS_OF_CURRENT: ("SELECT * FROM bitemporal.as_of(%s, 'a', %s) py", ("entity", "valid_at")),
    AS_OF_PAST: (
        "SELECT * FROM bitemporal.as_of(%s, 'a', %s, %s) py",
        ("entity", "valid_at", "known_at"),
    ),
    RESOLVE: ("SELECT * FROM bitemporal.resolve(%s, 'a', %s) py", ("entity", "valid_at")),
    # What the API asks in place of as_of on a connection that never prepares (0037).
    PLANNED_CURRENT: (
        "SELECT * FROM bitemporal.as_of_planned(%s, 'a', %s) py",
        ("entity", "valid_at"),
    ),
    PLANNED_PAST: (
        "SELECT * FROM bitemporal.as_of_planned(%s, 'a', %s, %s) py",
        ("entity", "valid_at", "known_at"),
    ),
}
PREPARED = "prepared"
NOT_PREPARED = "not prepared"

HISTORY_BASELINE = "primary key range scan, same number of rows"
HISTORY = "history"
WITHOUT_FULL = "history, calls without a full collection"
WITH_FULL = "history, calls with a full collection"

#: The API's reads, each with the question's times it passes: the API's own cost is a call's
#: time less that of the statement it sends (its first step, taken from the operation
#: itself), run on a bare psycopg cursor with the same result format on the same connection.
API_BASELINE = "primary key, bare cursor"
#: Its own alias: the Python section's prepared statements keep their own runs.
API_BASELINE_QUERY = "SELECT value FROM bench_plain api WHERE id = %s"
API_READS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Facts.as_of, current knowledge": ("as_of", ("valid_at",)),
    "Facts.as_of, past knowledge": ("as_of", ("valid_at", "known_at")),
    "Facts.resolve, current knowledge": ("resolve", ("valid_at",)),
}
BARE = "its statement, bare cursor"


def _version_ids(conn: psycopg.Connection[Any], query: str, params: dict[str, Any]) -> list[int]:
    return sorted(row[0] for row in conn.execute(query, params))


def questions(
    conn: psycopg.Connection[Any], keys: int, changes: int, versions: int, rng: random.Random
) -> dict[str, Any]:
    """One question: a key, a valid time on one of its days, a knowledge time while its
    history was written, a row of the baseline table and the key's integer."""
    key = rng.randrange(1, keys + 1)
    change = rng.randrange(0, changes)
    entity = f"e{key}"
    row = conn.execute(
        "SELECT key_id FROM bitemporal.fact_key WHERE entity = %s AND attribute = 'a'", (entity,)
    ).fetchone()
    assert row is not None
    return {
        "entity": entity,
        "valid_at": facts.EPOCH + timedelta(days=change, hours=12),
        "known_at": facts.EPOCH + timedelta(hours=rng.randrange(0, change + 1), minutes=30),
        "id": rng.randrange(1, versions + 1),
        "key_id": row[0],
    }


def lookup_round(
    conn: psycopg.Connection[Any], asked: list[dict[str, Any]], rng: random.Random
) -> tuple[dict[str, list[float]], dict[str, list[float]], int]:
    """Every part on every question, in a new order each time: its execution and its
    planning times; and how many of the decompositions (and the other layout, brought up to
    date first) returned other versions than as_of."""
    for statement in KEY_ROW_REFRESH:
        conn.execute(statement)
    timings: dict[str, list[float]] = {name: [] for name in PARTS}
    planning: dict[str, list[float]] = {name: [] for name in PARTS}
    differ = 0
    for params in asked:
        for name in rng.sample(list(PARTS), len(PARTS)):
            planned, executed = facts.server_times(conn, PARTS[name], params)
            planning[name].append(planned)
            timings[name].append(executed)
        for part, whole in SAME_VERSIONS:
            differ += _version_ids(conn, PARTS[part], params) != _version_ids(
                conn, PARTS[whole], params
            )
    return timings, planning, differ


def python_name(statement: str, prepared: bool) -> str:
    return f"{statement}, {PREPARED if prepared else NOT_PREPARED}"


def _fetch_all(
    conn: psycopg.Connection[Any], query: str, args: tuple[Any, ...], prepared: bool
) -> None:
    conn.execute(query, args, prepare=prepared).fetchall()


def python_round(
    conn: psycopg.Connection[Any], asked: list[dict[str, Any]], rng: random.Random
) -> dict[str, list[float]]:
    """Each statement of FROM_PYTHON on every question from Python, end to end, prepared
    and not, in a new order each time."""
    runs = [(name, prepared) for name in FROM_PYTHON for prepared in (True, False)]
    timings: dict[str, list[float]] = {python_name(*run): [] for run in runs}
    for params in asked:
        for name, prepared in rng.sample(runs, len(runs)):
            query, names = FROM_PYTHON[name]
            args = tuple(params[n] for n in names)
            timings[python_name(name, prepared)].append(
                facts.client_ms(_fetch_all, conn, query, args, prepared)
            )
    return timings


def api_name(read: str, bare: bool) -> str:
    return f"{read}, {BARE}" if bare else read


def _bare_read(conn: psycopg.Connection[Any], statement: Statement) -> None:
    """``statement`` on a bare psycopg cursor: psycopg's own loaders, the same format."""
    with conn.cursor(binary=statement.binary) as cur:
        cur.execute(statement.sql, statement.params).fetchall()


def _statement(method: str, store: Store, key: Key, times: dict[str, Any]) -> Statement:
    """The statement ``store.facts.<method>(key, **times)`` sends first (these reads send
    one), taken from the operation itself."""
    step = start(getattr(Facts, method).build(store.facts, key, **times))
    assert isinstance(step, Statement)
    return step


def api_round(
    conn: psycopg.Connection[Any], asked: list[dict[str, Any]], rng: random.Random
) -> dict[str, list[float]]:
    """Each read of API_READS on every question through the API and as its statement on a
    bare cursor, and the primary-key lookup on one, in a new order each time (psycopg's
    default preparation for all: the API's own)."""
    store = Store(conn)
    runs = [API_BASELINE, *(api_name(read, bare) for read in API_READS for bare in (False, True))]
    timings: dict[str, list[float]] = {run: [] for run in runs}
    for params in asked:
        key = Key(params["entity"], "a")
        baseline = Statement(API_BASELINE_QUERY, (params["id"],), binary=True)
        calls = {API_BASELINE: partial(_bare_read, conn, baseline)}
        for read, (method, asks) in API_READS.items():
            times = {name: params[name] for name in asks}
            calls[read] = partial(getattr(store.facts, method), key, **times)
            bare = _statement(method, store, key, times)
            calls[api_name(read, bare=True)] = partial(_bare_read, conn, bare)
        for run in rng.sample(runs, len(runs)):
            timings[run].append(facts.client_ms(calls[run]))
    return timings


CHANGE_BASELINE = "primary key UPDATE"
CHANGE = "Facts.record, one change"
CHANGE_BARE = f"{CHANGE}, {BARE}"
CHANGE_SERVER = f"{CHANGE}, its statement on the server"
CHANGE_BASELINE_SERVER = f"{CHANGE_BASELINE} on the server"
#: The end-to-end runs again without waiting for the commit's WAL flush.
NO_FLUSH = "synchronous_commit off"
CHANGE_RUNS = (
    CHANGE_BASELINE,
    CHANGE,
    CHANGE_BARE,
    CHANGE_SERVER,
    CHANGE_BASELINE_SERVER,
    f"{CHANGE_BASELINE}, {NO_FLUSH}",
    f"{CHANGE}, {NO_FLUSH}",
)
_UPDATE = "UPDATE bench_plain SET value = %s WHERE id = %s"


def _server_ms(conn: psycopg.Connection[Any], query: str, params: Any) -> float:
    """A statement's planning and execution on the server (``EXPLAIN ANALYZE`` runs it)."""
    return sum(facts.server_times(conn, query, params))


def _without_flush(conn: psycopg.Connection[Any], call: partial[Any]) -> float:
    conn.execute("SET synchronous_commit = off")
    try:
        return facts.client_ms(call)
    finally:
        conn.execute("RESET synchronous_commit")


def change_round(
    conn: psycopg.Connection[Any],
    keys: int,
    changes: int,
    versions: int,
    writes: int,
    moments: itertools.count[int],
    rng: random.Random,
) -> dict[str, list[float]]:
    """``writes`` changes of random keys timed each way of CHANGE_RUNS, the ways in a new
    order each time. Each change is from the day after the key's last change and a second
    later than any change before, with a value no change had, so that it closes the key's
    open version and re-records its remainder; each is its own transaction (``conn`` is in
    autocommit)."""
    store = Store(conn)
    timings: dict[str, list[float]] = {run: [] for run in CHANGE_RUNS}
    for _ in range(writes):
        for run in rng.sample(CHANGE_RUNS, len(CHANGE_RUNS)):
            key = Key(f"e{rng.randrange(1, keys + 1)}", "a")
            # A start and a value no change had before: never a no-op.
            n = next(moments)
            valid_from = facts.EPOCH + timedelta(days=changes + 1, seconds=n)
            step = start(
                Facts.record.build(store.facts, key, -n, source="s", valid_from=valid_from)
            )
            assert isinstance(step, Statement)
            record = partial(store.facts.record, key, -n, source="s", valid_from=valid_from)
            row = (str(-n), rng.randrange(1, versions + 1))
            update = partial(conn.execute, _UPDATE, row)
            ways: dict[str, Callable[[], float]] = {
                CHANGE_BASELINE: partial(facts.client_ms, update),
                CHANGE: partial(facts.client_ms, record),
                CHANGE_BARE: partial(facts.client_ms, _bare_read, conn, step),
                CHANGE_SERVER: partial(_server_ms, conn, step.sql, step.params),
                CHANGE_BASELINE_SERVER: partial(_server_ms, conn, _UPDATE, row),
                f"{CHANGE_BASELINE}, {NO_FLUSH}": partial(_without_flush, conn, update),
                f"{CHANGE}, {NO_FLUSH}": partial(_without_flush, conn, record),
            }
            timings[run].append(ways[run]())
    return timings


def change_parts(rounds: list[dict[str, list[float]]]) -> str:
    """A change's time taken apart: the API's own cost, the server's execution, and what
    remains (the commit and the round trip), with and without the commit's flush."""
    median = {name: statistics.median(ms) for name, ms in _merged(rounds).items()}
    api = median[CHANGE] - median[CHANGE_BARE]
    rest = median[CHANGE_BARE] - median[CHANGE_SERVER]
    flush = median[CHANGE] - median[f"{CHANGE}, {NO_FLUSH}"]
    base_flush = median[CHANGE_BASELINE] - median[f"{CHANGE_BASELINE}, {NO_FLUSH}"]
    return (
        "A change's time taken apart (medians):\n"
        f"  the API adds {api:.3f} ms to its statement\n"
        f"  the statement runs {median[CHANGE_SERVER]:.3f} ms on the server, the UPDATE "
        f"{median[CHANGE_BASELINE_SERVER]:.3f} ms (whose whole call takes "
        f"{median[CHANGE_BASELINE]:.3f} ms)\n"
        f"  the commit (with the deferred NOTIFY trigger) and the round trip take the remaining "
        f"{rest:.3f} ms, of which waiting for the WAL flush {flush:.3f} ms (the UPDATE's "
        f"{base_flush:.3f} ms)\n"
    )


def server_text(query: str) -> str:
    """A query's text as psycopg prepares it on the server: each %s as $1, $2, ..."""
    parts = query.split("%s")
    return parts[0] + "".join(f"${i}{part}" for i, part in enumerate(parts[1:], start=1))


def plan_kinds(conn: psycopg.Connection[Any]) -> dict[str, dict[str, int]]:
    """How many runs of each prepared statement of FROM_PYTHON had a generic plan, and how
    many a custom one (planned with the run's parameters). A statement's text may be
    prepared more than once: psycopg prepares it again for other parameter types (a small
    integer is sent as smallint, a larger one as integer)."""
    kinds = {
        statement: (generic, custom)
        for statement, generic, custom in conn.execute(
            "SELECT statement, sum(generic_plans), sum(custom_plans)"
            " FROM pg_prepared_statements GROUP BY statement"
        )
    }
    result: dict[str, dict[str, int]] = {}
    for name, (query, _) in FROM_PYTHON.items():
        generic, custom = kinds[server_text(query)]
        result[name] = {"generic": int(generic), "custom": int(custom)}
    return result


class FullCollections:
    """Counts Python's full (generation 2) cyclic collections while installed."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            self.count += 1

    def __enter__(self) -> Self:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def history_round(
    conn: psycopg.Connection[Any], versions: int, samples: int, rng: random.Random
) -> dict[str, list[float]]:
    """history of the long key from Python against a primary-key range scan of as many
    rows, each history call filed by whether a full collection ran during it."""
    store = Store(conn)
    key = Key(facts.TIMELINE_ENTITY, "a")
    rows = len(store.facts.history(key))
    timings: dict[str, list[float]] = {
        HISTORY_BASELINE: [],
        HISTORY: [],
        WITHOUT_FULL: [],
        WITH_FULL: [],
    }
    with FullCollections() as full:
        for _ in range(samples):
            first = rng.randrange(1, versions - rows + 2)
            params = {"first": first, "last": first + rows - 1}
            timings[HISTORY_BASELINE].append(facts.fetch_ms(conn, facts.TIMELINE_BASELINE, params))
            before = full.count
            ms = facts.client_ms(store.facts.history, key)
            timings[HISTORY].append(ms)
            timings[WITH_FULL if full.count > before else WITHOUT_FULL].append(ms)
    return timings


def measure(
    url: str,
    keys: int,
    changes: int,
    samples: int,
    rounds: int,
    timeline_versions: int,
    timeline_samples: int,
    seed: int = 1,
    writes: int = 100,
) -> dict[str, Any]:
    """Everything, in the (scratch, migrated) database ``url``."""
    rng = random.Random(seed)
    moments = itertools.count()
    with psycopg.connect(url, autocommit=True) as conn:
        loaded = facts.fill(conn, keys, changes, timeline_versions)
        versions = loaded["versions"]
        facts.fill_baseline(conn, versions)
        for statement in KEY_ROW_TABLE:
            conn.execute(statement)
        asked = [questions(conn, keys, changes, versions, rng) for _ in range(samples)]
        # Warms caches and plans (and psycopg prepares the prepared statements).
        lookup_round(conn, asked, rng)
        python_round(conn, asked, rng)
        api_round(conn, asked, rng)
        change_round(conn, keys, changes, versions, max(writes // 5, 1), moments, rng)
        lookups: list[dict[str, list[float]]] = []
        planning: list[dict[str, list[float]]] = []
        from_python: list[dict[str, list[float]]] = []
        through_api: list[dict[str, list[float]]] = []
        histories: list[dict[str, list[float]]] = []
        writing: list[dict[str, list[float]]] = []
        differ = 0
        for _ in range(rounds):
            timings, planned, wrong = lookup_round(conn, asked, rng)
            lookups.append(timings)
            planning.append(planned)
            differ += wrong
            from_python.append(python_round(conn, asked, rng))
            through_api.append(api_round(conn, asked, rng))
            histories.append(history_round(conn, versions, timeline_samples, rng))
            writing.append(change_round(conn, keys, changes, versions, writes, moments, rng))
        return {
            "server_version": conn.info.server_version // 10000,
            "versions": versions,
            "keys": keys,
            "changes": changes,
            "samples": samples,
            "rounds": rounds,
            "timeline_versions": timeline_versions,
            "differ": differ,
            "lookups": lookups,
            "planning": planning,
            "from_python": from_python,
            "through_api": through_api,
            "plans": plan_kinds(conn),
            "histories": histories,
            "writes": writes,
            "changes_timed": writing,
        }


def _merged(rounds: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    return {name: [ms for r in rounds for ms in r[name]] for name in rounds[0]}


def _ratio_spread(rounds: list[dict[str, list[float]]], name: str, baseline: str) -> str:
    """The lowest and highest ratio of ``name``'s median to the baseline's over the rounds."""
    ratios = [
        statistics.median(r[name]) / statistics.median(r[baseline])
        for r in rounds
        if r[name] and r[baseline]
    ]
    return f"{min(ratios):.2f}-{max(ratios):.2f}x" if ratios else "-"


def _rows(rounds: list[dict[str, list[float]]], baseline: str) -> list[tuple[str, ...]]:
    merged = _merged(rounds)
    base = statistics.median(merged[baseline])
    rows: list[tuple[str, ...]] = []
    for name, samples in merged.items():
        if not samples:
            rows.append((name, "0", "-", "-", "-"))
            continue
        median = statistics.median(samples)
        rows.append(
            (
                name,
                f"{len(samples):,}",
                f"{median:.3f}",
                f"{median / base:.2f}x",
                _ratio_spread(rounds, name, baseline),
            )
        )
    return rows


def api_cost(rounds: list[dict[str, list[float]]]) -> str:
    """Each read's own cost in the API: its median less its statement's, in ms and as a
    share of the primary-key lookup's median."""
    merged = _merged(rounds)
    base = statistics.median(merged[API_BASELINE])
    lines = ""
    for read in API_READS:
        own = statistics.median(merged[read]) - statistics.median(merged[api_name(read, True)])
        lines += f"  {read}: the API adds {own:.3f} ms, {own / base:.2f}x the baseline\n"
    return "The API's own cost (a call's median less its statement's):\n" + lines


def report(result: dict[str, Any]) -> str:
    head = (
        f"PostgreSQL {result['server_version']}, {result['versions']:,} versions "
        f"({result['keys']:,} keys of {2 * result['changes'] - 1} versions and one of about "
        f"{result['timeline_versions']:,}), {result['samples']} questions, "
        f"{result['rounds']} rounds\n"
    )
    columns = ("part", "samples", "median ms", "vs baseline", "over the rounds")
    lookups = format_table(columns, _rows(result["lookups"], PRIMARY_KEY))
    planning = format_table(columns, _rows(result["planning"], PRIMARY_KEY))
    from_python = format_table(
        columns, _rows(result["from_python"], python_name(PRIMARY_KEY, prepared=True))
    )
    plans = "".join(
        f"  {name}: {kinds['generic']:,} generic, {kinds['custom']:,} custom\n"
        for name, kinds in result["plans"].items()
    )
    histories = format_table(columns, _rows(result["histories"], HISTORY_BASELINE))
    through_api = format_table(columns, _rows(result["through_api"], API_BASELINE))
    writing = format_table(columns, _rows(result["changes_timed"], CHANGE_BASELINE))
    return (
        head
        + "\nAn as-of lookup and its parts, on the server (baseline: a primary-key lookup):\n"
        + lookups
        + "\nDecompositions (and the other layout) returning other versions than as_of:"
        + f" {result['differ']}\n"
        + "\nThe same queries' planning on the server (baseline: planning the primary-key"
        " lookup):\n"
        + planning
        + "\nFrom Python, end to end, prepared or not (baseline: a primary-key lookup,"
        " prepared):\n"
        + from_python
        + "\nThrough the API and as its statement on a bare cursor, from Python, end to end"
        " (baseline: a primary-key lookup on a bare cursor):\n"
        + through_api
        + api_cost(result["through_api"])
        + "\nPlans of the prepared statements' runs:\n"
        + plans
        + "\nA history from Python (baseline: as many rows by primary key, from Python):\n"
        + histories
        + "\nOne change from Python, each its own transaction (baseline: a primary-key UPDATE,"
        " end to end):\n" + writing + change_parts(result["changes_timed"])
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks anatomy", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--url", help="server to create a scratch database on (default: as for connect)"
    )
    parser.add_argument("--keys", type=count, default=10_000)
    parser.add_argument(
        "--changes", type=count, default=50, help="changes per key (versions = 2*changes-1)"
    )
    parser.add_argument("--samples", type=count, default=300, help="questions per round")
    parser.add_argument("--rounds", type=count, default=5)
    parser.add_argument("--timeline-versions", type=count, default=10_000)
    parser.add_argument(
        "--timeline-samples", type=count, default=10, help="history calls per round"
    )
    parser.add_argument(
        "--writes", type=count, default=100, help="changes per round, each of them timed one way"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every figure measured here")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    def progress(message: str) -> None:
        sys.stderr.write(f"[{time.perf_counter() - started:7.1f} s] {message}\n")

    progress(f"filling {args.keys:,} keys of {2 * args.changes - 1} versions ...")
    url = database_url(args.url)
    with scratch_database(url, "bitemporal_bench") as scratch:
        migrate(scratch)
        result = measure(
            psycopg_url(scratch),
            args.keys,
            args.changes,
            args.samples,
            args.rounds,
            args.timeline_versions,
            args.timeline_samples,
            args.seed,
            args.writes,
        )
    result["machine"] = facts.machine(psycopg_url(url))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    sys.stdout.write(report(result))
    progress("done")
    return 0 if result["differ"] == 0 else 1
