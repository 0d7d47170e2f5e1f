"""Erasure through the Python API and the CLI (issue 16): erase, erase_entity, the status
erased, typed errors that change nothing, roles, serialisation with writers, and a property
test against the reference model."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bitemporal import (
    Erasure,
    Interpretation,
    InvalidKeyError,
    InvalidReasonError,
    Key,
    PermissionDeniedError,
    Status,
    Store,
    UnknownKeyError,
)
from tests.helpers import Connect, at, eraser_roles, examples, run_cli
from tests.integration.test_properties import apply, assert_same_answer, fresh_key
from tests.reference_model import FactModel
from tests.strategies import GRID, KNOWN_BASE, NOW, US, VALID_QUESTIONS, knowledge_times, scenarios


def state(store: Store, key: Key) -> list[tuple[Any, ...]]:
    """Everything a refused erasure must leave as it was."""
    return [
        (v.version_id, v.value, v.erased_at, v.valid_period, v.known_period)
        for v in store.facts.history(key)
    ]


def test_erase_keeps_the_timeline_and_answers_erased(store: Store, key: Key) -> None:
    store.facts.record(key, 50, source="policy", valid_from=date(2026, 1, 1))
    store.facts.record(key, 80, source="policy", valid_from=date(2026, 6, 1))
    before = store.facts.history(key)
    erasure = store.facts.erase(key, reason="GDPR art. 17, request 7")
    assert isinstance(erasure, Erasure)
    assert (erasure.entity, erasure.attribute, erasure.reason) == (
        key.entity,
        key.attribute,
        "GDPR art. 17, request 7",
    )
    assert erasure.version_ids == tuple(v.version_id for v in before)
    assert erasure.erased_by
    after = store.facts.history(key)
    # The shape stays: ids, sources, both periods; the values go.
    assert [(v.version_id, v.source, v.valid_period, v.known_period) for v in after] == [
        (v.version_id, v.source, v.valid_period, v.known_period) for v in before
    ]
    assert all(v.erased and v.value is None for v in after)
    assert {v.erased_at for v in after} == {erasure.erased_at}
    assert {v.erasure_id for v in after} == {erasure.erasure_id}
    assert all(v.recorded_at is not None for v in after)

    answer = store.facts.resolve(key, valid_at=date(2026, 3, 1))
    assert (answer.status, answer.value, answer.values) == (Status.ERASED, None, ())
    assert answer.interpretation is Interpretation.ERASED
    assert [v.erased for v in answer.versions] == [True]
    assert [v.erased for v in store.facts.as_of(key, valid_at=date(2026, 3, 1))] == [True]
    # Before anything was recorded for that time: still missing, not erased.
    assert store.facts.resolve(key, valid_at=date(2025, 1, 1)).status is Status.MISSING

    explanation = store.facts.explain(key, valid_at=date(2026, 7, 1))
    assert explanation.status is Status.ERASED
    assert explanation.value is None and explanation.alternatives == ()
    qualification = explanation.qualification("erased")
    assert qualification is not None and qualification.data["erased_on"] is not None
    sentence = explanation.sentence()
    assert "no value (erased)" in sentence and "erased on" in sentence
    assert all(v.erased_at == erasure.erased_at for v in explanation.versions)

    # Idempotent: nothing new is recorded.
    assert store.facts.erase(key, reason="again") is None


def test_later_values_decide_once_recorded(store: Store, key: Key) -> None:
    store.facts.record(key, 50, source="policy")
    store.facts.erase(key, reason="request")
    store.facts.record(key, 60, source="audit")
    answer = store.facts.resolve(key)
    # The erased value is gone: it neither agrees nor conflicts.
    assert (answer.status, answer.value) == (Status.SUPPORTED, 60)
    assert sorted(v.erased for v in answer.versions) == [False, True]
    explanation = store.facts.explain(key)
    assert explanation.sources == ("audit",)
    # A second erasure takes what was recorded since.
    second = store.facts.erase(key, reason="request, follow-up")
    assert second is not None and len(second.version_ids) == 1
    assert store.facts.resolve(key).status is Status.ERASED


def test_erase_entity(store: Store, key: Key) -> None:
    other = Key(key.entity, "name")
    store.facts.record(key, 50, source="policy")
    store.facts.record(other, "Ann", source="crm")
    erasure = store.facts.erase_entity(key.entity, reason="account closed")
    assert erasure is not None and erasure.attribute is None and len(erasure.version_ids) == 2
    assert store.facts.resolve(other).status is Status.ERASED
    assert store.facts.erase_entity(key.entity, reason="account closed") is None


def test_bad_input_raises_typed_errors_and_changes_nothing(store: Store, key: Key) -> None:
    store.facts.record(key, 50, source="policy")
    before = state(store, key)
    for reason in ("", "   ", None, 5):
        with pytest.raises(InvalidReasonError):
            store.facts.erase(key, reason=reason)  # type: ignore[arg-type]
        with pytest.raises(InvalidReasonError):
            store.facts.erase_entity(key.entity, reason=reason)  # type: ignore[arg-type]
    with pytest.raises(UnknownKeyError):
        store.facts.erase(Key(key.entity, "never_recorded"), reason="request")
    with pytest.raises(UnknownKeyError):
        store.facts.erase_entity(f"nobody:{uuid.uuid4().hex}", reason="request")
    with pytest.raises(InvalidKeyError):
        store.facts.erase_entity("", reason="request")
    assert state(store, key) == before


def test_evidence_goes_and_artifacts_go_stale(store: Store, key: Key) -> None:
    version = store.facts.record(key, 50, source="policy")
    store.evidence.add(version.version_id, "The limit is 50 MB.")
    summary = store.provenance.record("summary", key.entity, versions=[version.version_id])
    store.facts.erase(key, reason="request")
    assert store.facts.explain(key).versions[0].evidence == ()
    stale = [s for s in store.provenance.stale() if s.artifact_id == summary.artifact_id]
    assert len(stale) == 1
    assert [r.cause.value for r in stale[0].reasons] == ["erased"]


def test_cli_erases_and_shows_erased_values(
    database_url: str, key: Key, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ("--url", database_url)
    code, _, err = run_cli(
        capsys, *url, "record", key.entity, key.attribute, "50", "--source", "policy"
    )
    assert (code, err) == (0, "")
    code, out, err = run_cli(
        capsys, *url, "erase", key.entity, key.attribute, "--reason", "GDPR art. 17"
    )
    assert (code, err) == (0, "") and out.startswith("erased: erasure ")
    code, out, _ = run_cli(
        capsys, *url, "erase", key.entity, key.attribute, "--reason", "GDPR art. 17"
    )
    assert code == 0 and out.startswith("nothing to erase")
    code, out, _ = run_cli(capsys, *url, "history", key.entity, key.attribute)
    assert code == 0 and "(erased)" in out
    code, out, _ = run_cli(capsys, *url, "history", key.entity, key.attribute, "--json")
    assert code == 0
    assert [(v["value"], v["erased"]) for v in json.loads(out)] == [(None, True)]
    code, out, _ = run_cli(capsys, *url, "resolve", key.entity, key.attribute)
    assert code == 0 and "(erased)" in out and "status: erased" in out
    code, _, err = run_cli(capsys, *url, "erase", key.entity, key.attribute, "--reason", " ")
    assert code == 1 and err.startswith("bitemporal: error: an erasure needs a reason")
    assert "Traceback" not in err
    code, _, err = run_cli(capsys, *url, "erase", key.entity, "nope", "--reason", "x")
    assert code == 1 and "unknown key" in err


@pytest.fixture
def roles(migrated_database_url: str) -> Iterator[dict[str, str]]:
    """LOGIN roles granted through grant_roles: a reader, a writer and an eraser."""
    with eraser_roles(migrated_database_url, "bt_erasure") as roles:
        yield roles


def test_only_the_eraser_role_may_erase(roles: dict[str, str], key: Key) -> None:
    def store_as(role: str) -> Store:
        return Store(psycopg.connect(roles["url"], user=roles[role], autocommit=True))

    writer, reader, eraser = store_as("writer"), store_as("reader"), store_as("eraser")
    try:
        writer.facts.record(key, 50, source="policy")
        # The reader reads the whole history through the function (no table access).
        history = reader.facts.history(key)
        assert [(v.value, v.recorded_at is not None) for v in history] == [(50, True)]
        for role_store in (writer, reader):
            with pytest.raises(PermissionDeniedError):
                role_store.facts.erase(key, reason="request")
            with pytest.raises(PermissionDeniedError):
                role_store.facts.erase_entity(key.entity, reason="request")
        assert reader.facts.history(key)[0].value == 50
        erasure = eraser.facts.erase(key, reason="request")
        assert erasure is not None and erasure.erased_by == roles["eraser"]
        assert [v.erased for v in reader.facts.history(key)] == [True]
        assert reader.facts.resolve(key).status is Status.ERASED
    finally:
        for s in (writer, reader, eraser):
            s.connection.close()


def test_erasure_serialises_with_a_concurrent_write(connect: Connect, key: Key) -> None:
    """A write in flight when the erasure starts: the erasure waits for it and erases its
    version too. An erasure in flight when a write starts: the write waits, and its value
    (recorded after the erasure) stays."""
    setup = Store(connect())
    setup.facts.record(key, 50, source="policy")

    writer_conn = connect(autocommit=False)
    writer = Store(writer_conn)
    writer.facts.record(key, 60, source="audit")  # holds the key's lock until commit
    result: dict[str, Any] = {}

    def erase() -> None:
        result["erasure"] = Store(connect()).facts.erase(key, reason="request")

    eraser = threading.Thread(target=erase)
    eraser.start()
    eraser.join(timeout=1)
    assert eraser.is_alive(), "the erasure waits for the write to the key"
    writer_conn.commit()
    eraser.join(timeout=30)
    erasure = result["erasure"]
    assert erasure is not None and len(erasure.version_ids) == 2
    assert all(v.erased for v in setup.facts.history(key))

    eraser_conn = connect(autocommit=False)
    eraser_conn.execute("SELECT * FROM bitemporal.erase_entity(%s, 'again')", (key.entity,))
    eraser_conn.execute(  # an erasure in flight: holds the key's lock
        "SELECT 1 FROM bitemporal.fact_key WHERE entity = %s FOR UPDATE", (key.entity,)
    )

    def write() -> None:
        result["recorded"] = Store(connect()).facts.record(key, 70, source="audit")

    late = threading.Thread(target=write)
    late.start()
    late.join(timeout=1)
    assert late.is_alive(), "the write waits for the erasure"
    eraser_conn.commit()
    late.join(timeout=30)
    assert result["recorded"].created
    answer = setup.facts.resolve(key)
    assert (answer.status, answer.value) == (Status.SUPPORTED, 70)
    history = setup.facts.history(key)
    assert [v.value for v in history if not v.erased] == [70]
    assert setup.facts.erase(key, reason="once more") is not None


@settings(
    deadline=None,
    max_examples=examples(60, 15),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_erasure_changes_only_the_answers_it_covers(store: Store, data: st.DataObject) -> None:
    """Writes, an erasure, more writes: every answer agrees with the reference model; right
    after the erasure, an answer at a question no erased version was eligible for is what
    it was, and one where versions were eligible says erased."""
    key = fresh_key()
    model = FactModel()
    before = data.draw(scenarios(max_ops=6), label="writes before")
    after = data.draw(st.lists(scenarios(max_ops=3), max_size=1), label="writes after")
    later = after[0] if after else []
    times = data.draw(knowledge_times(len(before) + len(later)), label="knowledge times")
    for op, t in zip(before, times, strict=False):
        apply(store, model, key, op, t, t)

    known_questions = sorted(
        {KNOWN_BASE - timedelta(days=1), NOW, *times, *(t - US for t in times)}
    )
    questions = [(v, k) for v in (*VALID_QUESTIONS, *GRID) for k in known_questions]

    def ask(valid_at: datetime, known_at: datetime) -> Any:
        return store.facts.resolve(key, valid_at=valid_at, known_at=known_at, now=NOW)

    answers = {q: ask(*q) for q in questions}
    erasure = store.facts.erase(key, reason="property test")
    erased = model.erase()
    assert (erasure is not None) == (erased > 0)
    for q, was in answers.items():
        now_ = ask(*q)
        if was.versions:
            assert now_.status is Status.ERASED and now_.value is None, q
            event("covered: erased")
        else:
            assert (now_.status, now_.values) == (was.status, was.values), q
            event(f"not covered: {was.status.value}")
        assert_same_answer(now_, model.resolve(q[0], q[1], NOW), f"after erasure: {q}")

    for op, t in zip(later, times[len(before) :], strict=True):
        apply(store, model, key, op, t, t)
    for valid_at, known_at in questions:
        assert_same_answer(
            ask(valid_at, known_at),
            model.resolve(valid_at, known_at, NOW),
            f"{before} / {later} at {times}: valid_at={valid_at}, known_at={known_at}",
        )
    history = store.facts.history(key)
    assert sum(not v.erased for v in history) == sum(not v.erased for v in model.history())


def test_a_value_is_recorded_again_over_an_erased_remainder(store: Store, key: Key) -> None:
    """An erased remainder never counts as holding the value (found by the property test:
    record 50 until February, erase, record 50 until January, record 50 until February)."""
    store.facts.record(
        key, 50, source="policy", valid_to=date(2026, 2, 1), known_at=at("2025-01-01")
    )
    store.facts.erase(key, reason="request")
    store.facts.record(
        key, 50, source="policy", valid_to=date(2026, 1, 1), known_at=at("2025-01-02")
    )
    again = store.facts.record(
        key, 50, source="policy", valid_to=date(2026, 2, 1), known_at=at("2025-01-03")
    )
    assert again.created
    answer = store.facts.resolve(key, valid_at=date(2026, 1, 15))
    assert (answer.status, answer.value) == (Status.SUPPORTED, 50)
    batch = store.facts.record_many(
        [
            {"key": key, "source": "policy", "value": 50, "valid_to": date(2026, 3, 1)},
        ]
    )
    assert batch[0].created
    store.facts.erase(key, reason="request")
    store.facts.record_many(
        [{"key": key, "source": "policy", "value": 50, "valid_to": date(2026, 1, 1)}]
    )
    rows = store.facts.record_many(
        [{"key": key, "source": "policy", "value": 50, "valid_to": date(2026, 3, 1)}]
    )
    assert rows[0].created
    assert store.facts.resolve(key, valid_at=date(2026, 2, 15)).value == 50
