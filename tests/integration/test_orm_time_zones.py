"""The SQLAlchemy mixin reads periods as UTC instants in every session TimeZone (issue 11,
finding 1): a knowledge period crossing a daylight-saving fall-back stays in order."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import Integer, Text, create_engine, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from bitemporal.database import sqlalchemy_url
from bitemporal.orm import Bitemporal, as_of, history, record

BEFORE_FALL_BACK = datetime(2026, 10, 25, 0, 45, tzinfo=UTC)
AFTER_FALL_BACK = datetime(2026, 10, 25, 1, 15, tzinfo=UTC)


@pytest.fixture
def model(database_url: str) -> Iterator[type[Bitemporal]]:
    schema = f"orm_tz_{uuid.uuid4().hex[:10]}"

    class Base(DeclarativeBase):
        pass

    class Stock(Base, Bitemporal):
        __tablename__ = "stock"
        __table_args__ = {"schema": schema}  # noqa: RUF012 - SQLAlchemy's own attribute
        __bitemporal_key__ = ("sku",)
        sku: Mapped[str] = mapped_column(Text)
        count: Mapped[int] = mapped_column(Integer)

    engine = create_engine(sqlalchemy_url(database_url))
    with engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        conn.execute(text(f'CREATE TABLE "{schema}".stock (sku text, count integer NOT NULL)'))
        conn.execute(text(f"SELECT bitemporal.enable_table('\"{schema}\".stock', ARRAY['sku'])"))
    with Session(engine) as session:
        record(
            session, Stock(sku="A", count=1), valid_from=BEFORE_FALL_BACK, known_at=BEFORE_FALL_BACK
        )
        record(
            session, Stock(sku="A", count=2), valid_from=BEFORE_FALL_BACK, known_at=AFTER_FALL_BACK
        )
        session.commit()
    yield Stock
    with engine.begin() as conn:
        conn.execute(text(f"SELECT bitemporal.drop_table('\"{schema}\".stock')"))
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    engine.dispose()


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "Pacific/Kiritimati", "Etc/GMT+12"])
def test_periods_are_utc_instants_in_every_session_time_zone(
    database_url: str, model: type[Bitemporal], zone: str
) -> None:
    engine = create_engine(
        sqlalchemy_url(database_url), connect_args={"options": f"-c TimeZone={zone}"}
    )
    with Session(engine) as session:
        first, second = session.scalars(history(model, sku="A")).all()
        assert (first.known_period.lower, first.known_period.upper) == (
            BEFORE_FALL_BACK,
            AFTER_FALL_BACK,
        )
        # Every bound in UTC, so that Python compares instants, never wall-clock times.
        for bound in (
            first.known_period.lower,
            first.known_period.upper,
            second.valid_period.lower,
        ):
            assert bound is not None and bound.utcoffset() is not None and not bound.utcoffset()
        assert first.known_period.lower < first.known_period.upper
        [current] = session.scalars(as_of(model)).all()
        assert current.version_id == second.version_id and repr(current.valid_period) == repr(
            second.valid_period
        )
    engine.dispose()
