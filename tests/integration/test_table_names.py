"""Application tables whose names (and column names) hold characters psycopg's placeholder
parser or SQL quoting could misread: ``%``, ``%%``, ``%s``, ``%(x)s``, a double quote, spaces.
Every statement is composed with quoted identifiers, never parsed for placeholders inside
them: a write lands in the table named, through store.app_tables and the ORM helpers."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import String, create_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from bitemporal import Store, orm
from bitemporal.database import sqlalchemy_url

JAN, MAR = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)
NAMES = ["p%q", "p%%q", "a%sb", "b%(k)s", 'x"y', "with space", "p%"]
VALUE = "v%s n"  # a value column with a placeholder and a space in its name


@pytest.fixture
def schema(connect: Callable[..., psycopg.Connection[Any]]) -> Iterator[str]:
    """A schema of the test's own, with a table ``p`` beside the hostile names: a write
    to ``p%%q`` that lands in ``p%q`` (or anywhere else) shows in the row counts."""
    name = f"names_{uuid.uuid4().hex[:8]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    for table in ["p", *NAMES]:
        conn.execute(
            sql.SQL("CREATE TABLE {} (k text, {} text)").format(
                sql.Identifier(name, table), sql.Identifier(VALUE)
            )
        )
        conn.execute(
            sql.SQL("SELECT bitemporal.enable_table({}::regclass, ARRAY['k'])").format(
                sql.Literal(sql.Identifier(name, table).as_string(conn))
            )
        )
    yield name
    for table in ["p", *NAMES]:
        conn.execute(
            sql.SQL("SELECT bitemporal.drop_table({}::regclass)").format(
                sql.Literal(sql.Identifier(name, table).as_string(conn))
            )
        )
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def counts(conn: psycopg.Connection[Any], schema: str) -> dict[str, int]:
    return {
        table: conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, table))
        ).fetchone()[0]  # type: ignore[index]
        for table in ["p", *NAMES]
    }


@pytest.mark.parametrize("name", NAMES)
def test_store_tables_write_and_read_the_table_named(store: Store, schema: str, name: str) -> None:
    table = f"{schema}.{name}"
    before = counts(store.connection, schema)
    first = store.app_tables.record(table, {"k": "a", VALUE: "one"}, valid_from=JAN)
    assert first.created
    assert store.app_tables.record(table, {"k": "a", VALUE: "two"}, valid_from=MAR).superseded == (
        first.version_id,
    )
    assert store.app_tables.retract(table, {"k": "a"}, valid_from=datetime(2026, 6, 1, tzinfo=UTC))
    assert [v.row[VALUE] for v in store.app_tables.as_of(table, {"k": "a"}, valid_at=JAN)] == [
        "one"
    ]
    assert [v.row[VALUE] for v in store.app_tables.as_of(table, valid_at=MAR)] == ["two"]
    assert len(store.app_tables.history(table, {"k": "a"})) >= 4
    assert store.app_tables.changes(table)
    after = counts(store.connection, schema)
    # Only the table named grew: nothing landed in a table with a similar name.
    assert {t: after[t] - before[t] for t in after if after[t] != before[t]} == {
        name: after[name] - before[name]
    }
    assert after[name] > before[name]


@pytest.mark.parametrize("name", NAMES)
def test_orm_helpers_write_and_read_the_table_named(
    database_url: str, schema: str, name: str
) -> None:
    class Base(DeclarativeBase):
        pass

    class Row(Base, orm.Bitemporal):
        __tablename__ = name
        __table_args__ = {"schema": schema}  # noqa: RUF012 - SQLAlchemy's declarative form
        __bitemporal_key__ = ("k",)
        k: Mapped[str] = mapped_column(String)
        value: Mapped[str | None] = mapped_column(VALUE, String)

    engine = create_engine(sqlalchemy_url(database_url))
    try:
        with Session(engine) as session:
            recorded = orm.record(session, Row(k="a", value="one"), valid_from=JAN)
            orm.record(session, Row(k="b", value="two"), valid_from=JAN)
            assert orm.retract(session, Row, {"k": "b"}, valid_from=MAR)
            session.commit()
            rows = session.scalars(orm.as_of(Row, valid_at=MAR).order_by(Row.k)).all()
            assert [(r.k, r.value) for r in rows] == [("a", "one")]
            assert [r.version_id for r in session.scalars(orm.history(Row, k="a"))] == [
                recorded.version_id
            ]
            with psycopg.connect(database_url) as conn:
                grown = {t: n for t, n in counts(conn, schema).items() if n}
            assert set(grown) == {name}  # every write landed in the table named
    finally:
        engine.dispose()
