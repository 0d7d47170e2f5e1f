"""JSON values exactly as ``jsonb`` holds them, both ways.

``jsonb`` keeps numbers as ``numeric``: every digit. Read through Python floats,
``0.1000000000000000000000000001`` would come back as ``0.1`` and recording the
value read would write a new version. So:

* :func:`loads` reads an integer as ``int`` (as ``Decimal`` past Python's
  digit limit for ``int``), and a fraction as ``float`` when writing that float
  back gives the same number, else as ``Decimal``: a value written from Python
  comes back as it was written, and any value comes back exactly;
* :func:`dumps` writes ``Decimal`` as its exact digits, so a value read and
  recorded again is the same ``jsonb`` (a no-op);
* reading never fails on a value some other writer stored: containers nested
  deeper than :data:`MAX_DEPTH` levels come back, from there down, as
  :class:`RawJSON` (the exact JSON text), which :func:`dumps` writes back
  verbatim. The limit is ours, not the parser's: Python 3.13 parses thousands
  of levels in C (3.11 and 3.12 stop near 1,000), and lists nested that deep
  break code that recurses in Python (:func:`dumps`, ``copy.deepcopy``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from .errors import InvalidValueError

#: JSON-compatible values, as stored in ``jsonb`` columns.
JSON = Any

#: Containers nested deeper than this are read as :class:`RawJSON`.
MAX_DEPTH = 256
# A text this short cannot nest deeper than MAX_DEPTH (each level takes two characters):
# the hot path's only cost.
_SHALLOW_LENGTH = 2 * MAX_DEPTH + 1


class RawJSON(str):
    """A stored JSON value too deeply nested for Python, as its exact JSON text.

    :func:`dumps` writes it back unchanged (not as a JSON string).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"RawJSON({str.__repr__(self)})"


def _integer(text: str) -> int | Decimal:
    limit = sys.get_int_max_str_digits()
    if limit and len(text.lstrip("-")) > limit:
        return Decimal(text)
    return int(text)


def _fraction(text: str) -> float | Decimal:
    number = float(text)
    # A float that writes back as a different number would lose digits.
    if number in (float("inf"), float("-inf")) or Decimal(repr(number)) != Decimal(text):
        return Decimal(text)
    return number


_DECODER = json.JSONDecoder(parse_float=_fraction)
_EXACT_DECODER = json.JSONDecoder(parse_int=_integer, parse_float=_fraction)
#: One JSON value from a position of a text: (value, the position after it), StopIteration
#: when no value starts there.
# (An attribute JSONDecoder sets in __init__, which typeshed does not declare.)
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def loads(text: str | bytes) -> JSON:
    """A JSON text as Python values, exactly (see the module docstring); never raises
    for well-formed JSON."""
    if isinstance(text, bytes):
        text = text.decode()
    try:
        # The decoder's scanner (C) at once: decode() would first look for whitespace around
        # the value in Python, and the text PostgreSQL prints for jsonb has none (issue 15:
        # thousands of values per history). Anything else takes the way below.
        value, end = _SCAN(text, 0)
        if end == len(text):
            return (
                value if end <= _SHALLOW_LENGTH or not _too_deep(text, value) else _loads_deep(text)
            )
    except (StopIteration, ValueError):
        pass
    except RecursionError:
        return _loads_deep(text)
    try:
        value = _decode(text)
    except RecursionError:
        return _loads_deep(text)
    return _loads_deep(text) if len(text) > _SHALLOW_LENGTH and _too_deep(text, value) else value


def _decode(text: str) -> JSON:
    try:
        # Integers through int() in C (one decoder, built once): only an integer past
        # the digit limit fails there, and is read again as _integer reads it.
        return _DECODER.decode(text)
    except ValueError:
        return _EXACT_DECODER.decode(text)


