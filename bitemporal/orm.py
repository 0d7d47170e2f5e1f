"""SQLAlchemy for bitemporal application tables: a declarative mixin, query helpers
that compose into ordinary ``select()`` statements, and session-level writes.

    class Price(Base, Bitemporal):
        __tablename__ = "price"
        __bitemporal_key__ = ("sku",)
        sku: Mapped[str] = mapped_column()
        amount: Mapped[Decimal] = mapped_column(Numeric(10, 2))

    session.scalars(as_of(Price, valid_at=t).where(Price.sku == "A1"))
    record(session, Price(sku="A1", amount=Decimal("9.50")), valid_from=t)

Each mapped object is one *version* (its identity is ``version_id``), its periods
:class:`~bitemporal.Period` values. Writes go through the table's generated functions
(:class:`~bitemporal.ApplicationTables`), never through the ORM's own UPDATE/DELETE:
importing this module registers listeners on every ``Session`` that refuse a flush of a
modified or deleted version, and an ORM bulk UPDATE/DELETE, with
:class:`~bitemporal.AppendOnlyError` naming :func:`record` / :func:`retract` (the table's
triggers refuse any other rewrite). :func:`current_only` and :func:`eligible` restrict
loads and relationships to the versions eligible at a question.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar, TypeVar

import psycopg
import sqlalchemy.exc
from sqlalchemy import (
    BigInteger,
    ColumnDefault,
    ColumnElement,
    DateTime,
    Dialect,
    Identity,
    Select,
    Sequence,
    TypeDecorator,
    and_,
    bindparam,
    event,
    func,
    inspect,
    select,
)
from sqlalchemy.dialects.postgresql import TSTZRANGE, Range
from sqlalchemy.orm import Mapped, ORMExecuteState, Session, mapped_column, with_loader_criteria
from sqlalchemy.orm.interfaces import ORMOption
from sqlalchemy.sql.schema import DefaultGenerator

from .errors import (
    AppendOnlyError,
    BitemporalError,
    DatabaseError,
    InvalidInputError,
    InvalidKeyError,
    InvalidValueError,
    error_for,
)
from .model import Recorded
from .periods import Instant, Period, to_optional_instant
from .store import Store

T = TypeVar("T", bound="Bitemporal")


class PeriodType(TypeDecorator[Period]):
    """``TSTZRANGE`` read as a :class:`~bitemporal.Period` (bounds in UTC, whatever the
    session's TimeZone) and bound from a ``Period`` (or a ``Range``).

    Its ``impl`` is ``TSTZRANGE``: range operators (``contains``, ``overlaps``, ...)
    compose as on a plain range column, and Alembic compares the column as ``TSTZRANGE``.
    """

    impl = TSTZRANGE
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return value.to_sqlalchemy_range() if isinstance(value, Period) else value

    def process_result_value(
        self, value: Range[datetime] | None, dialect: Dialect
    ) -> Period | None:
        return None if value is None else Period.from_range(value)

    def coerce_compared_value(self, op: Any, value: Any) -> Any:
        # An instant compared with the range (``contains(t)``) binds as an instant.
        return (
            self
            if isinstance(value, Period | Range)
            else self.impl_instance.coerce_compared_value(op, value)
        )


class Bitemporal:
    """Declarative mixin for a table made bitemporal: the version columns.

    Set ``__bitemporal_key__`` to the key columns' names; every other mapped
    column besides these is a value column.
    """

    __bitemporal_key__: ClassVar[tuple[str, ...]]

    version_id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    # The comments are those enable_table gives the columns, so autogenerate agrees.
    valid_period: Mapped[Period] = mapped_column(
        PeriodType,
        comment="When the row applies in the world: [start, end), unbounded end = end not known.",
    )
    known_period: Mapped[Period] = mapped_column(
        PeriodType,
        comment="When the table held this version: [recorded, superseded), "
        "unbounded end = still held.",
    )
    #: For a remainder re-recorded when a write cut an older version: that version.
    carried_from: Mapped[int | None] = mapped_column(BigInteger)


def _instant(value: Instant | None, name: str) -> ColumnElement[datetime]:
    t = to_optional_instant(value, name=name)
    if t is None:
        return func.now()
    return bindparam(None, t, type_=DateTime(timezone=True))


def eligible(
    model: type[Bitemporal], valid_at: Instant | None = None, known_at: Instant | None = None
) -> ColumnElement[bool]:
    """The condition "this version answers ``(valid_at, known_at)``" (None = now), for a
    ``where()`` or a join's ``on`` clause: joining two bitemporal tables at the same
    question is an ordinary join with this condition on each side."""
    return and_(
        model.valid_period.contains(_instant(valid_at, "valid_at")),
        model.known_period.contains(_instant(known_at, "known_at")),
    )


def as_of(
    model: type[T], valid_at: Instant | None = None, known_at: Instant | None = None
) -> Select[T]:
    """``select(model)`` of the versions eligible at ``(valid_at, known_at)`` (None = now).

    Add the key's condition with ``.where()``: together they are answered by the
    table's GiST index over key and both periods.
    """
    return select(model).where(eligible(model, valid_at, known_at))


def history(model: type[T], **key: Any) -> Select[T]:
    """``select(model)`` of every version of a key, superseded ones included, ORDER BY
    version_id."""
    names = model.__bitemporal_key__
    if set(key) != set(names):
        raise InvalidKeyError(
            f"{model.__name__}'s key is ({', '.join(names)}), not ({', '.join(key)})"
        )
    return (
        select(model)
        .where(*(getattr(model, c) == v for c, v in key.items()))
        .order_by(model.version_id)
    )


def current_only(
    model: type[Bitemporal], valid_at: Instant | None = None, known_at: Instant | None = None
) -> ORMOption:
    """A loader option: every load of ``model`` in the statement, relationship loads
    included (lazy, ``selectinload``, ``joinedload``), sees only the versions eligible at
    ``(valid_at, known_at)``; by default the current ones (valid now, as known now).

        session.scalars(select(Customer).options(current_only(Contract)))
    """
    return with_loader_criteria(model, eligible(model, valid_at, known_at), include_aliases=True)


_VERSION_COLUMNS = frozenset({"version_id", "valid_period", "known_period", "carried_from"})


@contextmanager
def _translated() -> Iterator[None]:
    # What a flush raises (the driver's errors wrapped by SQLAlchemy, its own flush
    # errors) as the library's errors, as every other API does.
    try:
        yield
    except sqlalchemy.exc.StatementError as exc:
        if isinstance(exc.orig, BitemporalError):
            raise exc.orig from exc
        if isinstance(exc.orig, psycopg.Error):
            raise error_for(exc.orig) from exc
        raise DatabaseError(f"the session's statement failed: {exc}") from exc
    except sqlalchemy.exc.SQLAlchemyError as exc:
        raise DatabaseError(
            f"the session failed: {exc}", hint="roll the session back before using it again"
        ) from exc


def _client_default(session: Session, default: DefaultGenerator) -> Any:
    """The value of a column's client-side default, as an ORM INSERT would take it."""
    if isinstance(default, Sequence):
        return session.scalar(select(default.next_value()))
    if isinstance(default, ColumnDefault):
        if default.is_callable:
            return default.arg(None)  # a zero-argument callable, wrapped by SQLAlchemy
        if default.is_clause_element:
            return session.scalar(select(default.arg))
        return default.arg
    raise InvalidValueError(f"cannot compute the column default {default!r} for record()")


def _row(session: Session, obj: Bitemporal) -> dict[str, Any]:
    # By column name, read through the attribute mapped to each column (whose name may differ:
    # a column "unit price" mapped as unit_price). An attribute never set takes its column's
    # client-side default (a Sequence, a callable such as uuid.uuid4), as in an ORM INSERT,
    # and the carrier gets the value, so the caller learns a new row's key.
    mapper = inspect(type(obj))
    state = inspect(obj)
    row: dict[str, Any] = {}
    for c in mapper.local_table.columns:
        if c.name in _VERSION_COLUMNS:
            continue
        key = mapper.get_property_by_column(c).key
        if key not in state.dict and c.default is not None:
            setattr(obj, key, _client_default(session, c.default))
        row[c.name] = getattr(obj, key)
    return row


def _check_session(session: object, function: str) -> None:
    # Before the session is used: a wrong argument is no failure of the session.
    if not isinstance(session, Session):
        raise InvalidInputError(
            f"{function}() needs a SQLAlchemy Session, not {type(session).__name__}",
            hint="e.g. with Session(engine) as session: ...",
        )


def record(
    session: Session,
    row: Bitemporal,
    *,
    valid_from: Instant | None = None,
    valid_to: Instant | None = None,
    known_at: Instant | None = None,
) -> Recorded:
    """Record the row held by an (unsaved) model instance for ``[valid_from, valid_to)``,
    through the table's ``_record`` function, in the session's transaction.

    The session is flushed first, as a query would autoflush it, so pending objects the
    row refers to (a new parent) are in the database. Every failure, the flush's
    included, is a :class:`~bitemporal.BitemporalError`. The instance is only a carrier
    of values: it is not added to the session; load the new version with :func:`as_of`
    or ``session.get(Model, version_id)``. A column left unset takes its client-side
    default (``Sequence``, ``default=uuid.uuid4``), written back to the instance.
    """
    _check_session(session, "record")
    if not isinstance(row, Bitemporal) or isinstance(row, type):
        raise InvalidInputError(
            f"record() takes an instance of a bitemporal model, not {row!r}",
            hint="a mapped class with the bitemporal.orm.Bitemporal mixin, e.g. "
            "record(session, Price(sku='A1', amount=10))",
        )
    with _translated():
        session.flush()
        values = _row(session, row)
        return Store(session).app_tables.record(
            type(row), values, valid_from=valid_from, valid_to=valid_to, known_at=known_at
        )


def retract(
    session: Session,
    model: type[Bitemporal],
    key: Mapping[str, Any],
    *,
    valid_from: Instant | None = None,
    valid_to: Instant | None = None,
    known_at: Instant | None = None,
) -> tuple[int, ...]:
    """Sequenced delete of ``key`` over ``[valid_from, valid_to)`` through the table's
    ``_retract`` function, in the session's transaction (flushed first, as :func:`record`);
    returns the ended versions."""
    _check_session(session, "retract")
    with _translated():
        session.flush()
        return Store(session).app_tables.retract(
            model, key, valid_from=valid_from, valid_to=valid_to, known_at=known_at
        )


# The ORM's own UPDATE and DELETE would rewrite history: the table's triggers refuse them
# (BT006) in the middle of a flush. These listeners, on every Session, refuse them before
# any SQL, saying what to call instead.


def _rewrite_refused(obj: Bitemporal, deleted: bool) -> AppendOnlyError:
    cls = type(obj).__name__
    identity = inspect(obj).identity
    version = "" if identity is None else f" version {identity[0]}"
    if deleted:
        return AppendOnlyError(
            f"{cls}{version} is marked for deletion in the session, "
            "and an ORM DELETE would erase history",
            hint=f"end it with bitemporal.orm.retract(session, {cls}, {{key}}, valid_from=...); "
            "session.rollback() or session.expunge(obj) discards the deletion",
        )
    return AppendOnlyError(
        f"{cls}{version} was modified in the session, and an ORM UPDATE would rewrite history",
        hint="record the new values as a new version with "
        f"bitemporal.orm.record(session, {cls}(...), "
        "valid_from=...); session.rollback() or session.expire(obj) discards the change",
    )


@event.listens_for(Session, "before_flush")
def _refuse_flushed_rewrites(session: Session, flush_context: Any, instances: Any) -> None:
    for obj in session.deleted:
        if isinstance(obj, Bitemporal):
            raise _rewrite_refused(obj, deleted=True)
    for obj in session.dirty:
        if isinstance(obj, Bitemporal) and session.is_modified(obj, include_collections=False):
            raise _rewrite_refused(obj, deleted=False)


@event.listens_for(Session, "do_orm_execute")
def _refuse_bulk_rewrites(state: ORMExecuteState) -> None:
    mapper = state.bind_mapper
    if (
        (state.is_update or state.is_delete)
        and mapper is not None
        and issubclass(mapper.class_, Bitemporal)
    ):
        verb, call = ("UPDATE", "record") if state.is_update else ("DELETE", "retract")
        raise AppendOnlyError(
            f"an ORM {verb} of {mapper.class_.__name__} would rewrite history",
            hint=f"write versions with bitemporal.orm.{call}(session, ...)",
        )
