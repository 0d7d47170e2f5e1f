"""MkDocs hooks: pages made from files that live outside docs/, so that nothing is written twice.

- ``index.md`` is the README (the front page), its ``docs/`` links made site-relative;
- ``benchmarks.md`` is ``benchmarks/README.md`` (the figures and how to reproduce them),
  with its plots; links to the benchmark's other files become their paths in code.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]


def _front_page(text: str) -> str:
    text = text.replace("[`docs/`](docs/)", "`docs/`")
    text = text.replace("](docs/", "](")
    return text.replace("(benchmarks/README.md)", "(benchmarks.md)")


def _benchmarks_page(text: str) -> str:
    def link(match: re.Match[str]) -> str:
        bang, label, target = match.group(1), match.group(2), match.group(3)
        if re.match(r"[a-z]+://", target) or target.startswith("#"):
            return match.group(0)
        if bang:  # a plot: published next to the page
            return f"![{label}](benchmarks/{target})"
        return (
            f"{label} (`benchmarks/{target}`)"
            if label.strip("`") != target
            else f"`benchmarks/{target}`"
        )

    return re.sub(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)", link, text)


def on_files(files: Files, config: Any) -> Files:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=_front_page(readme)))
    bench = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "benchmarks.md", content=_benchmarks_page(bench)))
    for plot in sorted((ROOT / "benchmarks").glob("*.png")):
        files.append(File.generated(config, f"benchmarks/{plot.name}", abs_src_path=str(plot)))
    return files
