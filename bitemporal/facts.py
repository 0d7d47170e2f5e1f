"""The fact repository: reads and writes keys' versions and answers (their types are in
:mod:`bitemporal.model`).

Every method is a thin wrapper over one SQL function in ``sql/facts_*.sql``;
the semantics live in the database, so that ``psql`` and Python give the same
answers. The methods are written once, in :class:`FactOperations`, as
operations (:mod:`bitemporal.operations`): :class:`Facts` runs them for the sync
API, :class:`AsyncFacts` for the async API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from operator import itemgetter
from typing import Any

from . import answers, changes, record_many
from .answers import Explanation
from .builders import builder, twin
from .changes import Change
from .errors import check_optional_text
from .jsonvalues import JSON, loads
from .model import (
    Answer,
    Erasure,
    Interpretation,
    Key,
    Recorded,
    Status,
    Version,
    check_id,
    check_key,
    check_key_part,
    check_reason,
    json_text,
    sources_of,
)
from .operations import (
    AsyncRepository,
    Statement,
    Steps,
    SyncRepository,
    one,
    reads,
    transaction,
    whole,
    writes,
)
from .periods import Instant, Period, open_end, period_bounds, to_optional_instant
from .record_many import RecordRow

_VERSION_COLUMNS = (
    "version_id, entity, attribute, source, value, valid_period, known_period, "
    "recorded_by, carried_from"
)

# A version's columns with each period as its two bounds (NULL: open), so that
# building a Version costs a handful of Python calls and no range parsing (issue 15: a
# history of thousands of versions within 2x of fetching as many rows by primary key).
# The check constraints of bitemporal.fact_version guarantee [start, end) bounds with
# finite ends, which Period would otherwise check row by row. The statements below read
# them in binary format (adapters.cursor): every instant they return is finite, a bound
# within [0001-01-02, 9999-12-30) (check_instant), a transaction time, or a question
# time resolve accepted. The value comes as its JSON text, which psycopg reads into a str
# in C, for _version to parse: through the jsonb loader, a Python call and two copies of
# the text more per version (a history of 10,000 versions took 6 ms more of 45).
_VERSION_BOUNDS = (
    "{0}.version_id, {0}.source, {0}.value::text, "
    "pg_catalog.lower({0}.valid_period), pg_catalog.upper({0}.valid_period), "
    "pg_catalog.lower({0}.known_period), pg_catalog.upper({0}.known_period), "
    "{0}.recorded_by, {0}.carried_from"
).format
_AS_OF = f"SELECT {_VERSION_BOUNDS('v')} FROM bitemporal.as_of(%s, %s, %s, %s) v"
# On a connection that never prepares, planning as_of's inlined body at every call costs
# several times running it; as_of_planned is a PL/pgSQL function whose plan the session
# keeps (migration 0037).
_AS_OF_PLANNED = f"SELECT {_VERSION_BOUNDS('v')} FROM bitemporal.as_of_planned(%s, %s, %s, %s) v"
# bitemporal.history returns its versions by version id already, but a query's order is
# only what its ORDER BY says. Sorting the rows in Python keeps that promise for 0.1 ms a
# history of 10,000 versions (timsort finds the run); an ORDER BY here sorted them again
# on the server, for about 3 ms of 18.
_HISTORY = (
    f"SELECT {_VERSION_BOUNDS('h')}, h.recorded_at, h.closed_at, h.erased_at, h.erasure_id "
    "FROM bitemporal.history(%s, %s) h"
)
_by_version_id = itemgetter(0)
_RESOLVE = (
    "SELECT (r.answer).status::text, (r.answer).value, (r.answer).values, "
    "(r.answer).valid_at, (r.answer).known_at, (r.answer).interpretation::text, "
    f"(r.answer).present, (r.answer).version_ids, {_VERSION_BOUNDS('(r.version)')} "
    # The versions the answer rests on, all those eligible at its question, in the same
    # call: on Citus it is delegated whole to the worker holding the key (one command).
    "FROM bitemporal.resolve_versions(%s, %s, %s, %s, %s) r ORDER BY (r.version).version_id"
)


_new_answer = builder(Answer)
# A version and its periods are filled on their classes' mutable twins (bitemporal.builders)
# in one call, without the frozen dataclasses' object.__setattr__ per field: building a
# long history took about half the time of three constructor calls per version.
_VersionFields = twin(Version)
_PeriodFields = twin(Period)
_blank = object.__new__


def _version(key: Key, row: tuple[Any, ...]) -> Version:
    """A version of ``key`` from _VERSION_BOUNDS's columns, then (history's rows)
    recorded_at, closed_at, erased_at and erasure_id."""
    valid = _blank(_PeriodFields)
    valid.start = row[3]
    valid.end = open_end(row[4])
    valid.__class__ = Period
    known = _blank(_PeriodFields)
    known.start = row[5]
    known.end = open_end(row[6])
    known.__class__ = Period
    version = _blank(_VersionFields)
    version.version_id = row[0]
    version.key = key
    version.source = row[1]
    version.value = None if row[2] is None else loads(row[2])
    version.valid_period = valid
    version.known_period = known
    version.recorded_by = row[7]
    version.carried_from = row[8]
    if len(row) > 9:
        version.recorded_at = row[9]
        version.closed_at = row[10]
        version.erased_at = row[11]
        version.erasure_id = row[12]
    else:
        version.recorded_at = version.closed_at = version.erased_at = version.erasure_id = None
    version.__class__ = Version
    built: Version = version
    return built


class FactOperations:
    """Reads and writes fact versions through the ``bitemporal`` SQL functions."""

    @writes
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
    ) -> Steps[Recorded]:
        """Record that ``source`` says ``value`` applies over ``[valid_from, valid_to)``.

        A sequenced update: current versions of the same key and source that
        overlap the period have their knowledge closed and their remainders
        re-recorded. ``known_at`` defaults to the transaction time; it may not
        be later than the present nor earlier than knowledge already recorded
        for the key. A retry with the same ``idempotency_key`` (after a timeout
        or a lost connection, say) returns the first attempt's result and
        writes nothing; reusing a key for a different request is an error.
        """
        check_key(key)
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
        row = one(
            (
                yield Statement(
                    "SELECT version_id, created, superseded, known_at "
                    "FROM bitemporal.record(%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s)",
                    args,
                )
            )
        )
        return Recorded(row[0], row[1], tuple(row[2]), row[3])

    @transaction
    def record_many(
        self, rows: Iterable[RecordRow | Mapping[str, Any]], *, max_errors: int = 100
    ) -> Steps[list[Recorded]]:
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
        return (yield from record_many.record_many(rows, max_errors=max_errors))

    @reads
    def recorded_already(self, rows: Iterable[RecordRow | Mapping[str, Any]]) -> Steps[list[bool]]:
        """For each row (as :meth:`record_many` takes them), whether it was recorded before:
        it gives an explicit ``known_at``, and at that knowledge time the store already held
        its value from its source over its whole valid period. Recording such a row again
        changes nothing, but :meth:`record` refuses it (``BT002``) once the key has later
        knowledge; ``bitemporal import`` skips these rows when a file is run again. Rows
        without ``known_at``: False. Reads ``bitemporal.versions`` (the reader role's grant).
        """
        return (yield from record_many.recorded_already(rows))

    @writes
    def retract(
        self,
        key: Key,
        *,
        source: str,
        valid_from: Instant | None = None,
        valid_to: Instant | None = None,
        known_at: Instant | None = None,
    ) -> Steps[tuple[int, ...]]:
        """Sequenced delete of ``[valid_from, valid_to)`` for ``source``.

        Returns the versions whose knowledge ended (empty: nothing to retract).
        """
        check_key(key)
        check_key_part("source", source)
        args = (
            key.entity,
            key.attribute,
            source,
            *period_bounds(valid_from, valid_to),
            to_optional_instant(known_at, name="known_at"),
        )
        row = one((yield Statement("SELECT bitemporal.retract(%s, %s, %s, %s, %s, %s)", args)))
        return tuple(row[0])

    @reads
    def as_of(
        self, key: Key, *, valid_at: Instant | None = None, known_at: Instant | None = None
    ) -> Steps[list[Version]]:
        """The versions eligible at ``(valid_at, known_at)`` (default: now), by version id.
        On a connection that never prepares (psycopg's ``prepare_threshold`` None, as
        behind a pooler in transaction mode) it asks ``bitemporal.as_of_planned``, the same
        question with a plan the session keeps."""
        args = (
            check_key(key).entity,
            key.attribute,
            to_optional_instant(valid_at, name="valid_at"),
            to_optional_instant(known_at, name="known_at"),
        )
        rows = yield Statement(_AS_OF, args, binary=True, unprepared=_AS_OF_PLANNED)
        return [_version(key, row) for row in rows]

    @reads
    def resolve(
        self,
        key: Key,
        *,
        valid_at: Instant | None = None,
        known_at: Instant | None = None,
        now: Instant | None = None,
    ) -> Steps[Answer]:
        """Answer ``(valid_at, known_at)`` for ``key``, with status and interpretation.

        ``now`` is the present the interpretation is relative to (default: the
        database's); ``valid_at`` and ``known_at`` default to it. Raises
        :class:`SerializationError` (on Citus only) when the key's versions changed under
        every attempt to read the answer with them.
        """
        args = (
            check_key(key).entity,
            key.attribute,
            to_optional_instant(valid_at, name="valid_at"),
            to_optional_instant(known_at, name="known_at"),
            to_optional_instant(now, name="now"),
        )
        # The answer's version ids against the eligible versions (operations.whole).
        rows = yield from whole(
            Statement(_RESOLVE, args, binary=True),
            lambda rows: sorted(rows[0][7]) == [r[8] for r in rows if r[8] is not None],
            f"the versions of {key}",
        )
        status, value, values, asked_valid, asked_known, interpretation, present = rows[0][:7]
        versions = tuple(_version(key, r[8:]) for r in rows if r[8] is not None)
        return _new_answer(
            key,
            Status(status),
            value,
            tuple(values),
            versions,
            asked_valid,
            asked_known,
            Interpretation(interpretation),
            present,
            sources_of(versions),
        )

    @reads
    def history(self, key: Key) -> Steps[list[Version]]:
        """Every version of ``key``, superseded ones included, by version id, with when
        each was really written and closed and, for an erased one, when and by which
        erasure. Any role that may read (the function gives what the reader role may not
        read from the table)."""
        rows = yield Statement(_HISTORY, (check_key(key).entity, key.attribute), binary=True)
        return [_version(key, row) for row in sorted(rows, key=_by_version_id)]

    @writes
    def erase(self, key: Key, *, reason: str) -> Steps[Erasure | None]:
        """Erase the value of every version of ``key`` (a data subject's right to
        erasure): the versions keep their ids, sources and both periods, their values
        become None, their evidence is deleted, and the erasure (key, versions,
        ``reason``, the session's role, the time) is recorded in
        ``bitemporal.erasures``, which nobody can change. Answers for the times the
        versions covered say :attr:`Status.ERASED`. Returns the erasure, or None when
        every version of the key was already erased (nothing new is recorded). Needs
        the role ``bitemporal_eraser``; waits for a write to the key in flight."""
        rows = yield Statement(
            "SELECT * FROM bitemporal.erase(%s, %s, %s)",
            (check_key(key).entity, key.attribute, check_reason(reason)),
            dicts=True,
        )
        return Erasure.from_row(rows[0]) if rows else None

    @writes
    def erase_entity(self, entity: str, *, reason: str) -> Steps[Erasure | None]:
        """:meth:`erase` for every attribute of ``entity``, as one erasure
        (``attribute`` None). Returns None when nothing was left to erase."""
        check_key_part("entity", entity)
        rows = yield Statement(
            "SELECT * FROM bitemporal.erase_entity(%s, %s)",
            (entity, check_reason(reason)),
            dicts=True,
        )
        return Erasure.from_row(rows[0]) if rows else None

    @writes
    def settled_knowledge_time(self) -> Steps[datetime]:
        """A knowledge time whose answers never change: no write in flight, and no later
        write, can commit knowledge at or before it. Ask with ``known_at`` at or before it
        (in a later statement: not inside a REPEATABLE READ transaction begun before the
        call). Calling it closes knowledge up to the time returned: a later write with an
        explicit ``known_at`` at or before it raises :class:`KnowledgeTimeInPastError`;
        writes without ``known_at`` are recorded after it."""
        row = one((yield Statement("SELECT bitemporal.settled_knowledge_time()")))
        settled: datetime = row[0]
        return settled

    @reads
    def version(self, version_id: int) -> Steps[Version | None]:
        """The version with this id (None if there is none): what an
        :class:`~bitemporal.Invalidation` names. An id no version could have (not an
        ``int``, or outside 1 to 2**63 - 1) raises :class:`InvalidInputError`."""
        checked = check_id("version_id", version_id)
        rows = yield Statement(
            f"SELECT {_VERSION_COLUMNS} FROM bitemporal.versions WHERE version_id = %s",
            (checked,),
            dicts=True,
        )
        return None if not rows else Version.from_row(rows[0])

    @reads
    def explain(
        self,
        key: Key,
        *,
        valid_at: Instant | None = None,
        known_at: Instant | None = None,
        now: Instant | None = None,
    ) -> Steps[Explanation]:
        """The answer object for an agent (:class:`~bitemporal.answers.Explanation`):
        :meth:`resolve`'s answer with alternatives, every eligible version with its
        evidence, the knowledge snapshot and explicit qualifications; JSON-serializable
        (``to_json()``), renderable to one sentence (``sentence()``), and able to check
        a reply (``check(text)``). See :mod:`bitemporal.answers`."""
        return (yield from answers.fetch(key, valid_at=valid_at, known_at=known_at, now=now))

    @reads
    def changes(
        self,
        known_from: Instant | None = None,
        known_to: Instant | None = None,
        *,
        key: Key | None = None,
    ) -> Steps[list[Change]]:
        """What the store learned, superseded or retracted in the knowledge window
        ``[known_from, known_to)`` (None: unbounded), for every key or one; see
        :mod:`bitemporal.changes`."""
        return (yield from changes.fetch(known_from, known_to, key=key))


class Facts(FactOperations, SyncRepository):
    """The fact repository of :class:`~bitemporal.Store` (methods: :class:`FactOperations`)."""


class AsyncFacts(FactOperations, AsyncRepository):
    """The fact repository of :class:`~bitemporal.AsyncStore`: :class:`Facts`'s methods,
    awaitable."""
