"""resolve's shortcuts (migration 0014) give the answers and the errors of its definition:
the interpretation without a second as-of question when the key's knowledge last changed at or
before valid_at, current knowledge read without the GiST branch, the key checked only when it
is missing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from bitemporal import Interpretation, Key, Status, Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LATER = T0 + timedelta(days=10)


def test_interpretation_either_side_of_the_keys_last_knowledge(store: Store, key: Key) -> None:
    store.facts.record(key, 10, source="s", valid_from=T0, known_at=T0)
    store.facts.record(key, 20, source="s", valid_from=T0, known_at=LATER)
    # Before the correction was known: later knowledge changed the answer for that time.
    mid = T0 + timedelta(days=5)
    answer = store.facts.resolve(key, valid_at=mid)
    assert (answer.value, answer.interpretation) == (20, Interpretation.RETROSPECTIVE)
    # At and after the key's last knowledge nothing was recorded or closed since.
    for valid_at in (LATER, LATER + timedelta(days=1)):
        answer = store.facts.resolve(key, valid_at=valid_at)
        assert (answer.value, answer.interpretation) == (20, Interpretation.HISTORICAL)
    # An earlier knowledge time: the as-of branch, and the versions the answer rests on.
    answer = store.facts.resolve(key, valid_at=mid, known_at=mid)
    assert (answer.value, answer.interpretation) == (10, Interpretation.KNOWN_THEN)
    assert [v.value for v in answer.versions] == [10]
    # Current knowledge, read through current_versions.
    answer = store.facts.resolve(key)
    assert (answer.status, answer.interpretation) == (Status.SUPPORTED, Interpretation.CURRENT)
    assert [(v.value, v.known_period.start) for v in answer.versions] == [(20, LATER)]


def test_the_shortcut_agrees_with_the_definition(
    store: Store, key: Key, raw: psycopg.Connection[Any]
) -> None:
    # Two sources; one retracts after a while: answers for valid times on both sides of it.
    store.facts.record(key, 1, source="a", valid_from=T0, known_at=T0)
    store.facts.record(key, 2, source="b", valid_from=T0, known_at=T0 + timedelta(days=1))
    store.facts.retract(key, source="b", valid_from=T0, known_at=LATER)
    for day in range(15):
        valid_at = T0 + timedelta(days=day, hours=12)
        answer = store.facts.resolve(key, valid_at=valid_at)
        row = raw.execute(
            "SELECT bitemporal_internal.distinct_values(%s, %s, %s, %s)",
            (key.entity, key.attribute, valid_at, valid_at),
        ).fetchone()
        assert row is not None
        expected = (
            Interpretation.HISTORICAL
            if list(answer.values) == row[0]
            else Interpretation.RETROSPECTIVE
        )
        assert answer.interpretation == expected, (day, answer, row[0])


@pytest.mark.parametrize(
    ("call", "sqlstate"),
    [
        ("SELECT bitemporal.resolve('', 'a')", "BT005"),
        # an unknown key is reported before a knowledge time after the present
        ("SELECT bitemporal.resolve(%s, 'a', NULL, '2026-01-02', '2026-01-01')", "BT004"),
        ("SELECT bitemporal.resolve(%s, 'a', 'infinity')", "BT004"),
    ],
)
def test_errors_keep_their_order(raw: psycopg.Connection[Any], call: str, sqlstate: str) -> None:
    params = (f"nobody:{uuid.uuid4().hex}",) if "%s" in call else None
    with pytest.raises(psycopg.Error) as raised:
        raw.execute(call, params)
    assert raised.value.sqlstate == sqlstate


@pytest.mark.parametrize(
    ("args", "sqlstate"),
    [
        ("NULL, '2026-01-02', '2026-01-01'", "BT003"),
        ("'infinity'", "BT001"),
        ("'10000-01-01'", "BT001"),
    ],
)
def test_errors_for_a_known_key(
    store: Store, key: Key, raw: psycopg.Connection[Any], args: str, sqlstate: str
) -> None:
    store.facts.record(key, 1, source="s", known_at=T0)
    with pytest.raises(psycopg.Error) as raised:
        raw.execute(f"SELECT bitemporal.resolve(%s, %s, {args})", (key.entity, key.attribute))
    assert raised.value.sqlstate == sqlstate


# check_instant's range, which the planner inlines into resolve since migration 0021 (a
# function call only outside it): each edge, in time zones either side of UTC (the bounds
# are instants, never wall-clock times), and the order of resolve's errors.
_FIRST, _BEFORE_FIRST = "0001-01-02 00:00:00+00", "0001-01-01 23:59:59.999999+00"
_LAST, _END = "9999-12-29 23:59:59.999999+00", "9999-12-30 00:00:00+00"
_RANGE, _FINITE = "is outside the supported range", "question times must be finite"


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati", "America/St_Johns"])
@pytest.mark.parametrize(
    ("valid_at", "known_at", "present", "expected"),
    [
        # Inside: an answer (the version is valid from the start of time, known from now).
        (_FIRST, None, None, "supported"),
        (_LAST, None, None, "supported"),
        (None, _FIRST, None, "missing"),
        (None, _LAST, _LAST, "supported"),
        # Outside: the error, and which time it names.
        (_BEFORE_FIRST, None, None, ("BT001", "valid_at ", _RANGE)),
        (_END, None, None, ("BT001", "valid_at ", _RANGE)),
        (None, _BEFORE_FIRST, None, ("BT001", "known_at ", _RANGE)),
        (_LAST, _END, _END, ("BT001", "known_at ", _RANGE)),
        (_END, _BEFORE_FIRST, None, ("BT001", "valid_at ", _RANGE)),
        ("infinity", None, None, ("BT001", _FINITE, "")),
        ("-infinity", None, None, ("BT001", _FINITE, "")),
        (None, "infinity", "infinity", ("BT001", _FINITE, "")),
        # An infinite time is reported before one outside the range, and a knowledge time
        # after the present before either.
        (_END, "-infinity", None, ("BT001", _FINITE, "")),
        (_END, _END, _LAST, ("BT003", "knowledge time ", "later than the present")),
    ],
)
def test_question_times_at_the_edges_of_the_range(
    store: Store,
    key: Key,
    raw: psycopg.Connection[Any],
    zone: str,
    valid_at: str | None,
    known_at: str | None,
    present: str | None,
    expected: str | tuple[str, str, str],
) -> None:
    store.facts.record(key, 1, source="s", valid_from=None)
    raw.execute("SELECT set_config('TimeZone', %s, false)", (zone,))
    call = (
        "SELECT (bitemporal.resolve(%s, %s, %s::timestamptz, %s::timestamptz,"
        " %s::timestamptz)).status::text"
    )
    params = (key.entity, key.attribute, valid_at, known_at, present)
    if isinstance(expected, str):
        row = raw.execute(call, params).fetchone()
        assert row == (expected,)
        return
    with pytest.raises(psycopg.Error) as raised:
        raw.execute(call, params)
    sqlstate, start, fragment = expected
    message = raised.value.diag.message_primary or ""
    assert raised.value.sqlstate == sqlstate, message
    assert message.startswith(start) and fragment in message, message
