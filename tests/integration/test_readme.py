"""The README's examples run as written: Python through the API, SQL through the real psql client."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import bitemporal

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def test_python_examples(empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BITEMPORAL_DATABASE_URL", empty_database_url)
    examples = blocks("python")
    # The fact store, then working memory, in one session as a reader would run them.
    facts, memory = examples[0], next(b for b in examples if "store.memory(" in b)
    namespace: dict[str, object] = {}
    for example in (facts, memory):
        exec(compile(example, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    assert namespace["evicted"] == []
    store = namespace["store"]
    assert isinstance(store, bitemporal.Store)
    answer = store.facts.resolve(bitemporal.Key("mailer:prod", "attachment_limit_mb"))
    assert (answer.status, answer.value) == (bitemporal.Status.SUPPORTED, 80)
    store.close()


@pytest.mark.skipif(shutil.which("psql") is None, reason="the psql client is not installed")
def test_psql_examples(empty_database_url: str) -> None:
    bitemporal.migrate(empty_database_url)
    script = "\n".join(blocks("sql"))
    result = subprocess.run(
        ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-d", empty_database_url],
        input=script, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "supported" in result.stdout and "missing" in result.stdout
