"""Migration 0038: answer_rules checks the question's times without a query each.

A store written at 0037 gives every answer and interpretation as before, and the same error
for every question time outside the supported range (which time, SQLSTATE and message, the
valid time first), after the upgrade, after a downgrade and after upgrading again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from bitemporal import migrations
from tests.migrations.test_answer_rules_read import interpretations
from tests.migrations.test_integer_key import KEYS, START, write_history

pytestmark = pytest.mark.not_on_citus(
    "migration paths are single-node: on Citus every test database is migrated with "
    "citus=True (docs/citus.md; the Citus path: tests/citus/test_upgrade_of_a_distributed_store.py)"
)

TOO_EARLY = datetime(1, 1, 1, 12, tzinfo=UTC)
# (valid_at, known_at, present): each time out of range alone, both at once, and both
# defaulting to a present out of range.
OUT_OF_RANGE = (
    (TOO_EARLY, START, None),
    (START, TOO_EARLY, None),
    (TOO_EARLY, TOO_EARLY, None),
    (TOO_EARLY, None, TOO_EARLY),
)


def errors(conn: psycopg.Connection[Any]) -> list[tuple[str | None, str]]:
    """resolve's and resolve_versions's error for each question of OUT_OF_RANGE."""
    entity, attribute = KEYS[0]
    found = []
    for function in ("resolve", "resolve_versions"):
        for question in OUT_OF_RANGE:
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(
                    f"SELECT * FROM bitemporal.{function}(%s, %s, %s, %s, %s)",
                    (entity, attribute, *question),
                )
            found.append((raised.value.sqlstate, raised.value.diag.message_primary or ""))
    return found


def test_an_upgraded_store_answers_and_refuses_as_before(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, "0037")
    with psycopg.connect(url, autocommit=True) as conn:
        write_history(conn)
        before = interpretations(conn), errors(conn)
    assert {sqlstate for sqlstate, _ in before[1]} == {"BT001"}
    assert [message.split(" ")[0] for _, message in before[1][:4]] == [
        "valid_at",
        "known_at",
        "valid_at",
        "valid_at",
    ]

    for step in (migrations.migrate, lambda u: migrations.downgrade(u, "0037"), migrations.migrate):
        step(url)
        with psycopg.connect(url, autocommit=True) as conn:
            assert (interpretations(conn), errors(conn)) == before
