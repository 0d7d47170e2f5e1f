"""What changed in a knowledge window: learned, superseded, retracted."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest

from bitemporal import ChangeKind, InvalidPeriodError, Key, Store


def at(day: str, hour: int = 12) -> datetime:
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC)


@pytest.fixture
def example(store: Store, key: Key) -> dict[str, int]:
    """The worked example, plus a retraction of the forum's claim on 2026-10-02."""
    f = store.facts
    ids = {
        "50": f.record(
            key, 50, source="policy", valid_from=date(2026, 1, 1), known_at=at("2025-12-15")
        ).version_id,
        "80": f.record(
            key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-03", 9)
        ).version_id,
        "100": f.record(
            key, 100, source="policy", valid_from=date(2026, 10, 1), known_at=at("2026-09-20")
        ).version_id,
        "90": f.record(
            key,
            90,
            source="forum",
            valid_from=date(2026, 9, 1),
            valid_to=date(2026, 10, 1),
            known_at=at("2026-09-30"),
        ).version_id,
    }
    [ids["90 retracted"]] = f.retract(key, source="forum", known_at=at("2026-10-02"))
    return ids


def summary(
    store: Store, key: Key, known_from: datetime | None, known_to: datetime | None
) -> list[tuple[str, Any, datetime]]:
    return [
        (c.kind.value, c.version.value, c.at)
        for c in store.facts.changes(known_from, known_to, key=key)
    ]


def test_september(store: Store, key: Key, example: dict[str, int]) -> None:
    assert summary(store, key, at("2026-09-01", 0), at("2026-10-01", 0)) == [
        ("superseded", 50, at("2026-09-03", 9)),  # the 50 MB version, by the 80 MB one
        ("learned", 80, at("2026-09-03", 9)),  # its 50 MB remainder is not "learned"
        ("superseded", 80, at("2026-09-20")),  # the announcement cut the open-ended 80 MB
        ("learned", 100, at("2026-09-20")),
        ("learned", 90, at("2026-09-30")),
    ]


def test_details(store: Store, key: Key, example: dict[str, int]) -> None:
    changes = store.facts.changes(at("2026-09-01"), key=key)
    first = changes[0]
    assert first.kind is ChangeKind.SUPERSEDED and first.version.version_id == example["50"]
    assert first.by == (example["80"],)
    retracted = [c for c in changes if c.kind is ChangeKind.RETRACTED]
    assert [(c.version.version_id, c.at, c.by) for c in retracted] == [
        (example["90"], at("2026-10-02"), ())
    ]
    learned = [c for c in changes if c.kind is ChangeKind.LEARNED]
    assert all(c.version.carried_from is None and c.by == () for c in learned)


def test_windows_are_half_open(store: Store, key: Key, example: dict[str, int]) -> None:
    t = at("2026-09-20")
    assert summary(store, key, t, t + timedelta(microseconds=1)) == [
        ("superseded", 80, t),
        ("learned", 100, t),
    ]
    assert summary(store, key, t - timedelta(hours=1), t) == []
    assert len(summary(store, key, None, None)) == 7  # 4 learned, 2 superseded, 1 retracted
    assert summary(store, key, None, at("2025-12-16")) == [("learned", 50, at("2025-12-15"))]


def test_every_key_or_one(store: Store, key: Key, example: dict[str, int]) -> None:
    other = Key(key.entity + ":other", key.attribute)
    store.facts.record(other, 1, source="s", known_at=at("2026-09-10"))
    window = (at("2026-09-10"), at("2026-09-11"))
    everything = store.facts.changes(*window)
    assert ("learned", other) in {(c.kind.value, c.version.key) for c in everything}
    assert store.facts.changes(*window, key=key) == []


def test_sql(connect: Any, key: Key, example: dict[str, int]) -> None:
    rows = (
        connect()
        .execute(
            "SELECT change::text, version_id FROM bitemporal.changes('2026-10-01', '2026-10-03', %s, %s)",
            (key.entity, key.attribute),
        )
        .fetchall()
    )
    assert rows == [("retracted", example["90"])]


def test_inverted_window(store: Store, connect: Any) -> None:
    with pytest.raises(InvalidPeriodError):
        store.facts.changes(at("2026-10-01"), at("2026-09-01"))
    with pytest.raises(psycopg.Error) as caught:
        connect().execute("SELECT * FROM bitemporal.changes('2026-10-01', '2026-10-01')")
    assert caught.value.sqlstate == "BT001"
