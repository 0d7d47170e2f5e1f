"""The example service (examples/service) through its test client, against the test
database: the worked example recorded over HTTP answers exactly as the sync API does."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from bitemporal import Key, Store
from examples.service.app import create_app


def at(day: str, hour: int = 12) -> str:
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC).isoformat()


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(database_url)) as client:
        yield client


def test_the_worked_example_over_http(client: TestClient, store: Store, key: Key) -> None:
    path = f"/facts/{key.entity}/{key.attribute}"
    for value, source, valid_from, valid_to, known_at in [
        (50, "policy", at("2026-01-01", 0), None, at("2025-12-15")),
        (80, "policy", at("2026-09-01", 0), None, at("2026-09-03", 9)),
        (100, "policy", at("2026-10-01", 0), None, at("2026-09-20")),
        (90, "forum", at("2026-09-01", 0), at("2026-10-01", 0), at("2026-09-30")),
    ]:
        response = client.post(
            path,
            json={
                "value": value,
                "source": source,
                "valid_from": valid_from,
                "valid_to": valid_to,
                "known_at": known_at,
            },
        )
        assert response.status_code == 201 and response.json()["created"] is True

    asked = {
        "valid_at": at("2026-09-15"),
        "known_at": at("2026-09-30", 13),
        "now": at("2026-10-02"),
    }
    answer = client.get(path, params=asked).json()
    assert answer["status"] == "conflict" and sorted(answer["sources"]) == ["forum", "policy"]
    expected = store.facts.explain(key, **{k: datetime.fromisoformat(v) for k, v in asked.items()})
    assert answer == expected.as_dict()

    history = client.get(f"{path}/history").json()
    assert [(v["version_id"], v["value"], v["known_to"]) for v in history] == [
        (
            v.version_id,
            v.value,
            v.known_period.end and v.known_period.end.isoformat().replace("+00:00", "Z"),
        )
        for v in store.facts.history(key)
    ]
    assert {v["value"] for v in history} == {50, 80, 90, 100}

    changes = client.get(
        "/changes",
        params={"entity": key.entity, "attribute": key.attribute, "known_from": at("2026-09-20")},
    ).json()
    assert [(c["kind"], c["version"]["version_id"], c["by"]) for c in changes] == [
        (c.kind.value, c.version.version_id, list(c.by))
        for c in store.facts.changes(datetime.fromisoformat(at("2026-09-20")), key=key)
    ]
    assert {c["kind"] for c in changes} == {"learned", "superseded"}


def test_refusals_are_one_json_error(client: TestClient, key: Key) -> None:
    path = f"/facts/{key.entity}/{key.attribute}"
    unknown = client.get(f"{path}/history")
    assert unknown.status_code == 404 and unknown.json()["error"] == "UnknownKeyError"
    naive = client.post(path, json={"value": 1, "source": "s", "valid_from": "2026-01-01T00:00:00"})
    assert naive.status_code == 422 and naive.json()["error"] == "NaiveDatetimeError"
    assert client.get(f"{path}/history").status_code == 404  # nothing was written
