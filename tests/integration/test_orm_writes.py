"""The ORM behaves as SQLAlchemy users expect (issue 13, item 3): record/retract flush the
session first and raise only BitemporalErrors; the ORM's own UPDATE/DELETE of a version is
refused before any SQL, naming record/retract; relationships and a loader option that
follow only eligible versions; key allocation for a new row; a plain table's foreign key to
a bitemporal table's <table>_key table, created by an Alembic operation."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy
from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Integer,
    MetaData,
    Sequence,
    Text,
    Uuid,
    and_,
    create_engine,
    delete,
    select,
    text,
    update,
)
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    Session,
    mapped_column,
    relationship,
    selectinload,
)

import bitemporal.alembic_ops  # noqa: F401 - registers the operations
from bitemporal import (
    AppendOnlyError,
    BitemporalError,
    InvalidInputError,
    InvalidValueError,
    Period,
    Store,
)
from bitemporal.database import sqlalchemy_url
from bitemporal.orm import Bitemporal, as_of, current_only, eligible, history, record, retract

SCHEMA = f"orm_writes_{uuid.uuid4().hex[:8]}"
JAN = datetime(2026, 1, 1, tzinfo=UTC)
FEB = datetime(2026, 2, 1, tzinfo=UTC)
MAR = datetime(2026, 3, 1, tzinfo=UTC)


class Base(DeclarativeBase):
    metadata = MetaData(schema=SCHEMA)


class Customer(Base):
    """An ordinary table."""

    __tablename__ = "customer"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    #: The README's recipe: only the versions eligible now (valid now, as known now).
    contracts: Mapped[list[Contract]] = relationship(
        primaryjoin=lambda: and_(Customer.id == Contract.customer_id, eligible(Contract)),
        viewonly=True,
        order_by=lambda: Contract.terms,
    )
    #: A plain relationship: every version, superseded ones included.
    contract_versions: Mapped[list[Contract]] = relationship(
        viewonly=True, order_by=lambda: Contract.version_id
    )


class Contract(Base, Bitemporal):
    """Keys are client-generated UUIDs."""

    __tablename__ = "contract"
    __bitemporal_key__ = ("id",)
    id: Mapped[uuid.UUID] = mapped_column(Uuid, default=uuid.uuid4)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customer.id"))
    terms: Mapped[str] = mapped_column(Text)


TICKET_IDS = Sequence("ticket_id_seq", metadata=Base.metadata)


class Ticket(Base, Bitemporal):
    """Keys come from a sequence."""

    __tablename__ = "ticket"
    __bitemporal_key__ = ("id",)
    id: Mapped[int] = mapped_column(BigInteger, TICKET_IDS)
    title: Mapped[str] = mapped_column(Text)


@pytest.fixture(scope="module")
def engine(database_url: str) -> Iterator[sqlalchemy.Engine]:
    engine = create_engine(sqlalchemy_url(database_url))
    with engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{SCHEMA}"'))
        op = Operations(MigrationContext.configure(conn))
        op.create_table(
            "customer",
            Column("id", Integer, primary_key=True),
            Column("name", Text, nullable=False),
            schema=SCHEMA,
        )
        op.create_bitemporal_table(  # type: ignore[attr-defined]
            "contract",
            Column("id", Uuid),
            Column("customer_id", Integer, ForeignKey(f"{SCHEMA}.customer.id")),
            Column("terms", Text, nullable=False),
            key=["id"],
            schema=SCHEMA,
        )
        conn.execute(sqlalchemy.schema.CreateSequence(TICKET_IDS))
        op.create_bitemporal_table(  # type: ignore[attr-defined]
            "ticket", Column("id", BigInteger), Column("title", Text), key=["id"], schema=SCHEMA
        )
        op.create_table(
            "invoice",
            Column("id", Integer, primary_key=True),
            Column("contract_id", Uuid, nullable=False),
            schema=SCHEMA,
        )
        op.create_key_foreign_key(  # type: ignore[attr-defined]
            "invoice_contract_fkey",
            "invoice",
            "contract",
            ["contract_id"],
            ["id"],
            source_schema=SCHEMA,
            referent_schema=SCHEMA,
        )
    yield engine
    with engine.begin() as conn:
        # drop_bitemporal_table drops the key table: foreign keys to it go first.
        conn.execute(text(f'DROP TABLE "{SCHEMA}".invoice'))
        conn.execute(text(f"SELECT bitemporal.drop_table('\"{SCHEMA}\".contract')"))
        conn.execute(text(f"SELECT bitemporal.drop_table('\"{SCHEMA}\".ticket')"))
        conn.execute(text(f'DROP SCHEMA "{SCHEMA}" CASCADE'))
    engine.dispose()


def new_customer_id() -> int:
    return uuid.uuid4().int % 2_000_000_000


def test_record_flushes_a_pending_parent_and_allocates_the_key(engine: sqlalchemy.Engine) -> None:
    cid = new_customer_id()
    with Session(engine) as session:
        session.add(Customer(id=cid, name="Acme"))  # pending: not in the database yet
        contract = Contract(customer_id=cid, terms="net 30")  # no id: uuid4, as an ORM INSERT would
        recorded = record(session, contract, valid_from=JAN)
        assert isinstance(contract.id, uuid.UUID) and recorded.created
        session.commit()
    with Session(engine) as session:
        [version] = session.scalars(as_of(Contract).where(Contract.customer_id == cid)).all()
        assert (version.id, version.terms, version.version_id) == (
            contract.id,
            "net 30",
            recorded.version_id,
        )


def test_sequence_keys(engine: sqlalchemy.Engine) -> None:
    with Session(engine) as session:
        first, second = Ticket(title="a"), Ticket(title="b")
        record(session, first)
        record(session, second)
        assert isinstance(first.id, int) and second.id == first.id + 1
        assert [t.title for t in session.scalars(history(Ticket, id=second.id))] == ["b"]


def test_a_failing_flush_is_a_bitemporal_error(engine: sqlalchemy.Engine) -> None:
    with Session(engine) as session:
        session.add(Customer(id=new_customer_id(), name=None))  # NOT NULL
        with pytest.raises(InvalidValueError, match="null") as caught:
            record(session, Contract(customer_id=1, terms="x"), valid_from=JAN)
        assert isinstance(caught.value.__cause__, sqlalchemy.exc.IntegrityError)
    with (
        Session(engine) as session,
        pytest.raises(BitemporalError, match="foreign key"),
    ):  # no such customer
        record(session, Contract(customer_id=new_customer_id(), terms="x"), valid_from=JAN)
    with Session(engine) as session:
        session.add(Customer(id=new_customer_id(), name=None))
        with pytest.raises(InvalidValueError):
            retract(session, Contract, {"id": uuid.uuid4()})


def recorded_contract(engine: sqlalchemy.Engine, terms: str = "net 30") -> tuple[int, uuid.UUID]:
    cid = new_customer_id()
    with Session(engine) as session:
        session.add(Customer(id=cid, name="Acme"))
        contract = Contract(customer_id=cid, terms=terms)
        record(session, contract, valid_from=JAN, known_at=JAN)
        session.commit()
    return cid, contract.id


def stored(engine: sqlalchemy.Engine, key: uuid.UUID) -> list[tuple[int, str]]:
    with Session(engine) as session:
        return [(v.version_id, v.terms) for v in session.scalars(history(Contract, id=key))]


def test_wrong_arguments_are_refused_before_the_session_is_used(
    engine: sqlalchemy.Engine,
) -> None:
    """Not a "session failed ... roll the session back" (a DatabaseError) nor an
    AttributeError: what record and retract take, said before anything is sent."""
    cid, key = recorded_contract(engine)
    before = stored(engine, key)
    contract = Contract(id=key, customer_id=cid, terms="net 60")
    with Session(engine) as session:
        for call, said in (
            (lambda: record(session, Contract), "record() takes an instance of a bitemporal"),  # type: ignore[arg-type]
            (lambda: record(session, object()), "record() takes an instance of a bitemporal"),  # type: ignore[arg-type]
            (lambda: record(engine, contract), "record() needs a SQLAlchemy Session, not Engine"),  # type: ignore[arg-type]
            (lambda: retract(engine, Contract, {"id": key}), "retract() needs a SQLAlchemy"),  # type: ignore[arg-type]
        ):
            with pytest.raises(InvalidInputError, match=re.escape(said)):
                call()
        assert session.scalars(history(Contract, id=key)).one().terms == before[0][1]
    assert stored(engine, key) == before


def test_an_orm_update_is_refused_naming_record(engine: sqlalchemy.Engine) -> None:
    _, key = recorded_contract(engine)
    before = stored(engine, key)
    with Session(engine) as session:
        version = session.scalars(history(Contract, id=key)).one()
        version.terms = "net 60"
        with pytest.raises(AppendOnlyError, match="UPDATE would rewrite history") as caught:
            session.commit()
        assert "bitemporal.orm.record(session, Contract(" in str(caught.value)
        session.rollback()
        # An unchanged (merely touched) version flushes as before.
        version = session.scalars(history(Contract, id=key)).one()
        version.terms = version.terms
        session.flush()
    assert stored(engine, key) == before


def test_an_orm_delete_is_refused_naming_retract(engine: sqlalchemy.Engine) -> None:
    _, key = recorded_contract(engine)
    before = stored(engine, key)
    with Session(engine) as session:
        session.delete(session.scalars(history(Contract, id=key)).one())
        with pytest.raises(AppendOnlyError, match="DELETE would erase history") as caught:
            session.flush()
        assert "bitemporal.orm.retract(session, Contract," in str(caught.value)
    assert stored(engine, key) == before


@pytest.mark.parametrize("statement", [update(Contract).values(terms="x"), delete(Contract)])
def test_orm_bulk_update_and_delete_are_refused(
    engine: sqlalchemy.Engine, statement: sqlalchemy.Executable
) -> None:
    _, key = recorded_contract(engine)
    before = stored(engine, key)
    with Session(engine) as session, pytest.raises(AppendOnlyError, match="bitemporal.orm.re"):
        session.execute(statement.where(Contract.id == key))  # type: ignore[attr-defined]
    assert stored(engine, key) == before


def test_relationships_follow_eligible_versions(engine: sqlalchemy.Engine) -> None:
    cid, key = recorded_contract(engine, "net 30")
    with Session(engine) as session:
        record(
            session, Contract(id=key, customer_id=cid, terms="net 45"), valid_from=JAN, known_at=FEB
        )
        ended = Contract(customer_id=cid, terms="ended")
        record(session, ended, valid_from=JAN, known_at=FEB)
        retract(session, Contract, {"id": ended.id}, valid_from=JAN, known_at=MAR)
        session.commit()
    with Session(engine) as session:
        customer = session.get(Customer, cid)
        assert customer is not None
        # The plain relationship: every version, superseded and retracted ones included.
        assert [c.terms for c in customer.contract_versions] == ["net 30", "net 45", "ended"]
        # The recipe: only what is valid now, as known now.
        assert [c.terms for c in customer.contracts] == ["net 45"]
    for option, expected in [
        (current_only(Contract), ["net 45"]),
        (
            current_only(Contract, valid_at=FEB, known_at=datetime(2026, 2, 15, tzinfo=UTC)),
            ["net 45", "ended"],
        ),
        (current_only(Contract, valid_at=FEB, known_at=JAN), ["net 30"]),
    ]:
        with Session(engine) as session:
            # The option reaches the plain relationship, lazily loaded or eagerly.
            customer = session.scalars(
                select(Customer).where(Customer.id == cid).options(option)
            ).one()
            assert sorted(c.terms for c in customer.contract_versions) == sorted(expected)
        with Session(engine) as session:
            customer = session.scalars(
                select(Customer)
                .where(Customer.id == cid)
                .options(option, selectinload(Customer.contract_versions))
            ).one()
            assert sorted(c.terms for c in customer.contract_versions) == sorted(expected)


def test_a_plain_table_refers_to_the_key_table(engine: sqlalchemy.Engine) -> None:
    _, key = recorded_contract(engine)
    invoice = text(f'INSERT INTO "{SCHEMA}".invoice (id, contract_id) VALUES (:id, :key)')
    with engine.begin() as conn:
        conn.execute(invoice, {"id": new_customer_id(), "key": key})
    with (
        pytest.raises(sqlalchemy.exc.IntegrityError, match="invoice_contract_fkey"),
        engine.begin() as conn,
    ):
        conn.execute(invoice, {"id": new_customer_id(), "key": uuid.uuid4()})
    # A key, once recorded, stays in the key table: retracting its versions keeps the invoice valid.
    with Session(engine) as session:
        retract(session, Contract, {"id": key})
        session.commit()
    with engine.begin() as conn:
        conn.execute(invoice, {"id": new_customer_id(), "key": key})


def test_every_api_gives_the_same_period_type(engine: sqlalchemy.Engine) -> None:
    _, key = recorded_contract(engine)
    with Session(engine) as session:
        [version] = session.scalars(history(Contract, id=key)).all()
        [table_version] = Store(session).app_tables.history(Contract, {"id": key})
        assert isinstance(version.valid_period, Period) and isinstance(version.known_period, Period)
        assert (version.valid_period, version.known_period) == (
            table_version.valid_period,
            table_version.known_period,
        )
        assert version.valid_period == Period(JAN, None)
        # A Period binds as a tstzrange, and range operators still compose on the column.
        found = session.scalars(
            select(Contract.version_id).where(
                Contract.valid_period == Period(JAN, None),
                Contract.id == key,
                Contract.valid_period.contains(FEB),
                Contract.known_period.overlaps(Period(JAN, FEB)),
            )
        ).all()
        assert found == [version.version_id]


def test_converting_a_referenced_table_suggests_the_key_table(engine: sqlalchemy.Engine) -> None:
    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        op.create_table(
            "vendor", Column("id", Integer, primary_key=True), Column("name", Text), schema=SCHEMA
        )
        op.create_table(
            "bill",
            Column("id", Integer, primary_key=True),
            Column(
                "vendor_id", Integer, ForeignKey(f"{SCHEMA}.vendor.id", name="bill_vendor_fkey")
            ),
            schema=SCHEMA,
        )
        conn.execute(text(f"INSERT INTO \"{SCHEMA}\".vendor VALUES (1, 'Acme')"))
        conn.execute(text(f'INSERT INTO "{SCHEMA}".bill VALUES (1, 1)'))
    with pytest.raises(sqlalchemy.exc.DBAPIError) as caught, engine.begin() as conn:
        Operations(MigrationContext.configure(conn)).convert_to_bitemporal(  # type: ignore[attr-defined]
            "vendor", ["id"], schema=SCHEMA
        )
    message = str(caught.value.orig)
    assert getattr(caught.value.orig, "sqlstate", None) == "BT402"
    assert f"{SCHEMA}.vendor_key" in message and "op.create_key_foreign_key" in message
    # The advice, followed: the bill keeps its reference, to the key table.
    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        op.drop_constraint("bill_vendor_fkey", "bill", type_="foreignkey", schema=SCHEMA)
        op.convert_to_bitemporal("vendor", ["id"], schema=SCHEMA)  # type: ignore[attr-defined]
        op.create_key_foreign_key(  # type: ignore[attr-defined]
            "bill_vendor_fkey",
            "bill",
            "vendor",
            ["vendor_id"],
            ["id"],
            source_schema=SCHEMA,
            referent_schema=SCHEMA,
        )
    with (
        pytest.raises(sqlalchemy.exc.IntegrityError, match="bill_vendor_fkey"),
        engine.begin() as conn,
    ):
        conn.execute(text(f'INSERT INTO "{SCHEMA}".bill VALUES (2, 2)'))
    with engine.begin() as conn:
        conn.execute(text(f'DROP TABLE "{SCHEMA}".bill'))
        conn.execute(text(f"SELECT bitemporal.drop_table('\"{SCHEMA}\".vendor')"))
