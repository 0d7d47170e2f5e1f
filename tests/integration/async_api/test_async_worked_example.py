"""tests/integration/test_worked_example.py, run against the async API (see conftest.py)."""

import inspect

import bitemporal
from tests.integration.async_api.conftest import shared

globals().update(shared("test_worked_example"))


def test_the_store_is_the_async_api(store: object) -> None:
    """The adapter really drives an AsyncStore: its repositories are the async ones and
    their methods return awaitables."""
    target = store._target  # type: ignore[attr-defined]
    assert isinstance(target, bitemporal.AsyncStore)
    assert isinstance(target.facts, bitemporal.AsyncFacts)
    pending = target.facts.as_of(bitemporal.Key("e", "a"))
    assert inspect.isawaitable(pending)
    assert store._loop.run_until_complete(pending) == []  # type: ignore[attr-defined]
