"""The answer object for an agent, on the worked example: qualifications, JSON, sentence, checker.

An attachment limit is 50 MB from 2026-01-01. It changes to 80 MB on
2026-09-01, ingested only on 2026-09-03. On 2026-09-20 an announcement is
ingested: 100 MB from 2026-10-01. On 2026-09-30 a second source claims 90 MB
for September.
"""

from __future__ import annotations

import json
from datetime import date, datetime

import pytest

from bitemporal import (
    Explanation,
    Interpretation,
    InvalidInputError,
    Key,
    KnowledgeTimeInFutureError,
    Status,
    Store,
    UnknownKeyError,
    Verdict,
    render,
)
from tests.helpers import Connect, at

NOW = at("2026-09-29")


@pytest.fixture
def example(store: Store, key: Key) -> Key:
    store.evidence.record(
        key,
        50,
        source="policy",
        valid_from=date(2026, 1, 1),
        known_at=at("2025-12-15"),
        passage="Attachments are limited to 50 MB.",
        document="policy-2026.pdf#limits",
    )
    store.facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-03", 9)
    )
    store.facts.record(
        key, 100, source="policy", valid_from=date(2026, 10, 1), known_at=at("2026-09-20")
    )
    store.facts.record(
        key,
        90,
        source="forum",
        valid_from=date(2026, 9, 1),
        valid_to=date(2026, 10, 1),
        known_at=at("2026-09-30"),
    )
    return key


QUESTIONS: dict[str, tuple[dict[str, datetime], list[str], list[str]]] = {
    # name: (question, qualification codes in order, texts the qualifications must contain)
    "current": (
        {"now": NOW},
        ["effective", "followed_by", "source"],
        [
            "in force from 2026-09-01 until 2026-10-01",
            "followed by 100 from 2026-10-01",
            "source: policy",
        ],
    ),
    "announced": (
        {"valid_at": at("2026-10-15"), "now": NOW},
        ["announced", "source"],
        [
            (
                "announced, in force from 2026-10-01 (not yet in force on 2026-09-29 12:00 UTC; "
                "recorded on 2026-09-20 12:00 UTC)"
            )
        ],
    ),
    "known then": (
        {"valid_at": at("2026-09-02"), "known_at": at("2026-09-02"), "now": NOW},
        ["effective", "as_recorded", "source"],
        [
            "in force from 2026-01-01",
            (
                "as recorded on 2026-09-02 12:00 UTC; corrected on "
                "2026-09-03 09:00 UTC (as of 2026-09-29 12:00 UTC: 80)"
            ),
        ],
    ),
    "retrospective": (
        {"valid_at": at("2026-09-02"), "now": NOW},
        ["effective", "followed_by", "corrected", "source"],
        ["corrected on 2026-09-03 09:00 UTC: on 2026-09-02 12:00 UTC the store said 50"],
    ),
    "historical": (
        {"valid_at": at("2026-06-15"), "now": NOW},
        ["effective", "followed_by", "source"],
        ["applied from 2026-01-01 until 2026-09-01", "followed by 80 from 2026-09-01"],
    ),
    "missing": (
        {"valid_at": at("2025-06-01"), "now": NOW},
        ["unknown"],
        [
            (
                "nothing recorded for 2025-06-01 12:00 UTC: unknown, "
                "not zero (values are recorded from 2026-01-01)"
            )
        ],
    ),
    "conflict": (
        {"valid_at": at("2026-09-15"), "now": at("2026-10-05")},
        ["conflict", "corrected"],
        [
            (
                "sources disagree, none is preferred: policy "
                "says 80 (from 2026-09-01 until 2026-10-01), "
                "forum says 90 (from 2026-09-01 until 2026-10-01)"
            )
        ],
    ),
    "projected": (
        {"valid_at": at("2027-03-01"), "now": at("2026-10-05")},
        ["effective", "projected", "source"],
        [
            "in force from 2026-10-01",
            (
                "projected: as known on 2026-10-05 12:00 UTC, nothing "
                "recorded changes it before 2027-03-01 12:00 UTC"
            ),
        ],
    ),
}


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_qualifications(store: Store, example: Key, name: str) -> None:
    question, codes, texts = QUESTIONS[name]
    explanation = store.facts.explain(example, **question)
    answer = store.facts.resolve(example, **question)
    assert (explanation.status, explanation.value, explanation.interpretation) == (
        answer.status,
        answer.value,
        answer.interpretation,
    )
    assert [a.value for a in explanation.alternatives] == list(answer.values)
    assert [v.version_id for v in explanation.versions] == [v.version_id for v in answer.versions]
    assert (explanation.valid_at, explanation.known_at, explanation.now) == (
        answer.valid_at,
        answer.known_at,
        answer.now,
    )
    assert [q.code for q in explanation.qualifications] == codes
    joined = " | ".join(q.text for q in explanation.qualifications)
    for text in texts:
        assert text in joined


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_json_is_the_sql_object_and_the_sentence_the_sql_sentence(
    store: Store, example: Key, connect: Connect, name: str
) -> None:
    question = QUESTIONS[name][0]
    explanation = store.facts.explain(example, **question)
    args = (
        example.entity,
        example.attribute,
        question.get("valid_at"),
        question.get("known_at"),
        question.get("now"),
    )
    row = (
        connect()
        .execute(
            "SELECT e, bitemporal.explain_sentence(e) FROM "
            "bitemporal.explain(%s, %s, %s, %s, %s) e",
            args,
        )
        .fetchone()
    )
    assert row is not None
    sql_object, sql_sentence = row
    assert explanation.as_dict() == sql_object
    assert json.loads(explanation.to_json()) == sql_object
    assert Explanation.from_dict(json.loads(explanation.to_json())) == explanation
    sentence = explanation.sentence()
    assert sentence == sql_sentence == render(explanation)
    # One sentence, keeping every qualification.
    assert sentence.endswith(".") and ". " not in sentence and "\n" not in sentence
    for q in explanation.qualifications:
        assert q.text in sentence


