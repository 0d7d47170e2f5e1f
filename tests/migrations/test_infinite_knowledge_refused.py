"""Migration 0040: an infinite knowledge time written into the version table directly is
refused with the store's own error (BT001) instead of PostgreSQL's; the downgrade gives
0039's function back. Writes through the functions go on at every step."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from bitemporal import migrations

pytestmark = pytest.mark.not_on_citus(
    "migration paths are single-node: on Citus every test database is migrated with "
    "citus=True (docs/citus.md; the Citus path: tests/citus/test_upgrade_of_a_distributed_store.py)"
)

INSERT = (
    "INSERT INTO bitemporal.fact_version (entity, attribute, source, value, valid_period,"
    " known_period) VALUES ('e', 'a', 's', '1', '[2026-01-01,)', '[infinity,)')"
)


def refusal(conn: psycopg.Connection[Any]) -> tuple[str | None, str]:
    """What the owner's INSERT of an infinite knowledge start is refused with; a write
    through the functions then goes on."""
    with pytest.raises(psycopg.Error) as refused:
        conn.execute(INSERT)
    conn.execute("SELECT bitemporal.record('e', 'a', 's', '1')")
    return refused.value.sqlstate, refused.value.diag.message_primary or ""


# PostgreSQL's own refusal at 0039, by version: 15 has no infinite intervals; from 17 the
# subtraction gives one, and its epoch does not fit a bigint.
POSTGRES_REFUSALS = {
    ("22008", "cannot subtract infinite timestamps"),
    ("0A000", "cannot convert infinity to bigint"),
}


def test_upgrade_and_downgrade(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0039")
    with psycopg.connect(url, autocommit=True) as conn:
        before = refusal(conn)
        assert before in POSTGRES_REFUSALS
    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert refusal(conn) == ("BT001", "knowledge time must be finite, not infinity")
        assert conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone() == (1,)
    migrations.downgrade(url, "0039")
    with psycopg.connect(url, autocommit=True) as conn:
        assert refusal(conn) == before
