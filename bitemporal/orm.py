"""SQLAlchemy for bitemporal application tables: a declarative mixin, query helpers
that compose into ordinary ``select()`` statements, and session-level writes.

    class Price(Base, Bitemporal):
        __tablename__ = "price"
        __bitemporal_key__ = ("sku",)
        sku: Mapped[str] = mapped_column()
        amount: Mapped[Decimal] = mapped_column(Numeric(10, 2))

    session.scalars(as_of(Price, valid_at=t).where(Price.sku == "A1"))
    record(session, Price(sku="A1", amount=Decimal("9.50")), valid_from=t)

Each mapped object is one *version* (its identity is ``version_id``). Writes go
through the table's generated functions (:class:`~bitemporal.ApplicationTables`),
never through the ORM's own INSERT/UPDATE/DELETE, which the table's triggers
refuse anyway for anything but a new row.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    DateTime,
    Dialect,
    Identity,
    Select,
    TypeDecorator,
    and_,
    bindparam,
    func,
    inspect,
    select,
)
from sqlalchemy.dialects.postgresql import TSTZRANGE, Range
from sqlalchemy.orm import Mapped, Session, mapped_column

from .errors import InvalidKeyError
from .model import Recorded
from .periods import Instant, to_optional_instant
from .store import Store

T = TypeVar("T", bound="Bitemporal")


class UtcRange(TypeDecorator[Range[datetime]]):
    """``TSTZRANGE`` read with its bounds in UTC.

    psycopg returns them in the session's TimeZone, and Python compares two datetimes
    sharing a tzinfo by wall-clock time (across a daylight-saving fall-back a later
    instant then sorts first); in UTC every comparison is one of instants.
    """

    impl = TSTZRANGE
    cache_ok = True

    def process_result_value(
        self, value: Range[datetime] | None, dialect: Dialect
    ) -> Range[datetime] | None:
        if value is None or value.empty:
            return value
        lower, upper = (
            None if b is None else b.astimezone(UTC) for b in (value.lower, value.upper)
        )
        return Range(lower, upper, bounds=value.bounds)


class Bitemporal:
    """Declarative mixin for a table made bitemporal: the version columns.

    Set ``__bitemporal_key__`` to the key columns' names; every other mapped
    column besides these is a value column.
    """

    __bitemporal_key__: ClassVar[tuple[str, ...]]

    version_id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    # The comments are those enable_table gives the columns, so autogenerate agrees.
    valid_period: Mapped[Range[datetime]] = mapped_column(
        UtcRange,
        comment="When the row applies in the world: [start, end), unbounded end = end not known.",
    )
    known_period: Mapped[Range[datetime]] = mapped_column(
        UtcRange,
        comment="When the table held this version: [recorded, superseded), unbounded end = still held.",
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
    """``select(model)`` of every version of a key, superseded ones included, ORDER BY version_id."""
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


_VERSION_COLUMNS = frozenset({"version_id", "valid_period", "known_period", "carried_from"})


def _row(obj: Bitemporal) -> dict[str, Any]:
    # By column name, read through the attribute mapped to each column (whose name may differ:
    # a column "unit price" mapped as unit_price).
    mapper = inspect(type(obj))
    return {
        c.name: getattr(obj, mapper.get_property_by_column(c).key)
        for c in mapper.local_table.columns
        if c.name not in _VERSION_COLUMNS
    }


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

    The instance is only a carrier of values: it is not added to the session;
    load the new version with :func:`as_of` or ``session.get(Model, version_id)``.
    """
    return Store(session).app_tables.record(
        type(row), _row(row), valid_from=valid_from, valid_to=valid_to, known_at=known_at
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
    ``_retract`` function, in the session's transaction; returns the ended versions."""
    return Store(session).app_tables.retract(
        model, key, valid_from=valid_from, valid_to=valid_to, known_at=known_at
    )
