"""An interrupted ``bitemporal import`` says which lines were committed, and running the same
command again finishes the job: the store ends exactly as after one clean import."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bitemporal import InvalidInputError, Key, Store, cli, connect
from bitemporal.importing import import_file, read_jsonl

START = datetime(2026, 1, 1, tzinfo=UTC)
# 1,500 rows: 30 batches of 50, about 10 a lane with three jobs (a key's lane is its hash's).
KEYS, ROUNDS = 60, 25
GATE = 520  # after this row, one for a key of its own: the test holds its lock


def write_file(path: Path, prefix: str) -> int:
    """Rows with explicit, increasing knowledge times: values changing, periods cutting each
    other, and repeats that change nothing (no-ops when first imported)."""
    lines = []
    for n in range(KEYS * ROUNDS):
        k, r = n % KEYS, n // KEYS
        value = r // 3 if r % 5 else (r - 1) // 3  # every fifth round repeats the last value
        valid_from = START + timedelta(days=r % 7)
        row = {
            "entity": f"{prefix}:{k}",
            "attribute": "limit",
            "source": "s" if r % 4 else "t",
            "value": value,
            "valid_from": valid_from.isoformat(),
            "valid_to": (valid_from + timedelta(days=30)).isoformat() if r % 3 == 0 else None,
            "known_at": (START + timedelta(seconds=n)).isoformat(),
            "recorded_by": "import",
        }
        lines.append(json.dumps(row))
        if n == GATE:
            lines.append(json.dumps({**row, "entity": f"{prefix}:gate"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def contents(store: Store, prefix: str) -> list[tuple[Any, ...]]:
    """Every version of the prefix's keys, without version ids (which differ between runs)."""
    rows = store.connection.execute(
        "SELECT entity, attribute, source, value, valid_period, known_period, recorded_by,"
        "       carried_from IS NOT NULL"
        "  FROM bitemporal.versions WHERE entity LIKE %s",
        (f"{prefix}:%",),
    ).fetchall()
    return sorted((e.removeprefix(prefix), *rest) for e, *rest in rows)


def import_(capsys: pytest.CaptureFixture[str], url: str, path: Path) -> tuple[int, str, str]:
    code = cli.main(["--url", url, "import", str(path), "--batch-size", "50", "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err


def test_rerunning_an_imported_file_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], database_url: str, store: Store
) -> None:
    prefix = f"again:{uuid.uuid4().hex[:8]}"
    path = tmp_path / "facts.jsonl"
    rows = write_file(path, prefix)
    code, out, err = import_(capsys, database_url, path)
    assert code == 0, err
    first = contents(store, prefix)
    code, out, err = import_(capsys, database_url, path)
    assert code == 0, err  # before: BT002 on the first batch
    assert f"imported {rows:,} rows" in out and "0 created" in out and f"{rows:,} unchanged" in out
    assert contents(store, prefix) == first


def test_a_row_that_contradicts_recorded_knowledge_still_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], database_url: str, store: Store
) -> None:
    key = Key(f"contra:{uuid.uuid4().hex[:8]}", "limit")
    store.facts.record(key, 1, source="s", known_at=START + timedelta(days=1))
    path = tmp_path / "contra.jsonl"
    path.write_text(
        json.dumps(
            {
                "entity": key.entity,
                "attribute": key.attribute,
                "source": "s",
                "value": 2,
                "known_at": START.isoformat(),
            }
        )
        + "\n",
        encoding="utf-8",
    )
    code, _, err = import_(capsys, database_url, path)
    assert code == 1 and "line 1: knowledge time" in err
    assert [v.value for v in store.facts.history(key)] == [1]