def _too_deep(text: str, value: JSON) -> bool:
    """Whether a container of ``value``, parsed from ``text``, sits deeper than MAX_DEPTH."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    # Level by level, every container down to MAX_DEPTH: for a value of more than MAX_DEPTH
    # containers, about as long again as parsing it (an array of 300 objects, 2026-12-07:
    # 37 us to parse, 44 us to walk). Scanning the text instead took longer.
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [
            inner
            for outer in level
            if type(outer) is list or type(outer) is dict
            for inner in (outer.values() if type(outer) is dict else outer)
            if type(inner) is list or type(inner) is dict
        ]
        if not level:
            return False
    return True


def parse(text: str) -> JSON:
    """A JSON text given as input (command line, import files), with fractions read
    exactly as :func:`loads` reads them. Unlike :func:`loads` it raises: ``ValueError``
    (``json.JSONDecodeError`` for malformed JSON, an integer past Python's digit limit)
    or ``RecursionError`` (nesting too deep), for the caller to report."""
    return json.loads(text, parse_float=_fraction)


_TOKEN = re.compile(
    r'\s*(?:("(?:[^"\\]|\\.)*")|([\[{])|([\]}])|([,:])|([^\s,:\[\]{}"]+))', re.DOTALL
)
_ATOMS = {"true": True, "false": False, "null": None}


def _atom(text: str) -> JSON:
    if text in _ATOMS:
        return _ATOMS[text]
    if any(c in text for c in ".eE"):
        return _fraction(text)
    return _integer(text)


def _loads_deep(text: str) -> JSON:
    """Parse without recursion; containers below MAX_DEPTH become RawJSON."""
    # Each open container: [the container, the pending object key or None].
    stack: list[list[Any]] = []
    result: JSON = None
    pos = 0
    while True:
        match = _TOKEN.match(text, pos)
        if match is None:
            break
        pos = match.end()
        string, opening, closing, punctuation, atom = match.groups()
        if punctuation is not None:
            continue
        if opening is not None and len(stack) >= MAX_DEPTH:
            start = match.start(2)
            pos = _skip_container(text, start)
            value: JSON = RawJSON(text[start:pos])
        elif opening is not None:
            stack.append([{} if opening == "{" else [], None])
            continue
        elif closing is not None:
            value = stack.pop()[0]
        elif string is not None:
            value = json.loads(string)
            top = stack[-1] if stack else None
            if top is not None and isinstance(top[0], dict) and top[1] is None:
                top[1] = value
                continue
        else:
            value = _atom(atom)
        if not stack:
            result = value
            continue
        container, pending = stack[-1]
        if isinstance(container, dict):
            container[pending] = value
            stack[-1][1] = None
        else:
            container.append(value)
    return result


def _skip_container(text: str, start: int) -> int:
    """The position just after the container opening at ``start``."""
    depth = 0
    for match in _TOKEN.finditer(text, start):
        if match.group(2) is not None:
            depth += 1
        elif match.group(3) is not None:
            depth -= 1
            if depth == 0:
                return match.end()
    raise ValueError("unbalanced JSON")  # jsonb text is always balanced


def dumps(value: JSON, *, indent: int | None = None) -> str:
    """``value`` as JSON text that ``jsonb`` reads back as exactly ``value``.

    Raises :class:`~bitemporal.InvalidValueError` for what JSON cannot hold
    (NaN, infinities, non-string keys other than numbers, booleans and None,
    other types) or Python cannot write (nesting beyond its recursion limit,
    an ``int`` past its digit limit).
    """
    try:
        return encode(value, indent=indent)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidValueError(f"value is not JSON-serializable: {exc}") from exc


def encode(
    value: JSON, *, indent: int | None = None, default: Callable[[Any], JSON] | None = None
) -> str:
    """:func:`dumps` for callers with their own error handling: raises ``TypeError``,
    ``ValueError`` or ``RecursionError``. ``default`` turns other types into JSON
    values (as :func:`json.dumps`' ``default`` does)."""
    return _encode(value, indent, 0, default)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key, allow_nan=False)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _encode(
    value: JSON, indent: int | None, level: int, default: Callable[[Any], JSON] | None = None
) -> str:
    if isinstance(value, RawJSON):
        return str(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} is not a JSON number")
        return format(value, "f")
    # Loops rather than comprehensions: one stack frame per level of nesting.
    items: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            items.append(
                f"{json.dumps(_key(k), ensure_ascii=False)}: "
                f"{_encode(v, indent, level + 1, default)}"
            )
        return _join("{", items, "}", indent, level)
    if isinstance(value, list | tuple):
        for v in value:
            items.append(_encode(v, indent, level + 1, default))
        return _join("[", items, "]", indent, level)
    if value is None or isinstance(value, str | int | float):
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    if default is not None:
        return _encode(default(value), indent, level, None)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _join(opening: str, items: list[str], closing: str, indent: int | None, level: int) -> str:
    if indent is None or not items:
        return opening + ", ".join(items) + closing
    inner = "\n" + " " * (indent * (level + 1))
    return opening + inner + ("," + inner).join(items) + "\n" + " " * (indent * level) + closing
