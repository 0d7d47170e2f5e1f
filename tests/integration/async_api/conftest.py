"""The sync API's behaviour tests, run again against the async API.

Each module of this directory collects one of the sync API's own behaviour test
modules (worked example, record/retract/as_of/resolve/history/changes, errors,
memory, evidence, provenance, application tables, explain) with
:func:`shared`. Here their ``store`` fixture is an :class:`bitemporal.AsyncStore`
on a psycopg ``AsyncConnection``, driven through :class:`Blocking`, which awaits
every call on an event loop: the same assertions then hold for the async API, call
for call (results, types, errors, and the database left unchanged by a refused
write).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

import bitemporal
from bitemporal.operations import AsyncRepository


class Blocking:
    """An async object seen as a sync one: each call (and awaitable attribute, such as
    ``AsyncMemory.turn``) is run to completion on ``loop``; repositories and async
    context managers come back wrapped the same way."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop, **extra: Any) -> None:
        self._target = target
        self._loop = loop
        self.__dict__.update(extra)

    def _wrap(self, value: Any) -> Any:
        if inspect.isawaitable(value):
            value = self._loop.run_until_complete(value)
        if isinstance(value, AsyncRepository):
            return Blocking(value, self._loop)
        if hasattr(value, "__aenter__"):
            return self._context(value)
        return value

    @contextmanager
    def _context(self, manager: Any) -> Iterator[Any]:
        entered = self._loop.run_until_complete(manager.__aenter__())
        try:
            yield self._wrap(entered)
        except BaseException as exc:
            if not self._loop.run_until_complete(
                manager.__aexit__(type(exc), exc, exc.__traceback__)
            ):
                raise
        else:
            self._loop.run_until_complete(manager.__aexit__(None, None, None))

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if callable(value) and not isinstance(value, AsyncRepository):
            return lambda *args, **kwargs: self._wrap(value(*args, **kwargs))
        return self._wrap(value)

    def __repr__(self) -> str:
        return f"Blocking({self._target!r})"


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture
def store(database_url: str, connect: Any, loop: asyncio.AbstractEventLoop) -> Iterator[Any]:
    """An AsyncStore on an autocommit AsyncConnection, seen through Blocking; its
    ``connection`` (for the tests' own snapshots) is a sync connection to the same database."""
    conn = loop.run_until_complete(psycopg.AsyncConnection.connect(database_url, autocommit=True))
    yield Blocking(bitemporal.AsyncStore(conn), loop, connection=connect())
    loop.run_until_complete(conn.close())


def shared(name: str, *, sync_only: tuple[str, ...] = ()) -> dict[str, Any]:
    """The tests and fixtures of the sync test module ``tests/integration/<name>.py``,
    to collect in a module of this directory (under this directory's ``store``), but
    for the tests named in ``sync_only``."""
    module = importlib.import_module(f"tests.integration.{name}")
    return {
        key: value
        for key, value in vars(module).items()
        if (key.startswith("test_") and key not in sync_only)
        or type(value).__name__ == "FixtureFunctionDefinition"
    }
