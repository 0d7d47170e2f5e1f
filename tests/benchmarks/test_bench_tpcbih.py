"""`python -m benchmarks tpcbih`, tiny: the generator is seeded and deterministic, its mix is
the one specified, the loaded store answers like the current-state tables (now) and like a
pure-Python replay of the history (at past knowledge times), and the command prints every
row."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import random
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from benchmarks import tpcbih as bench
from benchmarks.tpcbih_generator import (
    CORRECTION,
    EPOCH,
    MIX,
    SCHEDULED_PRICE_CHANGE,
    TABLES,
    Replay,
    Write,
    current_state,
    generate,
)
from bitemporal import Store

TINY = 500


def test_the_same_seed_gives_the_same_history() -> None:
    assert generate(TINY, 7) == generate(TINY, 7)
    assert generate(TINY, 7).scenarios != generate(TINY, 8).scenarios


def test_the_mix_is_the_one_specified() -> None:
    history = generate(20_000, 3)
    scenarios = history.scenarios
    counts = Counter(s.kind for s in scenarios)
    assert set(counts) == set(MIX)
    for kind, share in MIX.items():
        # Cancellations and deliveries fall back to new orders only while none is open.
        assert abs(counts[kind] / len(scenarios) - share) < 0.01, kind
    known = [s.known_at for s in scenarios]
    assert all(a < b for a, b in itertools.pairwise(known))  # strictly increasing
    assert all(s.known_at.date() > EPOCH.date() for s in scenarios)
    writes = [w for s in scenarios for w in s.writes]
    assert all(w.known_at == s.known_at for s in scenarios for w in s.writes)
    retroactive = [w for w in writes if w.valid_from < w.known_at]
    scheduled = [w for w in writes if w.valid_from > w.known_at]
    assert 0.02 <= len(retroactive) / len(scenarios) <= 0.05
    assert len(retroactive) == counts[CORRECTION]
    assert all(w.known_at - w.valid_from <= timedelta(days=7) for w in retroactive)
    assert len(scheduled) == counts[SCHEDULED_PRICE_CHANGE]
    assert all(
        timedelta(days=7) <= w.valid_from - w.known_at <= timedelta(days=31) for w in scheduled
    )
    # Every simulated day but the last has the same number of scenarios.
    days = Counter(s.known_at.date() for s in scenarios)
    assert len(set(list(days.values())[:-1])) == 1
    assert len(days) == history.days


def test_the_replay_follows_the_stores_rules() -> None:
    day = timedelta(days=1)
    key = (1,)

    def price(p: int) -> dict[str, object]:
        return {"p_partkey": 1, "p_name": "x", "p_brand": "b", "p_retailprice": p}

    replay = Replay(
        [
            Write("part", key, price(10), EPOCH, EPOCH),
            Write("part", key, price(20), EPOCH + 10 * day, EPOCH + day),  # scheduled
            Write("part", key, price(30), EPOCH + 2 * day, EPOCH + 3 * day),  # retroactive
        ]
    )

    def at(valid: int, known: int) -> object:
        row = replay.as_of("part", EPOCH + valid * day, EPOCH + known * day).get(key)
        return None if row is None else row["p_retailprice"]

    assert [at(5, 0), at(5, 1), at(11, 1), at(11, 2)] == [10, 10, 20, 20]
    # The retroactive write replaced everything from day 2 on, the scheduled price included.
    assert [at(1, 3), at(5, 3), at(11, 3)] == [10, 30, 30]
    assert at(1, 2) == 10 and at(-1, 3) is None


def test_the_current_state_is_the_replay_at_the_end() -> None:
    history = generate(3_000, 4)
    state: dict[tuple[str, tuple[object, ...]], dict[str, object]] = {}
    for at, w in current_state(history):
        assert at >= w.valid_from and at >= w.known_at  # applied when valid and known
        if w.row is None:
            del state[w.table, w.key]
        else:
            state[w.table, w.key] = w.row
    replay = Replay(history.writes)
    for table in TABLES:
        rows = {key: row for (t, key), row in state.items() if t == table}
        assert rows == replay.as_of(table, history.end, history.end), table
    # Scheduled prices fell due within the history, and some were replaced before.
    scheduled = [w for s in history.scenarios for w in s.writes if w.valid_from > w.known_at]
    assert any(w.valid_from <= history.end for w in scheduled)


@pytest.fixture
def conn(migrated_database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(migrated_database_url, autocommit=True) as conn:
        bench.create_tables(conn)
        yield conn


def test_the_store_answers_like_the_baseline_and_the_replay(
    conn: psycopg.Connection[Any],
) -> None:
    history = generate(TINY, 5)
    bench.load_plain(conn, history)
    bench.load_store(conn, history)
    checked = bench.check_answers(conn, history)
    assert checked["as of now = current-state table"] == bench._count(conn, bench.PLAIN) > 0
    assert checked["past knowledge = replay"] > 0 and checked["aggregate groups = replay"] > 0
    # Random questions through the library's API, against the replay.
    replay = Replay(history.writes)
    store = Store(conn)
    rng = random.Random(0)
    asked = 0
    for _ in range(40):
        table = rng.choice(list(TABLES.values()))
        known = rng.choice(history.scenarios).known_at + timedelta(seconds=1)
        valid = known - timedelta(days=rng.choice((0, 0, 2, 10)))
        expected = replay.as_of(table.name, valid, known)
        for key, row in list(expected.items())[:3]:
            versions = store.app_tables.as_of(
                f"tpch.{table.name}",
                dict(zip(table.key, key, strict=True)),
                valid_at=valid,
                known_at=known,
            )
            assert [dict(v.row) for v in versions] == [row]
            asked += 1
    assert asked > 40
    # The check is not vacuous: a current-state row changed behind its back is caught.
    conn.execute("UPDATE tpch_plain.customer SET c_acctbal = c_acctbal + 1 WHERE c_custkey = 1")
    with pytest.raises(bench.AnswerMismatch, match="customer as of now"):
        bench.check_answers(conn, history)


def test_the_command_prints_every_row(server_url: str, tmp_path: Path) -> None:
    out = tmp_path / "tpcbih.json"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
        code = bench.main(
            [
                "--url",
                server_url,
                "--scenarios",
                str(TINY),
                "--seed",
                "2",
                "--lookups",
                "5",
                "--histories",
                "3",
                "--changes",
                "3",
                "--aggregates",
                "2",
                "--json",
                str(out),
            ]
        )
    assert code == 0
    text = buffer.getvalue()
    result = json.loads(out.read_text())
    (run,) = result["runs"]
    assert run["scenarios"] == TINY and run["seed"] == 2
    version = result["machine"]["server_version"]
    assert text.startswith(f"python -m benchmarks tpcbih: PostgreSQL {version}, ")
    assert f"== {TINY:,} scenarios (seed 2)" in text
    assert "checked, identical: " in text
    assert "upsert into current-state tables (baseline)" in text
    assert "<table>_record / _retract into bitemporal tables" in text
    assert "INSERT of every write into append-only history tables" in text
    load = run["load"]
    assert load["versions"] > load["writes"] > load["current_rows"] > 0
    sections = {
        "Time travel": run["lookups"],
        "Key history": run["histories"],
        "Knowledge-window changes": run["changes"],
        **{f"TPC-H-style aggregate: {n}": a for n, a in run["aggregates"].items()},
    }
    blocks = {block.split(":")[0]: block for block in text.split("\n\n")}
    blocks.update({b.split(",")[0]: b for b in text.split("\n\n") if b.startswith("TPC-H")})
    rows = 0
    for title, section in sections.items():
        lines = blocks[title].splitlines()
        for name, figures in section["summary"].items():
            assert len(section["timings_ms"][name]) == section["samples"]
            (line,) = (line for line in lines if line.startswith(name + " "))
            assert line.split()[-1] == f"{figures['vs_baseline']:.1f}x"
            rows += 1
        first = next(iter(section["summary"].values()))
        assert first["vs_baseline"] == 1.0
    assert rows == 5 + 4 + 2 + 4 + 4
    assert sum(run["mix"].values()) == TINY
