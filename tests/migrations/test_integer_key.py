"""Migration 0031: each key's integer (``key_id``) in the version table's indexes.

A store written at 0030 is upgraded with its data: every key gets an integer unique within
its entity, every version its key's, and every question is answered as before, after the
upgrade, after a downgrade and after upgrading again. Then the integer is attacked the way
a table owner writing by hand could: a version's integer is forced by the trigger, never
changed, and two keys of one entity never share one.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import errors

from bitemporal import migrations

pytestmark = pytest.mark.not_on_citus(
    "migration paths are single-node: on Citus every test database is migrated with "
    "citus=True (docs/citus.md)"
)

DAY = timedelta(days=1)
START = datetime(2026, 1, 1, tzinfo=UTC)
# Two entities, one with two attributes: after the upgrade ('a', 'port') is -1 and
# ('a', 'status') -2, ('b', 'status') -1 too, so two keys of different entities share an
# integer, which the indexes must keep apart by entity.
KEYS = (("a", "status"), ("a", "port"), ("b", "status"))


def write_history(conn: psycopg.Connection[Any]) -> None:
    """Changes, a retroactive correction, a second source and a retraction, each its own
    transaction (so at its own knowledge time), through the SQL functions."""
    for n in range(4):
        for entity, attribute in KEYS:
            conn.execute(
                "SELECT bitemporal.record(%s, %s, 'ops', %s, %s)",
                (entity, attribute, f'"{attribute}-{n}"', START + n * DAY),
            )
    conn.execute(
        "SELECT bitemporal.record('a', 'status', 'ops', '\"corrected\"', %s, %s)",
        (START + DAY, START + 2 * DAY),
    )
    conn.execute(
        "SELECT bitemporal.record('b', 'status', 'audit', '\"other\"', %s)", (START + DAY,)
    )
    conn.execute("SELECT bitemporal.retract('a', 'port', 'ops', %s)", (START + 3 * DAY,))


def answers(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Every key's history, and its as_of and resolve answers at every valid time it
    records and every knowledge time it knew (and now)."""
    knowledge = [
        row[0]
        for row in conn.execute(
            "SELECT DISTINCT lower(known_period) FROM bitemporal.fact_version ORDER BY 1"
        )
    ]
    found: dict[str, Any] = {}
    for entity, attribute in KEYS:
        found[f"history {entity} {attribute}"] = conn.execute(
            "SELECT * FROM bitemporal.history(%s, %s)", (entity, attribute)
        ).fetchall()
        for n in range(5):
            valid_at = START + n * DAY + timedelta(hours=12)
            for known_at in [*knowledge, None]:
                found[f"as_of {entity} {attribute} {valid_at} {known_at}"] = conn.execute(
                    "SELECT * FROM bitemporal.as_of(%s, %s, %s, %s)",
                    (entity, attribute, valid_at, known_at),
                ).fetchall()
                found[f"resolve {entity} {attribute} {valid_at} {known_at}"] = conn.execute(
                    "SELECT status, value, version_ids FROM bitemporal.resolve(%s, %s, %s, %s)",
                    (entity, attribute, valid_at, known_at),
                ).fetchall()
    found["changes"] = conn.execute("SELECT * FROM bitemporal.changes()").fetchall()
    for entity, only in [*KEYS, ("a", None), ("b", None)]:
        found[f"changes {entity} {only}"] = conn.execute(
            "SELECT * FROM bitemporal.changes(NULL, NULL, %s, %s)", (entity, only)
        ).fetchall()
    return found


def assert_index_names(conn: psycopg.Connection[Any]) -> None:
    """The GiST indexes (and their partitions' copies) keep the names partition_versions
    gives them, whichever way they were rebuilt."""
    names = [
        row[0]
        for row in conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'bitemporal'::regnamespace"
            " AND relkind IN ('i', 'I') AND relname ~ 'no_overlap|current_idx|periods_idx'"
            " AND relname LIKE 'fact_version%'"
        )
    ]
    assert names and all(
        re.fullmatch(r"fact_version_(no_overlap|current_idx|periods_idx)(_p\d)?", n) for n in names
    ), names


def key_ids(conn: psycopg.Connection[Any]) -> dict[tuple[str, str], int]:
    rows = conn.execute("SELECT entity, attribute, key_id FROM bitemporal.fact_key").fetchall()
    return {(e, a): k for e, a, k in rows}