@pytest.mark.not_on_citus(
    "on Citus the import waits for the gate key's lock on the worker holding the key, not on "
    "the coordinator where this test looks for the waiting backend to terminate"
)
def test_an_import_interrupted_by_a_terminated_backend_resumes_by_running_it_again(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    database_url: str,
    store: Store,
    connect: Callable[..., psycopg.Connection[Any]],
) -> None:
    clean, resumed = f"clean:{uuid.uuid4().hex[:8]}", f"resumed:{uuid.uuid4().hex[:8]}"
    clean_file, resumed_file = tmp_path / "clean.jsonl", tmp_path / "resumed.jsonl"
    write_file(clean_file, clean)
    rows = write_file(resumed_file, resumed)
    assert import_(capsys, database_url, clean_file)[0] == 0

    # A transaction holding the gate key's lock stops the import inside one batch;
    # the backend waiting there is terminated from another connection.
    holder = connect(autocommit=False)
    Store(holder).facts.record(Key(f"{resumed}:gate", "limit"), 0, source="s")
    admin = connect()
    killed: list[int] = []

    holder_pid = holder.info.backend_pid

    def terminate_mid_import() -> None:
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline and not killed:
                for (pid,) in admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                    "   AND wait_event_type = 'Lock' AND query LIKE '%%bitemporal_batch_v1%%'"
                ).fetchall():
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                    killed.append(pid)
                time.sleep(0.01)
        finally:
            if not killed:  # never leave the import waiting for ever
                admin.execute("SELECT pg_terminate_backend(%s)", (holder_pid,))

    killer = threading.Thread(target=terminate_mid_import)
    killer.start()
    code, _, err = import_(capsys, database_url, resumed_file)
    killer.join()
    assert killed, "the import never waited for the gate key"
    holder.rollback()
    assert code == 1 and "Traceback" not in err
    first = err.splitlines()[0]
    assert (
        first.startswith(f"bitemporal: error: {resumed_file}: ")
        and "terminating connection" in first
    )
    match = re.search(rf"lines 1-(\d+) of {re.escape(str(resumed_file))} were committed", first)
    assert match, first
    assert "re-run the same command to continue" in first
    committed = int(match.group(1))
    assert committed == GATE // 50 * 50  # every batch before the gate's
    # Exactly the lines said: the store holds what a clean import of those lines holds.
    partial = tmp_path / "partial.jsonl"
    partial.write_text(
        "".join(clean_file.read_text(encoding="utf-8").splitlines(keepends=True)[:committed]),
        encoding="utf-8",
    )
    scratch = f"partial:{uuid.uuid4().hex[:8]}"
    partial.write_text(
        partial.read_text(encoding="utf-8").replace(f'"{clean}:', f'"{scratch}:'), encoding="utf-8"
    )
    assert import_(capsys, database_url, partial)[0] == 0
    assert contents(store, resumed) == contents(store, scratch)

    code, out, err = import_(capsys, database_url, resumed_file)
    assert code == 0, err
    assert f"imported {rows:,} rows" in out
    assert contents(store, resumed) == contents(store, clean)


def write_changes(path: Path, prefix: str, keys: int = 20, changes: int = 6) -> int:
    """Rows without known_at (each batch's transaction time): every key changes value
    `changes` times, each change from a later day on, rows of a key spread over batches."""
    lines = [
        json.dumps(
            {
                "entity": f"{prefix}:{k}",
                "attribute": "limit",
                "source": "s",
                "value": c,
                "valid_from": (START + timedelta(days=c)).isoformat(),
            }
        )
        for c in range(changes)
        for k in range(keys)
    ]
    lines.append(
        json.dumps(
            {
                "entity": f"{prefix}:single",
                "attribute": "limit",
                "source": "s",
                "value": "once",
                "valid_from": START.isoformat(),
                "valid_to": (START + timedelta(days=9)).isoformat(),
            }
        )
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def test_reimporting_rows_without_known_at_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], database_url: str, store: Store
) -> None:
    prefix = f"nokat:{uuid.uuid4().hex[:8]}"
    path = tmp_path / "changes.jsonl"
    rows = write_changes(path, prefix)
    code, out, err = import_(capsys, database_url, path)
    assert code == 0 and f"{rows:,} created" in out, err
    first = contents(store, prefix)
    code, out, err = import_(capsys, database_url, path)
    assert code == 0, err
    assert f"imported {rows:,} rows" in out and "0 created" in out and f"{rows:,} unchanged" in out
    assert contents(store, prefix) == first


