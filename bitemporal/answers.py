"""The answer object for an agent: what to hand a model, and how to check what it says back.

:meth:`Facts.explain <bitemporal.Facts.explain>` returns an :class:`Explanation`:
the answer to ``(valid_at, known_at)`` with its status, the value or the
alternatives, every eligible version (source, both periods, evidence), the
question, the knowledge snapshot used, and explicit qualifications, each a
``code`` and a ``text`` ("announced, in force from 2026-10-01 (...)", "as
recorded on 2026-09-02 12:00 UTC; corrected on 2026-09-03 09:00 UTC (...)",
"sources disagree, none is preferred: ...", "nothing recorded for ...:
unknown, not zero"). It is built by the SQL function ``bitemporal.explain``,
so ``psql`` gets the same object as jsonb; :meth:`Explanation.as_dict` gives
back exactly that shape and :meth:`Explanation.to_json` its text.

:func:`render` writes it as one plain sentence that keeps every
qualification (as ``bitemporal.explain_sentence`` does). :func:`check` reads
a free-text answer someone else wrote (a model, a person) and reports, for
each fact of the object (value, effective date, status, source), whether the
text states it, omits it, or contradicts it. The checker matches numbers,
dates and words, not meaning: it flags answers to read, it does not certify
them.

*supported* means the available sources agree, not that the value is
certified true; two copies of one source are not independent confirmation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

from .adapters import cursor
from .jsonvalues import JSON, RawJSON, dumps
from .model import Connector, Interpretation, Key, Status
from .periods import Instant, to_optional_instant

# Writing times and values the way sql/formatting.v1.sql does.


def iso_time(t: datetime | None) -> str | None:
    """ISO 8601 in UTC with a ``Z`` (``2026-09-03T09:00:00Z``); None stays None."""
    if t is None:
        return None
    u = t.astimezone(UTC)
    fraction = f".{u.microsecond:06d}" if u.microsecond else ""
    return u.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def parse_time(text: str | None) -> datetime | None:
    """The inverse of :func:`iso_time`."""
    if text is None:
        return None
    return datetime.fromisoformat(text)


def human_time(t: datetime) -> str:
    """A date when the instant is midnight UTC (``2026-10-01``), else the UTC time as
    precise as needed (``2026-09-03 09:00 UTC``)."""
    u = t.astimezone(UTC)
    if (u.hour, u.minute, u.second, u.microsecond) == (0, 0, 0, 0):
        return u.strftime("%Y-%m-%d")
    if u.microsecond:
        return u.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC"
    if u.second:
        return u.strftime("%Y-%m-%d %H:%M:%S") + " UTC"
    return u.strftime("%Y-%m-%d %H:%M") + " UTC"


def human_value(value: JSON) -> str:
    """A string as itself, anything else as JSON (``80``, ``true``, ``{"mb": 80}``)."""
    if isinstance(value, str) and not isinstance(value, RawJSON):
        return value
    return dumps(value)


# The object.


@dataclass(frozen=True, slots=True)
class ExplainedPassage:
    """A passage an eligible version came from."""

    evidence_id: int
    document: str | None
    passage: str


@dataclass(frozen=True, slots=True)
class ExplainedVersion:
    """An eligible version as the answer object shows it."""

    version_id: int
    source: str
    value: JSON
    valid_from: datetime | None
    valid_to: datetime | None
    known_from: datetime
    known_to: datetime | None
    recorded_by: str | None = None
    carried_from: int | None = None
    evidence: tuple[ExplainedPassage, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExplainedVersion:
        known_from = parse_time(d["known_from"])
        assert known_from is not None
        return cls(
            version_id=d["version_id"], source=d["source"], value=d["value"],
            valid_from=parse_time(d["valid_from"]), valid_to=parse_time(d["valid_to"]),
            known_from=known_from, known_to=parse_time(d["known_to"]),
            recorded_by=d.get("recorded_by"), carried_from=d.get("carried_from"),
            evidence=tuple(ExplainedPassage(e["evidence_id"], e["document"], e["passage"])
                           for e in d.get("evidence", ())),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "version_id": self.version_id, "source": self.source, "value": self.value,
            "valid_from": iso_time(self.valid_from), "valid_to": iso_time(self.valid_to),
            "known_from": iso_time(self.known_from), "known_to": iso_time(self.known_to),
            "recorded_by": self.recorded_by, "carried_from": self.carried_from,
            "evidence": [{"evidence_id": e.evidence_id, "document": e.document, "passage": e.passage}
                         for e in self.evidence],
        }


@dataclass(frozen=True, slots=True)
class Alternative:
    """One distinct eligible value and the uninterrupted valid period around
    ``valid_at`` over which the store holds it (as known at ``known_at``)."""

    value: JSON
    valid_from: datetime | None
    valid_to: datetime | None
    sources: tuple[str, ...]
    version_ids: tuple[int, ...]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Alternative:
        return cls(d["value"], parse_time(d["valid_from"]), parse_time(d["valid_to"]),
                   tuple(d["sources"]), tuple(d["version_ids"]))

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "valid_from": iso_time(self.valid_from),
                "valid_to": iso_time(self.valid_to), "sources": list(self.sources),
                "version_ids": list(self.version_ids)}


class QualificationCode(StrEnum):
    """The kinds of qualification an answer can carry (see ``sql/explain.v1.sql``)."""

    UNKNOWN = "unknown"
    CONFLICT = "conflict"
    ANNOUNCED = "announced"
    EFFECTIVE = "effective"
    FOLLOWED_BY = "followed_by"
    PROJECTED = "projected"
    CORRECTED = "corrected"
    AS_RECORDED = "as_recorded"
    SOURCE = "source"


@dataclass(frozen=True, slots=True)
class Qualification:
    """A qualification an answer must not lose: its code, its words, and its data
    (dates as ISO strings, values as JSON)."""

    code: str
    text: str
    data: dict[str, JSON] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Qualification:
        return cls(d["code"], d["text"], {k: v for k, v in d.items() if k not in ("code", "text")})

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "text": self.text, **self.data}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The knowledge an answer was read from: the store as of ``known_at``, whose
    latest change to the key was at ``latest_change``."""

    known_at: datetime
    latest_change: datetime | None


