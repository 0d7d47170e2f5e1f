"""`python -m benchmarks citus`, tiny, on the Citus lane: every figure measured in both
databases (or the operation reported unsupported on Citus, with its error), the same answers
from both, and the scratch databases dropped on every node; on the other lanes, that it
refuses a database without Citus."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from benchmarks import citus as bench

CITUS = os.environ.get("BITEMPORAL_TEST_CITUS") == "1"
ROOT = Path(__file__).resolve().parents[2]
KEYS, SAMPLES, ROWS = 20, 8, 60


def scratch_databases(url: str) -> set[tuple[str, int, str]]:
    """The benchmark's scratch databases on the coordinator of ``url`` and on each worker."""
    nodes = [(None, None), *bench.citus_workers(url)]
    found = set()
    for host, port in nodes:
        node = bench.with_node(url, host=host, port=port)
        with psycopg.connect(node) as conn:
            for (name,) in conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", (f"{bench.PREFIX}%",)
            ):
                found.add((str(host), port or 0, name))
    return found


@pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")
def test_citus_benchmark_runs_and_compares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = os.environ["BITEMPORAL_TEST_DATABASE_URL"]
    before = scratch_databases(url)
    out_json = tmp_path / "citus.json"
    # The plain side: a database without the extension on the coordinator's server.
    code = bench.main(
        [
            "--citus-url",
            url,
            "--plain-url",
            url,
            "--keys",
            str(KEYS),
            "--samples",
            str(SAMPLES),
            "--rows",
            str(ROWS),
            "--batch-size",
            "30",
            "--shards",
            "4",
            "--json",
            str(out_json),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert scratch_databases(url) == before  # dropped on every node
    result = json.loads(out_json.read_text(encoding="utf-8"))
    assert result["cluster"]["workers"] >= 1 and result["cluster"]["version_shards"] == 4
    # The same data in both: 10 changes per key, 19 versions.
    assert result["load"]["plain"]["versions"] == result["load"]["citus"]["versions"] == KEYS * 19
    lookups = result["lookups"]
    assert lookups["answers_differ"] == {"as_of": 0, "resolve": 0}
    timings = {
        db: {
            **lookups["timings_ms"][db],
            bench.RECORD: result["writes"]["timings_ms"][bench.RECORD][db],
        }
        for db in bench.DATABASES
    }
    errors = {**lookups["errors"]["citus"]}
    if "citus" in result["writes"]["errors"]:
        errors[bench.RECORD] = result["writes"]["errors"]["citus"]
    for op in (*bench.LOOKUPS, bench.RECORD):
        assert len(timings["plain"][op]) == SAMPLES, op
        # Measured on Citus too, or reported unsupported there with its error.
        if op in errors:
            assert timings["citus"][op] == [] and f"{op}: unsupported on Citus" in out
        else:
            assert len(timings["citus"][op]) == SAMPLES, op
            ratio = result["summary"][op]["citus_vs_plain_median"]
            assert re.search(rf"^{re.escape(op)} .* {ratio:.2f}x ", out, re.MULTILINE), op
    workloads = result["record_many"]["workloads"]
    expected = {"new keys": ROWS, "history": ROWS // 10 * 19}
    for workload, versions in expected.items():
        assert workloads[workload]["plain"]["versions"] == versions
        citus = workloads[workload]["citus"]
        if "error" in citus:
            assert f"record_many, {workload}: unsupported on Citus: {citus['error']}" in out
        else:
            assert citus["versions"] == versions
            assert result["summary"][f"record_many, {workload}"]["citus_vs_plain"] > 0


@pytest.mark.skipif(CITUS, reason="the server under test has the citus extension")
def test_a_database_without_citus_is_refused(server_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "citus", "--citus-url", server_url],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "the database has no citus extension" in result.stderr
