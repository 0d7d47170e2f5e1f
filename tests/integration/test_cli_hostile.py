"""Hostile command lines and import files: each ends in one line ``bitemporal: error: ...``
on stderr (exit 2 for a malformed command line, 1 for a refused or failed operation), never
a traceback, and leaves the store as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    "surrogate.jsonl": b'{"entity": "hostile:\\ud800", "attribute": "a", "source": "s", "value": 1}\n',
    "surrogate_value.jsonl": b'{"entity": "hostile:e", "attribute": "a", "source": "s", "value": "\\udfff"}\n',
    "nul.jsonl": _jsonl(recorded_by="a\x00b").encode(),
    "nul_value.jsonl": _jsonl(value="a\x00b").encode(),
    "array.jsonl": b"[1, 2, 3]\n",
    "not_json.jsonl": b"{nope\n",
    "null_value.jsonl": b'{"entity": "hostile:e", "attribute": "a", "source": "s", "value": null}\n',
    "bad_date.jsonl": _jsonl(valid_from="2026-02-30").encode(),
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
        FAILURE,
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
    ("bench is no command (python -m benchmarks)", ["bench", "facts"], USAGE),
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
