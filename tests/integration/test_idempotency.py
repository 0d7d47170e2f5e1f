"""The same record submitted twice with an idempotency key is applied once."""

from __future__ import annotations

import threading
import uuid
from datetime import date
from typing import Any

import pytest

from bitemporal import IdempotencyKeyReusedError, Key, Recorded, Store


def test_a_retry_returns_the_first_result(store: Store, key: Key) -> None:
    token = uuid.uuid4().hex
    first = store.facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), idempotency_key=token
    )
    store.facts.record(
        key, 90, source="policy", valid_from=date(2026, 10, 1)
    )  # something else happens
    again = store.facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), idempotency_key=token
    )
    assert again == first and first.created
    assert [v.value for v in store.facts.history(key)].count(
        80
    ) == 2  # the version and its remainder


def test_a_key_reused_for_another_request_is_refused(store: Store, key: Key) -> None:
    token = uuid.uuid4().hex
    store.facts.record(key, 80, source="policy", idempotency_key=token)
    before = store.facts.history(key)
    with pytest.raises(IdempotencyKeyReusedError, match="different request"):
        store.facts.record(key, 81, source="policy", idempotency_key=token)
    assert store.facts.history(key) == before


def test_a_rolled_back_attempt_does_not_count(store: Store, key: Key) -> None:
    token = uuid.uuid4().hex
    with pytest.raises(RuntimeError), store.transaction():
        store.facts.record(key, 80, source="policy", idempotency_key=token)
        raise RuntimeError("the reply was lost")
    result = store.facts.record(key, 80, source="policy", idempotency_key=token)
    assert result.created and len(store.facts.history(key)) == 1


def test_concurrent_retries_apply_once(connect: Any, key: Key) -> None:
    token = uuid.uuid4().hex
    results: list[Recorded] = []
    barrier = threading.Barrier(4)

    def attempt() -> None:
        store = Store(connect())
        barrier.wait()
        results.append(store.facts.record(key, 80, source="policy", idempotency_key=token))

    threads = [threading.Thread(target=attempt) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 4 and len(set(results)) == 1
    assert len(Store(connect()).facts.history(key)) == 1
