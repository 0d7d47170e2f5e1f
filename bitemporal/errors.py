"""The exceptions bitemporal raises: one hierarchy rooted in :class:`BitemporalError`.

Errors raised by the SQL functions carry a SQLSTATE of class ``BT`` (see
docs/errors.md); :func:`translate` maps a psycopg error to the class declaring
that ``sqlstate``. Errors that Python can see before talking to the database
(a naive ``datetime``, a value JSON cannot encode) are raised without a round
trip, with the same classes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, ClassVar

import psycopg
import psycopg_pool


class BitemporalError(Exception):
    """Base class of every error raised by bitemporal."""

    #: The SQLSTATE the SQL functions raise for this error, if any.
    sqlstate: ClassVar[str | None] = None
    #: Said when the database gives no hint of its own.
    default_hint: ClassVar[str | None] = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message if hint is None else f"{message} ({hint})")
        self.message = message
        self.hint = hint

    @classmethod
    def from_diagnostic(cls, diag: psycopg.errors.Diagnostic) -> BitemporalError:
        """The error for a database error of this class's SQLSTATE."""
        return cls(diag.message_primary or cls.__name__, hint=diag.message_hint or cls.default_hint)


class InvalidInputError(BitemporalError, ValueError):
    """An argument is malformed; nothing was written.

    A string argument (key part, value, ``recorded_by``, item id, passage, artifact kind or
    ref, table name or column value) with a NUL character or a lone surrogate (not Unicode,
    no UTF-8 form) is refused before the database, with the argument's own class (e.g.
    :class:`InvalidKeyError`)."""


class InvalidPeriodError(InvalidInputError):
    """A period is empty, inverted or starts/ends at the wrong infinity: an empty or
    inverted valid period; a period starting at ``infinity`` or ending at ``-infinity``; an
    infinite question or knowledge time; a finite time outside [0001-01-02, 9999-12-30) UTC
    (which Python cannot represent); an inverted or empty ``changes`` window."""

    sqlstate = "BT001"


class NaiveDatetimeError(InvalidInputError, TypeError):
    """A naive ``datetime`` (without a time zone): which instant it means is unknown.
    Refused before the database."""


class InvalidTimeError(InvalidInputError, TypeError):
    """A time argument is neither an aware ``datetime`` nor a ``date``. Refused before the
    database."""


class InvalidKeyError(InvalidInputError):
    """An entity, attribute or source is empty, longer than 1024 bytes, contains NUL, or is
    not text; or a key argument is not a :class:`~bitemporal.Key` (a tuple or a string of
    its parts is refused before the database, not guessed at)."""

    sqlstate = "BT005"


class InvalidValueError(InvalidInputError):
    """A value is null (SQL ``NULL`` or JSON ``null``) or cannot be stored: a value JSON
    cannot encode (NaN, sets, objects, nesting too deep); a value with a ``\\u0000``
    character, which jsonb cannot store (SQLSTATE 22P05); an application table's column value
    PostgreSQL refuses (malformed, out of range, the table's own NOT NULL or CHECK: class 22,
    23502, 23514); a value too large for PostgreSQL (a jsonb string over 256 MB, an
    application table's key too long for its index: 54000); a JSON value (of a fact, of an
    application table's ``jsonb`` column, or an artifact's ``detail``, however written, a
    hand-written ``INSERT`` included) nesting arrays and objects more than 256 deep, or
    holding a number of magnitude 10^4300 or more (over 4300 integer digits, what Python can
    read back)."""

    sqlstate = "BT007"


class IdempotencyKeyReusedError(InvalidInputError):
    """An idempotency key already used for a different request."""

    sqlstate = "BT008"


class InvalidReasonError(InvalidInputError):
    """An erasure without a reason: ``reason`` empty or blank (``erase``,
    ``erase_entity``). The reason stays in ``bitemporal.erasures``."""

    sqlstate = "BT009"


class KnowledgeTimeError(BitemporalError):
    """A knowledge time would rewrite history or claim knowledge of the future."""


class KnowledgeTimeInPastError(KnowledgeTimeError):
    """An explicit knowledge time not later than knowledge already recorded for the key, or
    not later than the settled knowledge time (``settled_knowledge_time()``)."""

    sqlstate = "BT002"


class KnowledgeTimeInFutureError(KnowledgeTimeError):
    """A knowledge time later than the database's present (writes), or ``known_at`` later
    than ``now`` (questions); a derivation or retirement time later than the present; a
    search with ``known_at`` later than now."""

    sqlstate = "BT003"


