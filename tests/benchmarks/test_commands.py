"""The benchmarks run from a checkout with one command each: ``python -m benchmarks SUITE``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bitemporal import migrations

ROOT = Path(__file__).resolve().parents[2]


def benchmarks(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m benchmarks ARGS`` in the checkout, as a user runs it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "DATABASE_URL", "BITEMPORAL_DATABASE_URL")
    }
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "suite",
    [
        "facts",
        "decay",
        "load",
        "import",
        "tpcbih",
        "storage",
        "designs",
        "notify",
        "integer-key",
        "revisions",
        "anatomy",
    ],
)
def test_each_suite_is_one_command(suite: str) -> None:
    result = benchmarks(suite, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: python -m benchmarks {suite} ")
    assert "--url" in result.stdout


def test_the_citus_suite_is_one_command() -> None:
    # Two servers instead of --url: a Citus coordinator and a plain PostgreSQL.
    result = benchmarks("citus", "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m benchmarks citus ")
    assert "--citus-url" in result.stdout and "--plain-url" in result.stdout


def test_an_unknown_suite_is_a_usage_error() -> None:
    result = benchmarks("nothing")
    assert result.returncode == 2
    assert "invalid choice: 'nothing'" in result.stderr


def test_load_runs_end_to_end_from_the_command(server_url: str) -> None:
    result = benchmarks(
        "load",
        "--url",
        server_url,
        "--seconds",
        "0.5",
        "--keys",
        "20",
        "--writers",
        "2",
        "--readers",
        "2",
    )
    assert result.returncode == 0, result.stderr
    assert "errors by kind: none" in result.stdout
    assert (
        "invariants: overlapping versions=0, empty periods=0, past answers changed=0"
        in result.stdout
    )


@pytest.mark.parametrize("workload", ["new", "history", "changes"])
def test_import_runs_end_to_end_from_the_command(server_url: str, workload: str) -> None:
    result = benchmarks(
        "import",
        "--url",
        server_url,
        "--rows",
        "300",
        "--batch-size",
        "100",
        "--workload",
        workload,
    )
    assert result.returncode == 0, result.stderr
    assert "import / record_many: " in result.stdout
    assert "re-import wrote 0 versions" in result.stdout
    rows = [line.split() for line in result.stdout.splitlines()]
    table = {row[0]: row for row in rows if len(row) == 4}  # method, seconds, rows/s, versions
    assert table["record_many"][3] == table["import"][3] != "0"  # the same versions written
    assert table["re-import"][3] == "0"
    assert "parallel-import: --jobs 2" in result.stdout and table["parallel-import"][3] != "0"
    if workload != "changes":  # with known_at: the same versions in two lanes as in one
        assert table["parallel-import"][3] == table["import"][3]


@pytest.mark.parametrize(
    ("command", "baseline"),
    [
        (("integer-key",), "0030"),
        (("revisions", "--baseline", "0032"), "0032"),
        # An A/A run: both copies at head.
        (("revisions", "--baseline", migrations.head()), migrations.head()),
    ],
    ids=["integer-key", "revisions", "head-against-head"],
)
def test_revisions_runs_end_to_end_from_the_command(
    server_url: str, command: tuple[str, ...], baseline: str
) -> None:
    result = benchmarks(
        *command,
        "--url",
        server_url,
        *("--keys", "40", "--changes", "4", "--rounds", "2"),
        *("--lookups", "10", "--writes", "10", "--batch", "100"),
    )
    assert result.returncode == 0, result.stderr
    # 40 keys of 2 * 4 - 1 versions, in a copy downgraded to the baseline and one at head.
    head = migrations.head()
    assert f"The store at {head} (head) against {baseline}: 280 versions of 40 keys" in (
        result.stdout
    )
    assert f"{head} / {baseline} (rounds)" in result.stdout
    assert "the same, each vs its copy's baseline" in result.stdout
    assert "questions answered differently by the two copies: 0" in result.stdout
    assert "versions held differently at the end: 0" in result.stdout
    assert "versions changed by that upgrade: 0" in result.stdout
    rows = {line.split("  ")[0] for line in result.stdout.splitlines()}
    assert {
        "as_of, current knowledge",
        "as_of, past knowledge",
        "resolve, past knowledge",
        "resolve, current knowledge",
        "explain, past knowledge",
        "explain, current knowledge",
        "history",
        "record, one interior change",
        "record_many, new keys",
        "record_many, history",
    } <= rows


@pytest.mark.parametrize("baseline", ["9999", "head"])
def test_revisions_refuses_a_baseline_that_is_no_revision(baseline: str) -> None:
    """Refused as a usage error before anything is filled: no traceback, no database."""
    result = benchmarks("revisions", "--baseline", baseline, "--url", "postgresql://nowhere/x")
    assert result.returncode == 2, result.stderr
    assert f"--baseline {baseline}: not a revision up to head ({migrations.head()})" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


def test_designs_runs_end_to_end_from_the_command(server_url: str) -> None:
    result = benchmarks(
        "designs",
        "--url",
        server_url,
        *("--keys", "30", "--changes", "4", "--rounds", "2", "--samples", "10"),
    )
    assert result.returncode == 0, result.stderr
    # 30 keys a round, 2 rounds, 2 sources, 2 * 4 - 1 versions a source.
    assert "840 versions of 60 keys" in result.stdout
    assert "questions answered differently by the designs: 0" in result.stdout
    assert "rows written differently from the histories: 0" in result.stdout
    rows = {line.split("  ")[0] for line in result.stdout.splitlines()}
    assert {
        "text key (as migrated)",
        "integer key",
        "integer key, entity kept",
        "integer series",
        "integer series, one GiST",
        "current-only constraint",
        "current table, text key",
        "current table, closed by btree",
        "current table, integer key",
        "current table, integer series",
        "store layout (0034)",
        "store layout, GiST of closed versions",
        "store layout, entity in the periods' GiST only",
        "store layout, no entity in GiST",
    } <= rows


def test_designs_measures_the_designs_named_the_first_as_baseline(server_url: str) -> None:
    closed, store = "store layout, GiST of closed versions", "store layout (0034)"
    result = benchmarks(
        "designs",
        "--url",
        server_url,
        *("--design", closed, "--design", store),
        *("--keys", "10", "--changes", "3", "--rounds", "1", "--samples", "5"),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"write rows/s (of {closed})" in result.stdout
    measured = [line.split("  ")[0] for line in lines if line.startswith(("store", "text"))]
    assert measured == [closed, store]
    assert "questions answered differently by the designs: 0" in result.stdout


def test_designs_refuses_a_design_it_does_not_know() -> None:
    result = benchmarks("designs", "--design", "no such design")
    assert result.returncode == 2
    assert "invalid choice: 'no such design'" in result.stderr
    assert "Traceback" not in result.stderr
