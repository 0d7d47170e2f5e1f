"""What each object of fact_version costs an insert, on a few rows (benchmarks/storage.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from benchmarks import storage
from bitemporal import migrate
from bitemporal.database import scratch_database

JANUARY, JUNE = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)

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
        if name not in ("plain", "copy", storage.FLOOR, "as migrated", storage.ALL)
        and not name.startswith("design: ")
        and name not in storage.CHANGES
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
    assert all(name in report for name in seconds if name not in storage.CHANGES)
    floor = 300 / seconds[storage.FLOOR]
    assert f"the floor: {floor:,.0f} rows/s" in report
    floor_changes = 300 / seconds["floor, changes"]
    assert f"floor {floor_changes:,.0f} changes/s" in report


def test_the_floor_refuses_overlapping_validity_of_one_key(server_url: str) -> None:
    """The floor maintains the constraint it stands for: a second current version of a key
    over an overlapping valid period is refused."""
    with scratch_database(server_url, "bitemporal_bench_floor") as url:
        migrate(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(storage.FLOOR_TABLE)
            insert = (
                "INSERT INTO bench_floor (entity, attribute, source, value, valid_period, "
                "known_period, key_id) VALUES ('e', 'a', 's', '1', tstzrange(%s, NULL), "
                "tstzrange(now(), NULL), 1)"
            )
            conn.execute(insert, ("2026-01-01",))
            with pytest.raises(psycopg.errors.ExclusionViolation):
                conn.execute(insert, ("2026-06-01",))
            assert conn.execute("SELECT count(*) FROM bench_floor").fetchone() == (1,)


def test_a_change_at_the_floor_closes_one_version_and_inserts_two(server_url: str) -> None:
    """The suite's change of keys with history, at the floor: each key's current version
    closed, its remainder and the new version current."""
    with scratch_database(server_url, "bitemporal_bench_floor") as url:
        migrate(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                storage.STAGE.format(stage="bench_stage"), {"prefix": "e", "offset": 0, "rows": 5}
            )
            conn.execute(storage.FLOOR_TABLE)
            conn.execute(f"INSERT INTO bench_floor ({storage.COLUMNS}) {storage.SELECT}")
        with psycopg.connect(url) as conn:  # one transaction, later than the first versions
            conn.execute(storage.CHANGE.format(table="bench_floor"))
            conn.commit()
            states = conn.execute(
                "SELECT key_id, upper_inf(known_period), lower(valid_period), upper(valid_period) "
                "FROM bench_floor ORDER BY 1, 2, 3"
            ).fetchall()
        expected = [
            (k, current, start, end)
            for k in range(1, 6)
            for current, start, end in (
                (False, JANUARY, None),
                (True, JANUARY, JUNE),
                (True, JUNE, None),
            )
        ]
        assert states == expected


@pytest.mark.parametrize(
    ("design", "without_value"),
    [
        # A version without a value meets the stamping row trigger (BEFORE) where it is
        # kept, else the CHECK fact_version_erased, which runs before any AFTER trigger.
        (storage.PER_STATEMENT_DDL, "BT006"),
        (storage.PER_STATEMENT_BOTH_DDL, "23514"),
    ],
    ids=["knowledge", "both"],
)
def test_the_rules_per_statement_refuse_what_the_row_triggers_refuse(
    server_url: str, design: list[str], without_value: str
) -> None:
    """The designs measured beside the removals keep the rule of fact_version_knowledge for
    inserts: a version known from before its key's committed knowledge, or carrying another
    key's integer, is refused and nothing is written; a later one moves the key forward. A
    version without a value (not an erased version's remainder) or with JSON nested too deep
    is refused whichever trigger does fact_version_stamp_insert's work."""
    version = (
        "INSERT INTO bitemporal.fact_version (entity, attribute, source, value, valid_period, "
        "known_period, key_id) VALUES ('e', 'a', %s, %s, tstzrange('2026-01-01 00:00+00', NULL), "
        "tstzrange(%s, NULL), %s)"
    )
    with scratch_database(server_url, "bitemporal_bench_statement") as url:
        migrate(url)
        with psycopg.connect(url) as conn:
            for ddl in design:
                conn.execute(ddl)
            conn.execute(
                "INSERT INTO bitemporal.fact_key (entity, attribute, first_known_at, "
                "last_known_at, last_txid, key_id) "
                "VALUES ('e', 'a', now(), now(), pg_current_xact_id(), 7)"
            )
            conn.execute(version, ("s1", "1", "now", 7))
            conn.commit()
            (first,) = conn.execute("SELECT last_known_at FROM bitemporal.fact_key").fetchall()
            too_deep = "[" * 300 + "]" * 300
            for refused, sqlstate in (
                (("s2", "1", first[0], 7), "BT006"),
                (("s2", "1", "now", 8), "BT006"),
                (("s2", None, "now", 7), without_value),
                (("s2", too_deep, "now", 7), "BT007"),
            ):
                with pytest.raises(psycopg.Error) as error:
                    conn.execute(version, refused)
                assert error.value.sqlstate == sqlstate
                conn.rollback()
            assert conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone() == (1,)
            conn.execute(version, ("s2", "1", "now", 7))
            now = conn.execute("SELECT now()").fetchone()
            conn.commit()
            assert conn.execute("SELECT last_known_at FROM bitemporal.fact_key").fetchone() == now