def test_reimporting_rows_the_store_since_contradicts_records_them_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], database_url: str, store: Store
) -> None:
    """Only what is still known is skipped: a key changed since the import gets the file's
    values again, the others stay untouched."""
    prefix = f"since:{uuid.uuid4().hex[:8]}"
    path = tmp_path / "changes.jsonl"
    write_changes(path, prefix, keys=3)
    assert import_(capsys, database_url, path)[0] == 0
    changed = Key(f"{prefix}:1", "limit")
    store.facts.record(
        changed,
        99,
        source="s",
        valid_from=START + timedelta(days=2),
        valid_to=START + timedelta(days=3),
    )
    untouched = contents(store, f"{prefix}:0")
    code, out, err = import_(capsys, database_url, path)
    assert code == 0 and "0 created" not in out, err
    assert contents(store, f"{prefix}:0") == untouched
    for day in range(6):
        answer = store.facts.resolve(changed, valid_at=START + timedelta(days=day, hours=1))
        assert answer.value == day


def test_a_bad_row_among_rows_already_known_still_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], database_url: str, store: Store
) -> None:
    prefix = f"badlast:{uuid.uuid4().hex[:8]}"
    path = tmp_path / "changes.jsonl"
    rows = write_changes(path, prefix, keys=1, changes=3)
    assert import_(capsys, database_url, path)[0] == 0
    before = contents(store, prefix)
    with path.open("a", encoding="utf-8") as file:  # the same key, an inverted period
        file.write(
            json.dumps(
                {
                    "entity": f"{prefix}:0",
                    "attribute": "limit",
                    "source": "s",
                    "value": 2,
                    "valid_from": (START + timedelta(days=5)).isoformat(),
                    "valid_to": START.isoformat(),
                }
            )
            + "\n"
        )
    code, _, err = import_(capsys, database_url, path)
    assert code == 1 and f"line {rows + 1}: period" in err and "inverted" in err, err
    assert contents(store, prefix) == before


def test_a_pipe_is_imported(tmp_path: Path, database_url: str, store: Store) -> None:
    """A file that can be read only once (here standard input) is imported in one pass."""
    prefix = f"pipe:{uuid.uuid4().hex[:8]}"
    path = tmp_path / "changes.jsonl"
    rows = write_changes(path, prefix, keys=2, changes=2)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bitemporal",
            "--url",
            database_url,
            "import",
            "/dev/stdin",
            "--format",
            "jsonl",
            "--quiet",
        ],
        input=path.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"imported {rows:,} rows" in result.stdout
    assert (
        store.facts.resolve(Key(f"{prefix}:1", "limit"), valid_at=START + timedelta(days=1)).value
        == 1
    )


# Several jobs: lanes of batches recorded at once, each key's rows in one lane.


def import_jobs(
    capsys: pytest.CaptureFixture[str], url: str, path: Path, jobs: int
) -> tuple[int, str, str]:
    code = cli.main(
        ["--url", url, "import", str(path), "--batch-size", "50", "--jobs", str(jobs), "--quiet"]
    )
    out, err = capsys.readouterr()
    return code, out, err


def known_now(store: Store, prefix: str) -> list[tuple[Any, ...]]:
    """What the store knows now about the prefix's keys."""
    rows = store.connection.execute(
        "SELECT entity, attribute, source, value, valid_period FROM bitemporal.versions"
        " WHERE entity LIKE %s AND upper_inf(known_period)",
        (f"{prefix}:%",),
    ).fetchall()
    return sorted((e.removeprefix(prefix), *rest) for e, *rest in rows)


