"""operations.whole: a read is asked again while its parts disagree, from one snapshot, and
not forever."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bitemporal import SerializationError, TransientError
from bitemporal.operations import READ_ATTEMPTS, Done, Statement, advance, start, whole

ASK = Statement("SELECT 1")
#: Asked again: the same statement, from one snapshot (Statement.snapshot).
AGAIN = replace(ASK, snapshot=True)


def _agree(rows: list[Any]) -> bool:
    return bool(rows) and rows[0] == ("whole",)


def test_a_read_whose_parts_agree_is_asked_once() -> None:
    steps = whole(ASK, _agree, "the key")
    assert start(steps) is ASK
    assert advance(steps, [("whole",)]) == Done([("whole",)])


def test_a_torn_read_is_asked_again_until_its_parts_agree() -> None:
    steps = whole(ASK, _agree, "the key")
    assert start(steps) is ASK
    for _ in range(READ_ATTEMPTS - 2):
        assert advance(steps, [("torn",)]) == AGAIN
    assert advance(steps, [("whole",)]) == Done([("whole",)])


def test_a_read_torn_every_time_is_a_transient_error() -> None:
    steps = whole(ASK, _agree, "the versions of e/a")
    start(steps)
    for _ in range(READ_ATTEMPTS - 1):
        assert advance(steps, [("torn",)]) == AGAIN
    with pytest.raises(
        SerializationError, match="the versions of e/a changed under each of 10"
    ) as err:
        advance(steps, [("torn",)])
    assert isinstance(err.value, TransientError)
