"""The embedded server stops when its last live client exits, even after a client was killed.

Each client is a process of its own using bitemporal.database.embedded_url on one data
directory, as CLI runs and applications without a database URL do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

# A client: starts (or reuses) the server, says its URL, and exits when its stdin closes.
CLIENT = """
import sys
from pathlib import Path
from bitemporal.database import embedded_url
print(embedded_url(Path(sys.argv[1])), flush=True)
sys.stdin.read()
"""


def postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "postmaster.pid").read_text().splitlines()[0])


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def data_dir(embedded_home: Path) -> Iterator[Path]:
    path = embedded_home / "pgdata"
    yield path
    # Whatever the test found, leave no server behind.
    if (path / "postmaster.pid").exists() and running(pid := postmaster_pid(path)):
        os.kill(pid, signal.SIGINT)
        stopped_within(pid, 30)


Client = Callable[[Path], tuple[subprocess.Popen[str], str]]


@pytest.fixture
def client() -> Iterator[Client]:
    """Starts a client on a data directory: its process and the URL it said. Every client
    is ended and reaped at teardown, so that a failed test leaves no process or pipe behind
    (unreaped, they were reported as warnings in whichever test ran next)."""
    processes: list[subprocess.Popen[str]] = []

    def start(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
        process = subprocess.Popen(
            [sys.executable, "-c", CLIENT, str(data_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        processes.append(process)
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("postgresql://"):
            _, err = process.communicate(timeout=60)
            pytest.fail(f"the client said {url!r}, exit code {process.returncode}:\n{err}")
        return process, url

    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=60)


def exit_normally(process: subprocess.Popen[str]) -> None:
    _, err = process.communicate(timeout=60)  # closes its stdin, then waits
    assert process.returncode == 0, err


def stopped_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_killed_client_does_not_keep_the_server_running(data_dir: Path, client: Client) -> None:
    killed, url = client(data_dir)
    normal, same_url = client(data_dir)
    assert same_url == url
    pid = postmaster_pid(data_dir)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    # The killed client's share is gone; the other client still uses the server.
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    exit_normally(normal)
    assert stopped_within(pid, 30), "the server outlived its last client"


def test_the_server_stays_up_while_a_client_lives(data_dir: Path, client: Client) -> None:
    first, url = client(data_dir)
    second, _ = client(data_dir)
    pid = postmaster_pid(data_dir)
    exit_normally(first)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert running(pid)
    exit_normally(second)
    assert stopped_within(pid, 30)


# A process whose first start fails (a file where the data directory goes), then, the file
# gone, starts the server: says the error's class, then the URL, and exits.
RETRY = """
import os, sys
from pathlib import Path
from bitemporal.database import embedded_url
from bitemporal.errors import ConfigurationError
path = Path(sys.argv[1])
path.write_text("not a data directory")
try:
    embedded_url(path)
except ConfigurationError as exc:
    print(type(exc).__name__, flush=True)
os.remove(path)
print(embedded_url(path), flush=True)
"""


def test_a_failed_start_can_be_retried_in_the_same_process(data_dir: Path) -> None:
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-c", RETRY, str(data_dir)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    error, url = result.stdout.splitlines()
    assert error == "ConfigurationError" and url.startswith("postgresql://"), result.stdout
    # The server was started by the retry and stopped when its only client exited.
    assert not (data_dir / "postmaster.pid").exists()