class UnknownKeyError(BitemporalError, LookupError):
    """Nothing was ever recorded for the key (often a misspelling): ``resolve``,
    ``history`` or ``retract`` of such a key."""

    sqlstate = "BT004"


class AppendOnlyError(BitemporalError):
    """An attempt to delete or rewrite committed history: ``DELETE``, ``TRUNCATE`` or
    ``UPDATE`` of committed history (anything but closing an open known period once); a
    version inserted or closed by hand before its key's latest knowledge or after the
    present; moving ``fact_key.last_known_at`` back, or deleting a key."""

    sqlstate = "BT006"


class PermissionDeniedError(BitemporalError, PermissionError):
    """The database role lacks the privilege (SQLSTATE 42501; see Roles): grant it a
    bitemporal role. Erasing needs the role ``bitemporal_eraser``, which no other role
    includes."""

    sqlstate = "42501"
    default_hint = (
        "grant the role bitemporal_reader, bitemporal_writer or bitemporal_auditor "
        "(erasing: bitemporal_eraser)"
    )


class ConfigurationError(BitemporalError):
    """The database cannot be reached or set up as configured, or a store is built on
    something that is not a connection, pool or SQLAlchemy session of the right driver (a
    URL string among them: ``bitemporal.connect(url)`` connects by URL), or a store is used
    after its connection or pool was closed on purpose (a connection the server ended is a
    :class:`ConnectionLostError`)."""


class DatabaseError(BitemporalError):
    """The database (or the driver) refused an operation for a reason bitemporal has no
    class of its own for; the driver's exception is the ``__cause__``."""


class TransientError(BitemporalError):
    """The operation failed for a reason unrelated to its arguments, and its transaction
    was rolled back: retrying it is safe. (When the connection was lost during a commit,
    the write may have taken effect: a retried ``record`` of the same value is then a
    no-op; pass an ``idempotency_key`` for exactly-once writes.)"""


class DeadlockError(TransientError):
    """The transaction was chosen as the victim of a deadlock (SQLSTATE 40P01)."""

    sqlstate = "40P01"
    default_hint = "retry the transaction"


class SerializationError(TransientError):
    """A serializable or repeatable-read transaction conflicted with another (40001)."""

    sqlstate = "40001"
    default_hint = "retry the transaction"


class QueryCanceledError(TransientError):
    """The statement was canceled: by ``pg_cancel_backend``, a ``statement_timeout`` or
    a ``lock_timeout`` (57014, 55P03)."""

    sqlstate = "57014"
    default_hint = "retry, or raise the timeout if one was hit"


class ConnectionLostError(TransientError):
    """The connection to the database was lost: the server shut it down
    (``pg_terminate_backend``, a restart: 57P01-57P03) or the network failed (class 08, or
    no SQLSTATE at all: the driver's own)."""

    sqlstate = "57P01"
    default_hint = "reconnect and retry"


class SchemaNotMigratedError(ConfigurationError):
    """The database lacks the bitemporal schema: run ``bitemporal db upgrade``. Told by the
    statement itself naming a schema or function that does not exist (SQLSTATE 3F000 or
    42883 with no CONTEXT): the same SQLSTATE raised inside a function is no migration
    problem."""


# Working memory (bitemporal.decay, sql/decay.v1.sql): SQLSTATEs BT101 onwards.


class InvalidPolicyError(InvalidInputError):
    """A memory policy is out of range: a threshold outside (0, 1), a baseline
    stability outside [1e-300, 1e300] turns, a window that is not a positive whole
    number of turns (at most 2**53), or an unknown policy kind (SQLSTATE BT101)."""

    sqlstate = "BT101"


class PolicyMismatchError(InvalidInputError):
    """A memory namespace already exists with another policy; a namespace keeps the
    policy it was created with, since its items' crossing turns depend on it (BT102)."""

    sqlstate = "BT102"


class InvalidStabilityError(InvalidInputError):
    """An item's own stability is outside [1e-300, 1e300] turns, or was given under
    the window policy, which has no stability (BT103)."""

    sqlstate = "BT103"


class InvalidMemoryNameError(InvalidInputError):
    """A memory namespace name or item id is not a non-empty string of at most
    1024 bytes (BT104)."""

    sqlstate = "BT104"


class UnknownNamespaceError(BitemporalError, LookupError):
    """No memory namespace of that name exists (BT105)."""

    sqlstate = "BT105"


class UnknownItemError(BitemporalError, LookupError):
    """The item was never registered in the namespace (BT106): its retention or stability
    was asked. Recall of an unknown item is not an error: it returns False."""

    sqlstate = "BT106"


