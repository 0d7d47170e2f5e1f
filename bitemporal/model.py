"""The value types every part of the store shares: keys, versions, answers and their
statuses, the kinds of change, and the checks a key part or a value passes before it
reaches SQL.

This module sits below every repository (facts, changes, answers, evidence, ...): it
imports nothing of the package but errors, jsonvalues and periods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from .errors import (
    InvalidInputError,
    InvalidKeyError,
    InvalidReasonError,
    InvalidValueError,
    check_text,
)
from .jsonvalues import JSON, dumps
from .periods import Period


class Status(StrEnum):
    """How many distinct values the eligible versions hold."""

    #: No eligible version: unknown, which is not zero.
    MISSING = "missing"
    #: One distinct value: the available sources agree (not certified truth).
    SUPPORTED = "supported"
    #: Several distinct values: never averaged, never settled by ingestion order.
    CONFLICT = "conflict"
    #: Every eligible version was erased: the store knew, and was made to forget (not
    #: missing). Versions that are not erased, when eligible too, decide the status alone.
    ERASED = "erased"


class Interpretation(StrEnum):
    """How to read an answer, relative to the present."""

    #: valid_at = known_at = now: in force, as far as the store knows now.
    CURRENT = "current"
    #: valid_at = known_at < now: what the store said then, not necessarily what was true.
    KNOWN_THEN = "known_then"
    #: valid_at < known_at, and the answer is what was already known at valid_at.
    HISTORICAL = "historical"
    #: valid_at < known_at, and later knowledge changed the answer for that time.
    RETROSPECTIVE = "retrospective"
    #: valid_at > known_at: announced, not (yet) in force.
    ANNOUNCED_FUTURE = "announced_future"
    #: Nothing eligible.
    MISSING = "missing"
    #: The eligible versions were erased: no value to read.
    ERASED = "erased"


KEY_PART_LIMIT = 1024

#: Version, artifact and evidence ids are bigint identities, from 1.
MAX_ID = 2**63 - 1


def check_id(what: str, value: object, error: type[InvalidInputError] = InvalidInputError) -> int:
    """``value`` if it is an id a row could have, else ``error``, before the database (which
    would refuse a non-integer, or one beyond bigint, with an error naming neither the
    argument nor the problem, or as a function that does not exist)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise error(f"{what} must be a whole number from 1 to {MAX_ID}, not {value!r}")
    return value


def check_many(what: str, values: object, error: type[InvalidInputError]) -> Iterable[Any]:
    """``values`` if it is a collection of items, else ``error``: a string is one item, not
    a collection of characters, and a lone item is not a collection."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise error(f"{what} must be a list (or other iterable), not {type(values).__name__}")
    return values


def check_key_part(what: str, part: object) -> str:
    """``part`` (an entity, attribute, source or idempotency key) if it is a non-empty
    string PostgreSQL can store, within :data:`KEY_PART_LIMIT` bytes; else InvalidKeyError."""
    if not isinstance(part, str) or part == "":
        raise InvalidKeyError(f"{what} must be a non-empty string, not {part!r}")
    check_text(what, part, InvalidKeyError)
    if len(part.encode()) > KEY_PART_LIMIT:
        raise InvalidKeyError(f"{what} is longer than {KEY_PART_LIMIT} bytes")
    return part


@dataclass(frozen=True, slots=True, order=True)
class Key:
    """What a fact is about: an entity (e.g. ``mailer:prod``) and an attribute."""

    entity: str
    attribute: str

    def __post_init__(self) -> None:
        check_key_part("entity", self.entity)
        check_key_part("attribute", self.attribute)

    def __str__(self) -> str:
        return f"{self.entity}/{self.attribute}"


def check_key(key: object) -> Key:
    """``key`` if it is a :class:`Key`, else InvalidKeyError: a tuple or a string is
    refused rather than guessed at, since only the caller knows which part is the entity."""
    if not isinstance(key, Key):
        raise InvalidKeyError(
            f"key must be a bitemporal.Key, not {type(key).__name__} {key!r}",
            hint="write Key(entity, attribute), e.g. Key('mailer:prod', 'attachment_limit_mb')",
        )
    return key


def check_optional_key(key: object) -> Key | None:
    """``key`` if it is None or a :class:`Key`, else InvalidKeyError (see :func:`check_key`)."""
    return None if key is None else check_key(key)


def optional_key_parts(key: object) -> tuple[str | None, str | None]:
    """``(entity, attribute)`` of an optional key filter, ``(None, None)`` for None."""
    checked = check_optional_key(key)
    return (None, None) if checked is None else (checked.entity, checked.attribute)


@dataclass(frozen=True, slots=True)
class Version:
    """One fact version: a source's value for a valid period, held for a known period."""

    version_id: int
    key: Key
    source: str
    value: JSON
    valid_period: Period
    known_period: Period
    recorded_by: str | None = None
    #: For a remainder re-recorded when a later write cut an older version:
    #: the version whose assertion it carries forward.
    carried_from: int | None = None
    #: When the version was really written and, once closed, when its knowledge was
    #: really closed (each the start of that transaction, on the server's clock), beside
    #: the knowledge times the writers chose: ``known_period.start < recorded_at`` means
    #: back-dated knowledge. Only :meth:`Facts.history` fills them in (None elsewhere, and
    #: for versions written before migration 0010).
    recorded_at: datetime | None = None
    closed_at: datetime | None = None
    #: When the version's value was erased, and by which erasure (``bitemporal.erasures``):
    #: filled in by :meth:`Facts.history`; elsewhere an erased version is known by its
    #: value, None (see :attr:`erased`).
    erased_at: datetime | None = None
    erasure_id: int | None = None

    @property
    def erased(self) -> bool:
        """Whether the value was erased: a version's value is never None otherwise."""
        return self.value is None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Version:
        return cls(
            version_id=row["version_id"],
            key=Key(row["entity"], row["attribute"]),
            source=row["source"],
            value=row["value"],
            valid_period=Period.from_range(row["valid_period"]),
            known_period=Period.from_range(row["known_period"]),
            recorded_by=row["recorded_by"],
            carried_from=row["carried_from"],
            recorded_at=row.get("recorded_at"),
            closed_at=row.get("closed_at"),
            erased_at=row.get("erased_at"),
            erasure_id=row.get("erasure_id"),
        )


