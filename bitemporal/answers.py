"""The answer object for an agent: what to hand a model.

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
text states it, omits it, or contradicts it (:mod:`bitemporal.reply_check`).

*supported* means the available sources agree, not that the value is
certified true; two copies of one source are not independent confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from .formatting import human_time, human_value, iso_time, parse_time
from .jsonvalues import JSON, dumps
from .model import Interpretation, Key, Status, check_key
from .operations import Statement, Steps, one, whole
from .periods import Instant, to_optional_instant
from .reply_check import CheckReport, Claims, check_reply

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
    #: When the version's value was erased (its value is then None, its evidence gone).
    erased_at: datetime | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExplainedVersion:
        known_from = parse_time(d["known_from"])
        assert known_from is not None
        return cls(
            version_id=d["version_id"],
            source=d["source"],
            value=d["value"],
            valid_from=parse_time(d["valid_from"]),
            valid_to=parse_time(d["valid_to"]),
            known_from=known_from,
            known_to=parse_time(d["known_to"]),
            recorded_by=d.get("recorded_by"),
            carried_from=d.get("carried_from"),
            erased_at=parse_time(d.get("erased_at")),
            evidence=tuple(
                ExplainedPassage(e["evidence_id"], e["document"], e["passage"])
                for e in d.get("evidence", ())
            ),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "version_id": self.version_id,
            "source": self.source,
            "value": self.value,
            "valid_from": iso_time(self.valid_from),
            "valid_to": iso_time(self.valid_to),
            "known_from": iso_time(self.known_from),
            "known_to": iso_time(self.known_to),
            "recorded_by": self.recorded_by,
            "carried_from": self.carried_from,
            "erased_at": iso_time(self.erased_at),
            "evidence": [
                {"evidence_id": e.evidence_id, "document": e.document, "passage": e.passage}
                for e in self.evidence
            ],
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
        return cls(
            d["value"],
            parse_time(d["valid_from"]),
            parse_time(d["valid_to"]),
            tuple(d["sources"]),
            tuple(d["version_ids"]),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "valid_from": iso_time(self.valid_from),
            "valid_to": iso_time(self.valid_to),
            "sources": list(self.sources),
            "version_ids": list(self.version_ids),
        }


class QualificationCode(StrEnum):
    """The kinds of qualification an answer can carry (see ``sql/explain.v1.sql``;
    ``erased``: ``sql/erasure.v1.sql``)."""

    UNKNOWN = "unknown"
    ERASED = "erased"
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
            snapshot=Snapshot(
                parse_time(snapshot["known_at"]) or required("known_at"),
                parse_time(snapshot["latest_change"]),
            ),
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
            "snapshot": {
                "known_at": iso_time(self.snapshot.known_at),
                "latest_change": iso_time(self.snapshot.latest_change),
            },
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

    def claims(self) -> Claims:
        """The facts of this answer a reply is checked against."""
        recorded = self.qualification(QualificationCode.AS_RECORDED)
        return Claims(
            status=self.status,
            value=self.value,
            values=tuple(a.value for a in self.alternatives),
            start=self.alternatives[0].valid_from if self.alternatives else None,
            announced=self.qualification(QualificationCode.ANNOUNCED) is not None,
            corrected_later=recorded is not None and recorded.data.get("corrected_on") is not None,
            sources=self.sources,
        )

    def check(self, text: str) -> CheckReport:
        """What ``text`` states, omits or contradicts of this answer (:func:`check`)."""
        return check_reply(self.claims(), text)


def fetch(
    key: Key,
    *,
    valid_at: Instant | None = None,
    known_at: Instant | None = None,
    now: Instant | None = None,
) -> Steps[Explanation]:
    """``bitemporal.explain`` for ``key``, as an :class:`Explanation`: the steps of
    :meth:`Facts.explain <bitemporal.Facts.explain>` (see :mod:`bitemporal.operations`)."""
    args = (
        check_key(key).entity,
        key.attribute,
        to_optional_instant(valid_at, name="valid_at"),
        to_optional_instant(known_at, name="known_at"),
        to_optional_instant(now, name="now"),
    )
    rows = yield from whole(
        Statement("SELECT bitemporal.explain(%s, %s, %s, %s, %s)", args),
        lambda rows: _agrees(one(rows)[0]),
        f"the versions of {key}",
    )
    return Explanation.from_dict(one(rows)[0])


def _agrees(d: dict[str, Any]) -> bool:
    """Whether the answer, its versions and its alternatives in ``bitemporal.explain``'s
    object were read from one state of the key (they are three queries:
    :func:`bitemporal.operations.whole`): the alternatives hold the versions that are
    not erased, and the status is the one they give."""
    versions, alternatives = d["versions"], d["alternatives"]
    status = (
        Status.MISSING
        if not versions
        else Status.ERASED
        if not alternatives
        else Status.SUPPORTED
        if len(alternatives) == 1
        else Status.CONFLICT
    )
    held = [v["version_id"] for v in versions if v["value"] is not None]
    grouped = sorted(i for a in alternatives for i in a["version_ids"])
    return d["status"] == status and grouped == held


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
    elif e.status is Status.ERASED:
        answer = "no value"
    else:
        answer = " or ".join(human_value(a.value) for a in e.alternatives)
    head = (
        f"{e.key.entity}/{e.key.attribute} for {human_time(e.valid_at)}, "
        f"as known on {human_time(e.known_at)}: {answer} ({e.status.value})"
    )
    return head + "".join(f"; {q.text}" for q in e.qualifications) + "."


def check(explanation: Explanation, text: str) -> CheckReport:
    """Which facts of ``explanation`` (value, effective date, status, source) ``text``
    states, omits or contradicts; see :func:`bitemporal.reply_check.check_reply`."""
    return explanation.check(text)
