"""The psql audit surface: facts in force now, conflicts now, the retrospective diff."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from bitemporal import (
    InvalidInputError,
    Key,
    KnowledgeTimeInFutureError,
    Store,
    UnknownKeyError,
    errors,
)
from bitemporal.plot import draw


def at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)


def rows(conn: Any, query: str, *args: object) -> list[tuple[Any, ...]]:
    with errors.translate():
        return conn.execute(query, args).fetchall()


def test_facts_and_conflicts_now(store: Store, key: Key) -> None:
    store.facts.record(key, 80, source="policy", valid_from=date(2026, 1, 1))
    store.facts.record(key, 90, source="forum", valid_from=date(2026, 1, 1))
    store.facts.record(key, 70, source="policy", valid_to=date(2026, 1, 1))  # not in force now
    now = rows(
        store.connection,
        "SELECT source, value FROM bitemporal.facts_now WHERE entity = %s ORDER BY source",
        key.entity,
    )
    assert now == [("forum", 90), ("policy", 80)]
    assert rows(
        store.connection,
        'SELECT "values", sources FROM bitemporal.conflicts_now WHERE entity = %s',
        key.entity,
    ) == [([80, 90], ["forum", "policy"])]


def test_retrospective_diff(store: Store, key: Key) -> None:
    store.facts.record(
        key, 50, source="policy", valid_from=date(2026, 1, 1), known_at=at("2025-12-15")
    )
    store.facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-03")
    )
    query = (
        "SELECT status_then::text, values_then, status_now::text, values_now, changed "
        "FROM bitemporal.retrospective_diff(%s, %s, %s, %s, %s)"
    )
    diff = rows(
        store.connection,
        query,
        key.entity,
        key.attribute,
        at("2026-09-02"),
        at("2026-09-02"),
        at("2026-09-29"),
    )
    assert diff == [("supported", [50], "supported", [80], True)]
    same = rows(
        store.connection,
        query,
        key.entity,
        key.attribute,
        at("2026-06-01"),
        at("2026-06-01"),
        at("2026-09-29"),
    )
    assert same[0][-1] is False


def test_retrospective_diff_bad_input(store: Store, key: Key) -> None:
    with pytest.raises(UnknownKeyError):
        rows(
            store.connection,
            "SELECT * FROM bitemporal.retrospective_diff(%s, %s, now(), now())",
            key.entity,
            key.attribute,
        )
    store.facts.record(key, 1, source="s")
    with pytest.raises(KnowledgeTimeInFutureError):
        rows(
            store.connection,
            "SELECT * FROM bitemporal.retrospective_diff(%s, %s, now(), %s, %s)",
            key.entity,
            key.attribute,
            at("2026-09-29"),
            at("2026-09-02"),
        )


def test_nothing_to_draw(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="nothing to draw"):
        draw([], tmp_path / "empty.png", title="empty", now=at("2026-09-29"))
    assert not (tmp_path / "empty.png").exists()
