"""README.md is a front page; the manual lives in docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_is_short() -> None:
    assert len(README) <= 10_000, f"README.md has {len(README)} characters; move the rest to docs/"


def test_readme_links_reach_existing_pages() -> None:
    links = re.findall(r"\]\((docs/[^)#]+|benchmarks/[^)#]+)", README)
    assert len(links) >= 10
    for link in links:
        assert (ROOT / link).exists(), link
