"""bitemporal.as_of answers exactly what its definition says, through either branch.

Version 2 (sql/facts_read.v2.sql) reads a btree of the current versions when
known_at is at or after the key's latest knowledge time
(``fact_key.last_known_at``) and the exclusion constraint's GiST index
before it. Whatever the branch, the answer must be the definition: every
version of the key whose valid period contains valid_at and whose known
period contains known_at. These tests compare the two on every edge of a
history written through every write path (record, retract, record_many, several
writes in one transaction, explicit and default knowledge times), at the
infinities, and while another transaction commits knowledge later than the
reader's present. The branch rests on an invariant of the writes, checked too:
no version's known period starts or ends after its key's last_known_at.
bitemporal.as_of_planned (migration 0037), as_of from PL/pgSQL, answers alike.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from bitemporal import Key, RecordRow, Store
from tests.helpers import Connect

US = timedelta(microseconds=1)
T0 = datetime(2026, 1, 1, tzinfo=UTC)

DEFINITION = """
    SELECT version_id FROM bitemporal.fact_version
     WHERE entity = %s AND attribute = %s
       AND valid_period @> coalesce(%s::timestamptz, now())
       AND known_period @> coalesce(%s::timestamptz, now())
     ORDER BY version_id"""
AS_OF = "SELECT version_id FROM bitemporal.as_of(%s, %s, %s::timestamptz, %s::timestamptz)"
AS_OF_PLANNED = AS_OF.replace("bitemporal.as_of(", "bitemporal.as_of_planned(")
# Versions whose knowledge starts or ends after their key's latest knowledge time.
LATE = """
    SELECT count(*) FROM bitemporal.fact_version v
      JOIN bitemporal.fact_key k USING (entity, attribute)
     WHERE k.entity = %s AND k.attribute = %s
       AND (lower(v.known_period) > k.last_known_at
            OR (NOT upper_inf(v.known_period) AND upper(v.known_period) > k.last_known_at))"""


def ids(
    conn: psycopg.Connection[Any], query: str, key: Key, valid_at: Any, known_at: Any
) -> list[int]:
    return [r[0] for r in conn.execute(query, (key.entity, key.attribute, valid_at, known_at))]


def edges(conn: psycopg.Connection[Any], key: Key) -> tuple[set[Any], set[Any]]:
    """Every bound of every version of the key, each one microsecond either side, the
    infinities and None (now); and the same for knowledge, plus last_known_at."""
    valid: set[Any] = {None, "infinity", "-infinity"}
    known: set[Any] = {None, "infinity", "-infinity"}
    rows = conn.execute(
        "SELECT lower(valid_period), upper(valid_period), lower(known_period), upper(known_period) "
        "FROM bitemporal.fact_version WHERE entity = %s AND attribute = %s",
        (key.entity, key.attribute),
    ).fetchall()
    last = conn.execute(
        "SELECT last_known_at FROM bitemporal.fact_key WHERE entity = %s AND attribute = %s",
        (key.entity, key.attribute),
    ).fetchone()
    assert last is not None
    for target, bounds in (
        (valid, [b for r in rows for b in r[:2]]),
        (known, [b for r in rows for b in r[2:]] + [last[0]]),
    ):
        for b in bounds:
            if b is not None:
                target.update({b - US, b, b + US})
    return valid, known


def assert_as_of_is_the_definition(conn: psycopg.Connection[Any], key: Key) -> int:
    valid, known = edges(conn, key)
    asked = 0
    for k in known:
        for v in valid:
            expected = ids(conn, DEFINITION, key, v, k)
            assert ids(conn, AS_OF, key, v, k) == expected, (v, k)
            assert ids(conn, AS_OF_PLANNED, key, v, k) == expected, (v, k)
            asked += 1
    assert conn.execute(LATE, (key.entity, key.attribute)).fetchone() == (0,)
    return asked


def test_every_write_path_every_edge(store: Store, key: Key, connect: Connect) -> None:
    other = Key(key.entity, "other")
    store.facts.record(key, 50, source="policy", valid_from=T0, known_at=T0 - timedelta(days=30))
    store.facts.record(
        key,
        60,
        source="forum",
        valid_from=T0 + timedelta(days=10),
        valid_to=T0 + timedelta(days=40),
        known_at=T0 - timedelta(days=20),
    )
    store.facts.record(
        key,
        80,
        source="policy",
        valid_from=T0 + timedelta(days=30),
        known_at=T0 - timedelta(days=10),
    )
    store.facts.retract(
        key,
        source="forum",
        valid_from=T0 + timedelta(days=20),
        valid_to=T0 + timedelta(days=25),
        known_at=T0 - timedelta(days=5),
    )
    # A retraction that only closes versions (no remainder, no new version).
    store.facts.record(
        other,
        1,
        source="s",
        valid_from=T0,
        valid_to=T0 + timedelta(days=1),
        known_at=T0 - timedelta(days=3),
    )
    store.facts.retract(other, source="s", known_at=T0 - timedelta(days=2))
    # Several writes of one key in one transaction, at the transaction's time.
    with store.transaction():
        store.facts.record(key, 90, source="policy", valid_from=T0 + timedelta(days=50))
        store.facts.record(key, 95, source="policy", valid_from=T0 + timedelta(days=55))
        store.facts.retract(key, source="policy", valid_from=T0 + timedelta(days=70))
    # A batch: several rows of one key, explicit and default knowledge times.
    store.facts.record_many(
        [
            RecordRow(key, 100, "vendor", valid_from=T0 + timedelta(days=5)),
            RecordRow(key, 110, "vendor", valid_from=T0 + timedelta(days=15)),
            RecordRow(other, 2, "s", valid_from=T0 + timedelta(days=3)),
        ]
    )
    conn = connect()
    asked = sum(assert_as_of_is_the_definition(conn, k) for k in (key, other))
    assert asked > 500


def test_a_key_never_recorded(connect: Connect) -> None:
    conn = connect()
    assert ids(conn, AS_OF, Key("never", "recorded"), None, None) == []
    assert ids(conn, AS_OF_PLANNED, Key("never", "recorded"), None, None) == []


@pytest.mark.not_on_citus(
    "on Citus a transaction's present is fixed when it first reaches the store (Citus's stamp "
    "of the distributed transaction), not at BEGIN as now() is (docs/citus.md)"
)
def test_knowledge_committed_after_the_readers_present(
    store: Store, key: Key, connect: Connect
) -> None:
    """A transaction that began before another one committed asks about its own present:
    the other's new version is not known yet, the version it closed still is."""
    store.facts.record(key, 50, source="policy", valid_from=T0)
    reader = connect(autocommit=False)
    present = reader.execute("SELECT now()").fetchone()
    assert present is not None
    writer = Store(connect())
    written = writer.facts.record(key, 80, source="policy", valid_from=T0 + timedelta(days=1))
    assert written.known_at is not None and written.known_at > present[0]
    # READ COMMITTED: this statement sees the commit; its present is still the old one.
    rows = reader.execute(
        "SELECT value FROM bitemporal.as_of(%s, %s, %s)",
        (key.entity, key.attribute, T0 + timedelta(days=2)),
    ).fetchall()
    assert rows == [(50,)]
    for valid_at in (None, T0, T0 + timedelta(days=2)):
        assert ids(reader, AS_OF, key, valid_at, None) == ids(
            reader, DEFINITION, key, valid_at, None
        )
    reader.rollback()
    assert_as_of_is_the_definition(connect(), key)
