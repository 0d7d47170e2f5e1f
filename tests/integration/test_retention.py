"""Retention policies (migration 0013): apply_retention erases closed knowledge older than
the policy keeps, never current knowledge, once, with the erasure record.

Tests in the shared database use attributes and schemas of their own, and read only their
own policies' lines of apply()'s summary (other tests' policies apply to their keys only).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

import bitemporal
from bitemporal import (
    InvalidRetentionPolicyError,
    Key,
    PermissionDeniedError,
    Status,
    Store,
    UnknownTableError,
)
from tests.helpers import Connect, eraser_roles, run_cli

# Long enough that nothing written just before a run expires during it, on Citus too.
TINY = timedelta(seconds=1)


@pytest.fixture
def attribute() -> str:
    return f"email_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def schema(connect: Connect) -> Iterator[str]:
    name = f"ret_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    conn.execute(
        sql.SQL("CREATE TABLE {} (id int NOT NULL, email text)").format(
            sql.Identifier(name, "person")
        )
    )
    conn.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['id'])", (f"{name}.person",))
    yield name
    conn.execute("SELECT bitemporal.set_retention(%s, NULL)", (f"table:{name}.person",))
    conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (f"{name}.person",))
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def test_apply_erases_closed_knowledge_past_the_policy_and_never_current_knowledge(
    store: Store, attribute: str, raw: psycopg.Connection[Any]
) -> None:
    old, recent = Key("person:old", attribute), Key("person:recent", attribute)
    first = store.facts.record(old, "a@example.com", source="crm")
    second = store.facts.record(old, "b@example.com", source="crm")  # closes the first
    assert store.facts.retract(old, source="crm") == (second.version_id,)  # closes the second
    name = store.retention.set(attribute, TINY, comment="test: 1 s")
    assert name == f"fact:{attribute}"
    time.sleep(1.2)  # the two closings are now older than the policy keeps
    store.facts.record(recent, "c@example.com", source="crm")
    store.facts.record(recent, "d@example.com", source="crm")  # closed just now: kept

    [run] = [r for r in store.retention.apply() if r.policy == name]
    assert (run.keys, run.versions) == (1, 2)
    erasures = raw.execute(
        "SELECT entity, attribute, version_ids, policy, reason FROM bitemporal.erasures"
        " WHERE attribute = %s",
        (attribute,),
    ).fetchall()
    assert erasures == [
        (
            "person:old",
            attribute,
            [first.version_id, second.version_id],
            name,
            f"retention policy {name}: knowledge ended more than 00:00:01 ago",
        )
    ]
    values = {v.version_id: v.value for v in store.facts.history(old)}
    assert values == {first.version_id: None, second.version_id: None}
    # Current knowledge, however old, is never touched; nor is recent closed knowledge.
    assert [v.value for v in store.facts.history(recent)] == ["c@example.com", "d@example.com"]
    assert store.facts.resolve(recent).value == "d@example.com"
    # What the store said then now reads as erased.
    then = store.facts.resolve(old, known_at=store.facts.history(old)[0].known_period.start)
    assert then.status is Status.ERASED

    # Idempotent: a second run erases nothing and records nothing.
    [again] = [r for r in store.retention.apply() if r.policy == name]
    assert (again.keys, again.versions) == (0, 0)
    count = raw.execute(
        "SELECT count(*) FROM bitemporal.erasures WHERE attribute = %s", (attribute,)
    ).fetchone()
    assert count == (1,)
    # Once closed long enough, the recent key's closed version goes too, the current one stays.
    time.sleep(1.2)
    [later] = [r for r in store.retention.apply() if r.policy == name]
    assert (later.keys, later.versions) == (1, 1)
    assert [v.value for v in store.facts.history(recent)] == [None, "d@example.com"]
    assert store.retention.set(attribute, None) == name
    assert name not in {p.policy for p in store.retention.policies()}


def test_apply_clears_the_idempotency_values_of_the_versions_it_erases_only(
    store: Store, attribute: str, raw: psycopg.Connection[Any]
) -> None:
    # Retention erases through bitemporal.erase's machinery, of some versions: the request
    # that wrote the erased version loses its value, the current version's request keeps it.
    key = Key(f"person:{uuid.uuid4().hex[:8]}", attribute)
    old_request, new_request = (f"request-{uuid.uuid4().hex}" for _ in range(2))
    first = store.facts.record(key, "a@example.com", source="crm", idempotency_key=old_request)
    store.facts.record(key, "b@example.com", source="crm", idempotency_key=new_request)
    name = store.retention.set(attribute, TINY)
    time.sleep(1.2)
    [run] = [r for r in store.retention.apply() if r.policy == name]
    assert (run.keys, run.versions) == (1, 1)
    requests = dict(
        raw.execute(
            "SELECT idempotency_key, value FROM bitemporal.fact_request"
            " WHERE idempotency_key IN (%s, %s)",
            (old_request, new_request),
        ).fetchall()
    )
    assert requests == {old_request: None, new_request: "b@example.com"}
    assert [v.value for v in store.facts.history(key)] == [None, "b@example.com"]
    assert store.facts.history(key)[0].version_id == first.version_id
    store.retention.set(attribute, None)


def test_apply_erases_an_application_tables_closed_versions(
    store: Store, schema: str, raw: psycopg.Connection[Any]
) -> None:
    t, person = store.app_tables, f"{schema}.person"
    first = t.record(person, {"id": 1, "email": "a@example.com"})
    current = t.record(person, {"id": 1, "email": "b@example.com"})
    name = store.retention.set_table(person, TINY)
    assert name == f"table:{schema}.person"
    time.sleep(1.2)
    [run] = [r for r in store.retention.apply() if r.policy == name]
    assert (run.keys, run.versions) == (1, 1)
    history = {v.version_id: (v.row["email"], v.erased) for v in t.history(person, {"id": 1})}
    assert history == {first.version_id: (None, True), current.version_id: ("b@example.com", False)}
    row = raw.execute(
        "SELECT scope, relation, key, version_ids, policy FROM bitemporal.erasures"
        " WHERE relation = %s",
        (person,),
    ).fetchone()
    assert row == ("table", person, {"id": 1}, [first.version_id], name)
    [again] = [r for r in store.retention.apply() if r.policy == name]
    assert (again.keys, again.versions) == (0, 0)


def test_bad_policies_raise_typed_errors_and_change_nothing(
    store: Store, attribute: str, raw: psycopg.Connection[Any]
) -> None:
    before = raw.execute("SELECT count(*) FROM bitemporal.retention_policy").fetchone()
    for keep_for in (timedelta(0), timedelta(days=-1)):
        with pytest.raises(InvalidRetentionPolicyError):
            store.retention.set(attribute, keep_for)
    with pytest.raises(InvalidRetentionPolicyError):
        store.retention.set(attribute, 30)  # type: ignore[arg-type]
    with pytest.raises(UnknownTableError):
        store.retention.set_table("no_such_table", timedelta(days=1))
    with pytest.raises(UnknownTableError, match="not a bitemporal table"):
        store.retention.set_table("pg_catalog.pg_class", timedelta(days=1))
    # In SQL: the same SQLSTATEs.
    for policy, interval, code in (
        ("email", "1 day", "BT010"),
        (f"fact:{attribute}", "0", "BT010"),
        (f"fact:{attribute}", "-1 day", "BT010"),
        ("fact:", "1 day", "BT005"),
        ("table:no_such_schema.person", "1 day", "BT401"),
    ):
        with pytest.raises(psycopg.Error) as failure:
            raw.execute("SELECT bitemporal.set_retention(%s, %s::interval)", (policy, interval))
        assert failure.value.sqlstate == code, policy
    after = raw.execute("SELECT count(*) FROM bitemporal.retention_policy").fetchone()
    assert after == before


def test_the_cutoff_is_counted_in_utc_whatever_the_session_time_zone(
    connect: Connect, attribute: str
) -> None:
    """now() - '1 mon 1 day' depends on the session's TimeZone across a daylight saving
    change: apply_retention pins TimeZone to UTC, so the cut-off, and what it erases, is the
    same whoever applies it, and the session's setting is left as it was."""
    conn = connect()
    config = conn.execute(
        "SELECT proconfig FROM pg_proc WHERE oid = 'bitemporal.apply_retention()'::regprocedure"
    ).fetchone()
    assert config is not None and "TimeZone=UTC" in config[0]
    conn.execute("SELECT bitemporal.set_retention(%s, '1 mon 1 day')", (f"fact:{attribute}",))
    for zone in ("America/Sao_Paulo", "Australia/Lord_Howe"):
        conn.execute(sql.SQL("SET TimeZone = {}").format(sql.Literal(zone)))
        runs = conn.execute(
            "SELECT keys FROM bitemporal.apply_retention() WHERE policy = %s",
            (f"fact:{attribute}",),
        ).fetchall()
        assert runs == [(0,)]
        assert conn.execute("SHOW TimeZone").fetchone() == (zone,)
    conn.execute("SELECT bitemporal.set_retention(%s, NULL)", (f"fact:{attribute}",))


