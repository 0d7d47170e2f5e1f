"""Migration 0035: answer_rules reads the values known at valid_at with a statement.

A store written at 0034 gives every answer and interpretation as before, after the upgrade,
after a downgrade and after upgrading again. The questions include valid times between the
store's knowledge times, where the key's knowledge changed after valid_at, so that telling
a historical answer from a retrospective one takes that read: both outcomes occur there.
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

QUESTIONS = "SELECT DISTINCT lower(known_period) FROM bitemporal.fact_version ORDER BY 1"


def interpretations(conn: psycopg.Connection[Any]) -> dict[tuple[Any, ...], Any]:
    """Every key's resolve answer at its valid times, at every knowledge time and halfway
    between two, known at every knowledge time and now; with, for each, whether the key's
    knowledge changed after valid_at."""
    knowledge = [row[0] for row in conn.execute(QUESTIONS)]
    halfway = [a + (b - a) / 2 for a, b in pairwise(knowledge)]
    valid_times = [START + n * DAY for n in range(4)] + knowledge + halfway
    found = {}
    for entity, attribute in KEYS:
        for valid_at in valid_times:
            for known_at in [*knowledge, None]:
                found[(entity, attribute, valid_at, known_at)] = conn.execute(
                    "SELECT a.status, a.value, a.version_ids, a.interpretation,"
                    "       k.last_known_at > %s"
                    "  FROM bitemporal.resolve(%s, %s, %s, %s) a, bitemporal.fact_key k"
                    " WHERE k.entity = %s AND k.attribute = %s",
                    (valid_at, entity, attribute, valid_at, known_at, entity, attribute),
                ).fetchone()
    return found


def test_an_upgraded_store_interprets_as_before(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0034")
    with psycopg.connect(url, autocommit=True) as conn:
        write_history(conn)
        before = interpretations(conn)
    # Where knowledge changed after valid_at, both interpretations that read it occur.
    read = {a[3] for a in before.values() if a[4] and a[3] in ("historical", "retrospective")}
    assert read == {"historical", "retrospective"}

    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert interpretations(conn) == before

    migrations.downgrade(url, "0034")
    with psycopg.connect(url, autocommit=True) as conn:
        assert interpretations(conn) == before

    migrations.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert interpretations(conn) == before
