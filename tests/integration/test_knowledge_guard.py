"""Knowledge is never rewritten, by the table owner either; every version says when it was
really written (issue 11, findings 7 and 21).

The test role owns the tables (it migrated them), so every statement here is what an owner
could run by hand, without touching a trigger.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bitemporal import (
    AppendOnlyError,
    InvalidPeriodError,
    Key,
    KnowledgeTimeInPastError,
    RecordRow,
    Store,
    errors,
)

FIRST = datetime(2026, 1, 1, tzinfo=UTC)
LATER = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def two_sources(store: Store, key: Key) -> Key:
    """The key recorded from FIRST by source a, and from LATER by source b (its latest
    knowledge)."""
    store.facts.record(key, 50, source="a", valid_from=date(2026, 1, 1), known_at=FIRST)
    store.facts.record(key, 60, source="b", valid_from=date(2026, 1, 1), known_at=LATER)
    return key


def state(conn: psycopg.Connection[Any], key: Key) -> list[Any]:
    return conn.execute(
        "SELECT v.*, k.* FROM bitemporal.fact_version v "
        "JOIN bitemporal.fact_key k USING (entity, attribute) "
        "WHERE entity = %s AND attribute = %s ORDER BY version_id",
        (key.entity, key.attribute),
    ).fetchall()


ATTACKS = {
    # Close source a's open version back-dated to its start: between FIRST and LATER
    # the store would no longer have known it.
    "close back-dated": "UPDATE bitemporal.fact_version "
    "SET known_period = tstzrange(lower(known_period), "
    "lower(known_period) + interval '1 second', '[)') WHERE entity = %(e)s AND source = 'a'",
    # A version the store never knew then, known from before the key's latest knowledge.
    "insert back-dated": "INSERT INTO bitemporal.fact_version "
    "(entity, attribute, source, value, valid_period, known_period) "
    "VALUES (%(e)s, %(a)s, 'c', '7', '[2026-01-01,)', tstzrange(%(first)s, NULL, '[)'))",
    # The same, inserted closed.
    "insert closed back-dated": "INSERT INTO bitemporal.fact_version "
    "(entity, attribute, source, value, valid_period, known_period) "
    "VALUES (%(e)s, %(a)s, 'c', '7', '[2026-01-01,)', "
    "tstzrange(%(first)s, %(first)s + interval '1 day', '[)'))",
    # Rewind the key's latest knowledge, after which record(known_at=2001) would pass.
    "rewind fact_key": "UPDATE bitemporal.fact_key SET last_known_at = '2001-01-01 00:00+00' "
    "WHERE entity = %(e)s",
    "move fact_key to the future": "UPDATE bitemporal.fact_key "
    "SET last_known_at = now() + interval '1 day' WHERE entity = %(e)s",
    "rename fact_key": "UPDATE bitemporal.fact_key SET first_known_at = '2001-01-01 00:00+00' "
    "WHERE entity = %(e)s",
    "claim fact_key's time": "UPDATE bitemporal.fact_key SET last_txid = pg_current_xact_id() "
    "WHERE entity = %(e)s",
    "delete fact_key": "DELETE FROM bitemporal.fact_key WHERE entity = %(e)s",
    "insert fact_key from the future": "INSERT INTO bitemporal.fact_key "
    "VALUES (%(e)s || '/new', 'a', "
    "now() + interval '1 day', now() + interval '1 day', pg_current_xact_id())",
    "truncate fact_key": "TRUNCATE bitemporal.fact_key CASCADE",
}


# On Citus, Citus itself refuses the first attack, before the guard sees it (0A000: a
# STABLE expression over a column in an UPDATE), and the store is unchanged all the same.
CITUS_REFUSES = pytest.mark.not_on_citus(
    "Citus refuses this UPDATE itself (STABLE functions with column references, 0A000)"
)


@pytest.mark.parametrize(
    "attack",
    [pytest.param(a, marks=CITUS_REFUSES) if a == "close back-dated" else a for a in ATTACKS],
    ids=list(ATTACKS),
)
def test_the_owner_cannot_rewrite_knowledge(store: Store, two_sources: Key, attack: str) -> None:
    conn = store.connection
    before = state(conn, two_sources)
    with pytest.raises(AppendOnlyError), errors.translate():
        conn.execute(
            ATTACKS[attack], {"e": two_sources.entity, "a": two_sources.attribute, "first": FIRST}
        )
    assert state(conn, two_sources) == before
    # The key's knowledge still refuses a back-dated write through the API.
    with pytest.raises(KnowledgeTimeInPastError):
        store.facts.record(two_sources, 1, source="a", known_at=datetime(2001, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("known", ["[infinity,)", "[-infinity,)", "[-infinity,infinity)"])
@pytest.mark.parametrize("entity", ["existing key", "new key"])
def test_an_infinite_knowledge_time_written_directly_is_refused_clearly(
    store: Store, two_sources: Key, known: str, entity: str
) -> None:
    """The owner's INSERT bypasses the functions' checks; the row's trigger says what is
    wrong (migration 0040), as the functions would: BT001, not PostgreSQL's "cannot subtract
    infinite timestamps"."""
    conn = store.connection
    key = two_sources if entity == "existing key" else Key(f"{two_sources.entity}/new", "a")
    before = state(conn, two_sources)
    with (
        pytest.raises(InvalidPeriodError, match="knowledge time must be finite"),
        errors.translate(),
    ):
        conn.execute(
            "INSERT INTO bitemporal.fact_version "
            "(entity, attribute, source, value, valid_period, known_period) "
            "VALUES (%s, %s, 'c', '7', '[2026-01-01,)', %s::tstzrange)",
            (key.entity, key.attribute, known),
        )
    assert state(conn, two_sources) == before
    assert store.facts.as_of(Key(f"{two_sources.entity}/new", "a")) == []


