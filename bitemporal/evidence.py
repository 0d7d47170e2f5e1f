"""Evidence text, and retrieval that filters before it ranks.

A fact version can carry the passages it came from (:meth:`Evidence.add`, or
:meth:`Evidence.record` to record a value and its passage at once). Retrieval
keeps the versions eligible at ``(valid_at, known_at)`` first, then ranks
only their passages, and takes the first ``limit``: a highly relevant passage
that is not valid for the question (next month's rule, last quarter's) can
never push the eligible one out, so while an eligible passage matches, the
result is not empty. Three rankers share that rule, each a SQL function in
``sql/evidence.v1.sql``:

* :meth:`Evidence.search`: full-text search (``tsvector``), on every server;
* :meth:`Evidence.rank`: relevance scores from any external engine, per version;
* :meth:`Evidence.nearest`: cosine similarity of embeddings (pgvector), once
  :meth:`Evidence.enable_vector` was called on a server that has pgvector;
  elsewhere it raises :class:`~bitemporal.errors.VectorUnavailableError`.

Ties are broken by version id, then evidence id. A passage recorded for a
version also serves the remainders re-recorded from it (``carried_from``), and
a score given for a version also applies to them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import (
    EmbeddingError,
    InvalidEvidenceError,
    InvalidSearchError,
    check_optional_text,
)
from .jsonvalues import JSON
from .model import (
    Key,
    Recorded,
    Version,
    check_id,
    check_key,
    check_key_part,
    json_text,
    optional_key_parts,
)
from .operations import AsyncRepository, Statement, Steps, SyncRepository, one, reads, writes
from .periods import Instant, period_bounds, to_optional_instant

#: Full-text configuration passages are indexed with unless told otherwise.
DEFAULT_LANGUAGE = "english"


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage a version came from."""

    evidence_id: int
    #: The version the passage was attached to (a remainder's original, possibly).
    version_id: int
    passage: str
    #: Where it comes from (URL, file and section, ...), if given.
    document: str | None = None
    #: The text search configuration it is indexed with.
    language: str = DEFAULT_LANGUAGE


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieval result: an eligible version and (usually) its passage."""

    #: 1 for the best.
    rank: int
    #: Full-text rank, caller score or cosine similarity: higher is better.
    score: float
    #: The eligible version (a remainder when a later write cut the original).
    version: Version
    #: The passage; None only for :meth:`Evidence.rank` of a version without one.
    evidence_id: int | None
    passage: str | None
    document: str | None

    @property
    def value(self) -> JSON:
        return self.version.value


@dataclass(frozen=True, slots=True)
class EvidenceRecorded:
    """What :meth:`Evidence.record` did: the fact write and the passage attached to it."""

    recorded: Recorded
    evidence_id: int


_HIT_QUERY = (
    "SELECT rank, score, version_id, entity, attribute, source, value, valid_period, "
    "known_period, recorded_by, carried_from, evidence_id, passage, document FROM "
)


def _limit(limit: int | None) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidSearchError(f"limit must be a whole number, zero or more, not {limit!r}")
    return limit


def _embedding(embedding: Sequence[float]) -> list[float]:
    try:
        numbers = [float(x) for x in embedding]
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"an embedding must be a sequence of numbers: {exc}") from exc
    if not all(math.isfinite(x) for x in numbers):
        raise EmbeddingError("an embedding must hold finite numbers only")
    return numbers


def _check_passage(
    passage: object, document: object, language: object, recorded_by: object
) -> None:
    if not isinstance(passage, str) or not passage.strip():
        raise InvalidEvidenceError("a passage must be non-blank text")
    for what, text in (("passage", passage), ("document", document), ("language", language)):
        check_optional_text(what, text, InvalidEvidenceError)
    check_optional_text("recorded_by", recorded_by)


class EvidenceOperations:
    """Passages of fact versions, and retrieval that filters before it ranks; run by
    :class:`Evidence` (sync API) and :class:`AsyncEvidence` (async API)."""

    # Writing.

    @writes
    def add(
        self,
        version_id: int,
        passage: str,
        *,
        document: str | None = None,
        language: str = DEFAULT_LANGUAGE,
        embedding: Sequence[float] | None = None,
        recorded_by: str | None = None,
    ) -> Steps[int]:
        """Attach ``passage`` (from ``document``) to a version; returns its evidence id.

        ``language`` is a PostgreSQL text search configuration (``english``,
        ``german``, ``simple``, ...). ``embedding`` needs :meth:`enable_vector`.
        """
        _check_passage(passage, document, language, recorded_by)
        vector = None if embedding is None else _embedding(embedding)
        row = one(
            (
                yield Statement(
                    "SELECT bitemporal.add_evidence(%s, %s, %s, %s, %s::real[], %s)",
                    (
                        check_id("version_id", version_id, InvalidEvidenceError),
                        passage,
                        document,
                        language,
                        vector,
                        recorded_by,
                    ),
                )
            )
        )
        evidence_id: int = row[0]
        return evidence_id

    @writes
    def record(
        self,
        key: Key,
        value: JSON,
        *,
        source: str,
        passage: str,
        document: str | None = None,
        valid_from: Instant | None = None,
        valid_to: Instant | None = None,
        known_at: Instant | None = None,
        recorded_by: str | None = None,
        language: str = DEFAULT_LANGUAGE,
        embedding: Sequence[float] | None = None,
    ) -> Steps[EvidenceRecorded]:
        """Record a value (as :meth:`Facts.record <bitemporal.Facts.record>`) and the
        passage it came from, in one transaction. When the value was already known,
        the passage is attached to the existing version."""
        check_key(key)
        check_key_part("source", source)
        _check_passage(passage, document, language, recorded_by)
        vector = None if embedding is None else _embedding(embedding)
        row = one(
            (
                yield Statement(
                    "SELECT r.version_id, r.created, r.superseded, r.known_at, "
                    "bitemporal.add_evidence(r.version_id, %s, %s, %s, %s::real[], %s) "
                    "FROM bitemporal.record(%s, %s, %s, %s::jsonb, %s, %s, %s, %s) r",
                    (
                        passage,
                        document,
                        language,
                        vector,
                        recorded_by,
                        key.entity,
                        key.attribute,
                        source,
                        json_text(value),
                        *period_bounds(valid_from, valid_to),
                        to_optional_instant(known_at, name="known_at"),
                        recorded_by,
                    ),
                )
            )
        )
        return EvidenceRecorded(Recorded(row[0], row[1], tuple(row[2]), row[3]), row[4])

    @reads
    def passages(self, version_id: int) -> Steps[list[Passage]]:
        """The passages that support a version: its own and its original's (for a remainder)."""
        rows = yield Statement(
            "SELECT e.evidence_id, e.version_id, e.passage, e.document, "
            "e.language::text AS language "
            "FROM bitemporal.fact_version v JOIN bitemporal.evidence e "
            "ON e.version_id IN (v.version_id, v.carried_from) "
            "WHERE v.version_id = %s ORDER BY e.evidence_id",
            (check_id("version_id", version_id, InvalidEvidenceError),),
            dicts=True,
        )
        return [Passage(**row) for row in rows]

    # Retrieval.

    @reads
    def search(
        self,
        query: str,
        *,
        valid_at: Instant | None = None,
        known_at: Instant | None = None,
        limit: int | None = 10,
        key: Key | None = None,
        language: str | None = None,
    ) -> Steps[list[Hit]]:
        """Full-text search among the passages of versions eligible at ``(valid_at, known_at)``.

        ``query`` uses web search syntax (``attachment limit``, ``"exact phrase"``,
        ``-excluded``, ``a or b``), parsed with each passage's language, or only
        passages in ``language`` when given. Ranked by ``ts_rank_cd``, ties by
        version id; ``limit=None`` returns every match.
        """
        if not isinstance(query, str):
            raise InvalidSearchError(f"query must be text, not {type(query).__name__}")
        check_optional_text("query", query, InvalidSearchError)
        check_optional_text("language", language, InvalidSearchError)
        return (
            yield from _hits(
                "bitemporal.search_evidence(%s, %s, %s, %s, %s, %s, %s)",
                (
                    query,
                    *_question(valid_at, known_at),
                    _limit(limit),
                    language,
                    *optional_key_parts(key),
                ),
            )
        )

    @reads
    def rank(
        self,
        scores: Mapping[int, float],
        *,
        valid_at: Instant | None = None,
        known_at: Instant | None = None,
        limit: int | None = 10,
        key: Key | None = None,
    ) -> Steps[list[Hit]]:
        """Rank versions by your own relevance scores (``{version_id: score}``, from any
        engine), keeping only those eligible at ``(valid_at, known_at)`` first.

        A score for a version also applies to the remainders carried from it.
        Each hit carries the version's first passage, if any. Ids of versions
        that do not exist are ignored.
        """
        ids: list[int] = []
        values: list[float] = []
        for version_id, score in scores.items():
            try:
                number = float(score)
            except (TypeError, ValueError) as exc:
                raise InvalidSearchError(f"score for version {version_id} is not a number") from exc
            if not math.isfinite(number):
                raise InvalidSearchError(
                    f"score for version {version_id} is {score!r}; scores must be finite",
                    hint="NaN would sort above every real score",
                )
            ids.append(check_id("a version id of scores", version_id, InvalidSearchError))
            values.append(number)
        return (
            yield from _hits(
                "bitemporal.rank_versions(%s::bigint[], %s::float8[], %s, %s, %s, %s, %s)",
                (
                    ids,
                    values,
                    *_question(valid_at, known_at),
                    _limit(limit),
                    *optional_key_parts(key),
                ),
            )
        )

    @reads
    def nearest(
        self,
        embedding: Sequence[float],
        *,
        valid_at: Instant | None = None,
        known_at: Instant | None = None,
        limit: int | None = 10,
        key: Key | None = None,
    ) -> Steps[list[Hit]]:
        """The passages most similar to ``embedding`` (cosine) among those of versions
        eligible at ``(valid_at, known_at)``: exact, never an approximate index scan
        filtered afterwards. Needs pgvector and :meth:`enable_vector`."""
        return (
            yield from _hits(
                "bitemporal.nearest_evidence(%s::real[], %s, %s, %s, %s, %s)",
                (
                    _embedding(embedding),
                    *_question(valid_at, known_at),
                    _limit(limit),
                    *optional_key_parts(key),
                ),
            )
        )

    # pgvector.

    @reads
    def vector_available(self) -> Steps[bool]:
        """Whether the server has the pgvector extension (so :meth:`enable_vector` can work)."""
        # The catalog, as bitemporal_internal.vector_available() reads it
        # (internal functions are not the API).
        row = one(
            (
                yield Statement(
                    "SELECT EXISTS (SELECT FROM pg_catalog.pg_available_extensions "
                    "WHERE name = 'vector')"
                )
            )
        )
        return bool(row[0])

    @reads
    def vector_dimensions(self) -> Steps[int | None]:
        """The dimensions of embeddings in this database, or None if vectors are not enabled."""
        dimensions: int | None = one((yield Statement("SELECT bitemporal.vector_dimensions()")))[0]
        return dimensions

    @writes
    def enable_vector(self, dimensions: int) -> Steps[int]:
        """Enable embeddings of ``dimensions`` numbers in this database (idempotent).

        Raises :class:`~bitemporal.errors.VectorUnavailableError` where the server
        has no pgvector, :class:`~bitemporal.errors.EmbeddingError` if another
        number of dimensions is already enabled.
        """
        enabled: int = one((yield Statement("SELECT bitemporal.enable_vector(%s)", (dimensions,))))[
            0
        ]
        return enabled

    @writes
    def set_embedding(self, evidence_id: int, embedding: Sequence[float]) -> Steps[None]:
        """Store (or replace) the embedding of a passage."""
        yield Statement(
            "SELECT bitemporal.set_embedding(%s, %s::real[])",
            (check_id("evidence_id", evidence_id, InvalidEvidenceError), _embedding(embedding)),
        )


class Evidence(EvidenceOperations, SyncRepository):
    """The evidence repository of :class:`~bitemporal.Store` (see :class:`EvidenceOperations`)."""


class AsyncEvidence(EvidenceOperations, AsyncRepository):
    """The evidence repository of :class:`~bitemporal.AsyncStore`: :class:`Evidence`'s
    methods, awaitable."""


def _question(valid_at: Instant | None, known_at: Instant | None) -> tuple[Any, Any]:
    return (
        to_optional_instant(valid_at, name="valid_at"),
        to_optional_instant(known_at, name="known_at"),
    )


def _hits(call: str, args: tuple[Any, ...]) -> Steps[list[Hit]]:
    rows = yield Statement(_HIT_QUERY + call, args, dicts=True)
    return [
        Hit(
            rank=row["rank"],
            score=row["score"],
            version=Version.from_row(row),
            evidence_id=row["evidence_id"],
            passage=row["passage"],
            document=row["document"],
        )
        for row in rows
    ]