@dataclass(frozen=True, slots=True)
class Explanation:
    """The answer object for an agent (see the module docstring)."""

    key: Key
    status: Status
    interpretation: Interpretation
    #: The value when supported, else None.
    value: JSON
    #: Per distinct eligible value, sorted: one when supported, several in a conflict.
    alternatives: tuple[Alternative, ...]
    valid_at: datetime
    known_at: datetime
    #: The present the answer is read against.
    now: datetime
    snapshot: Snapshot
    sources: tuple[str, ...]
    versions: tuple[ExplainedVersion, ...]
    qualifications: tuple[Qualification, ...]
    #: What the status means, and does not mean, in words.
    status_note: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Explanation:
        """From the jsonb of ``bitemporal.explain`` (or :meth:`as_dict`)."""
        def required(name: str) -> datetime:
            t = parse_time(d[name])
            assert t is not None
            return t

        snapshot = d["snapshot"]
        return cls(
            key=Key(d["entity"], d["attribute"]),
            status=Status(d["status"]),
            interpretation=Interpretation(d["interpretation"]),
            value=d["value"],
            alternatives=tuple(Alternative.from_dict(a) for a in d["alternatives"]),
            valid_at=required("valid_at"),
            known_at=required("known_at"),
            now=required("now"),
            snapshot=Snapshot(parse_time(snapshot["known_at"]) or required("known_at"),
                              parse_time(snapshot["latest_change"])),
            sources=tuple(d["sources"]),
            versions=tuple(ExplainedVersion.from_dict(v) for v in d["versions"]),
            qualifications=tuple(Qualification.from_dict(q) for q in d["qualifications"]),
            status_note=d["status_note"],
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data, the same shape (and values) as ``bitemporal.explain`` returns."""
        return {
            "entity": self.key.entity,
            "attribute": self.key.attribute,
            "status": self.status.value,
            "interpretation": self.interpretation.value,
            "value": self.value,
            "alternatives": [a.as_dict() for a in self.alternatives],
            "valid_at": iso_time(self.valid_at),
            "known_at": iso_time(self.known_at),
            "now": iso_time(self.now),
            "snapshot": {"known_at": iso_time(self.snapshot.known_at),
                         "latest_change": iso_time(self.snapshot.latest_change)},
            "sources": list(self.sources),
            "qualifications": [q.as_dict() for q in self.qualifications],
            "status_note": self.status_note,
            "versions": [v.as_dict() for v in self.versions],
        }

    def to_json(self, *, indent: int | None = None) -> str:
        """:meth:`as_dict` as JSON text, numbers exact (:func:`bitemporal.jsonvalues.dumps`)."""
        return dumps(self.as_dict(), indent=indent)

    def qualification(self, code: str) -> Qualification | None:
        """The qualification with ``code``, if the answer carries one."""
        return next((q for q in self.qualifications if q.code == code), None)

    def sentence(self) -> str:
        """One plain sentence keeping every qualification (:func:`render`)."""
        return render(self)

    def check(self, text: str) -> CheckReport:
        """What ``text`` states, omits or contradicts of this answer (:func:`check`)."""
        return check(self, text)


def fetch(
    reading: Connector,
    key: Key,
    *,
    valid_at: Instant | None = None,
    known_at: Instant | None = None,
    now: Instant | None = None,
) -> Explanation:
    """``bitemporal.explain`` for ``key``, as an :class:`Explanation` (used by
    :meth:`Facts.explain <bitemporal.Facts.explain>`)."""
    args = (
        key.entity, key.attribute,
        to_optional_instant(valid_at, name="valid_at"),
        to_optional_instant(known_at, name="known_at"),
        to_optional_instant(now, name="now"),
    )
    with reading() as conn, cursor(conn) as cur:
        row = cur.execute("SELECT bitemporal.explain(%s, %s, %s, %s, %s)", args).fetchone()
    assert row is not None
    return Explanation.from_dict(row[0])


# One sentence.


def render(explanation: Explanation) -> str:
    """``<entity>/<attribute> for <valid_at>, as known on <known_at>: <answer> (<status>);
    <qualification>; ...`` -- every qualification kept, in order, as
    ``bitemporal.explain_sentence`` writes it."""
    e = explanation
    if e.status is Status.SUPPORTED:
        answer = human_value(e.value)
    elif e.status is Status.MISSING:
        answer = "unknown"
    else:
        answer = " or ".join(human_value(a.value) for a in e.alternatives)
    head = (f"{e.key.entity}/{e.key.attribute} for {human_time(e.valid_at)}, "
            f"as known on {human_time(e.known_at)}: {answer} ({e.status.value})")
    return head + "".join(f"; {q.text}" for q in e.qualifications) + "."


# Checking a free-text answer.


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
        return {"fact": self.fact, "verdict": self.verdict.value, "expected": self.expected,
                "detail": self.detail}


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
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")(?![a-z])\.?"
_ORDINAL = r"(?:st|nd|rd|th)?"
_TIME = r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*(?:UTC|Z|[+-]\d{2}:?\d{2}))?)?"
_DATES = [
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})" + _TIME, re.IGNORECASE),
    re.compile(r"\b(?P<y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})\b"),
    re.compile(r"\b(?P<d>\d{1,2})" + _ORDINAL + r"\s+(?:of\s+)?" + _MONTH.format("mn")
               + r"(?:,?\s+(?P<y>\d{4}))?", re.IGNORECASE),
    re.compile(r"\b" + _MONTH.format("mn") + r"\s+(?P<d>\d{1,2})" + _ORDINAL
               + r"(?!\d)(?:,?\s+(?P<y>\d{4}))?", re.IGNORECASE),
]
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s*(?:UTC|Z))?", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_DATE_CUE = re.compile(
    r"\b(?:from|since|starting(?: on)?|beginning(?: on)?|effective(?: from| on)?|as of|"
    r"takes effect(?: on)?|in force (?:on|from)|applies from|begins(?: on)?|starts(?: on)?)\s*$",
    re.IGNORECASE)

_UNKNOWN_CUES = re.compile(
    r"\b(?:unknown|not known|no (?:recorded )?(?:value|record|records|data|information|answer)|"
    r"nothing (?:is )?recorded|not recorded|don'?t know|do not know|cannot say|can'?t say|"
    r"missing|undetermined|not available)\b", re.IGNORECASE)
_CONFLICT_CUES = re.compile(
    r"\b(?:disagree\w*|conflict\w*|contradict\w*|inconsistent|differ|differs|different values|"
    r"disputed?|do not agree|don'?t agree)\b", re.IGNORECASE)
_ANNOUNCED_CUES = re.compile(
    r"\b(?:announced|will|not yet|upcoming|scheduled|planned|takes? effect|coming|starting|"
    r"starts|from|as of|beginning|future)\b", re.IGNORECASE)
_IN_FORCE_NOW_CUES = re.compile(
    r"\b(?:currently|right now|now|today|at present|presently|already|is in force|in effect)\b",
    re.IGNORECASE)
_RECORDED_CUES = re.compile(
    r"\b(?:as recorded|recorded|at the time|back then|at that time|corrected|correction|"
    r"since changed|has since|later changed|outdated|superseded|as known|known then|"
    r"the store knew|was later)\b", re.IGNORECASE)
_ATTRIBUTION = re.compile(
    r"\b(?:according to(?: the)?|per the|sources?:|reported by(?: the)?)\s+([\w:./-]+)", re.IGNORECASE)


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
        chars[d.start:d.end] = " " * (d.end - d.start)
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


def check(explanation: Explanation, text: str) -> CheckReport:
    """Which facts of ``explanation`` (value, effective date, status, source) ``text``
    states, omits or contradicts.

    Facts that do not apply are not reported (a missing answer has no value,
    effective date or source; an effective date is checked for a supported
    answer with a known start). The matching is deliberately literal: numbers
    (dates, clock times and bare years removed), dates in ISO or English
    notation (``2026-10-01``, ``1 October 2026``, ``October 1st``), source names
    as words, and a few cue words for the status ("unknown", "disagree",
    "announced"/"from"/"will", "as recorded"/"corrected").
    """
    e = explanation
    dates = _find_dates(text)
    values = [a.value for a in e.alternatives]
    numbers = _numbers(text, dates, [float(v) for v in values if _is_number(v)])
    findings: list[Finding] = []

    if e.status is Status.MISSING:
        findings.append(_check_missing(text, numbers))
        return CheckReport(tuple(findings))

    findings.append(_check_value(e, text, numbers))
    announced = e.qualification(QualificationCode.ANNOUNCED)
    if e.status is Status.SUPPORTED:
        start = e.alternatives[0].valid_from if e.alternatives else None
        if start is not None:
            findings.append(_check_date(start, text, dates, announced is not None))
    findings.append(_check_status(e, text, numbers, findings[0].verdict, announced is not None))
    findings.append(_check_sources(e, text))
    return CheckReport(tuple(findings))


def _check_missing(text: str, numbers: list[float]) -> Finding:
    expected = "missing: unknown, not zero"
    if _UNKNOWN_CUES.search(text):
        return Finding("status", Verdict.STATED, expected, "says it is unknown")
    if numbers:
        shown = ", ".join(f"{n:g}" for n in numbers)
        return Finding("status", Verdict.CONTRADICTED, expected, f"states a value ({shown}) where none is recorded")
    return Finding("status", Verdict.OMITTED, expected, "does not say that the value is unknown")


def _check_value(e: Explanation, text: str, numbers: list[float]) -> Finding:
    values = [a.value for a in e.alternatives]
    expected = _values_text(values) if e.status is Status.CONFLICT else human_value(e.value)
    if e.status is Status.CONFLICT:
        expected = f"all of {expected}"
    mentioned = [v for v in values if _mentions(v, text, numbers)]
    if len(mentioned) == len(values):
        return Finding("value", Verdict.STATED, expected, f"mentions {_values_text(mentioned)}")
    if mentioned:
        missing = [v for v in values if v not in mentioned]
        return Finding("value", Verdict.OMITTED, expected,
                       f"mentions {_values_text(mentioned)} but not {_values_text(missing)}")
    if numbers and any(_is_number(v) for v in values):
        shown = ", ".join(f"{n:g}" for n in numbers)
        return Finding("value", Verdict.CONTRADICTED, expected, f"states {shown} instead")
    return Finding("value", Verdict.OMITTED, expected, "does not state the value")


def _check_date(start: datetime, text: str, dates: list[_Date], announced: bool) -> Finding:
    day = start.astimezone(UTC).date()
    expected = f"{'in force from' if announced else 'effective from'} {human_time(start)}"
    if any(d.same_day(day) for d in dates):
        return Finding("effective_date", Verdict.STATED, expected, f"mentions {day.isoformat()}")
    cued = [d for d in dates if _DATE_CUE.search(text[:d.start])]
    if cued:
        shown = ", ".join(str(d) for d in cued)
        return Finding("effective_date", Verdict.CONTRADICTED, expected, f"gives {shown} instead")
    if announced and _IN_FORCE_NOW_CUES.search(text) and not _ANNOUNCED_CUES.search(text):
        return Finding("effective_date", Verdict.CONTRADICTED, expected,
                       "presents an announced value as in force now")
    return Finding("effective_date", Verdict.OMITTED, expected, f"does not mention {day.isoformat()}")


def _check_status(e: Explanation, text: str, numbers: list[float], value: Verdict,
                  announced: bool) -> Finding:
    if e.status is Status.CONFLICT:
        expected = "conflict: the sources disagree"
        if _CONFLICT_CUES.search(text):
            return Finding("status", Verdict.STATED, expected, "says the sources disagree")
        mentioned = [a.value for a in e.alternatives if _mentions(a.value, text, numbers)]
        if 0 < len(mentioned) < len(e.alternatives):
            return Finding("status", Verdict.CONTRADICTED, expected,
                           f"presents {_values_text(mentioned)}, one side of a conflict, as the answer")
        return Finding("status", Verdict.OMITTED, expected, "does not say that the sources disagree")

    if announced:
        expected = "supported, announced: not yet in force"
        if _UNKNOWN_CUES.search(text) or _CONFLICT_CUES.search(text):
            return Finding("status", Verdict.CONTRADICTED, expected, "calls it unknown or disputed")
        if _ANNOUNCED_CUES.search(text):
            return Finding("status", Verdict.STATED, expected, "presents it as announced or upcoming")
        if _IN_FORCE_NOW_CUES.search(text):
            return Finding("status", Verdict.CONTRADICTED, expected, "presents it as in force now")
        return Finding("status", Verdict.OMITTED, expected, "does not say it is not yet in force")

    recorded = e.qualification(QualificationCode.AS_RECORDED)
    corrected_later = recorded is not None and recorded.data.get("corrected_on") is not None
    expected = "supported" + (": as recorded then, corrected since" if corrected_later else "")
    if _UNKNOWN_CUES.search(text) or _CONFLICT_CUES.search(text):
        return Finding("status", Verdict.CONTRADICTED, expected, "calls it unknown or disputed")
    if value is not Verdict.STATED:
        return Finding("status", Verdict.OMITTED, expected, "does not state the value as the answer")
    if corrected_later and not _RECORDED_CUES.search(text):
        return Finding("status", Verdict.OMITTED, expected,
                       "does not say this is what was recorded then, corrected since")
    return Finding("status", Verdict.STATED, expected, "states the value as the answer")


def _check_sources(e: Explanation, text: str) -> Finding:
    expected = ", ".join(e.sources)
    named = [s for s in e.sources if _names(s, text)]
    if len(named) == len(e.sources):
        return Finding("source", Verdict.STATED, expected, f"names {', '.join(named)}")
    if named:
        missing = [s for s in e.sources if s not in named]
        return Finding("source", Verdict.OMITTED, expected,
                       f"names {', '.join(named)} but not {', '.join(missing)}")
    others = [m.group(1).rstrip(".,;:") for m in _ATTRIBUTION.finditer(text)]
    others = [o for o in others if o and not any(_names(s, o) for s in e.sources)]
    if others:
        return Finding("source", Verdict.CONTRADICTED, expected, f"attributes it to {', '.join(others)}")
    return Finding("source", Verdict.OMITTED, expected, "does not name the source")