@pytest.mark.not_on_citus(
    "the statement's now() is the coordinator's transaction start, the store's transaction "
    "time on Citus the distributed transaction's stamp (docs/citus.md): closed_at is the "
    "stamp, not the now() this hand-written UPDATE closes at"
)
def test_forged_real_times_are_overwritten(store: Store, two_sources: Key) -> None:
    """A direct closing at the present is a write like retract(): allowed, and stamped with
    the real times whatever the statement says."""
    conn = store.connection
    (recorded,) = [v.recorded_at for v in store.facts.history(two_sources) if v.source == "b"]
    conn.execute(
        "UPDATE bitemporal.fact_version "
        "SET known_period = tstzrange(lower(known_period), now(), '[)'), "
        "recorded_at = '2001-01-01 00:00+00', closed_at = '2001-01-01 00:00+00' "
        "WHERE entity = %s AND source = 'b'",
        (two_sources.entity,),
    )
    (closed,) = [v for v in store.facts.history(two_sources) if v.source == "b"]
    assert closed.recorded_at == recorded
    assert closed.closed_at is not None and closed.closed_at > LATER
    assert closed.closed_at == closed.known_period.end


def test_the_write_path_still_works(store: Store, two_sources: Key) -> None:
    store.facts.record(two_sources, 70, source="a", valid_from=date(2026, 2, 1))
    store.facts.retract(two_sources, source="b")
    answer = store.facts.resolve(two_sources, valid_at=date(2026, 2, 15))
    assert (answer.value, answer.sources) == (70, ("a",))


def test_back_dated_knowledge_is_told_from_live_knowledge(store: Store, key: Key) -> None:
    """A writer back-dates a key's first knowledge to 2001: the real time is recorded beside it."""
    before = store.connection.execute("SELECT clock_timestamp()").fetchone()[0]  # type: ignore[index]
    store.facts.record(
        key, 1, source="s", valid_from=date(2001, 1, 1), known_at=datetime(2001, 1, 1, tzinfo=UTC)
    )
    store.facts.record(key, 2, source="s", valid_from=date(2001, 6, 1))
    after = store.connection.execute("SELECT clock_timestamp()").fetchone()[0]  # type: ignore[index]
    history = store.facts.history(key)
    assert all(v.recorded_at is not None and before <= v.recorded_at <= after for v in history)
    first, *rest = history
    assert first.known_period.start == datetime(2001, 1, 1, tzinfo=UTC)
    assert first.known_period.start < first.recorded_at  # type: ignore[operator]  # back-dated
    live = [
        v
        for v in rest
        if v.recorded_at is not None
        and v.known_period.start is not None
        and v.known_period.start >= v.recorded_at
    ]
    assert live  # the write without known_at is live
    assert first.closed_at is not None and before <= first.closed_at <= after


def test_bulk_writes_record_their_real_time(store: Store, key: Key) -> None:
    store.facts.record_many(
        [
            RecordRow(key, 1, source="s", known_at=datetime(2001, 1, 1, tzinfo=UTC)),
            RecordRow(key, 2, source="s"),
        ]
    )
    now = store.connection.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
    history = store.facts.history(key)
    assert [v.value for v in history] == [1, 2]
    assert all(v.recorded_at is not None and v.recorded_at <= now for v in history)
    assert history[0].known_period.start < history[0].recorded_at  # type: ignore[operator]


@pytest.fixture
def app_table(
    connect: Callable[..., psycopg.Connection[Any]],
) -> Iterator[tuple[psycopg.Connection[Any], str]]:
    """An application table doc(id, body) in a schema of the test's own: key 1 holds body a
    for January, known from FIRST, and body b from March, known from LATER."""
    name = f"app_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    conn.execute(
        sql.SQL("CREATE TABLE {}.doc (id integer, body text)").format(sql.Identifier(name))
    )
    conn.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['id'])", (f"{name}.doc",))
    record = sql.SQL(
        "SELECT {}.doc_record(1, %s, valid_from => %s, valid_to => %s, known_at => %s)"
    ).format(sql.Identifier(name))
    conn.execute(record, ("a", FIRST, datetime(2026, 2, 1, tzinfo=UTC), FIRST))
    conn.execute(record, ("b", LATER, None, LATER))
    yield conn, name
    conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (f"{name}.doc",))
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


