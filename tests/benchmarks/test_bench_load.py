"""A short load run: concurrent writers and readers, then every invariant (benchmarks/load.py)."""

from __future__ import annotations

from typing import Any

from benchmarks import load


def test_short_load_run_keeps_every_invariant(make_database: Any, migrate_database: Any) -> None:
    url = make_database()
    migrate_database(url)
    phases, violations, _ = load.run(url, writers=4, readers=4, seconds=2, keys=200)
    assert violations == {"overlapping versions": 0, "empty periods": 0, "past answers changed": 0}
    for phase in phases:
        assert phase.writes.errors == {} and phase.reads.errors == {}, phase.name
        assert len(phase.writes.latencies_ms) > 20 and len(phase.reads.latencies_ms) > 20, (
            phase.name
        )
        assert len(phase.captured) > 20
