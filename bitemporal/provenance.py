"""Provenance of derived artifacts, and what to invalidate when facts change.

An artifact is anything derived from facts: a chunk, an embedding, a summary,
a cached answer (``kind`` is free-form). :meth:`Provenance.record` keeps the
exact fact versions and other artifacts it was derived from (many-to-many,
transitive through artifacts); ``(kind, ref)`` names what the caller keeps,
and recording the same name again retires the previous artifact.

:meth:`Provenance.stale` is the invalidation list: every artifact in use any
of whose inputs, directly or through other artifacts, has since been
superseded, retracted or discarded (a version replaced inside the transaction
that created it), or whose input artifact was retired, each with the reason.
:meth:`Provenance.retire` takes an artifact off the list once it has been
rebuilt or thrown away.

Live: a transaction that closes a version's knowledge (a supersession or a
retraction) sends, when it commits, a ``NOTIFY`` on :data:`CHANNEL`
(``bitemporal_invalidation``) whose payload is JSON with ids, kind and time
only (the version, the change, the knowledge time, the superseding versions:
any role that may connect may listen, so it names no fact);
:meth:`Invalidation.from_payload` parses it, :meth:`~bitemporal.Facts.version`
turns the id into its key for a role that may read, and
:meth:`Provenance.dependents` lists the artifacts to rebuild;
:meth:`Provenance.set_notify` switches these notifications off (and on). The SQL side is
``sql/provenance.v1.sql`` and ``sql/invalidation_notify.v1.sql``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from psycopg.types.json import Jsonb

from .errors import (
    InvalidArtifactError,
    InvalidInputError,
    UnknownArtifactError,
    check_optional_text,
)
from .jsonvalues import JSON, dumps
from .model import Key, Version, check_id, check_many
from .operations import AsyncRepository, Statement, Steps, SyncRepository, one, reads, writes
from .periods import Instant, to_optional_instant

#: The channel a supersession or retraction is announced on (``LISTEN bitemporal_invalidation``).
CHANNEL = "bitemporal_invalidation"


class StaleCause(StrEnum):
    """Why an artifact is stale."""

    #: An input version was replaced by a new value of the same source.
    SUPERSEDED = "superseded"
    #: An input version was retracted (no new value).
    RETRACTED = "retracted"
    #: An input version was replaced inside the transaction that created it (never kept).
    DISCARDED = "discarded"
    #: An input artifact was retired or replaced under its name.
    INPUT_RETIRED = "input_retired"
    #: An input version's value was erased (``bitemporal.erase``).
    ERASED = "erased"


@dataclass(frozen=True, slots=True)
class Artifact:
    """A derived artifact and what it was derived from."""

    artifact_id: int
    kind: str
    ref: str
    derived_at: datetime
    retired_at: datetime | None = None
    detail: JSON = None
    recorded_by: str | None = None
    #: The fact versions it was derived from directly.
    versions: tuple[int, ...] = ()
    #: The artifacts it was derived from directly.
    artifacts: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class StaleReason:
    """One input of a stale artifact that is no longer current."""

    cause: StaleCause
    #: When it changed (None for a discarded version: it was never kept).
    changed_at: datetime | None
    #: The input version (for superseded, retracted, discarded).
    version_id: int | None
    key: Key | None
    source: str | None
    value: JSON
    #: The input artifact (for input_retired).
    input_artifact: int | None
    #: The artifact that used the input directly (the stale artifact itself, if direct).
    via_artifact: int
    #: The versions that superseded the input version.
    by_version_ids: tuple[int, ...]
    #: The reason, in words.
    text: str


@dataclass(frozen=True, slots=True)
class StaleArtifact:
    """An artifact to invalidate, with every reason."""

    artifact_id: int
    kind: str
    ref: str
    derived_at: datetime
    reasons: tuple[StaleReason, ...]


class InvalidationChange(StrEnum):
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
    #: The version's value was erased; ``known_at`` is when (its knowledge is unchanged).
    ERASED = "erased"


@dataclass(frozen=True, slots=True)
class Invalidation:
    """A notification on :data:`CHANNEL`: a version's knowledge was closed.

    It carries ids only; ``store.facts.version(version_id)`` gives the version (key,
    source, value) to a role that may read versions."""

    version_id: int
    change: InvalidationChange
    known_at: datetime
    #: The superseding versions (empty for a retraction).
    by: tuple[int, ...]

    @classmethod
    def from_payload(cls, payload: str) -> Invalidation:
        """Parse the JSON payload of a notification."""
        data = json.loads(payload)
        return cls(
            version_id=data["version_id"],
            change=InvalidationChange(data["change"]),
            known_at=datetime.fromisoformat(data["known_at"]),
            by=tuple(data["by"]),
        )


def _ids(items: object, what: str, kind: type[Version | Artifact]) -> list[int]:
    """The ids of ``items``: ids, or ``kind`` objects (an Artifact among versions is not
    taken for its id)."""
    ids = []
    for item in check_many(what, items, InvalidArtifactError):
        if isinstance(item, kind):
            item = item.version_id if isinstance(item, Version) else item.artifact_id
        ids.append(check_id(f"an id of {what}", item, InvalidArtifactError))
    return ids


_ARTIFACT_QUERY = (
    "SELECT a.artifact_id, a.kind, a.ref, a.derived_at, a.retired_at, a.detail, a.recorded_by, "
    "coalesce(array_agg(i.input_version ORDER BY i.input_version) "
    "         FILTER (WHERE i.input_version IS NOT NULL), '{}') AS versions, "
    "coalesce(array_agg(i.input_artifact ORDER BY i.input_artifact) "
    "         FILTER (WHERE i.input_artifact IS NOT NULL), '{}') AS artifacts "
    "FROM {source} a LEFT JOIN bitemporal.artifact_input i ON i.artifact_id = a.artifact_id "
    "{where} GROUP BY a.artifact_id, a.kind, a.ref, a.derived_at, a.retired_at, a.detail, "
    "a.recorded_by ORDER BY a.artifact_id"
)


def _artifact(row: dict[str, Any]) -> Artifact:
    return Artifact(
        artifact_id=row["artifact_id"],
        kind=row["kind"],
        ref=row["ref"],
        derived_at=row["derived_at"],
        retired_at=row["retired_at"],
        detail=row["detail"],
        recorded_by=row["recorded_by"],
        versions=tuple(row["versions"]),
        artifacts=tuple(row["artifacts"]),
    )


class ProvenanceOperations:
    """Derived artifacts, their inputs, and the invalidation list; run by
    :class:`Provenance` (sync API) and :class:`AsyncProvenance` (async API)."""

    @writes
    def record(
        self,
        kind: str,
        ref: str,
        *,
        versions: Iterable[int | Version] = (),
        artifacts: Iterable[int | Artifact] = (),
        detail: JSON = None,
        derived_at: Instant | None = None,
        recorded_by: str | None = None,
    ) -> Steps[Artifact]:
        """Record that artifact ``(kind, ref)`` was derived, at ``derived_at`` (default:
        the transaction time), from these exact fact versions and/or artifacts.

        The artifact previously recorded under the same ``(kind, ref)`` is
        retired. An artifact needs at least one input, each known by
        ``derived_at``.
        """
        for what, text in (("kind", kind), ("ref", ref)):
            check_optional_text(what, text, InvalidArtifactError)
        check_optional_text("recorded_by", recorded_by)
        version_ids = _ids(versions, "versions", Version)
        artifact_ids = _ids(artifacts, "artifacts", Artifact)
        at = to_optional_instant(derived_at, name="derived_at")
        # Built from the call alone: a writer role may run the function but not read the tables.
        row = one(
            (
                yield Statement(
                    "SELECT bitemporal.record_artifact("
                    "%s, %s, %s::bigint[], %s::bigint[], %s, %s, %s), "
                    "coalesce(%s::timestamptz, now())",
                    (
                        kind,
                        ref,
                        version_ids,
                        artifact_ids,
                        None if detail is None else Jsonb(detail, dumps=dumps),
                        at,
                        recorded_by,
                        at,
                    ),
                )
            )
        )
        return Artifact(
            artifact_id=row[0],
            kind=kind,
            ref=ref,
            derived_at=row[1],
            detail=detail,
            recorded_by=recorded_by,
            versions=tuple(sorted(set(version_ids))),
            artifacts=tuple(sorted(set(artifact_ids))),
        )

    @reads
    def get(self, artifact_id: int) -> Steps[Artifact]:
        """The artifact with this id (raises :class:`~bitemporal.errors.UnknownArtifactError`)."""
        rows = yield Statement(
            _ARTIFACT_QUERY.replace("{source}", "bitemporal.artifact").replace(
                "{where}", "WHERE a.artifact_id = %s"
            ),
            (check_id("artifact_id", artifact_id, InvalidArtifactError),),
            dicts=True,
        )
        if not rows:
            raise UnknownArtifactError(f"unknown artifact {artifact_id}")
        return _artifact(rows[0])

    @writes
    def retire(self, artifact_id: int, *, at: Instant | None = None) -> Steps[bool]:
        """Take an artifact out of use (rebuilt or thrown away) at ``at`` (default:
        the transaction time), so it leaves the stale list. False if it already was."""
        row = one(
            (
                yield Statement(
                    "SELECT bitemporal.retire_artifact(%s, %s)",
                    (
                        check_id("artifact_id", artifact_id, InvalidArtifactError),
                        to_optional_instant(at, name="at"),
                    ),
                )
            )
        )
        return bool(row[0])

    @reads
    def stale(self, known_at: Instant | None = None) -> Steps[list[StaleArtifact]]:
        """The invalidation list at ``known_at`` (default: now), by artifact id."""
        rows = yield Statement(
            "SELECT * FROM bitemporal.stale(%s)",
            (to_optional_instant(known_at, name="known_at"),),
            dicts=True,
        )
        stale: dict[int, StaleArtifact] = {}
        for row in rows:
            reason = StaleReason(
                cause=StaleCause(row["cause"]),
                changed_at=row["changed_at"],
                version_id=row["version_id"],
                key=Key(row["entity"], row["attribute"]) if row["entity"] is not None else None,
                source=row["source"],
                value=row["value"],
                input_artifact=row["input_artifact"],
                via_artifact=row["via_artifact"],
                by_version_ids=tuple(row["by_version_ids"] or ()),
                text=row["reason"],
            )
            entry = stale.get(row["artifact_id"])
            stale[row["artifact_id"]] = StaleArtifact(
                row["artifact_id"],
                row["kind"],
                row["ref"],
                row["derived_at"],
                (*(entry.reasons if entry else ()), reason),
            )
        return list(stale.values())

    @reads
    def dependents(
        self, *, versions: Iterable[int | Version] = (), artifacts: Iterable[int | Artifact] = ()
    ) -> Steps[list[Artifact]]:
        """The artifacts in use derived, directly or transitively, from any of these
        versions or artifacts: what to rebuild when a notification names a version."""
        rows = yield Statement(
            _ARTIFACT_QUERY.replace(
                "{source}", "bitemporal.dependents(%s::bigint[], %s::bigint[])"
            ).replace("{where}", ""),
            (_ids(versions, "versions", Version), _ids(artifacts, "artifacts", Artifact)),
            dicts=True,
        )
        return [_artifact(row) for row in rows]

    @reads
    def notify_enabled(self) -> Steps[bool]:
        """Whether a transaction that closes a version's knowledge announces it on
        :data:`CHANNEL` when it commits (on by default; :meth:`set_notify`). False on
        Citus, whose store sends no such notification (read :meth:`~bitemporal.Facts.changes`)."""
        row = one((yield Statement("SELECT bitemporal.invalidation_notify()", ())))
        return bool(row[0])

    @writes
    def set_notify(self, enabled: bool) -> Steps[bool]:
        """Switch the invalidation ``NOTIFY`` of writes on or off, for every session of the
        database; returns the previous state. PostgreSQL commits the transactions that sent
        a ``NOTIFY`` one at a time, so with many concurrent writers and no listener, off
        writes faster (caches can poll :meth:`~bitemporal.Facts.changes`). Erasures are
        announced either way. Only the store's owner may
        (:class:`~bitemporal.PermissionDeniedError`); switching it on on Citus raises
        :class:`~bitemporal.DistributionError`."""
        if not isinstance(enabled, bool):
            raise InvalidInputError(f"enabled must be True or False, not {enabled!r}")
        row = one((yield Statement("SELECT bitemporal.set_invalidation_notify(%s)", (enabled,))))
        return bool(row[0])


class Provenance(ProvenanceOperations, SyncRepository):
    """The provenance repository of :class:`~bitemporal.Store` (see
    :class:`ProvenanceOperations`)."""


class AsyncProvenance(ProvenanceOperations, AsyncRepository):
    """The provenance repository of :class:`~bitemporal.AsyncStore`: :class:`Provenance`'s
    methods, awaitable."""
