"""Migration 0037: ``bitemporal.as_of_planned``, as_of for statements that are not prepared.

On a store written at 0036, the upgrade adds the function, which returns what ``as_of``
returns for every question, and lists it among the reads ``distribute()`` delegates; the
downgrade drops it and gives the list back as 0036 had it, and the answers of ``as_of``
never change.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from bitemporal import migrations
from tests.migrations.test_integer_key import DAY, KEYS, START, write_history

pytestmark = pytest.mark.not_on_citus(
    "migration paths are single-node: on Citus every test database is migrated with "
    "citus=True (docs/citus.md; the Citus path: tests/citus/test_upgrade_of_a_distributed_store.py)"
)

AS_OF = "SELECT version_id FROM bitemporal.{}(%s, %s, %s, %s)"
US = timedelta(microseconds=1)
DELEGATED = "SELECT bitemporal_internal.citus_delegated_reads()::text[]"
PLANNED = "bitemporal.as_of_planned(text,text,timestamp with time zone,timestamp with time zone)"
EXISTS = f"SELECT to_regprocedure('{PLANNED}')"


def answers(conn: psycopg.Connection[Any], function: str) -> dict[tuple[Any, ...], list[int]]:
    """``function``'s versions for every key at valid times across its history and every
    knowledge time, one microsecond before each, and now."""
    knowledge = [
        row[0]
        for row in conn.execute(
            "SELECT DISTINCT lower(known_period) FROM bitemporal.fact_version ORDER BY 1"
        )
    ]
    known = [None, *knowledge, *(k - US for k in knowledge)]
    return {
        (entity, attribute, valid_at, known_at): [
            row[0]
            for row in conn.execute(AS_OF.format(function), (entity, attribute, valid_at, known_at))
        ]
        for entity, attribute in KEYS
        for valid_at in [START + n * DAY + DAY / 2 for n in range(-1, 5)]
        for known_at in known
    }


def test_upgrade_and_downgrade(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0036")
    with psycopg.connect(url, autocommit=True) as conn:
        write_history(conn)
        assert conn.execute(EXISTS).fetchone() == (None,)
        delegated_before = conn.execute(DELEGATED).fetchone()
        before = answers(conn, "as_of")
    assert any(before.values()) and not all(before.values())

    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert answers(conn, "as_of") == before
        assert answers(conn, "as_of_planned") == before
        row = conn.execute(DELEGATED).fetchone()
        assert row is not None and delegated_before is not None
        assert row[0] == sorted([*delegated_before[0], PLANNED])

    migrations.downgrade(url, "0036")
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(EXISTS).fetchone() == (None,)
        assert conn.execute(DELEGATED).fetchone() == delegated_before
        assert answers(conn, "as_of") == before
