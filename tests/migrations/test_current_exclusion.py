"""Migration 0034: the exclusion constraint holds current versions only.

A store written at 0033 is upgraded with its data, in the default layout and partitioned:
every copy of the constraint becomes partial, the current versions' index gives way to it,
every version is in the new GiST index of its periods, the names are kept, and every
question is answered as before, after the upgrade, after a downgrade and after upgrading
again. Then the constraint is attacked as a table owner writing by hand could, with rows the
knowledge trigger lets through: a version over a current one, inserted current or already
closed, is refused by the constraint; versions a transaction records and closes stay in it
and do not collide with the later ones.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg import errors

from bitemporal import migrations
from tests.migrations.test_exclusion_order import AFTER as BEFORE
from tests.migrations.test_exclusion_order import constraints
from tests.migrations.test_integer_key import START, answers, assert_index_names, write_history

pytestmark = pytest.mark.not_on_citus(
    "migration paths are single-node: on Citus every test database is migrated with "
    "citus=True (docs/citus.md; the Citus path: tests/citus/test_upgrade_of_a_distributed_store.py)"
)

AFTER = (
    "EXCLUDE USING gist (key_id WITH =, source WITH =, valid_period WITH &&,"
    " known_period WITH &&, entity WITH =)"
    " WHERE ((upper_inf(known_period) OR (closed_at = recorded_at)))"
)


def gist_indexes(conn: psycopg.Connection[Any]) -> set[str]:
    """The names of the version table's GiST indexes, partitions' copies left out."""
    rows = conn.execute(
        "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
        " JOIN pg_am am ON am.oid = i.relam"
        " WHERE x.indrelid = 'bitemporal.fact_version'::regclass AND am.amname = 'gist'"
    ).fetchall()
    return {r[0] for r in rows}


@pytest.mark.parametrize("layout", [None, 4], ids=["default layout", "4 partitions"])
def test_an_upgraded_store_answers_as_before(empty_database_url: str, layout: int | None) -> None:
    url = empty_database_url
    migrations.migrate(url, "0033", partitions=layout)
    with psycopg.connect(url, autocommit=True) as conn:
        assert constraints(conn) == {BEFORE}
        write_history(conn)
        before = answers(conn)

    migrations.migrate(url, partitions=layout)
    with psycopg.connect(url, autocommit=True) as conn:
        assert constraints(conn) == {AFTER}
        # On a table partitioned before PostgreSQL 17 the constraint is each partition's.
        assert gist_indexes(conn) - {"fact_version_no_overlap"} == {"fact_version_periods_idx"}
        assert answers(conn) == before
        assert_index_names(conn)
        conn.execute("SELECT bitemporal.record('a', 'status', 'ops', '\"later\"', %s)", (START,))
        written = answers(conn)

    migrations.downgrade(url, "0033")
    with psycopg.connect(url, autocommit=True) as conn:
        assert constraints(conn) == {BEFORE}
        assert gist_indexes(conn) - {"fact_version_no_overlap"} == {"fact_version_current_idx"}
        assert answers(conn) == written
        assert_index_names(conn)

    migrations.migrate(url, partitions=layout)
    with psycopg.connect(url, autocommit=True) as conn:
        assert constraints(conn) == {AFTER}
        assert answers(conn) == written
        assert_index_names(conn)


@pytest.mark.parametrize("closed", [False, True], ids=["inserted current", "inserted closed"])
def test_a_version_over_a_current_one_written_by_hand_is_refused(
    migrated_database_url: str, closed: bool
) -> None:
    """The owner inserts by hand, at the present, a version over the valid period that a
    current version of the same key and source holds, known from just after the key's latest
    knowledge: still current, or already closed at the present. Both are known over that
    stretch. The knowledge trigger lets either through (its knowledge is later than the
    key's latest and not later than the present), and the closed one is not current; the
    constraint refuses both, and the store is unchanged."""
    with psycopg.connect(migrated_database_url) as conn:
        conn.execute("SELECT bitemporal.record('hand', 'x', 'ops', '1', %s)", (START,))
        conn.commit()
        before = conn.execute("SELECT * FROM bitemporal.history('hand', 'x')").fetchall()
        with pytest.raises(errors.ExclusionViolation) as raised:
            conn.execute(
                "INSERT INTO bitemporal.fact_version"
                " (entity, attribute, source, value, valid_period, known_period)"
                " SELECT 'hand', 'x', 'ops', '2', tstzrange(%s, NULL, '[)'),"
                " tstzrange(k.last_known_at + interval '1 microsecond',"
                " CASE WHEN %s THEN clock_timestamp() END, '[)')"
                " FROM bitemporal.fact_key k WHERE (k.entity, k.attribute) = ('hand', 'x')",
                (START + timedelta(days=1), closed),
            )
        conn.rollback()
        assert (raised.value.diag.constraint_name or "").startswith("fact_version_no_overlap")
        assert conn.execute("SELECT * FROM bitemporal.history('hand', 'x')").fetchall() == before


def test_versions_a_transaction_records_and_closes_do_not_collide(
    migrated_database_url: str,
) -> None:
    """Within one transaction, three changes of one valid period at increasing explicit
    knowledge times: the first two are closed by the same transaction that recorded them,
    so they stay in the constraint's index (closed_at = recorded_at), over the valid period
    of the third. Their knowledge periods do not overlap, so nothing is refused, and the
    history holds the three, one after the other in knowledge."""
    with psycopg.connect(migrated_database_url) as conn:
        row = conn.execute("SELECT clock_timestamp() - interval '1 hour'").fetchone()
        assert row is not None
        times = [row[0] + timedelta(minutes=m) for m in (0, 30, 40)]
        for n, known_at in enumerate(times):
            conn.execute(
                "SELECT bitemporal.record('same', 'x', 'ops', %s, %s, NULL, %s)",
                (str(n), START, known_at),
            )
        conn.commit()
        rows = conn.execute(
            "SELECT value, lower(known_period), upper(known_period), closed_at = recorded_at"
            " FROM bitemporal.fact_version WHERE entity = 'same' ORDER BY version_id"
        ).fetchall()
    assert rows == [
        (0, times[0], times[1], True),
        (1, times[1], times[2], True),
        (2, times[2], None, None),
    ]
