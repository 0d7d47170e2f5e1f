"""Every answer is the same in every session TimeZone (issue 11, finding 1).

The same questions are asked through connections whose TimeZone is UTC, a zone that
falls back during the facts' periods (Europe/Berlin falls back at 01:00Z on
2026-10-25), zones with odd or extreme offsets, and the answers compared as Python
objects: equal, and with the same representation (every instant read back in UTC).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bitemporal import Key, Period, Store

ZONES = (
    "UTC",
    "Europe/Berlin",
    "America/Sao_Paulo",
    "Australia/Lord_Howe",
    "Pacific/Kiritimati",
    "Etc/GMT+12",
)

#: Europe/Berlin falls back from 03:00 CEST to 02:00 CET at 01:00Z on this day.
BEFORE_FALL_BACK = datetime(2026, 10, 25, 0, 45, tzinfo=UTC)
BETWEEN = datetime(2026, 10, 25, 0, 50, tzinfo=UTC)
AFTER_FALL_BACK = datetime(2026, 10, 25, 1, 15, tzinfo=UTC)
#: 9999-12-30 03:00 in a +14 session: a finite end, late in wall-clock time only.
FAR_END = datetime(9999, 12, 29, 13, 0, tzinfo=UTC)
#: 10000-01-01 09:00 in a +14 session: a wall-clock time Python cannot hold (as a period
#: end it is the end-of-time sentinel; as a column value, an instant like any other).
LAST_DAY = datetime(9999, 12, 31, 19, 0, tzinfo=UTC)


@pytest.fixture
def world(
    store: Store, connect: Callable[..., psycopg.Connection[Any]]
) -> Iterator[dict[str, Any]]:
    """Facts, evidence, an artifact, an application table and a memory namespace whose
    periods cross the fall-back and reach the last days of year 9999."""
    key = Key(f"tz:{uuid.uuid4().hex}", "limit")
    far = Key(key.entity, "far")
    store.facts.record(
        key, 50, source="policy", valid_from=BEFORE_FALL_BACK, known_at=BEFORE_FALL_BACK
    )
    first = store.facts.history(key)[0]
    store.evidence.add(first.version_id, "the attachment limit is fifty megabytes")
    artifact = store.provenance.record(
        "chunk", f"tz-{key.entity}", versions=[first.version_id], derived_at=BETWEEN
    )
    store.facts.record(
        key,
        80,
        source="policy",
        valid_from=BEFORE_FALL_BACK,
        valid_to=AFTER_FALL_BACK,
        known_at=AFTER_FALL_BACK,
    )
    store.facts.record(
        far,
        1,
        source="policy",
        valid_from=BEFORE_FALL_BACK,
        valid_to=FAR_END,
        known_at=BEFORE_FALL_BACK,
    )
    store.facts.record(
        far, 2, source="policy", valid_from=FAR_END, valid_to=LAST_DAY, known_at=BETWEEN
    )

    schema = f"tz_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    conn.execute(
        sql.SQL("CREATE TABLE {} (sku text, seen timestamptz NOT NULL)").format(
            sql.Identifier(schema, "item")
        )
    )
    conn.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['sku'])", (f"{schema}.item",))
    table = f"{schema}.item"
    store.app_tables.record(
        table,
        {"sku": "A", "seen": BEFORE_FALL_BACK},
        valid_from=BEFORE_FALL_BACK,
        known_at=BEFORE_FALL_BACK,
    )
    store.app_tables.record(
        table,
        {"sku": "A", "seen": LAST_DAY},
        valid_from=BETWEEN,
        valid_to=FAR_END,
        known_at=AFTER_FALL_BACK,
    )
    namespace = f"tz-{key.entity}"
    memory = store.memory(namespace)
    memory.register("item", key=key)
    yield {
        "key": key,
        "far": far,
        "table": table,
        "namespace": namespace,
        "artifact": artifact.artifact_id,
    }
    conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (table,))
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def answers(store: Store, world: dict[str, Any]) -> dict[str, Any]:
    """Every read of the library, asked about the world."""
    key, far, table = world["key"], world["far"], world["table"]
    facts = store.facts
    return {
        "as_of": facts.as_of(key, valid_at=BETWEEN, known_at=BETWEEN),
        "as_of_now": facts.as_of(key, valid_at=BETWEEN),
        "resolve_then": facts.resolve(key, valid_at=BETWEEN, known_at=BETWEEN, now=AFTER_FALL_BACK),
        "resolve_now": facts.resolve(
            key, valid_at=BETWEEN, known_at=AFTER_FALL_BACK, now=AFTER_FALL_BACK
        ),
        "explain": facts.explain(key, valid_at=BETWEEN, known_at=BETWEEN, now=AFTER_FALL_BACK),
        "history": facts.history(key),
        "far_history": facts.history(far),
        "changes": facts.changes(BEFORE_FALL_BACK, datetime(2026, 10, 26, tzinfo=UTC), key=key),
        "stale": [a for a in store.provenance.stale() if a.artifact_id == world["artifact"]],
        "artifact": store.provenance.get(world["artifact"]),
        "search": store.evidence.search("fifty", valid_at=BETWEEN, known_at=BETWEEN, key=key),
        "table_as_of": store.app_tables.as_of(table, valid_at=BETWEEN, known_at=AFTER_FALL_BACK),
        "table_history": store.app_tables.history(table, {"sku": "A"}),
        "table_changes": store.app_tables.changes(table),
        "memory": store.memory(world["namespace"]).items(),
    }


def test_every_answer_is_the_same_in_every_session_time_zone(
    world: dict[str, Any], connect: Callable[..., psycopg.Connection[Any]]
) -> None:
    results = {}
    for zone in ZONES:
        conn = connect()
        conn.execute(sql.SQL("SET TimeZone = {}").format(sql.Literal(zone)))
        results[zone] = answers(Store(conn), world)
    expected = results["UTC"]
    # The questions reach what they are meant to: the fall-back, the supersession, year 9999.
    assert expected["history"][0].known_period == Period(BEFORE_FALL_BACK, AFTER_FALL_BACK)
    assert expected["resolve_then"].value == 50 and expected["resolve_now"].value == 80
    # An end from 9999-12-30 00:00Z on is the end-of-time sentinel: open.
    assert [v.valid_period.end for v in expected["far_history"]] == [FAR_END, None]
    assert [c.kind for c in expected["changes"]].count("superseded") == 1
    assert len(expected["stale"]) == 1 and len(expected["search"]) == 1
    assert expected["table_history"][-1].row["seen"] == LAST_DAY
    for zone in ZONES:
        for question, answer in results[zone].items():
            assert answer == expected[question], (zone, question)
            # Same instants and the same representation: every instant comes back in UTC.
            assert repr(answer) == repr(expected[question]), (zone, question)


def test_an_end_late_in_year_9999_is_open_only_when_it_is(
    store: Store, connect: Callable[..., psycopg.Connection[Any]]
) -> None:
    key = Key(f"tz:{uuid.uuid4().hex}", "far")
    store.facts.record(key, 1, source="s", valid_from=BEFORE_FALL_BACK, valid_to=FAR_END)
    conn = connect()
    conn.execute("SET TimeZone = 'Pacific/Kiritimati'")
    [version] = Store(conn).facts.history(key)
    assert not version.valid_period.is_open
    assert version.valid_period.end == FAR_END
    assert Period.of(BEFORE_FALL_BACK, FAR_END).end == FAR_END
