"""The store at head against the same store downgraded to an earlier revision (issue 15):
what the migrations since that revision did to each operation's speed.

    python -m benchmarks revisions --baseline REVISION [--url URL] [--keys N] [--changes N]
                                   [--rounds N] [--lookups N] [--writes N] [--batch N]
                                   [--json FILE]
    python -m benchmarks integer-key [options]   # --baseline 0030: the integer key (0031)

It fills one scratch database, migrated to head, with ``--keys`` keys of ``--changes``
changes each (as ``python -m benchmarks facts`` fills it), and copies it twice; one copy is
downgraded to ``--baseline`` (its functions, indexes and columns as they were; the versions
stay).

Then, round after round, the two copies taking turns (each round in the other order), the
same work in each, its lookups and ``history`` calls run once untimed first (the other
copy's turn may have evicted some of this copy's pages from shared buffers):

* ``--lookups`` random questions, on the server (``EXPLAIN ANALYZE``): ``as_of`` for current
  and for past knowledge, ``resolve`` for past and for current knowledge (a valid time before
  the key's last change, which reads the versions known then), ``explain`` for past and for
  current knowledge (each statement its own transaction, as an application asks), and a
  primary-key lookup of a version (the baseline); and as many ``history`` calls, each
  against a primary-key range scan of as many rows of a plain table;
* ``--writes`` interior changes from Python, one ``record`` a transaction (each closes the
  key's open version and re-records its remainder), against a primary-key ``UPDATE`` of a
  plain table in the same database (the baseline);
* ``record_many`` of ``--batch`` rows of new keys, and of ``--batch`` changes of keys with
  history.

It prints each operation's median rate in each copy, head's against the baseline's (of the
medians, and round by round), and each lookup and change against its baseline. Last, the
baseline copy is upgraded to head, timed. The two copies must answer every question alike
and hold the same versions, before and after that upgrade: the exit status is 1 otherwise.

Each lookup, change and ``history`` is also compared against its baseline in its own copy,
round by round, which cancels what moves a whole copy. Two copies of one store, both at head,
differed by up to 1.48x in every read of the first runs (on PostgreSQL 15 copies made through
shared buffers caused it; ``scratch_database`` now copies file by file), and by 0.94-1.24x
either way since; with the untimed first pass, that last column held within 0.96-1.01x for
every read in three runs on PostgreSQL 18 (benchmarks/README.md).
``--baseline`` may be head itself: both copies then stay at head, and the ratios, which
should all be 1, show how far this machine moves them (an A/A run).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import psycopg

from bitemporal import Key, Store, downgrade, migrate
from bitemporal.database import database_url, psycopg_url, scratch_database
from bitemporal.formatting import format_table
from bitemporal.migrations import head, revisions

from .arguments import count
from .facts import EPOCH, fill, fill_baseline, machine, server_ms
from .turns import Turns, turns

BASELINE = "baseline"
HEAD = "head"

AS_OF = "SELECT * FROM bitemporal.as_of(%s, 'a', %s, %s)"
RESOLVE = "SELECT * FROM bitemporal.resolve(%s, 'a', %s, %s)"
EXPLAIN = "SELECT bitemporal.explain(%s, 'a', %s, %s)"
PRIMARY_KEY = "SELECT * FROM bitemporal.fact_version WHERE version_id = %s"
HISTORY = "SELECT * FROM bitemporal.history(%s, 'a')"
RANGE_SCAN = "SELECT * FROM bench_plain WHERE id BETWEEN %s AND %s ORDER BY id"
UPDATE = "UPDATE bench_plain SET value = %s WHERE id = %s"
# What both copies must hold alike: every version's key, source, value, valid period and
# whether it is open. Not the ids (a batch's rows may take theirs in another order) nor the
# knowledge times (each copy's own transaction times).
CONTENT = """SELECT md5(string_agg(v.line, ',' ORDER BY v.line))
               FROM (SELECT concat_ws('|', entity, attribute, source, value, valid_period,
                                      upper_inf(known_period)) AS line
                       FROM bitemporal.fact_version) v"""


def _answer(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """An as_of answer's versions as their source, value and valid period (see CONTENT)."""
    return sorted((str(row[3]), json.dumps(row[4]), str(row[5])) for row in rows)