# Evidence, provenance, explanations (bitemporal.evidence, .provenance, .answers;
# sql/evidence.v1.sql, provenance.v1.sql): SQLSTATEs BT201 onwards.


class VectorUnavailableError(BitemporalError):
    """Vector similarity is unavailable: the server has no pgvector extension (or this
    role may not create it). Full-text search and caller scores work without it (BT201)."""

    sqlstate = "BT201"


class VectorNotEnabledError(BitemporalError):
    """Vector retrieval is not enabled in this database: call
    ``store.evidence.enable_vector(dimensions)`` once (BT202)."""

    sqlstate = "BT202"


class EmbeddingError(InvalidInputError):
    """An embedding has the wrong number of dimensions, non-finite numbers or only
    zeros, or vector retrieval is enabled with other dimensions than enabled, or outside
    1..16000 (BT203)."""

    sqlstate = "BT203"


class InvalidSearchError(InvalidInputError):
    """Search arguments are malformed: a negative limit, a non-finite or duplicated
    relevance score, a score for an id no version could have, score and id arrays of
    different lengths, an unknown or temporary text search configuration (BT204)."""

    sqlstate = "BT204"


class UnknownVersionError(BitemporalError, LookupError):
    """No fact version has that id (BT205): evidence or artifact inputs naming it."""

    sqlstate = "BT205"


class UnknownArtifactError(BitemporalError, LookupError):
    """No artifact has that id (BT206)."""

    sqlstate = "BT206"


class InvalidArtifactError(InvalidInputError):
    """An artifact has an empty kind or ref, no inputs, or a derivation time earlier
    than one of its inputs or than the artifact it replaces, or it is retired before it was
    derived (BT207); or an artifact or input id is not a whole number from 1 to 2**63 - 1, or
    inputs are not given as a list (refused before the database)."""

    sqlstate = "BT207"


class InvalidEvidenceError(InvalidInputError):
    """A passage is blank, a document reference empty, or the text search configuration
    unknown or in a temporary schema (``pg_temp``: it would vanish with its session and break
    every search reaching the passage) (BT208); or a version or evidence id is not a whole
    number from 1 to 2**63 - 1 (refused before the database)."""

    sqlstate = "BT208"


# Bulk ingestion (Facts.record_many, sql/facts_bulk.v1.sql): SQLSTATEs BT301 onwards.


class BatchError(InvalidInputError):
    """A :meth:`~bitemporal.Facts.record_many` batch has bad rows; nothing of the batch was
    written (BT301).

    ``rows`` lists ``(line, reason)`` for the bad rows found, by line (the 1-based position
    in the batch), at most ``max_errors`` of them; ``total`` counts them all. ``errors`` has
    the same rows as ``(line, sqlstate, reason)``, sqlstate being what
    :meth:`~bitemporal.Facts.record` would have raised for the row (None for a problem
    found before the database, such as a naive datetime).
    """

    sqlstate = "BT301"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        errors: Sequence[tuple[int, str | None, str]] = (),
        total: int | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.errors: list[tuple[int, str | None, str]] = list(errors)
        self.rows: list[tuple[int, str]] = [(line, reason) for line, _, reason in self.errors]
        self.total: int = len(self.errors) if total is None else total

    @classmethod
    def from_diagnostic(cls, diag: psycopg.errors.Diagnostic) -> BatchError:
        """The error bitemporal.record_many raised: its DETAIL is JSON
        ``{"total": n, "rows": [[line, sqlstate, reason], ...]}``."""
        errors: list[tuple[int, str | None, str]] = []
        total = None
        try:
            detail = json.loads(diag.message_detail or "{}")
            errors = [(int(line), state, str(reason)) for line, state, reason in detail["rows"]]
            total = int(detail["total"])
        except (ValueError, KeyError, TypeError):
            pass
        return cls(
            diag.message_primary or "bad rows in the batch",
            hint=diag.message_hint,
            errors=errors,
            total=total,
        )


class ImportFailed(BitemporalError):
    """A batch of a file could not be imported (its bad rows by file line); earlier
    batches were committed."""

    # report: the importer's ImportReport (bitemporal.importing), typed loosely because
    # errors.py sits below every other module.
    def __init__(
        self, message: str, *, rows: list[tuple[int, str]], total: int, report: Any, first_line: int
    ) -> None:
        super().__init__(message)
        self.rows = rows
        self.total = total
        self.report = report
        self.first_line = first_line


