"""Upgrading a database that holds data, and re-running a migration that failed part way."""

from __future__ import annotations

from datetime import UTC, date, datetime

import psycopg
import pytest

from bitemporal import BitemporalError, Key, Store, migrations

KEY = Key("mailer:prod", "attachment_limit_mb")


def test_data_survives_the_upgrade_path(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0001")
    with psycopg.connect(url, autocommit=True) as conn:
        # Written with the first revision's own SQL function, as a deployment of it would.
        conn.execute("SELECT bitemporal.record('mailer:prod', 'attachment_limit_mb', 'policy', '50', "
                     "'2026-01-01', NULL, '2025-12-15 12:00+00')")
        conn.execute("SELECT bitemporal.record('mailer:prod', 'attachment_limit_mb', 'policy', '80', "
                     "'2026-09-01', NULL, '2026-09-03 09:00+00')")
        before = conn.execute("SELECT * FROM bitemporal.versions ORDER BY version_id").fetchall()
    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT * FROM bitemporal.versions ORDER BY version_id").fetchall() == before
        store = Store(conn)
        assert store.facts.resolve(KEY, valid_at=date(2026, 9, 2)).value == 80
        assert store.facts.resolve(KEY, valid_at=date(2026, 9, 2),
                                   known_at=datetime(2026, 9, 2, tzinfo=UTC)).value == 50
        store.facts.record(KEY, 100, source="policy", valid_from=date(2026, 10, 1))
    # Down to the first revision and up again: the facts stay.
    migrations.downgrade(url, "0001")
    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert Store(conn).facts.resolve(KEY, valid_at=date(2026, 10, 2)).value == 100


def test_a_migration_that_fails_part_way_can_be_run_again(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0002")
    holder = psycopg.connect(url)
    try:
        # A busy table: a writer's transaction is open, and 0003 adds a trigger to it.
        holder.execute("LOCK TABLE bitemporal.fact_version IN ROW EXCLUSIVE MODE")
        with pytest.raises(BitemporalError, match="lock timeout"):  # typed, not a driver error
            migrations.migrate(url, lock_timeout="200ms")
        assert migrations.current(url) == "0002"  # nothing of 0003 onwards was kept
    finally:
        holder.rollback()
        holder.close()
    migrations.migrate(url)
    assert migrations.current(url) == migrations.head()