@pytest.mark.parametrize("layout", [None, 4], ids=["default layout", "4 partitions"])
def test_an_upgraded_store_answers_as_before(empty_database_url: str, layout: int | None) -> None:
    url = empty_database_url
    migrations.migrate(url, "0030", partitions=layout)
    with psycopg.connect(url, autocommit=True) as conn:
        write_history(conn)
        before = answers(conn)

    migrations.migrate(url, partitions=layout)
    with psycopg.connect(url, autocommit=True) as conn:
        assert key_ids(conn) == {("a", "port"): -1, ("a", "status"): -2, ("b", "status"): -1}
        mismatched = conn.execute(
            "SELECT count(*) FROM bitemporal.fact_version v JOIN bitemporal.fact_key k"
            " USING (entity, attribute) WHERE v.key_id <> k.key_id"
        ).fetchone()
        assert mismatched == (0,)
        assert answers(conn) == before
        assert_index_names(conn)
        # A new key takes the sequence's next integer; an old key is written as before.
        conn.execute("SELECT bitemporal.record('c', 'status', 'ops', '1', %s)", (START,))
        conn.execute("SELECT bitemporal.record('a', 'status', 'ops', '\"later\"', %s)", (START,))
        assert key_ids(conn)[("c", "status")] == 1
        written = answers(conn)

    migrations.downgrade(url, "0030")
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_attribute WHERE attname = 'key_id' AND attrelid IN"
            " ('bitemporal.fact_version'::regclass, 'bitemporal.fact_key'::regclass)"
        ).fetchone() == (0,)
        assert answers(conn) == written
        assert_index_names(conn)

    migrations.migrate(url, partitions=layout)
    with psycopg.connect(url, autocommit=True) as conn:
        assert answers(conn) == written
        assert_index_names(conn)
        assert sorted(key_ids(conn).values()) == [-2, -1, -1, -1]


@pytest.mark.default_layout_only("before PostgreSQL 17 each partition holds its own constraint")
def test_the_exclusion_constraint_and_the_index_read_by_the_integer(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index"
            " WHERE indexrelid::regclass::text IN"
            " ('bitemporal.fact_version_no_overlap', 'bitemporal.fact_version_periods_idx')"
            " ORDER BY 1"
        ).fetchall()
    assert [r[0].split("USING ")[1] for r in rows] == [
        # no_overlap: over current versions since 0034 (test_current_exclusion)
        (
            "gist (key_id, source, valid_period, known_period, entity)"
            " WHERE (upper_inf(known_period) OR (closed_at = recorded_at))"
        ),
        "gist (key_id, known_period, valid_period, entity)",  # periods_idx, since 0034
    ]


def _version(conn: psycopg.Connection[Any], entity: str) -> tuple[int, int]:
    conn.execute("SELECT bitemporal.record(%s, 'x', 'ops', '1', %s)", (entity, START))
    conn.commit()
    row = conn.execute(
        "SELECT v.version_id, k.key_id FROM bitemporal.fact_version v"
        " JOIN bitemporal.fact_key k USING (entity, attribute) WHERE v.entity = %s",
        (entity,),
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_version_written_by_hand_gets_its_keys_integer(migrated_database_url: str) -> None:
    with psycopg.connect(migrated_database_url) as conn:
        _, key_id = _version(conn, "hand")
        version_id = conn.execute(
            "INSERT INTO bitemporal.fact_version"
            " (entity, attribute, source, value, valid_period, known_period, key_id)"
            " VALUES ('hand', 'x', 'other', '2', tstzrange(%s, NULL), tstzrange(now(), NULL), %s)"
            " RETURNING version_id",
            (START, key_id + 1000),
        ).fetchone()
        assert version_id is not None
        assert conn.execute(
            "SELECT key_id FROM bitemporal.fact_version WHERE version_id = %s", version_id
        ).fetchone() == (key_id,)


@pytest.mark.parametrize("closed", [False, True], ids=["open version", "closed version"])
def test_no_update_changes_a_versions_integer(migrated_database_url: str, closed: bool) -> None:
    with psycopg.connect(migrated_database_url) as conn:
        version_id, _ = _version(conn, "guarded")
        if closed:
            conn.execute("SELECT bitemporal.record('guarded', 'x', 'ops', '2', %s)", (START,))
            conn.commit()
        before = conn.execute("SELECT * FROM bitemporal.fact_version ORDER BY 1").fetchall()
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(
                "UPDATE bitemporal.fact_version SET key_id = key_id + 1 WHERE version_id = %s",
                (version_id,),
            )
        assert refused.value.sqlstate == "BT006"
        conn.rollback()
        assert conn.execute("SELECT * FROM bitemporal.fact_version ORDER BY 1").fetchall() == before


def test_a_keys_integer_cannot_change_nor_be_shared_within_its_entity(
    migrated_database_url: str,
) -> None:
    with psycopg.connect(migrated_database_url) as conn:
        _, key_id = _version(conn, "shared")
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(
                "UPDATE bitemporal.fact_key SET key_id = key_id + 1 WHERE entity = 'shared'"
            )
        assert refused.value.sqlstate == "BT006"
        conn.rollback()
        # A second key of the same entity given the first one's integer by hand would read
        # the first one's versions: refused. In another entity the integer is free.
        insert = (
            "INSERT INTO bitemporal.fact_key"
            " (entity, attribute, first_known_at, last_known_at, last_txid, key_id)"
            " VALUES (%s, 'y', now(), now(), pg_current_xact_id(), %s)"
        )
        with pytest.raises(errors.UniqueViolation):
            conn.execute(insert, ("shared", key_id))
        conn.rollback()
        conn.execute(insert, ("elsewhere", key_id))
        conn.commit()
        conn.execute("SELECT bitemporal.record('elsewhere', 'y', 'ops', '3', %s)", (START,))
        conn.commit()
        assert conn.execute(
            "SELECT value FROM bitemporal.as_of('shared', 'x', %s)", (START,)
        ).fetchall() == [(1,)]
        assert conn.execute(
            "SELECT value FROM bitemporal.as_of('elsewhere', 'y', %s)", (START,)
        ).fetchall() == [(3,)]
