"""The "For agent builders" examples of the README run as written (Python, then psql)."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import bitemporal
from bitemporal import StaleCause, Status

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SECTION = README.split("\n## For agent builders\n", 1)[1].split("\n## ", 1)[0]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, flags=re.DOTALL)


def test_python_examples(empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BITEMPORAL_DATABASE_URL", empty_database_url)
    bitemporal.migrate()  # deployed first (`bitemporal db upgrade`): connect() does not migrate
    explain, provenance = blocks("python")
    namespace: dict[str, object] = {}
    exec(compile(explain, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    answer, report = namespace["answer"], namespace["report"]
    assert isinstance(answer, bitemporal.Explanation) and isinstance(report, bitemporal.CheckReport)
    assert answer.status is Status.SUPPORTED and answer.value == 100
    assert answer.sentence().startswith("mailer:eu/attachment_limit_mb for 2026-10-15 12:00 UTC")
    assert "announced, in force from 2026-10-01" in answer.sentence()
    assert (report.ok, report.omitted) == (False, ("effective_date", "status", "source"))
    assert '"qualifications"' in str(namespace["prompt"])
    exec(compile(provenance, "README.md", "exec"), namespace)  # noqa: S102
    store = namespace["store"]
    assert isinstance(store, bitemporal.Store)
    chunk, summary = namespace["chunk"], namespace["summary"]
    assert isinstance(chunk, bitemporal.Artifact) and isinstance(summary, bitemporal.Artifact)
    # The chunk was retired and the summary rebuilt: nothing is stale any more...
    assert store.provenance.stale() == []
    # ...but just before the rebuild both were, the summary through the chunk.
    before = store.provenance.stale(
        store.provenance.get(summary.artifact_id).retired_at - timedelta(microseconds=1)
    )
    assert [(s.kind, s.reasons[0].cause) for s in before] == [
        ("chunk", StaleCause.SUPERSEDED),
        ("summary", StaleCause.SUPERSEDED),
    ]
    store.close()


@pytest.mark.skipif(shutil.which("psql") is None, reason="the psql client is not installed")
def test_psql_examples(empty_database_url: str, migrate_database: Any) -> None:
    migrate_database(empty_database_url)
    result = subprocess.run(
        ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-d", empty_database_url],
        input="\n".join(blocks("sql")),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "announced, in force from 2026-10-01" in out
    assert "From 1 September the attachment limit is 80 MB." in out
    assert re.search(
        r"summary \| uk limits \| superseded \| version \d+ \(mailer:uk/attachment_limit_mb, "
        r"source policy: 80\) superseded on .* \(85\)",
        out,
    ), out
    assert re.search(r"learned\s+\|", out)
