"""`python -m benchmarks anatomy`, tiny: every part timed in every round, each decomposition
returning the versions as_of returns, every history call filed by the collector's work."""

from __future__ import annotations

import random

import psycopg
import pytest

from benchmarks import anatomy
from bitemporal import migrate
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
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "Decompositions returning other versions than as_of: 0" in out
    for part in anatomy.PARTS:
        assert part in out


def test_every_round_times_every_part_and_files_every_history_call(server_url: str) -> None:
    # measure() fills the database it is given: a scratch one, as main() makes.
    with scratch_database(server_url, "bitemporal_bench") as scratch:
        migrate(scratch)
        result = anatomy.measure(psycopg_url(scratch), 15, 5, 6, 2, 200, 4)
        # Each branch's part reads the index as_of reads it through, even on so small a table.
        with psycopg.connect(psycopg_url(scratch), autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")
            asked = anatomy.questions(conn, 15, 5, result["versions"], random.Random(2))
            plans = {
                name: str(conn.execute("EXPLAIN " + anatomy.PARTS[name], asked).fetchall())
                for name in (anatomy.CURRENT_ALONE, anatomy.PAST_ALONE)
            }
    assert "fact_version_current_valid_idx" in plans[anatomy.CURRENT_ALONE]
    assert "Index Scan using fact_version_periods_idx" in plans[anatomy.PAST_ALONE]
    assert result["differ"] == 0 and result["versions"] == 15 * 9 + 199
    for timings in result["lookups"]:
        assert set(timings) == set(anatomy.PARTS)
        assert all(len(ms) == 6 and min(ms) > 0 for ms in timings.values())
    for timings in result["histories"]:
        calls = timings[anatomy.HISTORY]
        assert len(calls) == 4 and len(timings[anatomy.HISTORY_BASELINE]) == 4
        assert sorted(calls) == sorted(timings[anatomy.WITH_FULL] + timings[anatomy.WITHOUT_FULL])