# Application tables (bitemporal.app_tables, sql/tables.v1.sql): SQLSTATEs BT401 onwards.


class UnknownTableError(BitemporalError, LookupError):
    """The table is not a bitemporal application table (or has no such reference) (BT401)."""

    sqlstate = "BT401"
    default_hint = "make it one with op.create_bitemporal_table or bitemporal.enable_table()"


class TableDefinitionError(InvalidInputError):
    """A table cannot be made bitemporal (or back) as asked, for the reason given (BT402):
    a reserved column name, a unique constraint that versions would break, a null or
    repeated key, a name too long, a column type without equality, a caller who does not own
    the table, or history that going back would lose."""

    sqlstate = "BT402"


class TemporalReferenceError(BitemporalError):
    """A write would leave a child version referring to a parent key that the parent
    table does not hold over the whole of the child's valid period (BT403)."""

    sqlstate = "BT403"


class NotErasableError(InvalidInputError):
    """An application table's key cannot be erased: a value column is ``NOT NULL``, and an
    erased version has no value (BT404). Drop the constraint first."""

    sqlstate = "BT404"
    default_hint = "ALTER TABLE ... ALTER COLUMN ... DROP NOT NULL for the columns named"


# Retention (bitemporal.retention, sql/retention.v1.sql).


class InvalidRetentionPolicyError(InvalidInputError):
    """A retention policy named neither ``fact:<attribute>`` nor ``table:<table>``, or
    keeping closed knowledge for an interval that is not positive (BT010)."""

    sqlstate = "BT010"


# Migrations and the schema's state (bitemporal.migrations): SQLSTATEs BT501 onwards.


class SchemaBehindError(SchemaNotMigratedError):
    """The bitemporal schema is at an older revision than this package needs:
    run ``bitemporal db upgrade``."""


class MigrationError(ConfigurationError):
    """A migration (upgrade or downgrade) was refused or failed; it runs in one
    transaction, so nothing of it was applied."""


class DowngradeWouldLoseDataError(MigrationError):
    """A downgrade would drop tables that hold data (fact versions, keys, memory items,
    evidence, artifacts, ...). Refused unless forced: ``bitemporal db downgrade REVISION
    --force`` or ``bitemporal.downgrade(url, revision, force=True)``.

    Refused before anything is dropped; ``tables`` maps each table that would be dropped to
    its row count.
    """

    def __init__(
        self, message: str, *, hint: str | None = None, tables: dict[str, int] | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.tables: dict[str, int] = dict(tables or {})


class SchemaOwnershipError(MigrationError):
    """The schema ``bitemporal`` exists but another role owns it: that role could replace
    the functions or drop the history, so nothing is migrated into it (BT501)."""

    sqlstate = "BT501"


class DistributionError(MigrationError):
    """The store cannot be distributed here: the database has no ``citus`` extension, or
    ``bitemporal.distribute()`` met something it cannot convert (BT502)."""

    sqlstate = "BT502"


class ForeignTransactionIdError(ConfigurationError):
    """A row holds a writer transaction id this cluster has not assigned yet (BT503): it
    was copied from another cluster (a dump restored, a logical replica) whose ids ran ahead,
    and this cluster's transaction with that id would be taken for the row's writer. Refused
    as the row arrives, and by migration 0041 for a store restored before it. Advance this
    cluster's transaction ids past the source's first (docs/operations.md, "Backup and
    restore")."""

    sqlstate = "BT503"


def _subclasses(cls: type[BitemporalError]) -> list[type[BitemporalError]]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


# Every error class that declares a SQLSTATE, found by walking the hierarchy.
_BY_SQLSTATE: dict[str, type[BitemporalError]] = {
    cls.sqlstate: cls for cls in _subclasses(BitemporalError) if cls.sqlstate is not None
}


# not_null_violation, check_violation, program_limit_exceeded (a value too large for
# PostgreSQL: a jsonb string over 256 MB, an application table's key too long to index)
_BAD_ROW = frozenset({"23502", "23514", "54000"})

# SQLSTATEs of transient failures besides the one each class declares.
_TRANSIENT: dict[str, type[TransientError]] = {
    "55P03": QueryCanceledError,  # lock_not_available (lock_timeout)
    "57P02": ConnectionLostError,  # crash_shutdown
    "57P03": ConnectionLostError,  # cannot_connect_now
}


def text_problem(text: str) -> str | None:
    """Why PostgreSQL cannot hold ``text`` (a NUL, or a lone surrogate, which is not
    Unicode and has no UTF-8 encoding), or None if it can."""
    if "\x00" in text:
        return "contains a NUL character, which PostgreSQL text cannot hold"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"contains a lone surrogate (U+{ord(text[exc.start]):04X} at position "
            f"{exc.start}), which is not valid Unicode text"
        )
    return None


