"""The fact repository: reads and writes keys' versions and answers (their types are in
:mod:`bitemporal.model`).

Every method is a thin wrapper over one SQL function in ``sql/facts_*.sql``;
the semantics live in the database, so that ``psql`` and Python give the same
answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from psycopg.rows import dict_row

from . import answers, changes, record_many
from .adapters import cursor
from .answers import Explanation
from .changes import Change
from .errors import check_optional_text
from .jsonvalues import JSON
from .model import (
    Answer,
    Connector,
    Interpretation,
    Key,
    Recorded,
    Status,
    Version,
    check_key_part,
    json_text,
)
from .periods import Instant, period_bounds, to_optional_instant
from .record_many import RecordRow

_VERSION_COLUMNS = (
    "version_id, entity, attribute, source, value, valid_period, known_period, "
    "recorded_by, carried_from"
)


class Facts:
    """Reads and writes fact versions through the ``bitemporal`` SQL functions."""

    def __init__(self, atomic: Connector, reading: Connector, transaction: Connector) -> None:
        # atomic: for a write that is one statement; transaction: for several.
        self._atomic = atomic
        self._reading = reading
        self._transaction = transaction

    def record(
        self,
        key: Key,
        value: JSON,
        *,
        source: str,
        valid_from: Instant | None = None,
        valid_to: Instant | None = None,
        known_at: Instant | None = None,
        recorded_by: str | None = None,
        idempotency_key: str | None = None,
    ) -> Recorded:
        """Record that ``source`` says ``value`` applies over ``[valid_from, valid_to)``.

        A sequenced update: current versions of the same key and source that
        overlap the period have their knowledge closed and their remainders
        re-recorded. ``known_at`` defaults to the transaction time; it may not
        be later than the present nor earlier than knowledge already recorded
        for the key. A retry with the same ``idempotency_key`` (after a timeout
        or a lost connection, say) returns the first attempt's result and
        writes nothing; reusing a key for a different request is an error.
        """
        check_key_part("source", source)
        check_optional_text("recorded_by", recorded_by)
        if idempotency_key is not None:
            check_key_part("idempotency_key", idempotency_key)
        args = (
            key.entity,
            key.attribute,
            source,
            json_text(value),
            *period_bounds(valid_from, valid_to),
            to_optional_instant(known_at, name="known_at"),
            recorded_by,
            idempotency_key,
        )
        with self._atomic() as conn, cursor(conn) as cur:
            row = cur.execute(
                "SELECT version_id, created, superseded, known_at "
                "FROM bitemporal.record(%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s)",
                args,
            ).fetchone()
        assert row is not None
        return Recorded(row[0], row[1], tuple(row[2]), row[3])

    def record_many(
        self, rows: Iterable[RecordRow | Mapping[str, Any]], *, max_errors: int = 100
    ) -> list[Recorded]:
        """Apply a batch with exactly the semantics of :meth:`record` called for each row in
        order inside one transaction (several rows of one key, rows that split each other,
        no-ops, explicit and default knowledge times), but set-based: the rows are COPY-ed
        into a temporary table and merged by one call of ``bitemporal.record_many``.

        Rows are :class:`~bitemporal.RecordRow` objects or mappings with ``entity`` and
        ``attribute`` (or ``key``), ``source``, ``value`` and optionally ``valid_from``,
        ``valid_to``, ``known_at``, ``recorded_by``. Returns one :class:`Recorded` per row,
        in batch order. All or nothing: if any row is bad,
        :class:`~bitemporal.BatchError` lists the bad rows (``.rows``: ``(line, reason)``,
        line = 1-based position in the batch; at most ``max_errors``) and nothing is
        written. No idempotency keys. See :mod:`bitemporal.record_many`.
        """
        return record_many.record_many(self._transaction, rows, max_errors=max_errors)

    def recorded_already(self, rows: Iterable[RecordRow | Mapping[str, Any]]) -> list[bool]:
        """For each row (as :meth:`record_many` takes them), whether it was recorded before:
        it gives an explicit ``known_at``, and at that knowledge time the store already held
        its value from its source over its whole valid period. Recording such a row again
        changes nothing, but :meth:`record` refuses it (``BT002``) once the key has later
        knowledge; ``bitemporal import`` skips these rows when a file is run again. Rows
        without ``known_at``: False. Reads ``bitemporal.versions`` (the reader role's grant).
        """
        return record_many.recorded_already(self._reading, rows)

    def retract(
        self,
        key: Key,
        *,
        source: str,
        valid_from: Instant | None = None,
        valid_to: Instant | None = None,
        known_at: Instant | None = None,
    ) -> tuple[int, ...]:
        """Sequenced delete of ``[valid_from, valid_to)`` for ``source``.

        Returns the versions whose knowledge ended (empty: nothing to retract).
        """
        check_key_part("source", source)
        args = (
            key.entity,
            key.attribute,
            source,
            *period_bounds(valid_from, valid_to),
            to_optional_instant(known_at, name="known_at"),
        )
        with self._atomic() as conn:
            row = conn.execute("SELECT bitemporal.retract(%s, %s, %s, %s, %s, %s)", args).fetchone()
        assert row is not None
        return tuple(row[0])

    def as_of(
        self, key: Key, *, valid_at: Instant | None = None, known_at: Instant | None = None
    ) -> list[Version]:
        """The versions eligible at ``(valid_at, known_at)`` (default: now), by version id."""
        args = (
            key.entity,
            key.attribute,
            to_optional_instant(valid_at, name="valid_at"),
            to_optional_instant(known_at, name="known_at"),
        )
        with self._reading() as conn, cursor(conn, dict_row) as cur:
            cur.execute(f"SELECT {_VERSION_COLUMNS} FROM bitemporal.as_of(%s, %s, %s, %s)", args)
            return [Version.from_row(row) for row in cur]

    def resolve(
        self,
        key: Key,
        *,
        valid_at: Instant | None = None,
        known_at: Instant | None = None,
        now: Instant | None = None,
    ) -> Answer:
        """Answer ``(valid_at, known_at)`` for ``key``, with status and interpretation.

        ``now`` is the present the interpretation is relative to (default: the
        database's); ``valid_at`` and ``known_at`` default to it.
        """
        args = (
            key.entity,
            key.attribute,
            to_optional_instant(valid_at, name="valid_at"),
            to_optional_instant(known_at, name="known_at"),
            to_optional_instant(now, name="now"),
        )
        # One statement, so the answer and its versions share one snapshot.
        with self._reading() as conn, cursor(conn, dict_row) as cur:
            cur.execute(
                "SELECT a.status::text AS answer_status, a.value AS answer_value, "
                "a.values AS answer_values, a.valid_at AS answer_valid_at, "
                "a.known_at AS answer_known_at, a.interpretation::text AS answer_interpretation, "
                "a.present AS answer_present, "
                f"{', '.join('v.' + c for c in _VERSION_COLUMNS.split(', '))} "
                "FROM bitemporal.resolve(%s, %s, %s, %s, %s) a "
                "LEFT JOIN LATERAL bitemporal.as_of(%s, %s, a.valid_at, a.known_at) v ON true "
                "ORDER BY v.version_id",
                (*args, key.entity, key.attribute),
            )
            rows = cur.fetchall()
        first = rows[0]
        versions = tuple(Version.from_row(r) for r in rows if r["version_id"] is not None)
        return Answer(
            key=key,
            status=Status(first["answer_status"]),
            value=first["answer_value"],
            values=tuple(first["answer_values"]),
            versions=versions,
            valid_at=first["answer_valid_at"],
            known_at=first["answer_known_at"],
            interpretation=Interpretation(first["answer_interpretation"]),
            now=first["answer_present"],
        )

    def settled_knowledge_time(self) -> datetime:
        """A knowledge time whose answers never change: no write in flight, and no later
        write, can commit knowledge at or before it. Ask with ``known_at`` at or before it
        (in a later statement: not inside a REPEATABLE READ transaction begun before the
        call). Calling it closes knowledge up to the time returned: a later write with an
        explicit ``known_at`` at or before it raises :class:`KnowledgeTimeInPastError`;
        writes without ``known_at`` are recorded after it."""
        with self._atomic() as conn, cursor(conn) as cur:
            row = cur.execute("SELECT bitemporal.settled_knowledge_time()").fetchone()
        assert row is not None
        settled: datetime = row[0]
        return settled

    def version(self, version_id: int) -> Version | None:
        """The version with this id (None if there is none): what an
        :class:`~bitemporal.Invalidation` names."""
        with self._reading() as conn, cursor(conn, dict_row) as cur:
            cur.execute(
                f"SELECT {_VERSION_COLUMNS} FROM bitemporal.versions WHERE version_id = %s",
                (version_id,),
            )
            row = cur.fetchone()
            return None if row is None else Version.from_row(row)

    def history(self, key: Key) -> list[Version]:
        """Every version of ``key``, superseded ones included, by version id."""
        with self._reading() as conn, cursor(conn, dict_row) as cur:
            cur.execute(
                f"SELECT {', '.join('h.' + c for c in _VERSION_COLUMNS.split(', '))}, "
                "w.recorded_at, w.closed_at FROM bitemporal.history(%s, %s) h "
                "JOIN bitemporal.fact_version w "
                "ON w.version_id = h.version_id AND w.entity = h.entity "
                "ORDER BY h.version_id",
                (key.entity, key.attribute),
            )
            return [Version.from_row(row) for row in cur]

    def explain(
        self,
        key: Key,
        *,
        valid_at: Instant | None = None,
        known_at: Instant | None = None,
        now: Instant | None = None,
    ) -> Explanation:
        """The answer object for an agent (:class:`~bitemporal.answers.Explanation`):
        :meth:`resolve`'s answer with alternatives, every eligible version with its
        evidence, the knowledge snapshot and explicit qualifications; JSON-serializable
        (``to_json()``), renderable to one sentence (``sentence()``), and able to check
        a reply (``check(text)``). See :mod:`bitemporal.answers`."""
        return answers.fetch(self._reading, key, valid_at=valid_at, known_at=known_at, now=now)

    def changes(
        self,
        known_from: Instant | None = None,
        known_to: Instant | None = None,
        *,
        key: Key | None = None,
    ) -> list[Change]:
        """What the store learned, superseded or retracted in the knowledge window
        ``[known_from, known_to)`` (None: unbounded), for every key or one; see
        :mod:`bitemporal.changes`."""
        return changes.fetch(self._reading, known_from, known_to, key=key)
