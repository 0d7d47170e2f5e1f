"""The example application (examples/shop): Alembic operations up, down and offline,
SQLAlchemy queries (and their plans), and the psql audit, as the README shows them."""

from __future__ import annotations

import io
import shutil
import subprocess
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from alembic import command
from alembic.config import Config
from psycopg import sql
from sqlalchemy import create_engine
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

import bitemporal
from bitemporal import InvalidKeyError, TemporalReferenceError
from bitemporal.database import sqlalchemy_url
from bitemporal.orm import as_of, history, record, retract
from examples.shop import demo
from examples.shop.models import Price, Product, Supplier

AUDIT = Path(demo.__file__).parent / "audit.sql"


def config(url: str, output: io.StringIO | None = None) -> Config:
    cfg = demo.alembic_config(url)
    if output is not None:
        cfg.output_buffer = output
    return cfg


def test_the_demo_answers_each_question_by_both_periods(empty_database_url: str) -> None:
    assert demo.main(empty_database_url) == [
        "price on 2 March, as known on 5 March: 10.00",
        "price on 2 March, as known on 15 March: 12.00",
        "price on 2 March, as known now: 11.50",
        "price on 2 April, as known now: 12.00",
        "price on 15 December 2025, as known now: missing",
        "on 2 March, as known now: Anvil at 11.50 EUR",
    ]


@pytest.mark.skipif(shutil.which("psql") is None, reason="the psql client is not installed")
def test_the_audit_runs_in_psql(empty_database_url: str) -> None:
    demo.main(empty_database_url)
    out = subprocess.run(
        ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-d", empty_database_url, "-f", str(AUDIT)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "(1 row)" in out and "(5 rows)" in out and "superseded" in out


def tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT c.relname FROM pg_class c WHERE c.relnamespace = to_regnamespace('shop')"
                " AND c.relkind = 'r' ORDER BY 1"
            )
        ]


def test_up_down_up(empty_database_url: str) -> None:
    url = empty_database_url
    command.upgrade(config(url), "head")
    assert tables(url) == [
        "price",
        "price_key",
        "product",
        "product_key",
        "supplier",
        "supplier_key",
    ]
    # The converted table kept its rows as versions valid from 2020, known from the migration.
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id, name, lower(valid_period) FROM shop.supplier_as_of('2021-01-01') ORDER BY id"
        ).fetchall()
    assert rows == [
        (1, "Acme", datetime(2020, 1, 1, tzinfo=UTC)),
        (2, "Globex", datetime(2020, 1, 1, tzinfo=UTC)),
    ]

    command.downgrade(config(url), "shop0001")
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT * FROM shop.supplier ORDER BY id").fetchall() == [
            (1, "Acme"),
            (2, "Globex"),
        ]
    command.downgrade(config(url), "base")
    assert tables(url) == []
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM bitemporal.app_table").fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM pg_proc WHERE proname LIKE 'price%%'"
        ).fetchone() == (0,)
    command.upgrade(config(url), "head")
    assert len(tables(url)) == 6


def test_going_back_after_history_is_refused(empty_database_url: str) -> None:
    url = empty_database_url
    command.upgrade(config(url), "head")
    with psycopg.connect(url, autocommit=True) as conn:
        bitemporal.Store(conn).app_tables.record(
            "shop.supplier",
            {"id": 1, "name": "Acme Corp"},
            valid_from=datetime(2026, 1, 1, tzinfo=UTC),
        )
    with pytest.raises(Exception, match="history would be lost"):
        command.downgrade(config(url), "shop0001")
    assert len(tables(url)) == 6  # nothing changed


def test_offline_script_carries_the_operations(empty_database_url: str) -> None:
    url = empty_database_url
    out = io.StringIO()
    command.upgrade(config(url, out), "head", sql=True)
    script = out.getvalue()
    assert (
        "SELECT bitemporal.enable_table(CAST(quote_ident(coalesce('shop', current_schema()))"
        in script
    )
    assert "ARRAY['sku', 'currency']" in script
    assert "SELECT bitemporal.add_reference(" in script
    # Applied to a database at bitemporal's head, it builds the same tables.
    bitemporal.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(script.encode())
    assert tables(url) == [
        "price",
        "price_key",
        "product",
        "product_key",
        "supplier",
        "supplier_key",
    ]
    out = io.StringIO()
    command.downgrade(config(url, out), "head:base", sql=True)
    assert "SELECT bitemporal.drop_table(" in out.getvalue()
    assert "SELECT bitemporal.disable_table(" in out.getvalue()


def test_sqlalchemy_helpers(empty_database_url: str) -> None:
    url = empty_database_url
    command.upgrade(config(url), "head")
    engine = create_engine(sqlalchemy_url(url))
    jan = datetime(2026, 1, 1, tzinfo=UTC)
    with Session(engine) as session:
        record(session, Product(sku="A1", name="Anvil"), valid_from=jan)
        # A refused write leaves the session's transaction usable and unchanged.
        with pytest.raises(TemporalReferenceError):
            record(session, Price(sku="B2", currency="EUR", amount=Decimal(1)), valid_from=jan)
        record(session, Price(sku="A1", currency="EUR", amount=Decimal("9.99")), valid_from=jan)
        session.commit()

        rows = session.scalars(as_of(Price).where(Price.sku == "A1")).all()
        assert [(p.currency, p.amount, p.valid_period.lower) for p in rows] == [
            ("EUR", Decimal("9.99"), jan)
        ]
        assert session.scalars(history(Supplier, id=1)).one().name == "Acme"
        with pytest.raises(InvalidKeyError):
            history(Price, sku="A1")

        retract(
            session,
            Price,
            {"sku": "A1", "currency": "EUR"},
            valid_from=datetime(2026, 6, 1, tzinfo=UTC),
        )
        session.commit()
        versions = session.scalars(history(Price, sku="A1", currency="EUR")).all()
        assert [
            (v.valid_period.lower, v.valid_period.upper, v.known_period.upper is None)
            for v in versions
        ] == [(jan, None, False), (jan, datetime(2026, 6, 1, tzinfo=UTC), True)]

    # The as-of query, with its key, is answered from the GiST index over key and periods.
    stmt = as_of(Price, jan, datetime(2026, 2, 1, tzinfo=UTC)).where(
        Price.sku == "A1", Price.currency == "EUR"
    )
    compiled = stmt.compile(dialect=postgresql.dialect())
    with psycopg.connect(url) as conn:
        conn.execute("SET enable_seqscan = off")  # a small table: which index can the planner use?
        plan = "\n".join(
            r[0]
            for r in conn.execute(sql.SQL("EXPLAIN ") + sql.SQL(str(compiled)), compiled.params)
        )
    assert "price_no_overlap" in plan, plan
    engine.dispose()


def test_autogenerate_sees_no_difference_with_the_models(empty_database_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from bitemporal.alembic_ops import include_object
    from examples.shop.models import Base

    command.upgrade(config(empty_database_url), "head")
    engine = create_engine(sqlalchemy_url(empty_database_url))
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn,
            opts={
                "include_schemas": True,
                "include_name": lambda name, type_, parents: type_ != "schema" or name == "shop",
                "include_object": include_object,
            },
        )
        assert compare_metadata(context, Base.metadata) == []
        # Without the hook, autogenerate would propose dropping what bitemporal manages.
        context = MigrationContext.configure(
            conn,
            opts={
                "include_schemas": True,
                "include_name": lambda name, type_, parents: type_ != "schema" or name == "shop",
            },
        )
        assert compare_metadata(context, Base.metadata) != []
    engine.dispose()