@pytest.fixture
def roles(migrated_database_url: str) -> Iterator[dict[str, str]]:
    """LOGIN roles granted through grant_roles: a reader, a writer and an eraser."""
    with eraser_roles(migrated_database_url, "bt_ret") as roles:
        yield roles


def test_only_the_eraser_sets_and_applies_policies(roles: dict[str, str]) -> None:
    url = roles["url"]
    for role in ("reader", "writer"):
        with psycopg.connect(url, user=roles[role], autocommit=True) as conn:
            store = Store(conn)
            with pytest.raises(PermissionDeniedError):
                store.retention.set("email", timedelta(days=30))
            with pytest.raises(PermissionDeniedError):
                store.retention.apply()
    with psycopg.connect(url, user=roles["eraser"], autocommit=True) as conn:
        store = Store(conn)
        assert store.retention.set("email", timedelta(days=30)) == "fact:email"
        [policy] = store.retention.policies()
        assert (policy.keep_for, policy.created_by) == (timedelta(days=30), roles["eraser"])
        assert [(r.policy, r.keys, r.versions) for r in store.retention.apply()] == [
            ("fact:email", 0, 0)
        ]


def test_the_cli_applies_and_lists(
    migrated_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with bitemporal.connect(migrated_database_url) as store:
        store.retention.set("email", timedelta(days=730), comment="contract end + 2 years")
    code, out, err = run_cli(capsys, "retention", "list", "--url", migrated_database_url)
    assert (code, err) == (0, "")
    assert out == "fact:email: keep closed knowledge 730 days (contract end + 2 years)\n"
    code, out, err = run_cli(capsys, "retention", "apply", "--url", migrated_database_url)
    assert (code, out, err) == (0, "fact:email: erased 0 versions of 0 keys\n", "")


def test_the_async_api_applies_too(migrated_database_url: str) -> None:
    async def main() -> list[bitemporal.RetentionRun]:
        store = await bitemporal.connect_async(migrated_database_url)
        async with store:
            await store.retention.set("phone", timedelta(days=1))
            return await store.retention.apply()

    assert [(r.policy, r.keys) for r in asyncio.run(main())] == [("fact:phone", 0)]