def check_text(what: str, value: str, error: type[InvalidInputError] = InvalidInputError) -> str:
    """``value``, if PostgreSQL can hold it; else ``error`` naming ``what`` and why."""
    problem = text_problem(value)
    if problem is not None:
        raise error(f"{what} {problem}")
    return value


def check_optional_text(
    what: str, value: object, error: type[InvalidInputError] = InvalidInputError
) -> str | None:
    """``value`` if it is None or a string PostgreSQL can hold; else ``error``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise error(f"{what} must be a string, not {type(value).__name__}")
    return check_text(what, value, error)


def closed_store(what: str) -> ConfigurationError:
    """The error of a call on a store whose connection or pool (``what``) was closed on
    purpose: not a lost connection, which is worth a retry."""
    return ConfigurationError(
        f"the store's {what} is closed (by store.close(), the end of the store's with "
        f"block, or whoever owns the {what})",
        hint=f"open a new store: bitemporal.connect(), or Store(an open {what})",
    )


def _client_error_for(exc: psycopg.Error) -> BitemporalError:
    # Raised by the driver itself, with no SQLSTATE from the server.
    if isinstance(exc, psycopg.DataError):  # e.g. a NUL in a text parameter
        return InvalidInputError(f"a value cannot be sent to the database: {exc}")
    if isinstance(exc, psycopg_pool.PoolClosed):
        return closed_store("pool")
    if isinstance(exc, psycopg.OperationalError):  # the connection is gone
        return ConnectionLostError(
            f"the connection to the database was lost: {exc}", hint=ConnectionLostError.default_hint
        )
    return DatabaseError(f"database driver error: {exc}")


def error_for(exc: psycopg.Error) -> BitemporalError:
    """The bitemporal error for a database or driver error: total, every psycopg error
    maps to a :class:`BitemporalError` (:class:`DatabaseError` when nothing more
    specific applies)."""
    sqlstate = exc.sqlstate
    if sqlstate is None:
        return _client_error_for(exc)
    if sqlstate == "22P05":  # jsonb cannot hold a \u0000 character
        return InvalidValueError(
            "value contains a \\u0000 character, which PostgreSQL jsonb cannot store"
        )
    # The statement itself named a schema or function that does not exist: the
    # bitemporal schema is missing or behind (the API sends only statements
    # naming bitemporal's own). Told by SQLSTATE and by the error being the
    # statement's own (no CONTEXT), never by the message's text: the same
    # SQLSTATE raised inside a function (an operator a column type lacks, say)
    # is no migration problem.
    if sqlstate in ("3F000", "42883") and exc.diag.context is None:
        return SchemaNotMigratedError(
            "the database has no bitemporal schema", hint="run `bitemporal db upgrade`"
        )
    cls = _BY_SQLSTATE.get(sqlstate) or _TRANSIENT.get(sqlstate)
    if cls is None and sqlstate.startswith("08"):
        cls = ConnectionLostError
    if cls is None and (sqlstate.startswith("22") or sqlstate in _BAD_ROW):
        # A value PostgreSQL refused (application tables: a malformed number, a
        # string too long, the table's own NOT NULL or CHECK; any value too large).
        cls = InvalidValueError
    if cls is None:
        return DatabaseError(
            f"{exc.diag.message_primary or exc} (SQLSTATE {sqlstate})", hint=exc.diag.message_hint
        )
    return cls.from_diagnostic(exc.diag)


class _Translation(AbstractContextManager[None]):
    """What :func:`translate` returns: a class, not a generator, as it wraps every call of
    the API (a generator-based context manager costs a few microseconds more; issue 15)."""

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, psycopg.Error):
            raise error_for(exc) from exc
        if isinstance(exc, UnicodeEncodeError):
            # Repositories check their strings first (check_text); this is the backstop.
            raise InvalidInputError(
                f"a string {text_problem(exc.object) or 'cannot be encoded as UTF-8'}"
                if isinstance(exc.object, str)
                else f"a string cannot be encoded: {exc}"
            ) from exc


_TRANSLATION = _Translation()


def translate() -> AbstractContextManager[None]:
    """Re-raise every psycopg error as its :class:`BitemporalError` (see :func:`error_for`),
    and a string the driver could not encode as :class:`InvalidInputError`, each with
    the original as ``__cause__``."""
    return _TRANSLATION
