"""Checking a reply against an answer: what a free-text answer someone else wrote (a
model, a person) states, omits or contradicts of each fact of the answer object (value,
effective date, status, source).

The checker matches numbers, dates and words, not meaning: it flags answers to read,
it does not certify them. It reads the :class:`Claims` of an answer, so it knows
nothing of how the answer object is built (:mod:`bitemporal.answers`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

from .errors import InvalidInputError
from .formatting import human_time, human_value
from .jsonvalues import JSON
from .model import Status


class Verdict(StrEnum):
    """What a text does with one fact of the answer."""

    STATED = "stated"
    OMITTED = "omitted"
    CONTRADICTED = "contradicted"


@dataclass(frozen=True, slots=True)
class Finding:
    """One fact of the answer object and what the checked text does with it."""

    #: ``value``, ``effective_date``, ``status`` or ``source``.
    fact: str
    verdict: Verdict
    #: The fact, in words.
    expected: str
    #: What was found (or not), in words.
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {
            "fact": self.fact,
            "verdict": self.verdict.value,
            "expected": self.expected,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The findings of :func:`check`, one per applicable fact."""

    findings: tuple[Finding, ...]

    def _facts(self, verdict: Verdict) -> tuple[str, ...]:
        return tuple(f.fact for f in self.findings if f.verdict is verdict)

    @property
    def stated(self) -> tuple[str, ...]:
        return self._facts(Verdict.STATED)

    @property
    def omitted(self) -> tuple[str, ...]:
        return self._facts(Verdict.OMITTED)

    @property
    def contradicted(self) -> tuple[str, ...]:
        return self._facts(Verdict.CONTRADICTED)

    @property
    def ok(self) -> bool:
        """Every applicable fact is stated, none omitted or contradicted."""
        return all(f.verdict is Verdict.STATED for f in self.findings)

    def verdict(self, fact: str) -> Verdict | None:
        """The verdict for ``fact``, or None if it does not apply to this answer."""
        return next((f.verdict for f in self.findings if f.fact == fact), None)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "findings": [f.as_dict() for f in self.findings]}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.as_dict(), **kwargs)


_MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")(?![a-z])\.?"
_ORDINAL = r"(?:st|nd|rd|th)?"
_TIME = r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*(?:UTC|Z|[+-]\d{2}:?\d{2}))?)?"
_DATES = [
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})" + _TIME, re.IGNORECASE),
    re.compile(r"\b(?P<y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})\b"),
    re.compile(
        r"\b(?P<d>\d{1,2})"
        + _ORDINAL
        + r"\s+(?:of\s+)?"
        + _MONTH.format("mn")
        + r"(?:,?\s+(?P<y>\d{4}))?",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b"
        + _MONTH.format("mn")
        + r"\s+(?P<d>\d{1,2})"
        + _ORDINAL
        + r"(?!\d)(?:,?\s+(?P<y>\d{4}))?",
        re.IGNORECASE,
    ),
]
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*(?:UTC|Z))?", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_DATE_CUE = re.compile(
    r"\b(?:from|since|starting(?: on)?|beginning(?: on)?|effective(?: from| on)?|as of|"
    r"takes effect(?: on)?|in force (?:on|from)|applies from|begins(?: on)?|starts(?: on)?)\s*$",
    re.IGNORECASE,
)

