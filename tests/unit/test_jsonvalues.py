"""bitemporal.jsonvalues.loads reads what json.loads reads (with exact numbers), whether or
not the text has whitespace around the value, and refuses what it refuses."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from bitemporal.jsonvalues import RawJSON, loads


@pytest.mark.parametrize(
    "text",
    ["1", " 1", "1 ", "\n[1, 2]\t", '"a"', ' {"a": [true, null]} ', "-0", "1e3", "NaN", "[]"],
)
def test_as_json_loads(text: str) -> None:
    assert loads(text) == json.loads(text) or text == "NaN"
    assert loads(text.encode()) == loads(text) or text == "NaN"


def test_exact_numbers_with_or_without_whitespace() -> None:
    long = "9" * 5000
    for text in ("0.1000000000000000000000000001", long, f" {long} "):
        assert loads(text) == Decimal(text.strip())


@pytest.mark.parametrize("text", ["", " ", "1 2", "[1,", "{'a': 1}", "1,"])
def test_malformed_text_is_refused(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        loads(text)


def test_deep_nesting_comes_back_raw_below_the_limit() -> None:
    value = loads("[" * 100_000 + "]" * 100_000)
    depth = 0
    while isinstance(value, list) and not isinstance(value, RawJSON):
        value, depth = value[0], depth + 1
    assert isinstance(value, RawJSON) and depth > 0
