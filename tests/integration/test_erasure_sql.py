"""Erasure in SQL (migration 0012): the record, the guard, the answers, the roles."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

import bitemporal
from bitemporal import Explanation, Status, migrations
from tests.helpers import Connect, eraser_roles


@pytest.fixture
def entity() -> str:
    return f"person:{uuid.uuid4().hex}"


def record(
    conn: psycopg.Connection[Any],
    entity: str,
    attribute: str,
    source: str,
    value: str,
    valid_from: str | None = None,
    valid_to: str | None = None,
) -> int:
    row = conn.execute(
        "SELECT version_id FROM bitemporal.record(%s, %s, %s, %s::jsonb, %s, %s)",
        (entity, attribute, source, value, valid_from, valid_to),
    ).fetchone()
    assert row is not None
    return int(row[0])


def snapshot(conn: psycopg.Connection[Any], entity: str) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT version_id, value, erasure_id, known_period FROM bitemporal.fact_version "
        "WHERE entity = %s ORDER BY version_id",
        (entity,),
    ).fetchall()


def test_erase_clears_values_keeps_the_shape_and_records_it(
    raw: psycopg.Connection[Any], entity: str
) -> None:
    v1 = record(raw, entity, "email", "crm", '"a@example.com"', "2026-01-01")
    v2 = record(raw, entity, "email", "crm", '"b@example.com"', "2026-06-01")
    other = record(raw, entity, "name", "crm", '"Ann"')
    before = raw.execute(
        "SELECT version_id, source, valid_period, known_period FROM bitemporal.fact_version "
        "WHERE entity = %s AND attribute = 'email' ORDER BY version_id",
        (entity,),
    ).fetchall()
    raw.row_factory = dict_row
    rows = raw.execute(
        "SELECT * FROM bitemporal.erase(%s, 'email', 'GDPR art. 17, request 42')", (entity,)
    ).fetchall()
    assert len(rows) == 1
    e = rows[0]
    assert e["scope"] == "fact" and e["entity"] == entity and e["attribute"] == "email"
    assert e["reason"] == "GDPR art. 17, request 42"
    assert set(e["version_ids"]) >= {v1, v2} and other not in e["version_ids"]
    assert e["erased_by"] == raw.execute("SELECT session_user AS u").fetchone()["u"]  # type: ignore[index]
    raw.row_factory = psycopg.rows.tuple_row
    after = raw.execute(
        "SELECT version_id, source, valid_period, known_period FROM bitemporal.fact_version "
        "WHERE entity = %s AND attribute = 'email' ORDER BY version_id",
        (entity,),
    ).fetchall()
    assert after == before
    values = raw.execute(
        "SELECT value, erasure_id IS NOT NULL FROM bitemporal.fact_version "
        "WHERE entity = %s AND attribute = 'email'",
        (entity,),
    ).fetchall()
    assert values and all(v == (None, True) for v in values)
    assert raw.execute(
        "SELECT value FROM bitemporal.fact_version WHERE version_id = %s", (other,)
    ).fetchone() == ("Ann",)
    # Idempotent: nothing new.
    assert (
        raw.execute("SELECT * FROM bitemporal.erase(%s, 'email', 'again')", (entity,)).fetchall()
        == []
    )
    assert raw.execute(
        "SELECT count(*) FROM bitemporal.erasures WHERE entity = %s", (entity,)
    ).fetchone() == (1,)
    status = raw.execute(
        "SELECT status::text, value, interpretation::text "
        "FROM bitemporal.resolve(%s, 'email', '2026-07-01')",
        (entity,),
    ).fetchone()
    assert status == ("erased", None, "erased")
    sentence = raw.execute(
        "SELECT bitemporal.explain_sentence(bitemporal.explain(%s, 'email', '2026-07-01'))",
        (entity,),
    ).fetchone()
    assert sentence is not None and "(erased)" in sentence[0] and "erased on" in sentence[0]


def test_the_guard_refuses_a_value_cleared_without_its_record(
    raw: psycopg.Connection[Any], entity: str
) -> None:
    v = record(raw, entity, "email", "crm", '"a@example.com"')
    for statement in (
        "UPDATE bitemporal.fact_version SET value = NULL WHERE version_id = %s",
        "UPDATE bitemporal.fact_version SET value = '\"x\"' WHERE version_id = %s",
        (
            "UPDATE bitemporal.fact_version SET value = NULL, erasure_id = 1, erased_at = now() "
            "WHERE version_id = %s"
        ),
    ):
        with pytest.raises(psycopg.Error) as failure:
            raw.execute(statement, (v,))
        assert failure.value.sqlstate in ("BT006", "23514")
    # An erasure row of another transaction does not authorise it either.
    raw.execute("SELECT bitemporal.erase(%s, 'email', 'request')", (entity,))
    v2 = record(raw, entity, "email", "crm", '"c@example.com"', "2030-01-01")
    erasure = raw.execute(
        "SELECT max(erasure_id) FROM bitemporal.erasures WHERE entity = %s", (entity,)
    ).fetchone()
    assert erasure is not None
    with pytest.raises(psycopg.Error) as failure:
        raw.execute(
            "UPDATE bitemporal.fact_version SET value = NULL, erasure_id = %s, "
            "erased_at = (SELECT erased_at FROM bitemporal.erasures WHERE erasure_id = %s) "
            "WHERE version_id = %s",
            (erasure[0], erasure[0], v2),
        )
    assert failure.value.sqlstate == "BT006"
    for statement in (
        "UPDATE bitemporal.erasures SET reason = 'x' WHERE entity = %s",
        "DELETE FROM bitemporal.erasures WHERE entity = %s",
    ):
        with pytest.raises(psycopg.Error) as failure:
            raw.execute(statement, (entity,))
        assert failure.value.sqlstate == "BT006"
    with pytest.raises(psycopg.Error) as failure:
        raw.execute("TRUNCATE bitemporal.erasures")
    assert failure.value.sqlstate == "BT006"
    # Inserting a value-less version by hand is refused too.
    with pytest.raises(psycopg.Error) as failure:
        raw.execute(
            "INSERT INTO bitemporal.fact_version "
            "(entity, attribute, source, value, valid_period, known_period) "
            "VALUES (%s, 'email', 'other', NULL, tstzrange(NULL, NULL), tstzrange(now(), NULL))",
            (entity,),
        )
    assert failure.value.sqlstate == "BT006"


def test_bad_input_is_refused_and_changes_nothing(
    raw: psycopg.Connection[Any], entity: str
) -> None:
    record(raw, entity, "email", "crm", '"a@example.com"')
    before = snapshot(raw, entity)
    for args, code in (
        ((entity, "email", ""), "BT009"),
        ((entity, "email", "   "), "BT009"),
        ((entity, "email", None), "BT009"),
        ((entity, "phone", "request"), "BT004"),
        (("nobody:" + entity, "email", "request"), "BT004"),
        ((entity, "", "request"), "BT005"),
        ((entity, None, "request"), "BT005"),
    ):
        with pytest.raises(psycopg.Error) as failure:
            raw.execute("SELECT * FROM bitemporal.erase(%s, %s, %s)", args)
        assert failure.value.sqlstate == code, args
    for pair, code in (((entity, ""), "BT009"), (("nobody:" + entity, "request"), "BT004")):
        with pytest.raises(psycopg.Error) as failure:
            raw.execute("SELECT * FROM bitemporal.erase_entity(%s, %s)", pair)
        assert failure.value.sqlstate == code, pair
    assert snapshot(raw, entity) == before
    assert raw.execute(
        "SELECT count(*) FROM bitemporal.erasures WHERE entity = %s", (entity,)
    ).fetchone() == (0,)


def test_later_writes_cut_erased_versions_into_erased_remainders(
    raw: psycopg.Connection[Any], entity: str
) -> None:
    record(raw, entity, "email", "crm", '"a@example.com"')
    raw.execute("SELECT bitemporal.erase(%s, 'email', 'request')", (entity,))
    new = record(raw, entity, "email", "crm", '"new@example.com"', "2030-01-01", "2031-01-01")
    rows = raw.execute(
        "SELECT version_id, value, erasure_id IS NOT NULL, upper_inf(known_period) "
        "FROM bitemporal.fact_version WHERE entity = %s ORDER BY version_id",
        (entity,),
    ).fetchall()
    current = [r for r in rows if r[3]]
    assert [r[1] for r in current if r[0] == new] == ["new@example.com"]
    assert all(r[1] is None and r[2] for r in current if r[0] != new) and len(current) == 3
    statuses = [
        raw.execute(
            "SELECT status::text FROM bitemporal.resolve(%s, 'email', %s)", (entity, t)
        ).fetchone()
        for t in ("2029-01-01", "2030-06-01", "2032-01-01")
    ]
    assert statuses == [("erased",), ("supported",), ("erased",)]
    # A second erasure erases what was recorded since, only that.
    erased = raw.execute(
        "SELECT version_ids FROM bitemporal.erase(%s, 'email', 'again')", (entity,)
    ).fetchall()
    assert erased == [([new],)]


@pytest.fixture
def roles(migrated_database_url: str) -> Iterator[dict[str, str]]:
    """LOGIN roles granted through grant_roles: a reader, a writer and an eraser."""
    with eraser_roles(migrated_database_url, "bt_erase") as roles:
        yield roles


def test_only_the_eraser_may_erase(roles: dict[str, str], entity: str) -> None:
    url = roles["url"]
    with psycopg.connect(url, user=roles["writer"], autocommit=True) as writer:
        record(writer, entity, "email", "crm", '"a@example.com"')
        for role in ("reader", "writer"):
            with psycopg.connect(url, user=roles[role], autocommit=True) as conn:
                for statement, args in (
                    ("SELECT * FROM bitemporal.erase(%s, 'email', 'request')", (entity,)),
                    ("SELECT * FROM bitemporal.erase_entity(%s, 'request')", (entity,)),
                ):
                    with pytest.raises(psycopg.Error) as failure:
                        conn.execute(statement, args)
                    assert failure.value.sqlstate == "42501"
        with psycopg.connect(url, user=roles["reader"], autocommit=True) as reader:
            history = reader.execute(
                "SELECT value, recorded_at IS NOT NULL, erased_at "
                "FROM bitemporal.history(%s, 'email')",
                (entity,),
            ).fetchall()
            assert history == [("a@example.com", True, None)]
        with psycopg.connect(url, user=roles["eraser"], autocommit=True) as eraser:
            rows = eraser.execute(
                "SELECT erased_by FROM bitemporal.erase(%s, 'email', 'request')", (entity,)
            ).fetchall()
            assert rows == [(roles["eraser"],)]
        with psycopg.connect(url, user=roles["reader"], autocommit=True) as reader:
            history = reader.execute(
                "SELECT value, erased_at IS NOT NULL FROM bitemporal.history(%s, 'email')",
                (entity,),
            ).fetchall()
            assert history == [(None, True)]
            with pytest.raises(psycopg.Error) as failure:
                reader.execute("SELECT * FROM bitemporal.erasures")
            assert failure.value.sqlstate == "42501"


def test_owner_cannot_rewrite_an_erased_value(raw: psycopg.Connection[Any], entity: str) -> None:
    v = record(raw, entity, "email", "crm", '"a@example.com"')
    raw.execute("SELECT bitemporal.erase(%s, 'email', 'request')", (entity,))
    with pytest.raises(psycopg.Error) as failure:
        raw.execute(
            "UPDATE bitemporal.fact_version SET value = '\"back\"' WHERE version_id = %s", (v,)
        )
    assert failure.value.sqlstate == "BT006"


def test_entity_wide_erasure(raw: psycopg.Connection[Any], entity: str) -> None:
    record(raw, entity, "email", "crm", '"a@example.com"')
    record(raw, entity, "name", "crm", '"Ann"')
    rows = raw.execute(
        "SELECT attribute, cardinality(version_ids) FROM bitemporal.erase_entity(%s, 'request')",
        (entity,),
    ).fetchall()
    assert rows == [(None, 2)]
    assert raw.execute(
        "SELECT count(*) FROM bitemporal.fact_version WHERE entity = %s AND value IS NOT NULL",
        (entity,),
    ).fetchone() == (0,)
    assert (
        raw.execute("SELECT * FROM bitemporal.erase_entity(%s, 'request')", (entity,)).fetchall()
        == []
    )


def test_evidence_goes_and_dependents_go_stale(connect: Connect, entity: str) -> None:
    conn = connect()
    v = record(conn, entity, "email", "crm", '"a@example.com"')
    conn.execute("SELECT bitemporal.add_evidence(%s, 'write to a@example.com')", (v,))
    artifact = conn.execute(
        "SELECT bitemporal.record_artifact('summary', %s, ARRAY[%s]::bigint[])", (entity, v)
    ).fetchone()
    assert artifact is not None
    listener = connect()
    listener.execute("LISTEN bitemporal_invalidation")
    conn.execute("SELECT bitemporal.erase(%s, 'email', 'request')", (entity,))
    assert conn.execute(
        "SELECT count(*) FROM bitemporal.evidence WHERE version_id = %s", (v,)
    ).fetchone() == (0,)
    stale = conn.execute(
        "SELECT cause::text, reason FROM bitemporal.stale() WHERE artifact_id = %s", (artifact[0],)
    ).fetchall()
    assert len(stale) == 1 and stale[0][0] == "erased" and "erased on" in stale[0][1]
    payloads = [n.payload for n in listener.notifies(timeout=2, stop_after=1)]
    assert payloads and '"change": "erased"' in payloads[0] and str(v) in payloads[0]


def test_conflicts_now_and_the_sentence_leave_erased_values_out(
    raw: psycopg.Connection[Any], entity: str
) -> None:
    record(raw, entity, "email", "crm", '"a@example.com"')
    raw.execute("SELECT bitemporal.erase(%s, 'email', 'request')", (entity,))
    record(raw, entity, "email", "billing", '"b@example.com"')
    record(raw, entity, "email", "support", '"c@example.com"')
    row = raw.execute(
        'SELECT "values", sources FROM bitemporal.conflicts_now WHERE entity = %s', (entity,)
    ).fetchone()
    assert row == (["b@example.com", "c@example.com"], ["billing", "support"])
    sentence = raw.execute(
        "SELECT bitemporal.explain_sentence(bitemporal.explain(%s, 'email'))", (entity,)
    ).fetchone()
    assert sentence is not None
    assert "b@example.com or c@example.com (conflict)" in sentence[0]


def test_a_downgrade_keeps_erasures(migrated_database_url: str, entity: str) -> None:
    """Erased values cannot exist before 0012: going back is refused, forced or not."""
    with psycopg.connect(migrated_database_url, autocommit=True) as conn:
        record(conn, entity, "email", "crm", '"a@example.com"')
        conn.execute("SELECT bitemporal.erase(%s, 'email', 'request')", (entity,))
    for force in (False, True):
        with pytest.raises(bitemporal.BitemporalError):
            migrations.downgrade(migrated_database_url, "0011", force=force)
        assert migrations.current(migrated_database_url) == migrations.head()
    with psycopg.connect(migrated_database_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM bitemporal.erasures WHERE entity = %s", (entity,)
        ).fetchone() == (1,)


def test_python_renders_the_erased_sentence_as_sql_does(
    raw: psycopg.Connection[Any], entity: str
) -> None:
    record(raw, entity, "email", "crm", '"a@example.com"', "2026-01-01")
    raw.execute("SELECT bitemporal.erase(%s, 'email', 'request')", (entity,))
    row = raw.execute(
        "SELECT e, bitemporal.explain_sentence(e) "
        "FROM bitemporal.explain(%s, 'email', '2026-03-01') e",
        (entity,),
    ).fetchone()
    assert row is not None
    explanation = Explanation.from_dict(row[0])
    assert explanation.status is Status.ERASED
    assert explanation.as_dict() == row[0]
    assert explanation.sentence() == row[1]
    assert "no value (erased); erased on" in row[1]
