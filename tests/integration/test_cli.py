"""The command line, run against the test server."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from bitemporal import Key, cli, migrations


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_record_resolve_history_retract(
    capsys: pytest.CaptureFixture[str], database_url: str, key: Key
) -> None:
    base = ("--url", database_url)
    code, out, _ = run(
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
    code, out, _ = run(
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
    code, out, _ = run(
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
    code, out, _ = run(
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
    code, out, _ = run(capsys, *base, "history", key.entity, key.attribute)
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["version", "source", "value"] and len(lines) == 2 + 2
    code, out, _ = run(
        capsys, *base, "resolve", key.entity, key.attribute, "--valid-at", "2026-07-01"
    )
    assert "status: missing" in out


def test_errors_are_reported_not_raised(
    capsys: pytest.CaptureFixture[str], database_url: str, key: Key
) -> None:
    code, _, err = run(capsys, "--url", database_url, "resolve", key.entity, key.attribute)
    assert code == 1 and "unknown key" in err
    code, _, err = run(
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
    code, _, err = run(
        capsys,
        "--url",
        database_url,
        "record",
        key.entity,
        key.attribute,
        "1",
        "--source",
        "s",
        "--valid-from",
        "2026-01-01T00:00:00",
    )
    assert code == 1 and "no time zone" in err


def test_db_commands(
    capsys: pytest.CaptureFixture[str], database_url: str, empty_database_url: str
) -> None:
    assert run(capsys, "--url", database_url, "db", "current")[1].strip() == migrations.head()
    assert run(capsys, "--url", empty_database_url, "db", "current")[1].strip() == "(not migrated)"
    assert run(capsys, "--url", empty_database_url, "db", "upgrade")[0] == 0
    assert run(capsys, "--url", empty_database_url, "db", "current")[1].strip() == migrations.head()
    assert run(capsys, "--url", empty_database_url, "db", "downgrade", "base")[0] == 0
    assert run(capsys, "--url", empty_database_url, "db", "current")[1].strip() == "(not migrated)"
    code, out, _ = run(capsys, "db", "sql")
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
    result = subprocess.run(
        [sys.executable, "-m", "bitemporal", "--url", server_url, "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
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
