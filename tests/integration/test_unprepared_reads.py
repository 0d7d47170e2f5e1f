"""``Facts.as_of`` on a connection that never prepares (migration 0037).

Behind a pooler in transaction mode psycopg must not prepare (``prepare_threshold``
None), and a statement calling ``bitemporal.as_of``, which the planner inlines, is planned
again at every call. There the API asks ``bitemporal.as_of_planned`` instead, whose plan
the session keeps: the same versions, in the same order, for every question.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from bitemporal import (
    AsyncStore,
    BitemporalError,
    Key,
    NaiveDatetimeError,
    Store,
    Version,
)
from tests.helpers import CITUS, Connect, eraser_roles

T0 = datetime(2026, 1, 1, tzinfo=UTC)

# Calls of as_of_planned in the current transaction (track_functions = 'pl').
PLANNED_CALLS = (
    "SELECT coalesce(pg_stat_get_xact_function_calls("
    "'bitemporal.as_of_planned(text, text, timestamptz, timestamptz)'::regprocedure), 0)"
)


def _history(store: Store, key: Key) -> list[datetime]:
    """Writes a history of ``key`` (two sources, an interior change, a retraction) at four
    knowledge times; returns those and two more, before and between them."""
    store.facts.record(key, 50, source="policy", valid_from=T0, known_at=T0 - timedelta(days=30))
    store.facts.record(
        key,
        80,
        source="policy",
        valid_from=T0 + timedelta(days=10),
        valid_to=T0 + timedelta(days=20),
        known_at=T0 - timedelta(days=20),
    )
    store.facts.record(key, 60, source="forum", valid_from=T0, known_at=T0 - timedelta(days=15))
    store.facts.retract(
        key, source="forum", valid_from=T0 + timedelta(days=5), known_at=T0 - timedelta(days=10)
    )
    return [T0 - timedelta(days=d) for d in (31, 30, 25, 20, 15, 10)]


def _questions(known: list[datetime]) -> list[tuple[datetime | None, datetime | None]]:
    valid = [None, T0 - timedelta(days=1), T0, T0 + timedelta(days=5), T0 + timedelta(days=15)]
    return [(v, k) for v in valid for k in [None, *known]]


def test_as_of_answers_alike_on_a_connection_that_never_prepares(
    store: Store, key: Key, connect: Connect
) -> None:
    known = _history(store, key)
    unprepared = connect()
    unprepared.prepare_threshold = None
    plain = Store(unprepared)
    for valid_at, known_at in _questions(known):
        expected = store.facts.as_of(key, valid_at=valid_at, known_at=known_at)
        assert plain.facts.as_of(key, valid_at=valid_at, known_at=known_at) == expected
    assert plain.facts.as_of(Key(key.entity, "never recorded")) == []
    # Bad input is refused before anything is sent, as on any connection.
    with pytest.raises(NaiveDatetimeError):
        plain.facts.as_of(key, valid_at=datetime(2026, 1, 1))


def _as_of_as(conn: psycopg.Connection[Any], key: Key) -> list[Version] | str:
    """Facts.as_of on ``conn``, or the name of the error it raised."""
    try:
        return Store(conn).facts.as_of(key)
    except BitemporalError as error:
        return type(error).__name__
    finally:
        conn.close()


def test_either_statement_needs_the_same_rights(
    store: Store, key: Key, connect: Connect, database_url: str
) -> None:
    """as_of_planned keeps the caller's rights, as as_of does: how a connection prepares
    never changes what its role may read."""
    store.facts.record(key, 1, source="s")
    expected = store.facts.as_of(key)
    outcomes: dict[str, set[Any]] = {"reader": set(), "writer": set()}
    with eraser_roles(database_url, "bt_unprepared") as roles:
        for threshold in (5, None):
            for kind, outcome in outcomes.items():
                conn = connect(user=roles[kind])
                conn.prepare_threshold = threshold
                found = _as_of_as(conn, key)
                outcome.add(found if isinstance(found, str) else tuple(found))
    assert outcomes["reader"] == {tuple(expected)}
    # The writer writes only through functions; reading is the reader's grant. On Citus
    # as_of runs as the owner (docs/citus.md), and so, through it, as_of_planned.
    assert outcomes["writer"] == ({tuple(expected)} if CITUS else {"PermissionDeniedError"})


def _planned_calls(conn: psycopg.Connection[Any], key: Key) -> int:
    """How many calls of as_of_planned one Facts.as_of on ``conn`` made."""
    with conn.transaction():
        conn.execute("SET LOCAL track_functions = 'pl'")
        Store(conn).facts.as_of(key)
        row = conn.execute(PLANNED_CALLS).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.not_on_citus(
    "a delegated call runs on the key's worker, whose statistics the coordinator does not count"
)
def test_only_a_connection_that_never_prepares_asks_as_of_planned(
    store: Store, key: Key, connect: Connect
) -> None:
    store.facts.record(key, 1, source="s")
    unprepared = connect()
    unprepared.prepare_threshold = None
    assert _planned_calls(unprepared, key) == 1
    # psycopg's default: prepared once the connection has run the statement five times.
    assert _planned_calls(connect(), key) == 0


def test_the_async_api_answers_alike_on_a_connection_that_never_prepares(
    store: Store, key: Key, database_url: str
) -> None:
    known = _history(store, key)
    questions = _questions(known)

    async def ask() -> list[list[Version]]:
        async with await psycopg.AsyncConnection.connect(
            database_url, autocommit=True, prepare_threshold=None
        ) as conn:
            plain = AsyncStore(conn)
            return [
                await plain.facts.as_of(key, valid_at=valid_at, known_at=known_at)
                for valid_at, known_at in questions
            ]

    expected = [store.facts.as_of(key, valid_at=v, known_at=k) for v, k in questions]
    assert asyncio.run(ask()) == expected
