"""Migration 0033: the exclusion constraint compares the periods before the text columns.

A store written at 0032 is upgraded with its data, in the default layout and partitioned:
every copy of the constraint (each partition's, before PostgreSQL 17) takes the new column
order, keeps its name, and every question is answered as before, after the upgrade, after a
downgrade and after upgrading again. (The constraint at head is attacked in
test_current_exclusion.py.)
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from bitemporal import migrations
from tests.migrations.test_integer_key import START, answers, assert_index_names, write_history

pytestmark = pytest.mark.not_on_citus(
    "migration paths are single-node: on Citus every test database is migrated with "
    "citus=True (docs/citus.md; the Citus path: tests/citus/test_upgrade_of_a_distributed_store.py)"
)

BEFORE = (
    "EXCLUDE USING gist (key_id WITH =, entity WITH =, source WITH =,"
    " valid_period WITH &&, known_period WITH &&)"
)
AFTER = (
    "EXCLUDE USING gist (key_id WITH =, known_period WITH &&, valid_period WITH &&,"
    " entity WITH =, source WITH =)"
)


def constraints(conn: psycopg.Connection[Any]) -> set[str]:
    """The definition of every copy of the exclusion constraint (the table's, or each
    partition's)."""
    rows = conn.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'x'"
        " AND conname LIKE 'fact\\_version\\_no\\_overlap%'"
    ).fetchall()
    assert rows
    return {r[0] for r in rows}


@pytest.mark.parametrize("layout", [None, 4], ids=["default layout", "4 partitions"])
def test_an_upgraded_store_answers_as_before(empty_database_url: str, layout: int | None) -> None:
    url = empty_database_url
    migrations.migrate(url, "0032", partitions=layout)
    with psycopg.connect(url, autocommit=True) as conn:
        assert constraints(conn) == {BEFORE}
        write_history(conn)
        before = answers(conn)

    migrations.migrate(url, "0033", partitions=layout)
    with psycopg.connect(url, autocommit=True) as conn:
        assert constraints(conn) == {AFTER}
        assert answers(conn) == before
        assert_index_names(conn)
        conn.execute("SELECT bitemporal.record('a', 'status', 'ops', '\"later\"', %s)", (START,))
        written = answers(conn)

    migrations.downgrade(url, "0032")
    with psycopg.connect(url, autocommit=True) as conn:
        assert constraints(conn) == {BEFORE}
        assert answers(conn) == written
        assert_index_names(conn)

    migrations.migrate(url, "0033", partitions=layout)
    with psycopg.connect(url, autocommit=True) as conn:
        assert constraints(conn) == {AFTER}
        assert answers(conn) == written
        assert_index_names(conn)
