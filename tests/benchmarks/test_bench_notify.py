"""A short run of the NOTIFY benchmark (benchmarks/notify.py)."""

from __future__ import annotations

import psycopg

from benchmarks import notify
from bitemporal import Store
from tests.helpers import no_notify_on_citus


@no_notify_on_citus
def test_both_states_are_timed_in_turns_and_the_notify_is_on_again(
    migrated_database_url: str,
) -> None:
    url = migrated_database_url
    phases = notify.run(url, [1, 2], seconds=0.3, rounds=2, keys_per_writer=20)
    assert [(p.writers, p.notify, p.round) for p in phases] == [
        (1, True, 1), (1, False, 1), (1, False, 2), (1, True, 2),
        (2, True, 1), (2, False, 1), (2, False, 2), (2, True, 2),
    ]  # fmt: skip
    assert all(p.writes > 0 for p in phases)
    rows = notify.summary(phases)
    assert [r["writers"] for r in rows] == [1, 2]
    for r in rows:
        assert r["off_vs_on"] == r["off_writes_per_s"] / r["on_writes_per_s"]
        assert len(r["off_vs_on_by_round"]) == 2
    with psycopg.connect(url, autocommit=True) as conn:
        store = Store(conn)
        assert store.provenance.notify_enabled() is True
        # Each writer superseded its keys' one version per write: one current version a key.
        [(keys, current)] = conn.execute(
            "SELECT count(DISTINCT entity), count(*) FILTER (WHERE upper_inf(known_period))"
            " FROM bitemporal.fact_version WHERE entity LIKE 'notify:%'"
        ).fetchall()
        assert keys == current == 2 * 20
    assert "off vs on" in notify.report(rows, "15")
