"""bitemporal.resolve_versions (migration 0025): resolve's answer with the versions it rests
on, in one call, as the Python API's resolve asks it. The answer is resolve's, the versions
are as_of's at the answer's question, and its errors are resolve's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from bitemporal import Key, Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)

_BOTH = """
    SELECT (r.answer)::text, (r.version).version_id
      FROM bitemporal.resolve_versions(%(e)s, %(a)s, %(valid_at)s, %(known_at)s, %(present)s) r
"""
_APART = """
    SELECT r::text, v.version_id
      FROM bitemporal.resolve(%(e)s, %(a)s, %(valid_at)s, %(known_at)s, %(present)s) r
      LEFT JOIN bitemporal.as_of(%(e)s, %(a)s, r.valid_at, r.known_at) v ON true
     ORDER BY v.version_id
"""


def test_the_answer_is_resolves_and_the_versions_are_as_ofs(
    store: Store, key: Key, raw: psycopg.Connection[Any]
) -> None:
    # Two sources over a year, one corrected and one retracted later: conflicts, support,
    # nothing yet, and answers about knowledge before each change.
    store.facts.record(key, 1, source="a", valid_from=T0, known_at=T0)
    store.facts.record(key, 2, source="b", valid_from=T0, known_at=T0 + timedelta(days=2))
    store.facts.record(
        key, 3, source="a", valid_from=T0 + timedelta(days=5), known_at=T0 + timedelta(days=6)
    )
    store.facts.retract(key, source="b", valid_from=T0, known_at=T0 + timedelta(days=8))
    present = T0 + timedelta(days=10)
    for valid_day in (-1, 0, 3, 5, 9):
        for known_day in (0, 1, 2, 6, 8, 10):
            params = {
                "e": key.entity,
                "a": key.attribute,
                "valid_at": T0 + timedelta(days=valid_day, hours=12),
                "known_at": T0 + timedelta(days=known_day, hours=1),
                "present": present + timedelta(days=1),
            }
            both = raw.execute(_BOTH, params).fetchall()
            assert both == raw.execute(_APART, params).fetchall(), params
            # Ordered by version id, a row with no version only when none is eligible.
            ids = [version_id for _, version_id in both]
            assert ids == sorted(ids) or ids == [None], both


def test_no_eligible_version_is_one_row_without_a_version(
    store: Store, key: Key, raw: psycopg.Connection[Any]
) -> None:
    store.facts.record(key, 1, source="a", valid_from=T0)
    rows = raw.execute(
        "SELECT (r.answer).status::text, r.version IS NULL"
        "  FROM bitemporal.resolve_versions(%s, %s, valid_at => %s) r",
        (key.entity, key.attribute, T0 - timedelta(days=1)),
    ).fetchall()
    assert rows == [("missing", True)]


@pytest.mark.parametrize(
    ("entity", "known_at", "sqlstate"),
    [
        ("test:never-written", None, "BT004"),
        (None, datetime(2999, 1, 1, tzinfo=UTC), "BT003"),
        ("", None, "BT005"),
    ],
    ids=["unknown key", "knowledge after the present", "malformed entity"],
)
def test_its_errors_are_resolves(
    store: Store,
    key: Key,
    raw: psycopg.Connection[Any],
    entity: str | None,
    known_at: datetime | None,
    sqlstate: str,
) -> None:
    store.facts.record(key, 1, source="a")
    args = (key.entity if entity is None else entity, key.attribute, None, known_at)
    for function in ("resolve", "resolve_versions"):
        with pytest.raises(psycopg.Error) as failure:
            raw.execute(f"SELECT * FROM bitemporal.{function}(%s, %s, %s, %s)", args)
        assert failure.value.sqlstate == sqlstate, function
