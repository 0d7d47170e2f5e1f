"""Hostile command lines and import files: each ends in one line ``bitemporal: error: ...``
on stderr (exit 2 for a malformed command line, 1 for a refused or failed operation), never
a traceback, and leaves the store as it was.

The error paths of bitemporal/cli.py and where they are exercised:

* ``_Parser.error`` (argparse: missing/unknown arguments, commands, choices), exit 2:
  "no command", "unknown option", "db bad subcommand", "import bad --format", ...;
* ``_instant_arg``, ``_count_arg``, ``_url_arg`` (a bad time, count, empty URL), exit 2:
  "record bad date", "resolve bad now", "import batch size 5000 digits", "empty --url";
* ``parse_value`` (not JSON, a number too long, nesting too deep), exit 1: "record not
  JSON", "record 5000-digit integer", "record deep nesting";
* ``_open`` / ``_unreachable`` (no server, malformed or foreign URL, missing database),
  exit 1: "unreachable server", "malformed URL", ..., and
  :func:`test_the_unreachable_server_of_issue_13` through the console script;
* ``_db`` (offline ``db sql`` errors, an unknown revision, a server error), exit 1: "db sql
  unknown revision", "db upgrade unknown revision", "db upgrade on an unreachable server",
  ...; a downgrade dropping data without ``--force``: tests/migrations/test_downgrade_guard.py;
* ``_demo`` (its scratch database on an unreachable server), exit 1: "demo on an unreachable
  server", "demo malformed URL";
* a BitemporalError of the store (every command), exit 1: the record/retract/resolve/history
  cases; an unmigrated database: test_cli.py's ``test_the_embedded_database_is_announced``;
* ``_import``'s ImportFailed (the error line, then the bad rows indented), exit 1: the
  "import <file>" cases;
* ``main``'s OSError (a file to read or write), exit 1: "plot into a missing directory",
  "import a directory", ...; the plot extra missing (ConfigurationError):
  :func:`test_plot_without_matplotlib`;
* ``main``'s KeyboardInterrupt, exit 130:
  :func:`test_an_interrupted_import_is_one_line_and_writes_nothing`;
* ``main``'s last resort (any other exception, "unexpected ... please report this") is
  reached by no known input: every case asserts it was not used.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from bitemporal import Key, Store, cli

USAGE, FAILURE = 2, 1
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5_000
UNREACHABLE = "postgresql://127.0.0.1:1/x"


def _jsonl(**fields: Any) -> str:
    row = {"entity": "hostile:e", "attribute": "a", "source": "s", "value": 1, **fields}
    return json.dumps(row) + "\n"


#: File name -> bytes, written into a temporary directory for the import cases.
FILES: dict[str, bytes] = {
    "huge.jsonl": (
        '{"entity": "hostile:e", "attribute": "a", "source": "s", "value": ' + HUGE + "}\n"
    ).encode(),
    "deep.jsonl": (
        '{"entity": "hostile:e", "attribute": "a", "source": "s", "value": ' + DEEP + "}\n"
    ).encode(),
    "huge.csv": f"entity,attribute,source,value\nhostile:e,a,s,{HUGE}\n".encode(),
    "deep.csv": f"entity,attribute,source,value\nhostile:e,a,s,{DEEP}\n".encode(),
    "latin1.csv": "entity,attribute,source,value\nhostile:é,a,s,1\n".encode("latin-1"),
    "latin1.jsonl": '{"entity": "hostile:é", "attribute": "a", "source": "s", "value": 1}\n'.encode(
        "latin-1"
    ),
    "garbage.jsonl": bytes(range(256)) * 4,
    "surrogate.jsonl": b'{"entity": "hostile:\\ud800", "attribute": "a", "source": "s", '
    b'"value": 1}\n',
    "surrogate_value.jsonl": b'{"entity": "hostile:e", "attribute": "a", "source": "s", '
    b'"value": "\\udfff"}\n',
    "nul.jsonl": _jsonl(recorded_by="a\x00b").encode(),
    "nul_value.jsonl": _jsonl(value="a\x00b").encode(),
    "array.jsonl": b"[1, 2, 3]\n",
    "not_json.jsonl": b"{nope\n",
    "null_value.jsonl": b'{"entity": "hostile:e", "attribute": "a", "source": "s", '
    b'"value": null}\n',
    "bad_date.jsonl": _jsonl(valid_from="2026-02-30").encode(),
    "naive_time.jsonl": _jsonl(valid_from="2026-01-01T09:00").encode(),
    "huge_year.jsonl": _jsonl(valid_from="99999-01-01").encode(),
    "inverted.jsonl": _jsonl(valid_from="2026-02-01", valid_to="2026-01-01").encode(),
    "future.jsonl": _jsonl(known_at="2999-01-01T00:00:00+00:00").encode(),
    "bad_header.csv": b"entity,attribute,what\n",
    "empty.csv": b"",
    "ragged.csv": b'entity,attribute,source,value\nhostile:e,a,s,"1\n',
    "facts.txt": b"whatever\n",
}

#: (case id, arguments after ``--url URL`` ("{dir}" is the files' directory), exit code).
CASES: list[tuple[str, list[str], int]] = [
    # the command line itself
    ("no command", [], USAGE),
    ("unknown command", ["frobnicate"], USAGE),
    ("record missing args", ["record", "e"], USAGE),
    ("record missing source", ["record", "hostile:e", "a", "1"], USAGE),
    ("record 5000-digit integer", ["record", "hostile:e", "a", HUGE, "--source", "s"], FAILURE),
    ("record deep nesting", ["record", "hostile:e", "a", DEEP, "--source", "s"], FAILURE),
    ("record not JSON", ["record", "hostile:e", "a", "eighty", "--source", "s"], FAILURE),
    ("record NaN", ["record", "hostile:e", "a", "NaN", "--source", "s"], FAILURE),
    ("record null", ["record", "hostile:e", "a", "null", "--source", "s"], FAILURE),
    ("record empty entity", ["record", "", "a", "1", "--source", "s"], FAILURE),
    ("record long entity", ["record", "x" * 2000, "a", "1", "--source", "s"], FAILURE),
    ("record surrogate entity", ["record", "hostile:\udcff", "a", "1", "--source", "s"], FAILURE),
    ("record surrogate value", ["record", "hostile:e", "a", '"\udcff"', "--source", "s"], FAILURE),
    (
        "record escaped surrogate value",
        ["record", "hostile:e", "a", '"\\ud800"', "--source", "s"],
        FAILURE,
    ),
    ("record NUL source", ["record", "hostile:e", "a", "1", "--source", "a\x00b"], FAILURE),
    (
        "record NUL recorded-by",
        ["record", "hostile:e", "a", "1", "--source", "s", "--recorded-by", "\x00"],
        FAILURE,
    ),
    (
        "record bad date",
        ["record", "hostile:e", "a", "1", "--source", "s", "--valid-from", "2026-13-01"],
        USAGE,
    ),
    (
        "record empty date",
        ["record", "hostile:e", "a", "1", "--source", "s", "--valid-from", ""],
        USAGE,
    ),
    (
        "record huge year",
        ["record", "hostile:e", "a", "1", "--source", "s", "--valid-to", "99999-01-01"],
        USAGE,
    ),
    (
        "record surrogate date",
        ["record", "hostile:e", "a", "1", "--source", "s", "--valid-to", "2026-01-0\udcff"],
        USAGE,
    ),
    (
        "record naive datetime",
        ["record", "hostile:e", "a", "1", "--source", "s", "--valid-from", "2026-01-01T00:00"],
        USAGE,
    ),
    (
        "record inverted period",
        [
            "record",
            "hostile:e",
            "a",
            "1",
            "--source",
            "s",
            "--valid-from",
            "2026-02-01",
            "--valid-to",
            "2026-01-01",
        ],
        FAILURE,
    ),
    (
        "record year 1",
        ["record", "hostile:e", "a", "1", "--source", "s", "--valid-from", "0001-01-01"],
        FAILURE,
    ),
    (
        "record future knowledge",
        ["record", "hostile:e", "a", "1", "--source", "s", "--known-at", "2999-01-01"],
        FAILURE,
    ),
    (
        "record past knowledge",
        ["record", "{key}", "1", "--source", "s", "--known-at", "2001-01-01"],
        FAILURE,
    ),
    ("retract unknown key", ["retract", "hostile:nothing", "a", "--source", "s"], FAILURE),
    ("retract surrogate source", ["retract", "{key}", "--source", "\udcff"], FAILURE),
    ("resolve unknown key", ["resolve", "hostile:nothing", "a"], FAILURE),
    ("resolve bad valid-at", ["resolve", "{key}", "--valid-at", "yesterday"], USAGE),
    (
        "resolve known-at after now",
        ["resolve", "{key}", "--known-at", "2026-02-01", "--now", "2026-01-01"],
        FAILURE,
    ),
    ("resolve NUL entity", ["resolve", "a\x00b", "a"], FAILURE),
    ("history surrogate attribute", ["history", "hostile:e", "\udcff"], FAILURE),
    ("plot into a missing directory", ["plot", "{key}", "-o", "{dir}/missing/plot.png"], FAILURE),
    ("plot onto a directory", ["plot", "{key}", "-o", "{dir}"], FAILURE),
    ("plot unknown key", ["plot", "hostile:nothing", "a", "-o", "{dir}/plot.png"], FAILURE),
    # import
    ("import missing file", ["import", "{dir}/missing.jsonl"], FAILURE),
    ("import a directory", ["import", "{dir}", "--format", "jsonl"], FAILURE),
    ("import unknown format", ["import", "{dir}/facts.txt"], FAILURE),
    ("import bad --format", ["import", "{dir}/huge.jsonl", "--format", "xml"], USAGE),
    ("import batch size 0", ["import", "{dir}/huge.jsonl", "--batch-size", "0"], FAILURE),
    (
        "import batch size not a number",
        ["import", "{dir}/huge.jsonl", "--batch-size", "many"],
        USAGE,
    ),
    ("import batch size 5000 digits", ["import", "{dir}/huge.jsonl", "--batch-size", HUGE], USAGE),
    ("import jobs 0", ["import", "{dir}/huge.jsonl", "--jobs", "0"], FAILURE),
    ("import jobs a million", ["import", "{dir}/huge.jsonl", "--jobs", "1000000"], FAILURE),
    ("import jobs not a number", ["import", "{dir}/huge.jsonl", "--jobs", "all"], USAGE),
    ("import max errors 0", ["import", "{dir}/future.jsonl", "--max-errors", "0"], FAILURE),
    *[
        (f"import {name}", ["import", f"{{dir}}/{name}", "--quiet"], FAILURE)
        for name in FILES
        if name != "facts.txt"
    ],
    # the database
    ("unreachable server", ["--url", UNREACHABLE, "resolve", "hostile:e", "a"], FAILURE),
    (
        "not a PostgreSQL URL",
        ["--url", "mysql://127.0.0.1/x", "resolve", "hostile:e", "a"],
        FAILURE,
    ),
    (
        "malformed URL",
        ["--url", "postgresql://127.0.0.1:port/x", "resolve", "hostile:e", "a"],
        FAILURE,
    ),
    (
        "URL with a bad option",
        ["--url", "postgresql://127.0.0.1/x?sslmode=sometimes", "resolve", "hostile:e", "a"],
        FAILURE,
    ),
    ("missing database", ["--url", "{missing_db}", "resolve", "hostile:e", "a"], FAILURE),
    (
        "import to an unreachable server",
        ["--url", UNREACHABLE, "import", "{dir}/huge.csv"],
        FAILURE,
    ),
    ("--url after the command", ["resolve", "hostile:e", "a", "--url", UNREACHABLE], FAILURE),
    ("--url after a db command", ["db", "current", "--url", UNREACHABLE], FAILURE),
    ("db upgrade on an unreachable server", ["--url", UNREACHABLE, "db", "upgrade"], FAILURE),
    (
        "db downgrade on an unreachable server",
        ["--url", UNREACHABLE, "db", "downgrade", "base"],
        FAILURE,
    ),
    (
        "db upgrade malformed URL",
        ["--url", "postgresql://127.0.0.1:port/x", "db", "upgrade"],
        FAILURE,
    ),
    ("db current not a PostgreSQL URL", ["--url", "mysql://127.0.0.1/x", "db", "current"], FAILURE),
    ("--url without a value", ["resolve", "hostile:e", "a", "--url"], USAGE),
    ("unknown option", ["resolve", "hostile:e", "a", "--frobnicate"], USAGE),
    ("db without a subcommand", ["db"], USAGE),
    ("db downgrade without a revision", ["db", "downgrade"], USAGE),
    ("db upgrade --partitions not a number", ["db", "upgrade", "--partitions", "x"], USAGE),
    ("bench is no command (python -m benchmarks)", ["bench", "facts"], USAGE),
    ("empty --url", ["--url", "", "resolve", "hostile:e", "a"], USAGE),
    ("empty --url after the command", ["history", "hostile:e", "a", "--url", " "], USAGE),
    ("demo on an unreachable server", ["--url", UNREACHABLE, "demo"], FAILURE),
    ("demo malformed URL", ["--url", "postgresql://127.0.0.1:port/x", "demo"], FAILURE),
    ("demo not a PostgreSQL URL", ["--url", "mysql://127.0.0.1/x", "demo"], FAILURE),
    ("db sql unknown revision", ["db", "sql", "nosuchrev"], FAILURE),
    ("db sql unknown start", ["db", "sql", "--start", "nosuchrev"], FAILURE),
    ("db sql negative partitions", ["db", "sql", "--partitions", "-3"], FAILURE),
    ("db upgrade unknown revision", ["db", "upgrade", "nosuchrev"], FAILURE),
    ("db downgrade unknown revision", ["db", "downgrade", "nosuchrev"], FAILURE),
    ("db upgrade too many partitions", ["db", "upgrade", "--partitions", "5000"], FAILURE),
    ("db bad subcommand", ["db", "frobnicate"], USAGE),
    ("plot without -o", ["plot", "{key}"], USAGE),
    ("resolve bad now", ["resolve", "{key}", "--now", "soon"], USAGE),
    ("history without attribute", ["history", "hostile:e"], USAGE),
]


def state(url: str) -> tuple[Any, ...]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM bitemporal.fact_version),"
            "       (SELECT coalesce(max(version_id), 0) FROM bitemporal.fact_version),"
            "       (SELECT count(*) FROM bitemporal.fact_key)"
        ).fetchone()
    assert row is not None
    return tuple(row)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("hostile")
    for name, content in FILES.items():
        (directory / name).write_bytes(content)
    return directory


@pytest.fixture
def seeded(store: Store) -> Key:
    key = Key(f"hostile:{uuid.uuid4().hex}", "a")
    store.facts.record(key, 1, source="s")
    return key


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 43
    assert {args[0] for _, args, _ in CASES if args and not args[0].startswith("-")} >= {
        "record",
        "retract",
        "resolve",
        "history",
        "plot",
        "import",
        "bench",
        "frobnicate",
    }


def _arguments(args: list[str], database_url: str, files: Path, key: Key) -> list[str]:
    out: list[str] = []
    for arg in args:
        if arg == "{key}":
            out += [key.entity, key.attribute]
        else:
            missing = make_url(database_url).set(database="bt_missing_database")
            out.append(
                arg.replace("{dir}", str(files)).replace(
                    "{missing_db}", missing.render_as_string(hide_password=False)
                )
            )
    return out if out[:1] == ["--url"] else ["--url", database_url, *out]


@pytest.mark.parametrize(
    ("args", "code"), [(args, code) for _, args, code in CASES], ids=[name for name, _, _ in CASES]
)
def test_a_hostile_invocation_is_one_error_line(
    capsys: pytest.CaptureFixture[str],
    database_url: str,
    files: Path,
    seeded: Key,
    args: list[str],
    code: int,
) -> None:
    argv = _arguments(args, database_url, files, seeded)
    before = state(database_url)
    try:
        got = cli.main(argv)
    except SystemExit as exc:  # argparse's own exit
        got = exc.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "Traceback" not in err
    assert got == code, err
    assert lines and lines[0].startswith("bitemporal: error: "), err
    assert sum(line.startswith("bitemporal: error:") for line in lines) == 1, err
    # Details, if any (an import's bad rows), are indented under the one error line.
    assert all(line.startswith("  ") for line in lines[1:]), err
    assert "unexpected" not in lines[0], err  # handled on purpose, not by the last resort
    assert len(lines[0]) < 600, "an error line quotes at most a short piece of its input"
    assert state(database_url) == before


@pytest.mark.parametrize(
    "argv",
    [
        [b"record", b"hostile:\xff", b"a", b"1", b"--source", b"s"],
        [b"import", b"/nonexistent/facts.jsonl"],
        [b"--url", UNREACHABLE.encode(), b"history", b"e", b"a"],
    ],
)
def test_the_installed_command_prints_no_traceback(database_url: str, argv: list[bytes]) -> None:
    """The same through a real process: invalid UTF-8 in argv, a missing file, no server."""
    env = {**os.environ, "BITEMPORAL_DATABASE_URL": database_url}
    result = subprocess.run(
        [sys.executable.encode(), b"-m", b"bitemporal", *argv],
        check=False,
        capture_output=True,
        env=env,
        timeout=120,
    )
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == FAILURE and "Traceback" not in err
    assert err.startswith("bitemporal: error: ") and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(
    "command",
    [["resolve", "E", "A"], ["db", "upgrade"], ["db", "current"], ["db", "downgrade", "base"]],
    ids=" ".join,
)
def test_the_unreachable_server_of_issue_13(command: list[str]) -> None:
    """``bitemporal --url postgresql://127.0.0.1:1/x resolve E A``, exactly, through the
    installed console script: exit 1, nothing on stdout, exactly one line on stderr; the
    same for the migration commands, which once said the connection was lost (and to
    retry), of one that never was."""
    script = Path(sys.executable).parent / "bitemporal"
    result = subprocess.run(
        [str(script), "--url", "postgresql://127.0.0.1:1/x", *command],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == FAILURE and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n"), result.stderr
    assert result.stderr.startswith("bitemporal: error: cannot connect to the database: ")
    assert "Connection refused" in result.stderr


def test_plot_without_matplotlib(database_url: str, seeded: Key, tmp_path: Path) -> None:
    """The plot extra not installed (matplotlib made unimportable in the process): one line
    naming the extra to install, no file."""
    blocked = (
        "import sys; sys.modules['matplotlib'] = None; "
        "from bitemporal.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    output = tmp_path / "plot.png"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            blocked,
            "--url",
            database_url,
            "plot",
            seeded.entity,
            seeded.attribute,
            "-o",
            str(output),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == FAILURE and result.stdout == "", result.stderr
    assert result.stderr.splitlines() == [
        "bitemporal: error: drawing needs matplotlib (pip install 'bitemporal[plot]')"
    ]
    assert not output.exists()


def test_an_interrupted_import_is_one_line_and_writes_nothing(
    database_url: str, tmp_path: Path
) -> None:
    """Ctrl-C (SIGINT) while the import waits for its input (a named pipe): exit 130, one
    line, and the batch read so far is not written."""
    fifo = tmp_path / "facts.jsonl"
    os.mkfifo(fifo)
    entity = f"hostile:{uuid.uuid4().hex}"
    # The import starts with SIGINT's default action, as from a terminal. Under a background
    # job of a non-interactive shell this process ignores SIGINT, a child would inherit that,
    # and Python keeps ignoring it; a handler here is reset to the default in the child.
    # PYTHONFAULTHANDLER: should the import ever outlive the SIGINT, a SIGABRT then prints
    # where each of its threads is, for the failure message.
    command = [sys.executable, "-m", "bitemporal", "--url", database_url, "import", str(fifo)]
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [*command, "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    with process:
        writer = None
        try:
            # Opening the pipe for writing succeeds once the import has opened it for reading.
            deadline = time.monotonic() + 60
            while writer is None:
                try:
                    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                except OSError as exc:
                    if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            os.write(writer, _jsonl(entity=entity).encode())  # a row, then silence
            time.sleep(0.5)
            process.send_signal(signal.SIGINT)
            try:
                out, err = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGABRT)
                out, err = process.communicate()
                pytest.fail(f"the import still ran 60 s after SIGINT; its stderr:\n{err}")
        finally:
            if writer is not None:
                os.close(writer)
            if process.poll() is None:
                process.kill()
    assert process.returncode == 130, err
    assert err == "bitemporal: error: interrupted\n" and out == ""
    with psycopg.connect(database_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM bitemporal.fact_key WHERE entity = %s", (entity,)
        ).fetchone() == (0,)