@dataclass(frozen=True, slots=True)
class Erasure:
    """An erasure (:meth:`Facts.erase`, :meth:`Facts.erase_entity`,
    :meth:`ApplicationTables.erase`, or a retention policy), as ``bitemporal.erasures``
    records it: the values of ``version_ids`` are gone, this record stays."""

    erasure_id: int
    #: The erasing transaction's time.
    erased_at: datetime
    #: The role of the erasing session (``session_user``).
    erased_by: str
    reason: str
    #: The fact store's entity; None for an application table's erasure.
    entity: str | None
    #: None for an erasure of every attribute of the entity (and for a table's).
    attribute: str | None
    version_ids: tuple[int, ...]
    #: ``fact`` (the fact store) or ``table`` (an application table).
    scope: str = "fact"
    #: For an application table: the table (``schema.table``) and the key erased.
    relation: str | None = None
    key: Mapping[str, Any] | None = None
    #: The retention policy that erased (None: an erasure on request).
    policy: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Erasure:
        return cls(
            erasure_id=row["erasure_id"],
            erased_at=row["erased_at"],
            erased_by=row["erased_by"],
            reason=row["reason"],
            entity=row["entity"],
            attribute=row["attribute"],
            version_ids=tuple(row["version_ids"]),
            scope=row["scope"],
            relation=row["relation"],
            key=row["key"],
            policy=row["policy"],
        )


def check_reason(reason: object) -> str:
    """An erasure's reason: text that says something (the database checks it too)."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidReasonError(
            f"an erasure needs a reason, not {reason!r}",
            hint="say why: the request or the legal ground",
        )
    return check_text("reason", reason, InvalidReasonError)


@dataclass(frozen=True, slots=True)
class Recorded:
    """What :meth:`Facts.record` did."""

    #: The version holding the value (the existing one when nothing changed).
    version_id: int
    #: False when the value was already known for the whole period: nothing written.
    created: bool
    #: Versions whose knowledge this write ended.
    superseded: tuple[int, ...] = ()
    #: The knowledge time the write was recorded at (None when nothing was written).
    known_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """The answer to ``(valid_at, known_at)`` for one key, with its status."""

    key: Key
    status: Status
    #: The value when supported, else None.
    value: JSON
    #: The distinct eligible values, sorted (JSON order).
    values: tuple[JSON, ...]
    #: The eligible versions the answer rests on, by version id.
    versions: tuple[Version, ...]
    valid_at: datetime
    known_at: datetime
    interpretation: Interpretation
    #: The present the interpretation is relative to.
    now: datetime
    sources: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", sources_of(self.versions))


def sources_of(versions: Iterable[Version]) -> tuple[str, ...]:
    """The distinct sources of ``versions``, sorted: :attr:`Answer.sources`."""
    return tuple(sorted({v.source for v in versions}))


def json_text(value: JSON) -> str:
    """``value`` as the JSON text the SQL functions take; InvalidValueError for None
    (retract instead) and for text PostgreSQL cannot store."""
    if value is None:
        raise InvalidValueError(
            "value must not be None", hint="to say a value no longer applies, retract its period"
        )
    return check_text("value", dumps(value), InvalidValueError)


class ChangeKind(StrEnum):
    """What happened to a version's knowledge."""

    LEARNED = "learned"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