TABLE_ATTACKS = {
    "close back-dated": "UPDATE {s}.doc SET known_period = tstzrange(lower(known_period), "
    "lower(known_period) + interval '1 second', '[)') WHERE body = 'a' AND upper_inf(known_period)",
    "insert back-dated": "INSERT INTO {s}.doc (id, body, valid_period, known_period) "
    "VALUES (1, 'c', '[2000-01-01,2001-01-01)', tstzrange(%(first)s, NULL, '[)'))",
    "rewind the key": "UPDATE {s}.doc_key SET last_known_at = '2001-01-01 00:00+00'",
    "claim the key's time": "UPDATE {s}.doc_key SET last_txid = pg_current_xact_id()",
    "delete the key": "DELETE FROM {s}.doc_key",
    "truncate the key": "TRUNCATE {s}.doc_key CASCADE",
}


@pytest.mark.parametrize("attack", list(TABLE_ATTACKS), ids=list(TABLE_ATTACKS))
def test_the_owner_cannot_rewrite_an_application_tables_knowledge(
    app_table: tuple[psycopg.Connection[Any], str], attack: str
) -> None:
    conn, schema = app_table
    rows = sql.SQL(
        "SELECT d::text FROM {}.doc d UNION ALL SELECT k::text FROM {}.doc_key k ORDER BY 1"
    ).format(sql.Identifier(schema), sql.Identifier(schema))
    before = conn.execute(rows).fetchall()
    with pytest.raises(AppendOnlyError), errors.translate():
        conn.execute(
            TABLE_ATTACKS[attack].format(s=sql.Identifier(schema).as_string(conn)), {"first": FIRST}
        )
    assert conn.execute(rows).fetchall() == before
    # Its write functions still refuse knowledge before the key's latest, and still work.
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(
            sql.SQL("SELECT {}.doc_record(1, 'x', known_at => '2001-01-01 00:00+00')").format(
                sql.Identifier(schema)
            )
        )
    assert caught.value.sqlstate == "BT002"
    conn.execute(
        sql.SQL("SELECT {}.doc_record(1, 'y', valid_from => %s)").format(sql.Identifier(schema)),
        (LATER,),
    )
    conn.execute(
        sql.SQL("SELECT {}.doc_retract(1, valid_from => %s)").format(sql.Identifier(schema)),
        (LATER,),
    )


def key_knowledge(store: Store, key: Key) -> datetime:
    row = store.connection.execute(
        "SELECT last_known_at FROM bitemporal.fact_key WHERE entity = %s AND attribute = %s",
        (key.entity, key.attribute),
    ).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def test_every_write_moves_its_keys_knowledge_once(store: Store, key: Key) -> None:
    """record and retract leave the key's latest knowledge to the knowledge trigger of the
    versions they write (migration 0022): after each, the key is at the write's time, held by
    the writing transaction (a second write at that time in it passes, one in another
    transaction is refused), and a write that changes nothing leaves the key alone."""
    t1, t2, t3 = (datetime(2026, 1, day, tzinfo=UTC) for day in (1, 2, 3))
    store.facts.record(key, 1, source="s", valid_from=date(2025, 1, 1), known_at=t1)
    assert key_knowledge(store, key) == t1
    with store.transaction():
        # An interior change: one version closed, two remainders and the new one inserted.
        store.facts.record(
            key, 2, source="s", valid_from=date(2025, 3, 1), valid_to=date(2025, 4, 1), known_at=t2
        )
        assert key_knowledge(store, key) == t2
        # The same transaction may write at t2 again: a retraction of the version just
        # written deletes it (never seen) and re-records its remainder.
        assert store.facts.retract(
            key, source="s", valid_from=date(2025, 3, 10), valid_to=date(2025, 3, 20), known_at=t2
        )
        assert key_knowledge(store, key) == t2
    versions = store.facts.history(key)
    with pytest.raises(KnowledgeTimeInPastError):
        store.facts.record(key, 3, source="s", valid_from=date(2025, 5, 1), known_at=t2)
    assert store.facts.history(key) == versions and key_knowledge(store, key) == t2
    assert store.facts.retract(key, source="s", valid_from=date(2025, 6, 1), known_at=t3)
    assert key_knowledge(store, key) == t3
    # Changes nothing: already retracted, already recorded.
    assert store.facts.retract(key, source="s", valid_from=date(2025, 7, 1)) == ()
    assert not store.facts.record(
        key, 1, source="s", valid_from=date(2025, 1, 1), valid_to=date(2025, 2, 1)
    ).created
    assert key_knowledge(store, key) == t3