def test_the_object_carries_what_an_agent_needs(store: Store, example: Key) -> None:
    e = store.facts.explain(example, valid_at=at("2026-06-15"), known_at=at("2026-09-02"), now=NOW)
    assert e.key == example and e.status is Status.SUPPORTED and e.value == 50
    [version] = e.versions
    assert (
        version.source == "policy"
        and version.valid_from == at("2026-01-01", 0)
        and version.valid_to is None
    )
    assert version.known_from == at("2025-12-15") and version.known_to == at("2026-09-03", 9)
    [passage] = version.evidence
    assert (passage.document, passage.passage) == (
        "policy-2026.pdf#limits",
        "Attachments are limited to 50 MB.",
    )
    # The knowledge snapshot: as of 2 September, the key last changed when it was first recorded.
    assert e.snapshot.known_at == at("2026-09-02") and e.snapshot.latest_change == at("2025-12-15")
    assert "not certify" in e.status_note and "copies of one source" in e.status_note
    later = store.facts.explain(example, now=NOW)
    assert later.snapshot.latest_change == at("2026-09-20")
    # The remainder re-recorded by a later write still shows the passage it came from.
    historical = store.facts.explain(example, valid_at=at("2026-06-15"), now=NOW)
    assert historical.versions[0].carried_from == version.version_id
    assert historical.versions[0].evidence == version.evidence


def test_sources_that_agree(store: Store, key: Key) -> None:
    store.facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-01")
    )
    store.facts.record(
        key, 80, source="admin-console", valid_from=date(2026, 8, 1), known_at=at("2026-09-02")
    )
    e = store.facts.explain(key, valid_at=at("2026-09-15"), now=NOW)
    assert e.status is Status.SUPPORTED and e.sources == ("admin-console", "policy")
    source = e.qualification("source")
    assert source is not None
    assert source.text == "sources: admin-console, policy (they agree, which is not certification)"
    # The uninterrupted period over which some source holds 80 MB starts with the earlier one.
    effective = e.qualification("effective")
    assert effective is not None and effective.text == "in force from 2026-08-01"


def test_retracted_later(store: Store, key: Key) -> None:
    store.facts.record(
        key, 50, source="policy", valid_from=date(2026, 1, 1), known_at=at("2025-12-15")
    )
    store.facts.retract(
        key, source="policy", valid_from=date(2026, 6, 1), known_at=at("2026-05-20")
    )
    then = store.facts.explain(key, valid_at=at("2026-07-01"), known_at=at("2026-05-01"), now=NOW)
    recorded = then.qualification("as_recorded")
    assert recorded is not None
    assert recorded.text == (
        "as recorded on 2026-05-01 12:00 UTC; corrected on 2026-05-20 12:00 UTC "
        "(as of 2026-09-29 12:00 UTC: nothing recorded)"
    )
    assert (
        recorded.data["corrected_on"] == "2026-05-20T12:00:00Z"
        and recorded.data["now_values"] == []
    )
    now = store.facts.explain(key, valid_at=at("2026-07-01"), now=NOW)
    assert now.status is Status.MISSING
    unknown = now.qualification("unknown")
    assert unknown is not None
    assert unknown.text == (
        "nothing recorded for 2026-07-01 12:00 UTC: unknown, not zero "
        "(the last recorded value applied until 2026-06-01)"
    )


def test_checker_on_a_real_answer(store: Store, example: Key) -> None:
    announced = store.facts.explain(example, valid_at=at("2026-10-15"), now=NOW)
    faithful = announced.check("Per the policy, the limit will be 100 MB from 1 October 2026.")
    assert faithful.ok and faithful.stated == ("value", "effective_date", "status", "source")
    dropped = announced.check("The attachment limit is 100 MB.")
    assert dropped.verdict("value") is Verdict.STATED
    assert dropped.verdict("effective_date") is Verdict.OMITTED
    assert dropped.verdict("status") is Verdict.OMITTED and not dropped.ok
    wrong = announced.check("The attachment limit is currently 80 MB, according to forum.")
    assert wrong.contradicted == ("value", "effective_date", "status", "source")
    conflict = store.facts.explain(example, valid_at=at("2026-09-15"), now=at("2026-10-05"))
    one_side = conflict.check("It is 90 MB (forum).")
    assert one_side.verdict("status") is Verdict.CONTRADICTED
    both = conflict.check("The sources disagree: policy says 80 MB, forum says 90 MB.")
    assert both.ok


def test_errors(store: Store, key: Key, example: Key) -> None:
    with pytest.raises(UnknownKeyError):
        store.facts.explain(key.__class__(key.entity, "never-recorded"))
    with pytest.raises(KnowledgeTimeInFutureError):
        store.facts.explain(example, known_at=at("2026-10-01"), now=NOW)
    explanation = store.facts.explain(example, now=NOW)
    for reply in (None, b"80 MB", 80):
        with pytest.raises(InvalidInputError, match="a reply to check must be text, not"):
            explanation.check(reply)  # type: ignore[arg-type]


def test_interpretation_enum_is_shared(store: Store, example: Key) -> None:
    e = store.facts.explain(example, valid_at=at("2026-10-15"), now=NOW)
    assert e.interpretation is Interpretation.ANNOUNCED_FUTURE