_UNKNOWN_CUES = re.compile(
    r"\b(?:unknown|not known|no (?:recorded )?(?:value|record|records|data|information|answer)|"
    r"nothing (?:is )?recorded|not recorded|don'?t know|do not know|cannot say|can'?t say|"
    r"missing|undetermined|not available)\b",
    re.IGNORECASE,
)
_CONFLICT_CUES = re.compile(
    r"\b(?:disagree\w*|conflict\w*|contradict\w*|inconsistent|differ|differs|different values|"
    r"disputed?|do not agree|don'?t agree)\b",
    re.IGNORECASE,
)
_ANNOUNCED_CUES = re.compile(
    r"\b(?:announced|will|not yet|upcoming|scheduled|planned|takes? effect|coming|starting|"
    r"starts|from|as of|beginning|future)\b",
    re.IGNORECASE,
)
_IN_FORCE_NOW_CUES = re.compile(
    r"\b(?:currently|right now|now|today|at present|presently|already|is in force|in effect)\b",
    re.IGNORECASE,
)
_RECORDED_CUES = re.compile(
    r"\b(?:as recorded|recorded|at the time|back then|at that time|corrected|correction|"
    r"since changed|has since|later changed|outdated|superseded|as known|known then|"
    r"the store knew|was later)\b",
    re.IGNORECASE,
)
_ATTRIBUTION = re.compile(
    r"\b(?:according to(?: the)?|per the|sources?:|reported by(?: the)?)\s+([\w:./-]+)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Date:
    start: int
    end: int
    year: int | None
    month: int
    day: int

    def same_day(self, d: date) -> bool:
        return (self.month, self.day) == (d.month, d.day) and self.year in (None, d.year)

    def __str__(self) -> str:
        return f"{self.year or '????'}-{self.month:02d}-{self.day:02d}"


def _find_dates(text: str) -> list[_Date]:
    found: list[_Date] = []
    for pattern in _DATES:
        for m in pattern.finditer(text):
            if any(m.start() < f.end and f.start < m.end() for f in found):
                continue  # inside a date already found
            month = _MONTHS[m["mn"].lower()] if "mn" in pattern.groupindex else int(m["m"])
            day, year = int(m["d"]), (int(m["y"]) if m["y"] else None)
            if 1 <= month <= 12 and 1 <= day <= 31:
                found.append(_Date(m.start(), m.end(), year, month, day))
    return sorted(found, key=lambda d: d.start)


def _numbers(text: str, dates: Iterable[_Date], keep: Iterable[float]) -> list[float]:
    chars = list(text)
    for d in dates:
        chars[d.start : d.end] = " " * (d.end - d.start)
    scrubbed = _CLOCK.sub(lambda m: " " * len(m.group()), "".join(chars))
    kept = list(keep)
    numbers = []
    for m in _NUMBER.finditer(scrubbed):
        n = float(m.group().replace(",", ""))
        # A bare year is a date, not a value (unless it is a value of this answer).
        if n.is_integer() and 1900 <= n <= 2199 and not any(_same_number(n, k) for k in kept):
            continue
        numbers.append(n)
    return numbers


def _same_number(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def _is_number(value: JSON) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def _leaves(value: JSON) -> list[JSON]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _mentions(value: JSON, text: str, numbers: list[float]) -> bool:
    if isinstance(value, bool):
        return re.search(rf"\b{str(value).lower()}\b", text, re.IGNORECASE) is not None
    if _is_number(value):
        return any(_same_number(n, float(value)) for n in numbers)
    if isinstance(value, str):
        return value.strip().lower() in text.lower()
    if value is None:
        return False
    leaves = _leaves(value)
    return bool(leaves) and all(_mentions(leaf, text, numbers) for leaf in leaves)


def _names(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def _values_text(values: Iterable[JSON]) -> str:
    return " or ".join(human_value(v) for v in values)


@dataclass(frozen=True, slots=True)
class Claims:
    """The facts of an answer that a reply is checked against (built by
    :meth:`Explanation.claims <bitemporal.answers.Explanation.claims>`)."""

    status: Status
    #: The value when supported, else None.
    value: JSON
    #: The distinct eligible values: one when supported, several in a conflict.
    values: tuple[JSON, ...]
    #: For a supported answer, the start of the valid period holding its value (None: open).
    start: datetime | None
    #: The value is announced: recorded, not yet in force.
    announced: bool
    #: The answer is what was recorded then, and was corrected since.
    corrected_later: bool
    sources: tuple[str, ...]


def check_reply(claims: Claims, text: str) -> CheckReport:
    """Which of ``claims`` (value, effective date, status, source) ``text`` states,
    omits or contradicts.

    Facts that do not apply are not reported (a missing answer has no value,
    effective date or source; an effective date is checked for a supported
    answer with a known start). The matching is deliberately literal: numbers
    (dates, clock times and bare years removed), dates in ISO or English
    notation (``2026-10-01``, ``1 October 2026``, ``October 1st``), source names
    as words, and a few cue words for the status ("unknown", "disagree",
    "announced"/"from"/"will", "as recorded"/"corrected").
    """
    if not isinstance(text, str):
        # A model that answered nothing gives None: say so, not a regex's TypeError.
        raise InvalidInputError(f"a reply to check must be text, not {type(text).__name__}")
    dates = _find_dates(text)
    numbers = _numbers(text, dates, [float(v) for v in claims.values if _is_number(v)])
    findings: list[Finding] = []

    if claims.status is Status.MISSING:
        findings.append(_check_missing(text, numbers))
        return CheckReport(tuple(findings))
    if claims.status is Status.ERASED:
        findings.append(_check_erased(text, numbers))
        return CheckReport(tuple(findings))

    findings.append(_check_value(claims, text, numbers))
    if claims.status is Status.SUPPORTED and claims.start is not None:
        findings.append(_check_date(claims.start, text, dates, claims.announced))
    findings.append(_check_status(claims, text, numbers, findings[0].verdict))
    findings.append(_check_sources(claims, text))
    return CheckReport(tuple(findings))


def _check_missing(text: str, numbers: list[float]) -> Finding:
    expected = "missing: unknown, not zero"
    if _UNKNOWN_CUES.search(text):
        return Finding("status", Verdict.STATED, expected, "says it is unknown")
    if numbers:
        shown = ", ".join(f"{n:g}" for n in numbers)
        return Finding(
            "status",
            Verdict.CONTRADICTED,
            expected,
            f"states a value ({shown}) where none is recorded",
        )
    return Finding("status", Verdict.OMITTED, expected, "does not say that the value is unknown")


_ERASED_CUES = re.compile(r"\b(erased|deleted|removed|forgotten)\b", re.IGNORECASE)


def _check_erased(text: str, numbers: list[float]) -> Finding:
    # The value is gone: a reply may say so, and must not state one.
    expected = "erased: a value was recorded and has been erased"
    if numbers:
        shown = ", ".join(f"{n:g}" for n in numbers)
        return Finding(
            "status", Verdict.CONTRADICTED, expected, f"states a value ({shown}) that was erased"
        )
    if _ERASED_CUES.search(text):
        return Finding("status", Verdict.STATED, expected, "says the value was erased")
    return Finding("status", Verdict.OMITTED, expected, "does not say that the value was erased")


def _check_value(e: Claims, text: str, numbers: list[float]) -> Finding:
    values = e.values
    expected = _values_text(values) if e.status is Status.CONFLICT else human_value(e.value)
    if e.status is Status.CONFLICT:
        expected = f"all of {expected}"
    mentioned = [v for v in values if _mentions(v, text, numbers)]
    if len(mentioned) == len(values):
        return Finding("value", Verdict.STATED, expected, f"mentions {_values_text(mentioned)}")
    if mentioned:
        missing = [v for v in values if v not in mentioned]
        return Finding(
            "value",
            Verdict.OMITTED,
            expected,
            f"mentions {_values_text(mentioned)} but not {_values_text(missing)}",
        )
    if numbers and any(_is_number(v) for v in values):
        shown = ", ".join(f"{n:g}" for n in numbers)
        return Finding("value", Verdict.CONTRADICTED, expected, f"states {shown} instead")
    return Finding("value", Verdict.OMITTED, expected, "does not state the value")


def _check_date(start: datetime, text: str, dates: list[_Date], announced: bool) -> Finding:
    day = start.astimezone(UTC).date()
    expected = f"{'in force from' if announced else 'effective from'} {human_time(start)}"
    if any(d.same_day(day) for d in dates):
        return Finding("effective_date", Verdict.STATED, expected, f"mentions {day.isoformat()}")
    cued = [d for d in dates if _DATE_CUE.search(text[: d.start])]
    if cued:
        shown = ", ".join(str(d) for d in cued)
        return Finding("effective_date", Verdict.CONTRADICTED, expected, f"gives {shown} instead")
    if announced and _IN_FORCE_NOW_CUES.search(text) and not _ANNOUNCED_CUES.search(text):
        return Finding(
            "effective_date",
            Verdict.CONTRADICTED,
            expected,
            "presents an announced value as in force now",
        )
    return Finding(
        "effective_date", Verdict.OMITTED, expected, f"does not mention {day.isoformat()}"
    )


def _check_status(e: Claims, text: str, numbers: list[float], value: Verdict) -> Finding:
    if e.status is Status.CONFLICT:
        expected = "conflict: the sources disagree"
        if _CONFLICT_CUES.search(text):
            return Finding("status", Verdict.STATED, expected, "says the sources disagree")
        mentioned = [v for v in e.values if _mentions(v, text, numbers)]
        if 0 < len(mentioned) < len(e.values):
            return Finding(
                "status",
                Verdict.CONTRADICTED,
                expected,
                f"presents {_values_text(mentioned)}, one side of a conflict, as the answer",
            )
        return Finding(
            "status", Verdict.OMITTED, expected, "does not say that the sources disagree"
        )

    if e.announced:
        expected = "supported, announced: not yet in force"
        if _UNKNOWN_CUES.search(text) or _CONFLICT_CUES.search(text):
            return Finding("status", Verdict.CONTRADICTED, expected, "calls it unknown or disputed")
        if _ANNOUNCED_CUES.search(text):
            return Finding(
                "status", Verdict.STATED, expected, "presents it as announced or upcoming"
            )
        if _IN_FORCE_NOW_CUES.search(text):
            return Finding("status", Verdict.CONTRADICTED, expected, "presents it as in force now")
        return Finding("status", Verdict.OMITTED, expected, "does not say it is not yet in force")

    expected = "supported" + (": as recorded then, corrected since" if e.corrected_later else "")
    if _UNKNOWN_CUES.search(text) or _CONFLICT_CUES.search(text):
        return Finding("status", Verdict.CONTRADICTED, expected, "calls it unknown or disputed")
    if value is not Verdict.STATED:
        return Finding(
            "status", Verdict.OMITTED, expected, "does not state the value as the answer"
        )
    if e.corrected_later and not _RECORDED_CUES.search(text):
        return Finding(
            "status",
            Verdict.OMITTED,
            expected,
            "does not say this is what was recorded then, corrected since",
        )
    return Finding("status", Verdict.STATED, expected, "states the value as the answer")


def _check_sources(e: Claims, text: str) -> Finding:
    expected = ", ".join(e.sources)
    named = [s for s in e.sources if _names(s, text)]
    if len(named) == len(e.sources):
        return Finding("source", Verdict.STATED, expected, f"names {', '.join(named)}")
    if named:
        missing = [s for s in e.sources if s not in named]
        return Finding(
            "source",
            Verdict.OMITTED,
            expected,
            f"names {', '.join(named)} but not {', '.join(missing)}",
        )
    others = [m.group(1).rstrip(".,;:") for m in _ATTRIBUTION.finditer(text)]
    others = [o for o in others if o and not any(_names(s, o) for s in e.sources)]
    if others:
        return Finding(
            "source", Verdict.CONTRADICTED, expected, f"attributes it to {', '.join(others)}"
        )
    return Finding("source", Verdict.OMITTED, expected, "does not name the source")
