"""Repository operations written once, for the sync and the async API.

Each repository method (``Facts.record``, ``Memory.step``, ...) is written as a
generator decorated with :func:`operation`: it checks its arguments, yields the
statements it needs (:class:`Statement`, :class:`Copy`), receives each one's rows
and returns the decoded result. It never touches a connection. A runner
(:mod:`bitemporal.runners`) executes it: :class:`~bitemporal.runners.Runner`
for :class:`~bitemporal.Store`, :class:`~bitemporal.runners.AsyncRunner` for
:class:`~bitemporal.AsyncStore`. So the SQL, its arguments and the decoding of
its rows exist once, and the two APIs cannot drift apart.

On a repository of the sync API (:class:`SyncRepository`) an operation is a
method returning its result; on one of the async API (:class:`AsyncRepository`)
the same method returns an awaitable. Arguments are checked when the method is
called, before any I/O: the async API raises a bad argument at the call, as the
sync API does, not at the ``await``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass, replace
from enum import Enum
from types import MethodType
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from .errors import SerializationError

P = ParamSpec("P")
T = TypeVar("T")


class Access(Enum):
    """How an operation uses the connection (see :mod:`bitemporal.runners`)."""

    #: Reads only.
    READ = "read"
    #: Writes with one statement: alone on an idle autocommit connection, else atomic.
    WRITE = "write"
    #: Several statements that must be atomic together.
    TRANSACTION = "transaction"


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement; the runner sends back its rows (a list, empty if it returns none),
    as tuples, or as dicts when ``dicts``. ``binary``: results in PostgreSQL's binary
    format, read without parsing text (:func:`bitemporal.adapters.cursor`), for
    statements whose instants are all finite. ``snapshot``: a read whose parts must come
    from one snapshot (:func:`whole` asks again with it); where the call owns the
    connection's transaction (an idle autocommit connection, or one a read borrowed from a
    pool) the runner gives it a ``REPEATABLE READ`` transaction of its own.
    ``unprepared``: the same statement (same parameters, same rows) to send instead on a
    connection that never prepares (psycopg's ``prepare_threshold`` None, as behind a
    pooler in transaction mode), for a statement whose planning costs more than running
    it."""

    sql: Any  # str or a psycopg.sql.Composable
    params: Any = None
    dicts: bool = False
    binary: bool = False
    snapshot: bool = False
    unprepared: str | None = None


@dataclass(frozen=True, slots=True)
class Copy:
    """``COPY ... FROM STDIN`` of ``rows``; the runner sends back an empty list."""

    sql: str
    rows: Iterable[tuple[Any, ...]]


Step = Statement | Copy
#: What an operation's generator is: it yields steps, receives rows, returns ``T``.
Steps = Generator[Step, Any, T]


@dataclass(frozen=True, slots=True)
class Done(Generic[T]):
    """An operation's result (the generator has returned)."""

    value: T


def start(steps: Steps[T]) -> Step | Done[T]:
    """Run an operation up to its first statement (its checks, no I/O)."""
    return advance(steps, None)


def advance(steps: Steps[T], rows: Any) -> Step | Done[T]:
    """Send ``rows`` (None to start) into an operation: its next step, or its result."""
    try:
        return steps.send(rows)
    except StopIteration as stop:
        return Done(stop.value)


def one(rows: list[Any]) -> Any:
    """The single row a statement returns."""
    assert len(rows) == 1, "the statement returns exactly one row"
    return rows[0]


#: How many times :func:`whole` asks a statement whose parts disagree.
READ_ATTEMPTS = 10


def whole(statement: Statement, agrees: Callable[[list[Any]], bool], what: str) -> Steps[list[Any]]:
    """The rows of ``statement`` (a read) once ``agrees`` finds its parts read from one
    state of the store. On one node a statement reads one snapshot and they always
    agree. On Citus each query that a statement (or a function it calls on the
    coordinator) sends to the key's worker takes a snapshot of its own under READ
    COMMITTED: a write committed between two of them makes the parts disagree, and the
    statement is asked again, :data:`READ_ATTEMPTS` times at most. Asked again, it
    asks for one snapshot (``Statement.snapshot``): on an idle autocommit connection, or
    one a read borrowed from a pool, it runs in a ``REPEATABLE READ`` transaction, in
    which Citus sends its queries to the worker in one transaction at that level, so the
    second answer is whole. In the caller's transaction the isolation is the caller's,
    and the statement is asked again as it is."""
    for attempt in range(READ_ATTEMPTS):
        rows: list[Any] = yield statement if attempt == 0 else replace(statement, snapshot=True)
        if agrees(rows):
            return rows
    raise SerializationError(
        f"{what} changed under each of {READ_ATTEMPTS} attempts to read it whole",
        hint=SerializationError.default_hint,
    )


class SyncRunning(Protocol):
    """What runs an operation for the sync API (:class:`bitemporal.runners.Runner`)."""

    def run(self, access: Access, steps: Steps[T], first: Step | Done[T]) -> T: ...

    @property
    def pooled(self) -> bool: ...


class AsyncRunning(Protocol):
    """What runs an operation for the async API (:class:`bitemporal.runners.AsyncRunner`)."""

    def run(self, access: Access, steps: Steps[T], first: Step | Done[T]) -> Awaitable[T]: ...


class SyncRepository:
    """A repository of the sync API: operations return their results."""

    def __init__(self, runner: SyncRunning) -> None:
        self._runner = runner

    @property
    def pooled(self) -> bool:
        """Whether each call borrows a connection of its own from a pool, so that several
        threads may call at once (on one connection they would share its transaction)."""
        return self._runner.pooled


class AsyncRepository:
    """A repository of the async API: operations return awaitables."""

    def __init__(self, runner: AsyncRunning) -> None:
        self._runner = runner


class operation(Generic[P, T]):
    """Make a generator method (see the module docstring) a repository method.

    ``access`` says how it uses the connection.
    """

    def __init__(self, access: Access, build: Callable[Concatenate[Any, P], Steps[T]]) -> None:
        self.access = access
        self.build = build
        functools.update_wrapper(self, build)  # type: ignore[arg-type]

        # Built once: an attribute lookup on a repository then only binds it (a bound
        # method, as for any method), where a wrapper per lookup cost a few microseconds
        # of every call (issue 15).
        @functools.wraps(build)
        def method(repository: Any, *args: Any, **kwargs: Any) -> Any:
            steps = build(repository, *args, **kwargs)
            return repository._runner.run(access, steps, start(steps))

        self._method = method

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> operation[P, T]: ...
    @overload
    def __get__(self, instance: AsyncRepository, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    @overload
    def __get__(self, instance: SyncRepository, owner: type[Any]) -> Callable[P, T]: ...

    def __get__(self, instance: Any, owner: type[Any]) -> Any:
        if instance is None:
            return self
        return MethodType(self._method, instance)


def reads(build: Callable[Concatenate[Any, P], Steps[T]]) -> operation[P, T]:
    """An operation that only reads."""
    return operation(Access.READ, build)


def writes(build: Callable[Concatenate[Any, P], Steps[T]]) -> operation[P, T]:
    """An operation that writes with one statement."""
    return operation(Access.WRITE, build)


def transaction(build: Callable[Concatenate[Any, P], Steps[T]]) -> operation[P, T]:
    """An operation whose statements must be atomic together."""
    return operation(Access.TRANSACTION, build)
