"""Migration 0036: the explain functions' helpers that read versions, as PL/pgSQL.

A store written at 0035 (changes, a retroactive correction, a second source, a retraction,
evidence and an erasure) gives every explanation as before, after the upgrade, after a
downgrade and after upgrading again; the three helpers are PL/pgSQL at head and SQL
functions at 0035.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import psycopg
import pytest

from bitemporal import migrations
from tests.migrations.test_integer_key import DAY, KEYS, START, write_history

pytestmark = pytest.mark.not_on_citus(
    "migration paths are single-node: on Citus every test database is migrated with "
    "citus=True (docs/citus.md; the Citus path: tests/citus/test_upgrade_of_a_distributed_store.py)"
)

HELPERS = """
    SELECT p.proname, l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
     WHERE p.pronamespace = 'bitemporal_internal'::regnamespace
       AND p.proname IN ('distinct_values', 'value_run', 'explain_version')"""


def languages(conn: psycopg.Connection[Any]) -> dict[str, str]:
    return dict(conn.execute(HELPERS).fetchall())


def explanations(conn: psycopg.Connection[Any]) -> dict[tuple[Any, ...], Any]:
    """Every key's explanation at its valid times and at every knowledge time and halfway
    between two, known at every knowledge time and now, against a fixed present."""
    knowledge = [
        row[0]
        for row in conn.execute(
            "SELECT DISTINCT lower(known_period) FROM bitemporal.fact_version ORDER BY 1"
        )
    ]
    present = knowledge[-1] + DAY
    halfway = [a + (b - a) / 2 for a, b in pairwise(knowledge)]
    found = {}
    for entity, attribute in KEYS:
        for valid_at in [START + n * DAY + DAY / 2 for n in range(4)] + knowledge + halfway:
            for known_at in [*knowledge, present]:
                row = conn.execute(
                    "SELECT bitemporal.explain(%s, %s, %s, %s, %s)",
                    (entity, attribute, valid_at, known_at, present),
                ).fetchone()
                assert row is not None
                found[(entity, attribute, valid_at, known_at)] = row[0]
    return found


def test_an_upgraded_store_explains_as_before(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0035")
    with psycopg.connect(url, autocommit=True) as conn:
        write_history(conn)
        conn.execute(
            "SELECT bitemporal.add_evidence(min(version_id), 'the log says so', 'log.txt')"
            "  FROM bitemporal.fact_version WHERE entity = 'a' AND attribute = 'status'"
        )
        conn.execute("SELECT bitemporal.erase('b', 'status', 'asked to forget')")
        assert set(languages(conn).values()) == {"sql"}
        before = explanations(conn)
    codes = {q["code"] for e in before.values() for q in e["qualifications"]}
    # The helpers' every use: runs, what followed, corrections, erasure, evidence.
    assert {"effective", "followed_by", "corrected", "as_recorded", "erased"} <= codes
    assert any(v["evidence"] for e in before.values() for v in e["versions"])

    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert set(languages(conn).values()) == {"plpgsql"}
        assert explanations(conn) == before

    migrations.downgrade(url, "0035")
    with psycopg.connect(url, autocommit=True) as conn:
        assert set(languages(conn).values()) == {"sql"}
        assert explanations(conn) == before

    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert explanations(conn) == before
