"""`python -m benchmarks anatomy`, tiny: every part timed and its planning too in every round,
each decomposition (and the other layout) returning the versions as_of returns, every
statement from Python timed prepared and not, with its prepared runs' plans counted, every
read of the API beside its statement on a bare cursor, every history call filed by the
collector's work, every way of timing a change, each change closing one version and
re-recording its remainder."""

from __future__ import annotations

import random

import psycopg
import pytest

from benchmarks import anatomy
from bitemporal import Key, Store, migrate
from bitemporal.database import psycopg_url, scratch_database

pytestmark = pytest.mark.not_on_citus(
    "reads bitemporal_internal.current_versions and fact_version directly, as the owner"
)


def test_parts_answer_as_as_of_does_and_are_reported(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = anatomy.main(
        [
            "--url", server_url,
            "--keys", "20",
            "--changes", "6",
            "--samples", "8",
            "--rounds", "2",
            "--timeline-versions", "300",
            "--timeline-samples", "3",
            "--writes", "2",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "Decompositions (and the other layout) returning other versions than as_of: 0" in out
    for part in anatomy.PARTS:
        assert part in out
    for statement in anatomy.FROM_PYTHON:
        assert f"{statement}, prepared " in out and f"{statement}, not prepared " in out
    for read in anatomy.API_READS:
        assert f"{read}, {anatomy.BARE} " in out and f"  {read}: the API adds " in out
    for run in anatomy.CHANGE_RUNS:
        assert f"{run} " in out
    assert "A change's time taken apart (medians):" in out
    assert "the API adds" in out and "and the round trip take the remaining" in out


def test_every_round_times_every_part_and_files_every_history_call(server_url: str) -> None:
    # measure() fills the database it is given: a scratch one, as main() makes.
    with scratch_database(server_url, "bitemporal_bench") as scratch:
        migrate(scratch)
        result = anatomy.measure(psycopg_url(scratch), 15, 5, 6, 2, 200, 4, writes=3)
        # Each branch's part reads the index as_of reads it through, even on so small a table.
        with psycopg.connect(psycopg_url(scratch), autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")
            asked = anatomy.questions(conn, 15, 5, result["versions"], random.Random(2))
            plans = {
                name: str(conn.execute("EXPLAIN " + anatomy.PARTS[name], asked).fetchall())
                for name in (anatomy.CURRENT_ALONE, anatomy.PAST_ALONE, anatomy.KEY_ROW_VERSIONS)
            }
            held = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE NOT upper_inf(known_period))"
                " FROM bitemporal.fact_version"
            ).fetchone()
    assert "fact_version_current_valid_idx" in plans[anatomy.CURRENT_ALONE]
    assert "Index Scan using fact_version_periods_idx" in plans[anatomy.PAST_ALONE]
    assert "Index Scan using bench_key_current_pkey" in plans[anatomy.KEY_ROW_VERSIONS]
    assert result["differ"] == 0 and result["versions"] == 15 * 9 + 199
    # Every change of a key, the server's way included, wrote: one version closed, its
    # remainder and the new version inserted (the warm-up round: one change each way).
    assert all(
        set(timings) == set(anatomy.CHANGE_RUNS)
        and all(len(ms) == 3 and min(ms) > 0 for ms in timings.values())
        for timings in result["changes_timed"]
    )
    writing_ways = [run for run in anatomy.CHANGE_RUNS if run.startswith(anatomy.CHANGE)]
    assert len(writing_ways) == 4
    written = len(writing_ways) * (1 + 2 * 3)
    closed_by_fill = 15 * 4 + 99  # each key's and the long key's changes but the last
    assert held == (result["versions"] + 2 * written, closed_by_fill + written)
    for timings in result["lookups"] + result["planning"]:
        assert set(timings) == set(anatomy.PARTS)
        assert all(len(ms) == 6 and min(ms) > 0 for ms in timings.values())
    ways = {
        anatomy.python_name(statement, prepared)
        for statement in anatomy.FROM_PYTHON
        for prepared in (True, False)
    }
    for timings in result["from_python"]:
        assert set(timings) == ways
        assert all(len(ms) == 6 and min(ms) > 0 for ms in timings.values())
    through_api = {anatomy.API_BASELINE} | {
        anatomy.api_name(read, bare) for read in anatomy.API_READS for bare in (False, True)
    }
    for timings in result["through_api"]:
        assert set(timings) == through_api
        assert all(len(ms) == 6 and min(ms) > 0 for ms in timings.values())
    # Each prepared statement ran once a question in the warm-up round and in each round,
    # with a custom plan at least for its first five runs (PostgreSQL's rule).
    assert set(result["plans"]) == set(anatomy.FROM_PYTHON)
    for kinds in result["plans"].values():
        assert kinds["generic"] + kinds["custom"] == 6 * 3 and kinds["custom"] >= 5


def test_plans_are_counted_over_every_preparation_of_a_statement(server_url: str) -> None:
    # psycopg prepares a text again for other parameter types: a small integer goes as
    # smallint, a larger one as integer. Both preparations count.
    with scratch_database(server_url, "bitemporal_bench") as scratch:
        migrate(scratch)
        with psycopg.connect(psycopg_url(scratch), autocommit=True) as conn:
            Store(conn).facts.record(Key("e1", "a"), 1, source="s")
            conn.execute("CREATE TABLE bench_plain (id bigint PRIMARY KEY, value text)")
            question = {"entity": "e1", "valid_at": None, "known_at": None}
            for row_id in (1, 70_000, 2, 80_000, 3):
                for query, names in anatomy.FROM_PYTHON.values():
                    args = tuple({**question, "id": row_id}[n] for n in names)
                    conn.execute(query, args, prepare=True).fetchall()
            primary_key = anatomy.server_text(anatomy.FROM_PYTHON[anatomy.PRIMARY_KEY][0])
            preparations = conn.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement = %s",
                (primary_key,),
            ).fetchone()
            plans = anatomy.plan_kinds(conn)
    assert preparations == (2,)
    assert {name: sum(kinds.values()) for name, kinds in plans.items()} == dict.fromkeys(
        anatomy.FROM_PYTHON, 5
    )
