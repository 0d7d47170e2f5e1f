"""The README's examples run as written: Python through the API, SQL through the real psql client."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import bitemporal
from bitemporal import cli
from bitemporal.demo import KEY, WRITES

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
needs_psql = pytest.mark.skipif(
    shutil.which("psql") is None, reason="the psql client is not installed"
)


def blocks(language: str, section: str | None = None) -> list[str]:
    text = README
    if section is not None:
        text = README.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def psql(url: str, script: str, *, time_zone: str | None = None) -> str:
    env = None if time_zone is None else {**os.environ, "PGTZ": time_zone}
    result = subprocess.run(
        ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-d", url],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_python_examples(empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BITEMPORAL_DATABASE_URL", empty_database_url)
    assert cli.main(["db", "upgrade"]) == 0  # as the section says, before the examples
    # The fact store, then working memory, in one session as a reader would run them.
    facts, memory = (
        blocks("python", "Python")[0],
        blocks("python", "Working memory: decay with reinforcement")[0],
    )
    namespace: dict[str, object] = {}
    for example in (facts, memory):
        exec(compile(example, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    assert namespace["evicted"] == []
    store = namespace["store"]
    assert isinstance(store, bitemporal.Store)
    answer = store.facts.resolve(bitemporal.Key("mailer:prod", "attachment_limit_mb"))
    assert (answer.status, answer.value) == (bitemporal.Status.SUPPORTED, 80)
    store.close()


@needs_psql
def test_psql_examples(empty_database_url: str, migrate_database: Any) -> None:
    migrate_database(empty_database_url)
    out = psql(empty_database_url, "\n".join(blocks("sql", "psql")))
    assert "supported" in out and "missing" in out


@needs_psql
def test_audit_queries(empty_database_url: str) -> None:
    """The "Auditing with psql" queries, on the worked example and a session with evictions."""
    store = bitemporal.connect(empty_database_url, migrate=True)
    for w in WRITES:
        store.facts.record(
            KEY,
            w.value,
            source=w.source,
            valid_from=w.valid_from,
            valid_to=w.valid_to,
            known_at=w.known_at,
        )
    memory = store.memory("session-42")
    memory.register("log:line-40")
    for _ in range(14):
        memory.step()
    store.close()
    out = psql(empty_database_url, "\n".join(blocks("sql", "Auditing with psql")))
    # In force now: the announced 100 MB (policy), nothing from the forum any more.
    assert re.search(r"mailer:prod \| attachment_limit_mb \| policy \| 100 ", out)
    # On 2 September the store said 50 MB; by 5 October we know 80 MB applied that day.
    assert re.search(r"supported\s+\| \[50\]\s+\| supported\s+\| \[80\]\s+\| t", out)
    # September's knowledge: the late change learned, the old rule superseded, the announcement, the forum.
    assert re.search(r"learned\s+\|.*\| policy \| 80 ", out) and re.search(
        r"superseded\s+\|.*\| policy \| 50 ", out
    )
    assert "log:line-40 |           14 | retention" in out and "fell below the threshold 0.2" in out


#: Every README section whose psql examples write facts.
WRITING_SECTIONS = ("psql", "Bulk ingestion", "For agent builders")


@needs_psql
def test_psql_examples_mean_the_same_instants_in_any_session_time_zone(
    make_database: Any, migrate_database: Any
) -> None:
    """PostgreSQL reads a time without an offset in the session's TimeZone, Python reads a
    date as midnight UTC: the README's SQL spells every instant with its offset, so a São
    Paulo psql session writes what a UTC one writes, and Python asked about a day gets the
    answers the examples describe."""
    keys = [bitemporal.Key(e, "attachment_limit_mb") for e in ("mailer:prod", "mailer:uk")]
    days = [date(2026, 8, 31) + timedelta(days=n) for n in range(33)]
    seen = {}
    for zone in ("UTC", "America/Sao_Paulo"):
        url = make_database()
        migrate_database(url)
        out = psql(
            url, "\n".join(b for s in WRITING_SECTIONS for b in blocks("sql", s)), time_zone=zone
        )
        assert "supported" in out
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
