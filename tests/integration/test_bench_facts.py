"""`bitemporal bench facts`, tiny: every operation measured, and the naive designs caught out."""

from __future__ import annotations

import re

import pytest

from bitemporal.bench import facts as bench


def test_lookup_benchmark_runs_and_compares(server_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--url", server_url, "--keys", "20", "--changes", "10", "--samples", "30"]) == 0
    out = capsys.readouterr().out
    for operation in bench.OPERATIONS:
        assert re.search(rf"^{re.escape(operation)}\s+\d+\.\d{{3}}\s+\d+\.\d{{3}}\s+\d+\.\dx$", out, re.MULTILINE), operation
    # Keeping only the latest row answers almost every question about the past wrongly;
    # a single-axis history is right about what is known now, and only about that.
    latest = re.search(r"^latest row per key, current knowledge\s+(\d+) of 30", out, re.MULTILINE)
    now = re.search(r"^single-axis history, current knowledge\s+(\d+) of 30", out, re.MULTILINE)
    assert latest and now and int(latest[1]) > 15 and int(now[1]) == 0
    assert "Bitmap Index Scan on fact_version_no_overlap" in out or "Index Scan" in out
