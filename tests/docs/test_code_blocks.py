"""Every fenced code block of README.md, docs/ and benchmarks/README.md runs here: no drift.

Blocks are found by tests/docs/blocks.py, whose docstring gives the hidden-comment conventions
(skip and output markers, setup and check code). Each page runs in its own freshly migrated
database (``BITEMPORAL_DATABASE_URL`` names it, so ``bitemporal.connect()`` finds it), its
blocks in order in one namespace:

- ``python``: executed;
- ``sql``: sent to the real ``psql`` client (``-v ON_ERROR_STOP=1``), so ``\\gset`` works;
- ``sh``: run by ``bash -euo pipefail`` in a scratch directory, with the package's scripts first
  on ``PATH`` and ``BITEMPORAL_DATABASE_URL`` set;
- ``json``: parsed.

Setup and check code sees ``url`` (the page's database; setup may rebind it), ``fresh_database()``
(another migrated database; ``fresh_database(migrated=False)`` an empty one), ``psql(sql)``,
``cwd`` (where shell blocks run), ``out`` (after a block; for an output block, its text) and ``re``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import types
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import bitemporal
from tests.docs.blocks import RUNNABLE, Block, collect
from tests.helpers import CITUS, DatabaseFactory

BLOCKS = collect()


def checked(block: Block) -> bool:
    """Run, or shown output compared by its check (a skipped block's check is skipped too)."""
    return block.runs or (block.check is not None and block.output is not None)


PAGES = sorted({b.page for b in BLOCKS if checked(b)})
#: Fewer than this many executed blocks means the collector or the markers went wrong.
MIN_RUN = 17

needs_psql = pytest.mark.skipif(
    shutil.which("psql") is None, reason="the psql client is not installed"
)


def psql(url: str, script: str, *, time_zone: str | None = None) -> str:
    env = {**os.environ, "PGTZ": time_zone} if time_zone else None
    result = subprocess.run(
        ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-d", url],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def shell(url: str, script: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "BITEMPORAL_DATABASE_URL": url,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def kind(block: Block) -> str:
    if block.runs:
        return "run"
    if block.skip is not None:
        return "skipped"
    return "output, checked" if block.check else "output"


def test_every_block_is_run_or_marked() -> None:
    """The inventory: every block has a language we run, or an explicit skip or output marker."""
    unmarked = [b.where for b in BLOCKS if b.runs and b.language not in RUNNABLE]
    assert not unmarked, (
        f"blocks in no language we run, without a skip or output marker: {unmarked}"
    )
    counts = Counter(kind(b) for b in BLOCKS)
    print(
        f"\ndocumentation code blocks: {len(BLOCKS)} found, {counts['run']} run, "
        f"{counts['skipped']} skipped, {counts['output, checked']} output checked, "
        f"{counts['output']} output shown only"
    )
    for b in BLOCKS:
        if b.skip:
            print(f"  skipped {b.where}: {b.skip}")
    assert counts["run"] >= MIN_RUN


@needs_psql
@pytest.mark.parametrize("page", PAGES)
def test_page(
    page: str,
    make_database: DatabaseFactory,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    if CITUS and page == "benchmarks/README.md":
        pytest.skip(
            "not on Citus: the benchmark commands run on the plain lanes; on Citus, "
            "tests/benchmarks/test_bench_citus.py runs python -m benchmarks citus"
        )

    def fresh_database(migrated: bool = True) -> str:
        url = make_database(migrated=migrated)
        monkeypatch.setenv("BITEMPORAL_DATABASE_URL", url)
        return url

    monkeypatch.delenv("DATABASE_URL", raising=False)
    # A real module, as SQLAlchemy resolves a mapped class's annotations through sys.modules.
    module = types.ModuleType("docs_page")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    namespace.update(url=fresh_database(), fresh_database=fresh_database, re=re, cwd=tmp_path)
    namespace["psql"] = lambda script: psql(namespace["url"], script)
    try:
        for block in (b for b in BLOCKS if b.page == page and checked(b)):
            run_block(block, namespace, tmp_path)
    finally:
        for value in list(namespace.values()):
            if isinstance(value, bitemporal.Store):
                value.close()


def execute(code: str, where: str, namespace: dict[str, Any]) -> None:
    """Run Python from our own docs (exec by design: the docs are the code under test)."""
    exec(compile(code, where, "exec"), namespace)  # noqa: S102 - our docs


def run_block(block: Block, namespace: dict[str, Any], cwd: Path) -> None:
    if block.setup:
        execute(block.setup, f"{block.where} (setup)", namespace)
    out: object = None
    if block.output is not None:  # shown output: the check compares it with the real one
        out = block.text
    elif block.language == "python":
        execute(block.text, block.where, namespace)
    elif block.language == "sql":
        out = psql(namespace["url"], block.text)
    elif block.language == "sh":
        out = shell(namespace["url"], block.text, cwd)
    elif block.language == "json":
        out = json.loads(block.text)
    namespace["out"] = out
    if block.check:
        execute(block.check, f"{block.where} (check)", namespace)


@needs_psql
def test_sql_examples_mean_the_same_instants_in_any_session_time_zone(
    make_database: DatabaseFactory,
) -> None:
    """PostgreSQL reads a time without an offset in the session's TimeZone, Python reads a
    date as midnight UTC: the docs' SQL spells every instant with its offset, so a São
    Paulo psql session writes what a UTC one writes, and Python asked about a day gets the
    answers the examples describe."""
    writes = [
        b.text
        for b in BLOCKS
        if b.language == "sql" and b.runs and re.search(r"bitemporal\.record(_many)?\(", b.text)
    ]
    assert len(writes) >= 3
    keys = [bitemporal.Key(e, "attachment_limit_mb") for e in ("mailer:prod", "mailer:uk")]
    days = [date(2026, 8, 31) + timedelta(days=n) for n in range(33)]
    seen: dict[str, dict[str, list[Any]]] = {}
    for zone in ("UTC", "America/Sao_Paulo"):
        url = make_database(migrated=True)
        assert "supported" in psql(url, "\n".join(writes), time_zone=zone)
        with bitemporal.connect(url) as store:
            seen[zone] = {
                "history": [
                    (v.source, v.value, v.valid_period)
                    for k in keys
                    for v in store.facts.history(k)
                ],
                "answers": [
                    (r.status, r.values)
                    for k in keys
                    for day in days
                    for r in [store.facts.resolve(k, valid_at=day)]
                ],
            }
    assert seen["America/Sao_Paulo"] == seen["UTC"]
    # The days begin at midnight UTC: 80 MB (policy) from 1 September, 85 MB for mailer:uk.
    starts = {p.start for _, _, p in seen["UTC"]["history"]}
    assert datetime(2026, 9, 1, tzinfo=UTC) in starts
    assert all(s is None or (s.hour, s.minute) == (0, 0) for s in starts)
    answers = dict(zip([(k, d) for k in keys for d in days], seen["UTC"]["answers"], strict=True))
    assert answers[keys[0], date(2026, 8, 31)][0] == bitemporal.Status.MISSING
    assert answers[keys[1], date(2026, 9, 1)] == (bitemporal.Status.SUPPORTED, (85,))
