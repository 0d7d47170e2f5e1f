"""Reports, at the end of the run, how many documentation code blocks there are and how many ran."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.docs.test_code_blocks import BLOCKS, kind


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    counts = Counter(kind(b) for b in BLOCKS)
    terminalreporter.write_line(
        f"documentation code blocks: {len(BLOCKS)} found, {counts['run']} run, "
        f"{counts['skipped']} skipped (reasons in the docs), {counts['output, checked']} output "
        f"checked, {counts['output']} output shown only (tests/docs/test_code_blocks.py)"
    )
