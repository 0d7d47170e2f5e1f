"""What each object of fact_version costs an insert, on a few rows (benchmarks/storage.py)."""

from __future__ import annotations

import pytest

from benchmarks import storage

pytestmark = pytest.mark.not_on_citus(
    "copies a migrated database with CREATE DATABASE ... TEMPLATE, on one server"
)


def test_every_object_is_measured_removed_and_alone(server_url: str) -> None:
    result = storage.measure(server_url, rows=300, repeat=1, prefill=200)
    seconds = result["seconds"]
    assert result["rows"] == 300 and all(s > 0 for s in seconds.values())
    objects = [
        name
        for name in seconds
        if name not in ("plain", "copy", "as migrated", storage.ALL)
        and not name.startswith("only ")
    ]
    # The catalog's objects: the exclusion constraint (over current versions), the GiST
    # index of every version, the btrees, the foreign key, the CHECK constraints and the
    # INSERT triggers.
    assert "fact_version_no_overlap (exclusion, gist)" in objects
    assert "fact_version_periods_idx (index, gist)" in objects
    assert "fact_version_knowledge (trigger)" in objects
    assert {f"only {name}" for name in objects} <= set(seconds)
    report = storage.report(result)
    assert all(name in report for name in seconds)
