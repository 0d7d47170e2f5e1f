"""bitemporal.jsonvalues.loads reads what json.loads reads (with exact numbers), whether or
not the text has whitespace around the value, and refuses what it refuses."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from bitemporal.jsonvalues import MAX_DEPTH, RawJSON, dumps, loads


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


def _innermost(value: object) -> tuple[int, object]:
    """How many lists (or one-key objects) down the innermost value sits, and that value."""
    depth = 0
    while isinstance(value, list | dict) and value:
        value, depth = (
            next(iter(value.values())) if isinstance(value, dict) else value[0],
            depth + 1,
        )
    return depth, value


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 300, 900, 5_000, 100_000])
@pytest.mark.parametrize("padding", ["", " "])
def test_nesting_past_the_limit_comes_back_raw_from_the_limit(levels: int, padding: str) -> None:
    """At MAX_DEPTH on every Python: 3.11's parser gives up near 1,000 levels, 3.13's not
    at 5,000, and a value parsed whole that deep fails dumps (it recurses in Python)."""
    text = padding + "[" * levels + "]" * levels + padding
    depth, inner = _innermost(loads(text))
    assert depth == MAX_DEPTH and inner == RawJSON(
        "[" * (levels - MAX_DEPTH) + "]" * (levels - MAX_DEPTH)
    )
    assert dumps(loads(text)) == text.strip()
    nested_objects = '{"a": ' * levels + "1" + "}" * levels
    depth, inner = _innermost(loads(nested_objects))
    assert depth == MAX_DEPTH and isinstance(inner, RawJSON)
    assert dumps(loads(nested_objects)) == nested_objects


def test_nesting_at_the_limit_and_brackets_elsewhere_are_parsed() -> None:
    at_limit = "[" * MAX_DEPTH + "1" + "]" * MAX_DEPTH
    assert _innermost(loads(at_limit)) == (MAX_DEPTH, 1)
    # Brackets in strings, and many shallow containers, are no nesting.
    in_strings = json.dumps(["[" * 1_000, {"k": "{" * 1_000}])
    assert loads(in_strings) == json.loads(in_strings)
    wide = json.dumps([{"a": [i]} for i in range(1_000)])
    assert loads(wide) == json.loads(wide)
