"""The invalidation NOTIFY switched off and on again (migration 0029).

Off, a supersession or retraction sends nothing and ``changes()`` still lists it; erasures
are announced either way; on again, writes are announced as before. Only the store's
owner may switch it, and a role that tries changes nothing. On Citus there is no such
NOTIFY to switch on.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bitemporal import (
    CHANNEL,
    AsyncStore,
    ChangeKind,
    DistributionError,
    Invalidation,
    InvalidInputError,
    Key,
    PermissionDeniedError,
    Store,
)
from tests.helpers import CITUS, no_notify_on_citus, run_cli


@pytest.fixture
def owner(migrated_database_url: str) -> Iterator[Store]:
    """A store of its own (switching the feed is database-wide), as its owner."""
    with psycopg.connect(migrated_database_url, autocommit=True) as conn:
        yield Store(conn)


@pytest.fixture
def listener(migrated_database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(migrated_database_url, autocommit=True) as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        yield conn


def received(listener: psycopg.Connection[Any], expect: int = 0) -> list[Invalidation]:
    """The notifications that arrive: ``expect`` of them (waiting up to 5 s), or, when none
    are expected, whatever comes within half a second."""
    notes = listener.notifies(timeout=5.0 if expect else 0.5, stop_after=expect or None)
    return [Invalidation.from_payload(n.payload) for n in notes]


@no_notify_on_citus
def test_off_a_supersession_is_not_announced_and_on_again_it_is(
    owner: Store, listener: psycopg.Connection[Any]
) -> None:
    key = Key(f"e-{uuid.uuid4().hex[:8]}", "price")
    assert owner.provenance.notify_enabled() is True  # the default, as before 0029
    first = owner.facts.record(key, 1, source="s")
    assert owner.provenance.set_notify(False) is True
    assert owner.provenance.notify_enabled() is False
    # Every partition's trigger too, in the partitioned layout.
    states = owner.connection.execute(
        "SELECT t.tgenabled FROM pg_trigger t WHERE t.tgname = 'fact_version_notify_closed'"
    ).fetchall()
    assert states and {s for (s,) in states} == {"D"}

    start = datetime.now(UTC) - timedelta(minutes=1)
    second = owner.facts.record(key, 2, source="s")
    ended = owner.facts.retract(key, source="s", valid_from=datetime(2030, 1, 1, tzinfo=UTC))
    assert received(listener) == []
    # The polled feed still has both.
    closed = {
        (c.kind, c.version.version_id)
        for c in owner.facts.changes(start, key=key)
        if c.kind is not ChangeKind.LEARNED
    }
    assert closed == {
        (ChangeKind.SUPERSEDED, first.version_id),
        (ChangeKind.RETRACTED, ended[0]),
    }
    assert ended[0] == second.version_id
    # Switching it off again changes nothing and says so.
    assert owner.provenance.set_notify(False) is False

    assert owner.provenance.set_notify(True) is False
    assert owner.provenance.notify_enabled() is True
    third = owner.facts.record(key, 3, source="s", valid_to=datetime(2030, 1, 1, tzinfo=UTC))
    [note] = received(listener, expect=1)
    assert note.change == "superseded" and third.version_id in note.by


@no_notify_on_citus
def test_the_async_api_switches_it_too(migrated_database_url: str, owner: Store) -> None:
    async def switch() -> tuple[bool, bool, bool]:
        async with await psycopg.AsyncConnection.connect(
            migrated_database_url, autocommit=True
        ) as conn:
            store = AsyncStore(conn)
            was = await store.provenance.set_notify(False)
            now = await store.provenance.notify_enabled()
            assert owner.provenance.notify_enabled() is False  # for every session
            return was, now, await store.provenance.set_notify(True)

    assert asyncio.run(switch()) == (True, False, False)
    assert owner.provenance.notify_enabled() is True


@no_notify_on_citus
def test_erasures_are_announced_with_the_feed_off(
    owner: Store, listener: psycopg.Connection[Any]
) -> None:
    key = Key(f"e-{uuid.uuid4().hex[:8]}", "email")
    v = owner.facts.record(key, "ada@example.com", source="crm")
    owner.provenance.set_notify(False)
    erasure = owner.facts.erase(key, reason="request 17")
    assert erasure is not None
    [note] = received(listener, expect=1)
    assert (note.version_id, note.change) == (v.version_id, "erased")


@no_notify_on_citus
def test_only_the_owner_may_switch_it(migrated_database_url: str, owner: Store) -> None:
    """A writer (and a reader) may ask whether it is on, not switch it: the function says
    so before ALTER TABLE would, and the store is unchanged."""
    name = f"bt_test_writer_{uuid.uuid4().hex[:8]}"
    owner.connection.execute(
        sql.SQL("CREATE ROLE {} LOGIN IN ROLE bitemporal_writer").format(sql.Identifier(name))
    )
    try:
        with psycopg.connect(migrated_database_url, user=name, autocommit=True) as conn:
            writer = Store(conn)
            assert writer.provenance.notify_enabled() is True
            with pytest.raises(PermissionDeniedError, match="only the store's owner") as caught:
                writer.provenance.set_notify(False)
            assert "bitemporal db notify" in (caught.value.hint or "")
            # Nor by hand, with the statement the function would run.
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    "ALTER TABLE bitemporal.fact_version DISABLE TRIGGER fact_version_notify_closed"
                )
        assert owner.provenance.notify_enabled() is True
    finally:
        owner.connection.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_bad_input_is_refused(owner: Store) -> None:
    with pytest.raises(InvalidInputError, match="True or False"):
        owner.provenance.set_notify("off")  # type: ignore[arg-type]
    with pytest.raises(psycopg.errors.NullValueNotAllowed, match="true or false"):
        owner.connection.execute("SELECT bitemporal.set_invalidation_notify(NULL)")
    assert owner.provenance.notify_enabled() is not CITUS


@pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")
def test_on_citus_there_is_nothing_to_switch_on(owner: Store) -> None:
    assert owner.provenance.notify_enabled() is False
    assert owner.provenance.set_notify(False) is False
    with pytest.raises(DistributionError, match="no invalidation NOTIFY") as caught:
        owner.provenance.set_notify(True)
    assert "changes" in (caught.value.hint or "")


@no_notify_on_citus
def test_the_command_line_shows_and_switches_it(
    capsys: pytest.CaptureFixture[str], migrated_database_url: str, owner: Store
) -> None:
    url = migrated_database_url
    assert run_cli(capsys, "--url", url, "db", "notify")[1] == "invalidation NOTIFY: on\n"
    assert run_cli(capsys, "--url", url, "db", "notify", "off")[1] == (
        "invalidation NOTIFY: off (was on)\n"
    )
    assert owner.provenance.notify_enabled() is False
    assert run_cli(capsys, "--url", url, "db", "notify", "on")[1] == (
        "invalidation NOTIFY: on (was off)\n"
    )
    with pytest.raises(SystemExit) as usage_error:
        run_cli(capsys, "--url", url, "db", "notify", "maybe")
    assert usage_error.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert owner.provenance.notify_enabled() is True
