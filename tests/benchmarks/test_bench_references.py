"""A short run of the temporal reference benchmark (benchmarks/references.py)."""

from __future__ import annotations

import psycopg

from benchmarks import references
from tests.helpers import CITUS


def test_both_states_are_timed_in_turns_on_one_prepared_store(
    migrated_database_url: str,
) -> None:
    url = migrated_database_url
    references.prepare(url, keys=20, distributed=CITUS)
    phases = references.run(url, "here", keys=20, seconds=0.3, rounds=2)
    assert [(p.reference, p.round) for p in phases] == [
        (False, 1), (True, 1), (True, 2), (False, 2),
    ]  # fmt: skip
    assert all(p.writes > 0 for p in phases)
    [row] = references.summary(phases)
    assert row["checked_vs_unchecked"] == (
        row["checked_writes_per_s"] / row["unchecked_writes_per_s"]
    )
    assert len(row["checked_vs_unchecked_by_round"]) == 2
    assert "with reference" in references.report([row])
    with psycopg.connect(url, autocommit=True) as conn:
        # The last phase ran without it; each write superseded one purchase's version.
        assert conn.execute("SELECT count(*) FROM bitemporal.app_reference").fetchone() == (0,)
        current = conn.execute(
            "SELECT count(DISTINCT customer_id), count(*) FROM purchase"
            " WHERE upper_inf(known_period) AND lower(valid_period) = %s",
            (references.CHANGED,),
        ).fetchone()
        assert current is not None and current[0] == current[1] > 0
    # On Citus the tables are distributed, and the reference is one the writes check.
    references.set_reference(url, True)
    with psycopg.connect(url, autocommit=True) as conn:
        kind = conn.execute("SELECT distributed FROM bitemporal.app_reference").fetchall()
        assert kind == [(CITUS,)]