def test_an_import_in_several_jobs_writes_what_one_job_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], database_url: str, store: Store
) -> None:
    tag = uuid.uuid4().hex[:8]
    for kind, write in (("kat", write_file), ("nokat", write_changes)):
        one, three = f"one{kind}:{tag}", f"three{kind}:{tag}"
        rows = write(tmp_path / f"{one}.jsonl", one)
        write(tmp_path / f"{three}.jsonl", three)
        assert import_jobs(capsys, database_url, tmp_path / f"{one}.jsonl", 1)[0] == 0
        code, out, err = import_jobs(capsys, database_url, tmp_path / f"{three}.jsonl", 3)
        assert code == 0 and f"imported {rows:,} rows" in out, err
        if kind == "kat":  # explicit knowledge times: the same versions
            assert contents(store, three) == contents(store, one)
        else:  # each batch's transaction time: the same knowledge in the end
            assert known_now(store, three) == known_now(store, one)
        assert known_now(store, three)
        code, out, err = import_jobs(capsys, database_url, tmp_path / f"{three}.jsonl", 3)
        assert code == 0 and "0 created" in out and f"{rows:,} unchanged" in out, err


@pytest.mark.parametrize(
    ("breaking", "replacement"),
    [
        # Refused on reading the file: its key is unknown.
        ('"valid_from": "', '"valid_from": "not '),
        # Refused by the database, in the lane of its key.
        ('"known_at": "2026', '"known_at": "2999'),
    ],
    ids=["unreadable", "refused"],
)
def test_a_bad_row_stops_every_job_and_the_lines_said_are_committed(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    database_url: str,
    store: Store,
    breaking: str,
    replacement: str,
) -> None:
    clean, broken = f"jclean:{uuid.uuid4().hex[:8]}", f"jbroken:{uuid.uuid4().hex[:8]}"
    write_file(tmp_path / "clean.jsonl", clean)
    rows = write_file(tmp_path / "broken.jsonl", broken)
    bad = 750
    lines = (tmp_path / "broken.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    good_line = lines[bad - 1]
    assert breaking in good_line
    lines[bad - 1] = good_line.replace(breaking, replacement)
    (tmp_path / "broken.jsonl").write_text("".join(lines), encoding="utf-8")

    code, _, err = import_jobs(capsys, database_url, tmp_path / "broken.jsonl", 3)
    assert code == 1 and "Traceback" not in err
    assert f"line {bad}: " in err, err
    match = re.search(r"lines 1-(\d+) of .* were committed", err.splitlines()[0])
    assert match, err
    committed = int(match.group(1))
    assert committed < bad
    # Every row up to the line said is in the store, as its own import would have put it.
    with (tmp_path / "broken.jsonl").open(encoding="utf-8") as file:
        read = [row for line, row in read_jsonl(file) if line <= committed]
    parsed = [row for row in read if isinstance(row, dict)]
    assert len(parsed) == len(read) > 0
    assert all(store.facts.recorded_already(parsed))

    # Fixed and run again: the store ends as after one clean import.
    lines[bad - 1] = good_line
    (tmp_path / "broken.jsonl").write_text("".join(lines), encoding="utf-8")
    code, out, err = import_jobs(capsys, database_url, tmp_path / "broken.jsonl", 3)
    assert code == 0 and f"imported {rows:,} rows" in out, err
    assert import_jobs(capsys, database_url, tmp_path / "clean.jsonl", 1)[0] == 0
    assert contents(store, broken) == contents(store, clean)


def test_several_jobs_need_a_pool(tmp_path: Path, database_url: str, store: Store) -> None:
    path = tmp_path / "changes.jsonl"
    write_changes(path, f"pool:{uuid.uuid4().hex[:8]}", keys=2, changes=2)
    assert not store.facts.pooled
    with pytest.raises(InvalidInputError, match="the store is on one connection"):
        import_file(store.facts, str(path), jobs=2)
    for size in (-1, "2", 1.5, True):
        with pytest.raises(InvalidInputError, match="pool_size must be a whole number"):
            connect(database_url, pool_size=size)  # type: ignore[arg-type]
    with connect(database_url, pool_size=2) as pooled:
        assert pooled.facts.pooled
        report = import_file(pooled.facts, str(path), jobs=2)
    assert report.created == report.rows == 5 and report.last_line == 5