def round_of(
    conn: psycopg.Connection[Any],
    keys: int,
    changes: int,
    versions: int,
    round_: int,
    lookups: int,
    writes: int,
    batch: int,
    seed: int,
) -> tuple[dict[str, float], list[Any]]:
    """One round's work in one copy: each operation's rate (a second), and the answers."""
    rng = random.Random(seed * 1000 + round_)
    timings: dict[str, list[float]] = {}
    answers: list[Any] = []

    def timed(name: str, ms: float) -> None:
        timings.setdefault(name, []).append(ms)

    questions = [
        (
            f"e{rng.randrange(1, keys + 1)}",
            EPOCH + timedelta(days=rng.randrange(changes), hours=12),
            EPOCH + timedelta(hours=rng.randrange(changes), minutes=30),
            rng.randrange(1, versions + 1),
        )
        for _ in range(lookups)
    ]
    timelines = [(f"e{rng.randrange(1, keys + 1)}", rng.random()) for _ in range(lookups)]
    # Read everything once untimed first: the turn before, the other copy's, may have
    # evicted this copy's pages from shared buffers. Without this, one round in five had the
    # primary-key lookup's median at 0.012-0.017 ms in one copy, 0.019-0.027 in the other
    # (benchmarks/README.md, the A/A runs).
    for warm in (True, False):
        for entity, valid_at, known_at, version_id in questions:
            for name, query, args in (
                ("primary key lookup", PRIMARY_KEY, (version_id,)),
                ("as_of, current knowledge", AS_OF, (entity, valid_at, None)),
                ("as_of, past knowledge", AS_OF, (entity, valid_at, known_at)),
                ("resolve, past knowledge", RESOLVE, (entity, valid_at, known_at)),
                ("resolve, current knowledge", RESOLVE, (entity, valid_at, None)),
                ("explain, past knowledge", EXPLAIN, (entity, valid_at, known_at)),
                ("explain, current knowledge", EXPLAIN, (entity, valid_at, None)),
            ):
                ms = server_ms(conn, query, args)
                if not warm:
                    timed(name, ms)
            if not warm:
                answers.append(
                    _answer(conn.execute(AS_OF, (entity, valid_at, known_at)).fetchall())
                )
                answers.append(_answer(conn.execute(AS_OF, (entity, valid_at, None)).fetchall()))
        for entity, where in timelines:
            history = conn.execute(HISTORY, (entity,)).fetchall()
            first = 1 + int(where * (versions - len(history) + 1))
            last = first + len(history) - 1
            history_ms = server_ms(conn, HISTORY, (entity,))
            scan_ms = server_ms(conn, RANGE_SCAN, (first, last))
            if not warm:
                answers.append(_answer(history))
                timed("history", history_ms)
                timed("primary key range scan", scan_ms)

    store = Store(conn)
    # Later than every valid time before it, the previous rounds' record_many cuts included
    # (``batch // keys`` hours of them a round): each change cuts the key's open version.
    changed_from = EPOCH + timedelta(days=changes + 1) + round_ * timedelta(hours=2 + batch // keys)
    for i in range(writes):
        key = Key(f"e{rng.randrange(1, keys + 1)}", "a")
        began = time.perf_counter()
        conn.execute(UPDATE, (json.dumps(i), rng.randrange(1, versions + 1)))
        timed("primary key UPDATE", (time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        store.facts.record(key, i, source="s", valid_from=changed_from + timedelta(seconds=i))
        timed("record, one interior change", (time.perf_counter() - began) * 1000)

    new_keys = [
        {"entity": f"n{round_}_{i}", "attribute": "a", "source": "s", "value": i}
        for i in range(batch)
    ]
    cuts = [
        {
            "entity": f"e{1 + i % keys}",
            "attribute": "a",
            "source": "s",
            "value": i,
            "valid_from": changed_from + timedelta(hours=1 + i // keys),
        }
        for i in range(batch)
    ]
    rates = {name: 1000 / statistics.median(ms) for name, ms in timings.items()}
    for name, rows in (("record_many, new keys", new_keys), ("record_many, history", cuts)):
        began = time.perf_counter()
        store.facts.record_many(rows)
        rates[name] = batch / (time.perf_counter() - began)
    return rates, answers


def measure(
    url: str,
    baseline: str,
    keys: int,
    changes: int,
    rounds: int,
    lookups: int,
    writes: int,
    batch: int,
    seed: int,
) -> dict[str, Any]:
    with scratch_database(url, "bitemporal_revisions") as base:
        migrate(base)
        with psycopg.connect(psycopg_url(base), autocommit=True) as conn:
            filled = fill(conn, keys, changes)
            fill_baseline(conn, filled["versions"])
        template = str(psycopg.conninfo.conninfo_to_dict(psycopg_url(base))["dbname"])
        with ExitStack() as copies:
            urls = {
                store: psycopg_url(
                    copies.enter_context(scratch_database(url, template, template=template))
                )
                for store in (BASELINE, HEAD)
            }
            began = time.perf_counter()
            downgrade(urls[BASELINE], baseline)
            downgrade_seconds = time.perf_counter() - began
            conns = {store: psycopg.connect(u, autocommit=True) for store, u in urls.items()}
            try:
                rates: dict[str, list[dict[str, float]]] = {store: [] for store in conns}
                differing = 0
                for r in range(rounds):
                    order = list(conns) if r % 2 == 0 else list(reversed(conns))
                    answers = {}
                    for store in order:
                        rate, answers[store] = round_of(
                            conns[store],
                            keys,
                            changes,
                            filled["versions"],
                            r,
                            lookups,
                            writes,
                            batch,
                            seed,
                        )
                        rates[store].append(rate)
                    differing += sum(
                        a != b for a, b in zip(answers[BASELINE], answers[HEAD], strict=True)
                    )
                contents = {store: c.execute(CONTENT).fetchone() for store, c in conns.items()}
            finally:
                for conn in conns.values():
                    conn.close()
            began = time.perf_counter()
            migrate(urls[BASELINE])
            upgrade_seconds = time.perf_counter() - began
            with psycopg.connect(urls[BASELINE]) as conn:
                upgraded = conn.execute(CONTENT).fetchone()
    return {
        "baseline": baseline,
        "head": head(),
        "keys": keys,
        "changes": changes,
        "versions": filled["versions"],
        "rounds": rounds,
        "lookups": lookups,
        "writes": writes,
        "batch": batch,
        "server_version": machine(psycopg_url(url))["server_version"],
        "rates": rates,
        "questions_answered_differently": differing,
        "versions_held_differently": contents[BASELINE] != contents[HEAD],
        "versions_changed_by_the_upgrade": upgraded != contents[BASELINE],
        "downgrade_seconds": downgrade_seconds,
        "upgrade_seconds": upgrade_seconds,
    }


# Each measured operation, and the baseline it is read against (None: none).
OPERATIONS: dict[str, str | None] = {
    "as_of, current knowledge": "primary key lookup",
    "as_of, past knowledge": "primary key lookup",
    "resolve, past knowledge": "primary key lookup",
    "resolve, current knowledge": "primary key lookup",
    "explain, past knowledge": "primary key lookup",
    "explain, current knowledge": "primary key lookup",
    "history": "primary key range scan",
    "record, one interior change": "primary key UPDATE",
    "record_many, new keys": None,
    "record_many, history": None,
}


def report(result: dict[str, Any]) -> str:
    rates = result["rates"]

    def series(store: str, name: str) -> list[float]:
        return [r[name] for r in rates[store]]

    def against(store: str, name: str, baseline: str) -> str:
        # A rate's inverse is a time: the baseline's rate over the operation's.
        ratio = statistics.median(series(store, baseline)) / statistics.median(series(store, name))
        return f"{ratio:.2f}x"

    def relative(store: str, name: str, baseline: str) -> list[float]:
        """Each round's rate of ``name`` over its baseline's in the same copy."""
        return [r[name] / r[baseline] for r in rates[store]]

    def shown(t: Turns) -> str:
        return f"{t.ratio:.2f}x ({', '.join(f'{x:.2f}' for x in t.by_round)})"

    rows = []
    for name, baseline in OPERATIONS.items():
        t = turns(series(BASELINE, name), series(HEAD, name))
        unit = "a second" if baseline is None else f"a second (vs {baseline})"
        rows.append(
            (
                name,
                f"{t.baseline:,.0f} {unit}"
                + (f": {against(BASELINE, name, baseline)}" if baseline else ""),
                f"{t.other:,.0f}" + (f": {against(HEAD, name, baseline)}" if baseline else ""),
                shown(t),
                shown(turns(relative(BASELINE, name, baseline), relative(HEAD, name, baseline)))
                if baseline
                else "-",
            )
        )
    old, new = result["baseline"], result["head"]
    header = (
        f"== The store at {new} (head) against {old}: {result['versions']:,} versions of "
        f"{result['keys']:,} keys, PostgreSQL {result['server_version']}, "
        f"{result['rounds']} rounds (each: {result['lookups']} lookups, {result['writes']} "
        f"interior changes, record_many of {result['batch']:,} rows twice)\n"
    )
    table = format_table(
        ("operation", old, new, f"{new} / {old} (rounds)", "the same, each vs its copy's baseline"),
        rows,
    )
    return (
        header + table + "\n(rates: operations a second, record_many rows a second; 'vs': times the"
        " baseline's time in the same copy; the last column divides each copy's rate by its"
        " baseline's, round by round, which cancels what moves a whole copy)\n"
        f"questions answered differently by the two copies: "
        f"{result['questions_answered_differently']}\n"
        f"versions held differently at the end: {int(result['versions_held_differently'])}\n"
        f"the {old} copy downgraded in {result['downgrade_seconds']:.1f} s, upgraded to {new} in "
        f"{result['upgrade_seconds']:.1f} s after the rounds; versions changed by that upgrade: "
        f"{int(result['versions_changed_by_the_upgrade'])}\n"
    )


def main(
    argv: Sequence[str] | None = None,
    *,
    prog: str = "python -m benchmarks revisions",
    baseline: str | None = None,
) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument(
        "--baseline",
        required=baseline is None,
        default=baseline,
        help=f"the revision head is measured against (default: {baseline})"
        if baseline
        else "the revision head is measured against (e.g. 0032)",
    )
    parser.add_argument(
        "--url", help="server (default: $BITEMPORAL_DATABASE_URL, $DATABASE_URL, embedded)"
    )
    parser.add_argument("--keys", type=count, default=2_000)
    parser.add_argument("--changes", type=count, default=25, help="changes per key")
    parser.add_argument("--rounds", type=count, default=5)
    parser.add_argument("--lookups", type=count, default=200, help="questions a round")
    parser.add_argument("--writes", type=count, default=200, help="interior changes a round")
    parser.add_argument("--batch", type=count, default=10_000, help="record_many rows a batch")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write every figure measured here to this file")
    args = parser.parse_args(argv)
    known = revisions()
    if args.baseline not in known:
        # Before the fill, which takes minutes at the sizes worth measuring.
        parser.error(
            f"--baseline {args.baseline}: not a revision up to head ({head()}); "
            f"one of {known[0]} to {known[-1]}"
        )
    result = measure(
        database_url(args.url),
        args.baseline,
        args.keys,
        args.changes,
        args.rounds,
        args.lookups,
        args.writes,
        args.batch,
        args.seed,
    )
    sys.stdout.write(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(result, file, indent=1)
    wrong = (
        result["questions_answered_differently"]
        or result["versions_held_differently"]
        or result["versions_changed_by_the_upgrade"]
    )
    return 1 if wrong else 0


def integer_key(argv: Sequence[str]) -> int:
    """``python -m benchmarks integer-key``: against 0030, the store before its integer key
    (migration 0031), as docs/performance.md measured it."""
    return main(argv, prog="python -m benchmarks integer-key", baseline="0030")
