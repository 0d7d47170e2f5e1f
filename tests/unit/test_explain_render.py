"""The answer object's renderer and checker, in pure Python (no database)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from bitemporal import Explanation, Status, Verdict, check, render
from bitemporal.formatting import human_time, human_value, iso_time, parse_time


def obj(
    status: str,
    value: Any,
    alternatives: list[dict[str, Any]],
    qualifications: list[dict[str, Any]],
    *,
    interpretation: str = "current",
    valid_at: str = "2026-09-29T12:00:00Z",
    known_at: str = "2026-09-29T12:00:00Z",
) -> Explanation:
    """An answer object as bitemporal.explain returns it."""
    sources = sorted({s for a in alternatives for s in a["sources"]})
    return Explanation.from_dict(
        {
            "entity": "mailer:prod",
            "attribute": "attachment_limit_mb",
            "status": status,
            "interpretation": interpretation,
            "value": value,
            "alternatives": alternatives,
            "valid_at": valid_at,
            "known_at": known_at,
            "now": "2026-09-29T12:00:00Z",
            "snapshot": {"known_at": known_at, "latest_change": "2026-09-20T12:00:00Z"},
            "sources": sources,
            "versions": [],
            "qualifications": qualifications,
            "status_note": "(note)",
        }
    )


def alt(
    value: Any, valid_from: str | None, sources: list[str], valid_to: str | None = None
) -> dict[str, Any]:
    return {
        "value": value,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "sources": sources,
        "version_ids": [1],
    }


ANNOUNCED = obj(
    "supported",
    100,
    [alt(100, "2026-10-01T00:00:00Z", ["policy"])],
    [
        {
            "code": "announced",
            "valid_from": "2026-10-01T00:00:00Z",
            "valid_to": None,
            "recorded_on": "2026-09-20T12:00:00Z",
            "text": "announced, in force from 2026-10-01 (not yet in force on 2026-09-29 12:00 UTC; "
            "recorded on 2026-09-20 12:00 UTC)",
        },
        {"code": "source", "text": "source: policy", "sources": ["policy"]},
    ],
    interpretation="announced_future",
    valid_at="2026-10-15T12:00:00Z",
)
CURRENT = obj(
    "supported",
    80,
    [alt(80, "2026-09-01T00:00:00Z", ["policy"], "2026-10-01T00:00:00Z")],
    [
        {
            "code": "effective",
            "text": "in force from 2026-09-01 until 2026-10-01",
            "valid_from": "2026-09-01T00:00:00Z",
            "valid_to": "2026-10-01T00:00:00Z",
        },
        {
            "code": "followed_by",
            "text": "followed by 100 from 2026-10-01",
            "from": "2026-10-01T00:00:00Z",
            "values": [100],
        },
        {"code": "source", "text": "source: policy", "sources": ["policy"]},
    ],
)
KNOWN_THEN = obj(
    "supported",
    50,
    [alt(50, "2026-01-01T00:00:00Z", ["policy"])],
    [
        {
            "code": "effective",
            "text": "in force from 2026-01-01",
            "valid_from": "2026-01-01T00:00:00Z",
            "valid_to": None,
        },
        {
            "code": "as_recorded",
            "recorded_on": "2026-09-02T12:00:00Z",
            "corrected_on": "2026-09-03T09:00:00Z",
            "now_values": [80],
            "text": "as recorded on 2026-09-02 12:00 UTC; corrected on 2026-09-03 09:00 UTC "
            "(as of 2026-09-29 12:00 UTC: 80)",
        },
        {"code": "source", "text": "source: policy", "sources": ["policy"]},
    ],
    interpretation="known_then",
    valid_at="2026-09-02T12:00:00Z",
    known_at="2026-09-02T12:00:00Z",
)
CONFLICT = obj(
    "conflict",
    None,
    [
        alt(80, "2026-09-01T00:00:00Z", ["policy"], "2026-10-01T00:00:00Z"),
        alt(90, "2026-09-01T00:00:00Z", ["forum"], "2026-10-01T00:00:00Z"),
    ],
    [
        {
            "code": "conflict",
            "values": [80, 90],
            "sources": ["forum", "policy"],
            "text": "sources disagree, none is preferred: policy says 80 (from 2026-09-01 until 2026-10-01), "
            "forum says 90 (from 2026-09-01 until 2026-10-01)",
        }
    ],
    interpretation="retrospective",
    valid_at="2026-09-15T12:00:00Z",
)
MISSING = obj(
    "missing",
    None,
    [],
    [
        {
            "code": "unknown",
            "recorded_until": None,
            "recorded_from": "2026-01-01T00:00:00Z",
            "text": "nothing recorded for 2025-06-01 12:00 UTC: unknown, not zero (values are recorded from 2026-01-01)",
        }
    ],
    interpretation="missing",
    valid_at="2025-06-01T12:00:00Z",
)


class TestRender:
    def test_announced(self) -> None:
        assert render(ANNOUNCED) == (
            "mailer:prod/attachment_limit_mb for 2026-10-15 12:00 UTC, as known on 2026-09-29 12:00 UTC: "
            "100 (supported); announced, in force from 2026-10-01 (not yet in force on 2026-09-29 12:00 UTC; "
            "recorded on 2026-09-20 12:00 UTC); source: policy."
        )

    def test_conflict_and_missing(self) -> None:
        assert render(CONFLICT).startswith(
            "mailer:prod/attachment_limit_mb for 2026-09-15 12:00 UTC, as known on 2026-09-29 12:00 UTC: "
            "80 or 90 (conflict); sources disagree, none is preferred: policy says 80"
        )
        assert render(MISSING) == (
            "mailer:prod/attachment_limit_mb for 2025-06-01 12:00 UTC, as known on 2026-09-29 12:00 UTC: "
            "unknown (missing); nothing recorded for 2025-06-01 12:00 UTC: unknown, not zero "
            "(values are recorded from 2026-01-01)."
        )

    @pytest.mark.parametrize("e", [ANNOUNCED, CURRENT, KNOWN_THEN, CONFLICT, MISSING])
    def test_one_sentence_with_every_qualification(self, e: Explanation) -> None:
        sentence = e.sentence()
        assert sentence.count(".") == 1 and sentence.endswith(".")
        positions = [sentence.index(q.text) for q in e.qualifications]
        assert positions == sorted(positions)  # all there, in order

    @pytest.mark.parametrize("e", [ANNOUNCED, CURRENT, KNOWN_THEN, CONFLICT, MISSING])
    def test_json_round_trip(self, e: Explanation) -> None:
        assert Explanation.from_dict(json.loads(e.to_json())) == e
        assert e.as_dict()["qualifications"][0]["code"] == e.qualifications[0].code


class TestFormatting:
    def test_times(self) -> None:
        assert human_time(datetime(2026, 10, 1, tzinfo=UTC)) == "2026-10-01"
        assert (
            human_time(datetime(2026, 10, 1, 2, tzinfo=timezone(timedelta(hours=2))))
            == "2026-10-01"
        )
        assert human_time(datetime(2026, 9, 3, 9, tzinfo=UTC)) == "2026-09-03 09:00 UTC"
        assert human_time(datetime(2026, 9, 3, 9, 0, 5, tzinfo=UTC)) == "2026-09-03 09:00:05 UTC"
        assert (
            human_time(datetime(2026, 8, 31, 23, 59, 59, 999999, tzinfo=UTC))
            == "2026-08-31 23:59:59.999999 UTC"
        )
        t = datetime(2026, 9, 3, 9, 0, 0, 120, tzinfo=UTC)
        assert iso_time(t) == "2026-09-03T09:00:00.000120Z" and parse_time(iso_time(t)) == t
        assert (
            iso_time(None) is None
            and iso_time(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00Z"
        )

    def test_values(self) -> None:
        assert human_value("eighty") == "eighty"
        assert human_value(80) == "80" and human_value(True) == "true"
        assert human_value({"mb": 80, "soft": [1, 2]}) == '{"mb": 80, "soft": [1, 2]}'


CASES = [
    # (answer, reply, {fact: verdict})
    (
        ANNOUNCED,
        "From 1 October 2026 the limit will be 100 MB (policy).",
        {"value": "stated", "effective_date": "stated", "status": "stated", "source": "stated"},
    ),
    (
        ANNOUNCED,
        "The limit is 100 MB.",
        {"value": "stated", "effective_date": "omitted", "status": "omitted", "source": "omitted"},
    ),
    (
        ANNOUNCED,
        "The limit is currently 100 MB.",
        {"value": "stated", "effective_date": "contradicted", "status": "contradicted"},
    ),
    (
        ANNOUNCED,
        "The limit rises to 100 MB starting Oct 1st.",
        {"value": "stated", "effective_date": "stated", "status": "stated"},
    ),
    (
        ANNOUNCED,
        "The limit will be 100 MB from 1 November 2026.",
        {"value": "stated", "effective_date": "contradicted"},
    ),
    (
        ANNOUNCED,
        "The limit is 80 MB according to forum.",
        {"value": "contradicted", "source": "contradicted"},
    ),
    (
        CURRENT,
        "It is 80 MB since 2026-09-01, per the policy document; it becomes 100 MB on 2026-10-01.",
        {"value": "stated", "effective_date": "stated", "status": "stated", "source": "stated"},
    ),
    (CURRENT, "The limit is unknown.", {"value": "omitted", "status": "contradicted"}),
    (CURRENT, "The limit is 1,000 MB.", {"value": "contradicted"}),
    (KNOWN_THEN, "On 2 September the store said 50 MB.", {"value": "stated", "status": "omitted"}),
    (
        KNOWN_THEN,
        "As recorded on 2 September: 50 MB, corrected on 3 September to 80 MB.",
        {"value": "stated", "status": "stated"},
    ),
    (
        CONFLICT,
        "Policy says 80 MB and forum says 90 MB; the sources disagree.",
        {"value": "stated", "status": "stated", "source": "stated"},
    ),
    (
        CONFLICT,
        "The limit is 80 MB (policy).",
        {"value": "omitted", "status": "contradicted", "source": "omitted"},
    ),
    (CONFLICT, "It is 85 MB on average.", {"value": "contradicted", "status": "omitted"}),
    (MISSING, "Nothing is recorded for that date: the limit is unknown.", {"status": "stated"}),
    (MISSING, "The limit was 0 MB.", {"status": "contradicted"}),
    (MISSING, "No idea.", {"status": "omitted"}),
]


@pytest.mark.parametrize(("answer", "reply", "expected"), CASES)
def test_checker(answer: Explanation, reply: str, expected: dict[str, str]) -> None:
    report = check(answer, reply)
    for fact, verdict in expected.items():
        assert report.verdict(fact) is Verdict(verdict), (fact, report.as_dict())
    assert report.ok == all(f.verdict is Verdict.STATED for f in report.findings)
    json.loads(report.to_json())


def test_checker_reports_only_applicable_facts() -> None:
    assert [f.fact for f in check(MISSING, "unknown").findings] == ["status"]
    assert [f.fact for f in check(CONFLICT, "x").findings] == ["value", "status", "source"]
    assert [f.fact for f in check(CURRENT, "x").findings] == [
        "value",
        "effective_date",
        "status",
        "source",
    ]
    assert CURRENT.status is Status.SUPPORTED
