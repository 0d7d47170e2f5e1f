"""The fenced code blocks of README.md, docs/**/*.md and benchmarks/README.md, with the
hidden directives around them.

A block is run by tests/docs/test_code_blocks.py according to its language, unless an HTML
comment (invisible on GitHub and on the site) on the lines just before its fence says otherwise:

    <!-- doctest: skip REASON -->     not run, for the REASON given (counted and listed)
    <!-- doctest: output REASON -->   shown output or a listing, not code (counted)
    <!-- doctest: citus REASON -->    run on the Citus lane only (BITEMPORAL_TEST_CITUS=1),
                                      where the page's database is distributed; elsewhere
                                      skipped for the REASON given

    <!-- doctest-setup
    python code                       run in the page's namespace just before the block
    -->

and after the closing fence:

    <!-- doctest-check
    python code                       run just after the block, with ``out`` set to what the
    -->                               block produced (psql's or the shell's stdout, parsed JSON)

A block without a language must carry ``skip`` or ``output``: nothing goes untested unnoticed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Languages the test knows how to run.
RUNNABLE = frozenset({"python", "sql", "sh", "json"})

_DIRECTIVE = re.compile(r"^<!-- doctest: (skip|output|citus)\b\s*(.*?)\s*-->$")
_CITUS = os.environ.get("BITEMPORAL_TEST_CITUS") == "1"


@dataclass
class Block:
    page: str  # relative to the checkout
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    skip: str | None = None
    output: str | None = None
    setup: str | None = None
    check: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.skip is None and self.output is None


def pages() -> list[Path]:
    """README.md, docs/, and benchmarks/README.md (published as the site's benchmarks page)."""
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        ROOT / "benchmarks" / "README.md",
    ]


def _comment(lines: list[str], start: int) -> tuple[str, int]:
    """The body of the multi-line HTML comment opening at ``start``, and the line after it."""
    end = start + 1
    while lines[end].strip() != "-->":
        end += 1
    return "\n".join(lines[start + 1 : end]) + "\n", end + 1


def parse(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    page = path.relative_to(ROOT).as_posix()
    found: list[Block] = []
    pending: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _DIRECTIVE.match(line.strip())
        if directive:
            pending[directive[1]] = directive[2] or directive[1]
        elif line.strip() == "<!-- doctest-setup":
            pending["setup"], i = _comment(lines, i)
            continue
        elif line.strip() == "<!-- doctest-check":
            body, i = _comment(lines, i)
            assert found and found[-1].check is None, f"{page}:{i}: doctest-check after no block"
            found[-1].check = body
            continue
        elif line.startswith("```"):
            end = lines.index("```", i + 1)
            found.append(
                Block(
                    page,
                    i + 1,
                    line[3:].strip(),
                    "\n".join(lines[i + 1 : end]) + "\n",
                    skip=pending.get("skip")
                    or (None if _CITUS or "citus" not in pending else pending["citus"]),
                    output=pending.get("output"),
                    setup=pending.get("setup"),
                )
            )
            pending = {}
            i = end
        elif line.strip():
            assert not pending, f"{page}:{i + 1}: a doctest directive not followed by a code block"
        i += 1
    return found


def collect() -> list[Block]:
    return [block for path in pages() for block in parse(path)]
