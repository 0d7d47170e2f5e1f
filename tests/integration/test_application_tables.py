"""Application tables: an application's own table made bitemporal, through SQL and store.app_tables.

Each test makes its tables in a schema of its own in the shared test database.
"""

from __future__ import annotations

import secrets
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bitemporal import (
    AppendOnlyError,
    ChangeKind,
    InvalidInputError,
    InvalidKeyError,
    InvalidPeriodError,
    InvalidValueError,
    KnowledgeTimeInFutureError,
    KnowledgeTimeInPastError,
    NaiveDatetimeError,
    Store,
    TemporalReferenceError,
    UnknownKeyError,
    UnknownTableError,
)
from bitemporal.errors import SchemaNotMigratedError, error_for
from tests.helpers import CITUS

JAN, FEB, MAR, APR, MAY = (datetime(2026, m, 1, tzinfo=UTC) for m in range(1, 6))
US = timedelta(microseconds=1)


@contextmanager
def raises_sqlstate(code: str, match: str | None = None) -> Iterator[None]:
    """A psycopg error with SQLSTATE ``code`` (and a message matching ``match``)."""
    with pytest.raises(psycopg.Error, match=match) as caught:
        yield
    assert caught.value.sqlstate == code, caught.value


@pytest.fixture
def schema(connect: Callable[..., psycopg.Connection[Any]]) -> Iterator[str]:
    """A schema of the test's own with product(sku) and price(sku, currency) tables,
    price referring to product."""
    name = f"app_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(name)))
    conn.execute("CREATE TABLE product (sku text, name text NOT NULL)")
    conn.execute("SELECT bitemporal.enable_table('product', ARRAY['sku'])")
    conn.execute(
        "CREATE TABLE price (sku text, currency text, amount numeric(10, 2) NOT NULL, note text)"
    )
    conn.execute("SELECT bitemporal.enable_table('price', ARRAY['sku', 'currency'])")
    conn.execute("SELECT bitemporal.add_reference('price', ARRAY['sku'], 'product')")
    yield name
    conn.execute("RESET search_path")
    conn.execute(
        sql.SQL("SELECT bitemporal.drop_table({}::regclass)").format(sql.Literal(f"{name}.price"))
    )
    conn.execute(
        sql.SQL("SELECT bitemporal.drop_table({}::regclass)").format(sql.Literal(f"{name}.product"))
    )
    conn.execute(sql.SQL("DROP SCHEMA {}").format(sql.Identifier(name)))


def price(
    sku: str = "A1", amount: Any = Decimal("10.00"), currency: str = "EUR", note: str | None = None
) -> dict[str, Any]:
    return {"sku": sku, "currency": currency, "amount": amount, "note": note}


def snapshot(conn: psycopg.Connection[Any], schema: str) -> list[tuple[Any, ...]]:
    """Every row of both tables and their key tables: what a refused write must leave alone."""
    rows: list[tuple[Any, ...]] = []
    for table in ("product", "product_key", "price", "price_key"):
        rows += conn.execute(
            sql.SQL("SELECT t::text FROM {} t ORDER BY 1").format(sql.Identifier(schema, table))
        ).fetchall()
    return rows


def test_the_generated_functions_record_correct_and_retract(store: Store, schema: str) -> None:
    t = store.app_tables
    product, prices = f"{schema}.product", f"{schema}.price"
    t.record(product, {"sku": "A1", "name": "Anvil"}, valid_from=JAN)
    first = t.record(prices, price(amount=Decimal(10)), valid_from=FEB)
    assert first.created and first.superseded == ()
    # An identical row already known for the whole period: nothing written.
    again = t.record(prices, price(amount=Decimal("10.00")), valid_from=MAR, valid_to=APR)
    assert (again.created, again.version_id) == (False, first.version_id)
    # A correction of a past period, learned now: the old version is closed, its remainders
    # re-recorded.
    fix = t.record(
        prices, price(amount=Decimal("12.50"), note="late raise"), valid_from=MAR, valid_to=APR
    )
    assert fix.created and fix.superseded == (first.version_id,)

    now = {
        v.valid_period.start: v.row["amount"]
        for v in t.as_of(prices, {"sku": "A1", "currency": "EUR"}, valid_at=MAR)
    }
    assert now == {MAR: Decimal("12.50")}
    # What was known before the correction, for March: 10.
    assert fix.known_at is not None
    before = t.as_of(
        prices, {"sku": "A1", "currency": "EUR"}, valid_at=MAR, known_at=fix.known_at - US
    )
    assert [v.row["amount"] for v in before] == [Decimal("10.00")]

    history = t.history(prices, {"sku": "A1", "currency": "EUR"})
    assert [
        (
            v.row["amount"],
            v.valid_period.start,
            v.valid_period.end,
            v.known_period.end is None,
            v.carried_from,
        )
        for v in history
    ] == [
        (Decimal("10.00"), FEB, None, False, None),
        (Decimal("10.00"), FEB, MAR, True, first.version_id),
        (Decimal("10.00"), APR, None, True, first.version_id),
        (Decimal("12.50"), MAR, APR, True, None),
    ]
    ended = t.retract(prices, {"sku": "A1", "currency": "EUR"}, valid_from=APR)
    assert len(ended) == 1
    assert t.as_of(prices, {"sku": "A1", "currency": "EUR"}, valid_at=MAY) == []

    kinds = [(c.change, c.version_id) for c in t.changes(prices)]
    assert kinds == [
        (ChangeKind.LEARNED, first.version_id),
        (ChangeKind.SUPERSEDED, first.version_id),
        (ChangeKind.LEARNED, fix.version_id),
        (ChangeKind.RETRACTED, ended[0]),
    ]


def test_existing_rows_become_the_first_versions(
    connect: Callable[..., psycopg.Connection[Any]], store: Store
) -> None:
    name = f"conv_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(
        sql.SQL("CREATE TABLE {} (id integer PRIMARY KEY, label text)").format(sql.Identifier(name))
    )
    conn.execute(
        sql.SQL("INSERT INTO {} VALUES (1, 'one'), (2, 'two')").format(sql.Identifier(name))
    )
    conn.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['id'], %s)", (name, JAN))
    rows = store.app_tables.as_of(name, valid_at=FEB)
    assert [(v.row, v.valid_period.start, v.valid_period.end) for v in rows] == [
        ({"id": 1, "label": "one"}, JAN, None),
        ({"id": 2, "label": "two"}, JAN, None),
    ]
    assert store.app_tables.as_of(name, valid_at=JAN - US) == []
    # Nothing recorded since: it may go back to an ordinary table, primary key and all.
    conn.execute("SELECT bitemporal.disable_table(%s::regclass)", (name,))
    assert conn.execute(
        sql.SQL("SELECT * FROM {} ORDER BY id").format(sql.Identifier(name))
    ).fetchall() == [(1, "one"), (2, "two")]
    assert conn.execute(
        "SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'",
        (name,),
    ).fetchone() == (1,)
    # Once history is written, going back would lose it: refused.
    conn.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['id'])", (name,))
    store.app_tables.record(name, {"id": 1, "label": "uno"})
    with raises_sqlstate("BT402", "would be lost"):
        conn.execute("SELECT bitemporal.disable_table(%s::regclass)", (name,))
    conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (name,))


@pytest.mark.parametrize(
    ("ddl", "key", "reason"),
    [
        ("CREATE TABLE {} (id int, valid_period int)", ["id"], "name bitemporal uses"),
        ("CREATE TABLE {} (id int, v int UNIQUE)", ["id"], "unique constraint"),
        ("CREATE TABLE {} (id int, v int)", ["nope"], "no column nope"),
        ("CREATE TABLE {} (id int, v int)", [], "at least one key column"),
        ("CREATE TABLE {} (id int, v int); INSERT INTO {} VALUES (NULL, 1)", ["id"], "null key"),
        (
            "CREATE TABLE {} (id int, v int); INSERT INTO {} VALUES (1, 1), (1, 2)",
            ["id"],
            "same key",
        ),
    ],
)
def test_a_table_that_cannot_hold_versions_is_refused_unchanged(
    connect: Callable[..., psycopg.Connection[Any]], ddl: str, key: list[str], reason: str
) -> None:
    name = f"bad_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL(ddl).format(*[sql.Identifier(name)] * ddl.count("{}")))
    before = conn.execute(
        "SELECT count(*) FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0", (name,)
    ).fetchone()
    with raises_sqlstate("BT402", reason):
        conn.execute("SELECT bitemporal.enable_table(%s::regclass, %s)", (name, key))
    after = conn.execute(
        "SELECT count(*) FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0", (name,)
    ).fetchone()
    assert after == before
    assert conn.execute(
        "SELECT count(*) FROM bitemporal.app_table WHERE table_name = %s", (name,)
    ).fetchone() == (0,)
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(name)))


def test_a_table_name_leaves_room_for_the_names_derived_from_it(
    connect: Callable[..., psycopg.Connection[Any]],
) -> None:
    conn = connect()
    unique = uuid.uuid4().hex[:12]
    longest = "t" * 28 + unique  # 40 bytes: <table>_valid_period_half_open is 63
    too_long = "é" + "t" * 27 + unique  # 40 characters, 41 bytes
    for name in (longest, too_long):
        conn.execute(sql.SQL("CREATE TABLE {} (id int, v int)").format(sql.Identifier(name)))
    try:
        conn.execute("SELECT bitemporal.enable_table(%s::regclass, %s)", (longest, ["id"]))
        assert conn.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'c' "
            "ORDER BY 1",
            (longest,),
        ).fetchall() == [
            (f"{longest}_known_period_half_open",),
            *([] if CITUS else [(f"{longest}_recorded_in_here",)]),
            (f"{longest}_valid_period_half_open",),
        ]
        # The key table's, the longest of all (59 bytes), whole too (not on Citus: its
        # transaction ids are Citus's, migration 0041).
        assert conn.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'c' "
            "ORDER BY 1",
            (f"{longest}_key",),
        ).fetchall() == [
            (f"{longest}_key_known_order",),
            *([] if CITUS else [(f"{longest}_key_last_txid_here",)]),
        ]
        with raises_sqlstate("BT402", "41 bytes long.*at most 40"):
            conn.execute("SELECT bitemporal.enable_table(%s::regclass, %s)", (too_long, ["id"]))
        assert conn.execute(
            "SELECT count(*) FROM bitemporal.app_table WHERE table_name = %s", (too_long,)
        ).fetchone() == (0,)
    finally:
        conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (longest,))
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(too_long)))


LONG = secrets.token_hex(6_000)


def test_bad_input_raises_typed_errors_and_writes_nothing(
    store: Store, schema: str, connect: Callable[..., psycopg.Connection[Any]]
) -> None:
    t, prices = store.app_tables, f"{schema}.price"
    t.record(f"{schema}.product", {"sku": "A1", "name": "Anvil"}, valid_from=JAN)
    t.record(prices, price(), valid_from=FEB)
    conn = connect()
    before = snapshot(conn, schema)
    future = datetime.now(UTC) + timedelta(days=1)
    cases: list[tuple[type[Exception], Callable[[], object]]] = [
        (UnknownTableError, lambda: t.record(f"{schema}.nope", {})),
        (UnknownTableError, lambda: t.record("pg_catalog.pg_class", {})),
        (InvalidValueError, lambda: t.record(prices, {"sku": "A1", "currency": "EUR"})),
        (InvalidValueError, lambda: t.record(prices, {**price(), "colour": "red"})),
        (InvalidValueError, lambda: t.record(prices, price(amount=None))),
        (InvalidValueError, lambda: t.record(prices, price(amount="ten"))),
        (InvalidValueError, lambda: t.record(prices, price(amount=Decimal("1e12")))),
        # A key too long for its index (random, so that compression does not save it).
        (InvalidValueError, lambda: t.record(f"{schema}.product", {"sku": LONG, "name": "x"})),
        (InvalidKeyError, lambda: t.record(prices, price(sku=None))),  # type: ignore[arg-type]
        (InvalidPeriodError, lambda: t.record(prices, price(), valid_from=MAR, valid_to=MAR)),
        (InvalidPeriodError, lambda: t.record(prices, price(), valid_from=MAR, valid_to=FEB)),
        (NaiveDatetimeError, lambda: t.record(prices, price(), valid_from=datetime(2026, 3, 1))),
        (KnowledgeTimeInFutureError, lambda: t.record(prices, price(amount=1), known_at=future)),
        (KnowledgeTimeInPastError, lambda: t.record(prices, price(amount=1), known_at=JAN)),
        (UnknownKeyError, lambda: t.retract(prices, {"sku": "Z9", "currency": "EUR"})),
        (UnknownKeyError, lambda: t.history(prices, {"sku": "Z9", "currency": "EUR"})),
        (TemporalReferenceError, lambda: t.record(prices, price(sku="Z9"), valid_from=FEB)),
    ]
    for error, call in cases:
        with pytest.raises(error):
            call()
    # A row, key or table of the wrong type, refused before the database with what it must be.
    misused: list[tuple[type[Exception], str, Callable[[], object]]] = [
        (InvalidValueError, "row must be a mapping", lambda: t.record(prices, [*price().items()])),  # type: ignore[arg-type]
        (InvalidKeyError, "key must be a mapping", lambda: t.as_of(prices, ("A1", "EUR"))),  # type: ignore[arg-type]
        (InvalidKeyError, "key must be a mapping", lambda: t.retract(prices, ("A1", "EUR"))),  # type: ignore[arg-type]
        (InvalidKeyError, "key must be a mapping", lambda: t.history(prices, "A1")),  # type: ignore[arg-type]
        (InvalidInputError, "a table is a name", lambda: t.record(42, price())),  # type: ignore[arg-type]
        (InvalidInputError, "int is not a mapped class", lambda: t.as_of(int)),
    ]
    for error, message, call in misused:
        with pytest.raises(error, match=message):
            call()
    assert snapshot(conn, schema) == before

    # The same refusals from SQL carry their SQLSTATEs.
    conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
    with raises_sqlstate("BT006"):
        conn.execute("UPDATE price SET amount = 1")
    with raises_sqlstate("BT006"):
        conn.execute("DELETE FROM price")
    with raises_sqlstate("BT006"):
        conn.execute("TRUNCATE price CASCADE")
    with raises_sqlstate("BT401"):
        conn.execute("SELECT bitemporal_internal.table_record(NULL::bitemporal.fact_key)")
    assert snapshot(conn, schema) == before


def test_append_only_holds_for_the_owner_through_the_store(store: Store, schema: str) -> None:
    store.app_tables.record(f"{schema}.product", {"sku": "A1", "name": "Anvil"})
    with pytest.raises(AppendOnlyError), store.transaction():
        store.connection.execute(
            sql.SQL("DELETE FROM {}").format(sql.Identifier(schema, "product"))
        )


def test_writes_in_one_transaction_share_its_knowledge_time(
    connect: Callable[..., psycopg.Connection[Any]], schema: str
) -> None:
    conn = connect(autocommit=False)
    store = Store(conn)
    t = store.app_tables
    t.record(f"{schema}.product", {"sku": "A1", "name": "Anvil"})
    first = t.record(f"{schema}.price", price(amount=1))
    second = t.record(f"{schema}.price", price(amount=2), valid_from=MAR)
    conn.commit()
    assert first.known_at == second.known_at
    # The first version was superseded in the transaction that wrote it: never visible, not kept.
    history = t.history(f"{schema}.price", {"sku": "A1", "currency": "EUR"})
    conn.rollback()  # end the reading transaction: the fixture drops the tables
    assert [(v.row["amount"], v.valid_period.start, v.valid_period.end) for v in history] == [
        (Decimal("1.00"), None, MAR),
        (Decimal("2.00"), MAR, None),
    ]


def test_concurrent_writers_of_one_key_are_serialised(
    connect: Callable[..., psycopg.Connection[Any]], schema: str
) -> None:
    Store(connect()).app_tables.record(f"{schema}.product", {"sku": "A1", "name": "Anvil"})
    stores = [Store(connect()) for _ in range(4)]
    errors: list[BaseException] = []

    def write(i: int, store: Store) -> None:
        try:
            for j in range(10):
                month = 1 + (i + j) % 5
                store.app_tables.record(
                    f"{schema}.price",
                    price(amount=i * 100 + j),
                    valid_from=datetime(2026, month, 1, tzinfo=UTC),
                )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i, s)) for i, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    conn = connect()
    # No two open versions overlap, and knowledge times of the key's writes only moved forward.
    assert conn.execute(
        sql.SQL(
            "SELECT count(*) FROM {0} a JOIN {0} b ON a.version_id < b.version_id"
            " AND a.valid_period && b.valid_period AND a.known_period && b.known_period"
        ).format(sql.Identifier(schema, "price"))
    ).fetchone() == (0,)
    starts = [
        r[0]
        for r in conn.execute(
            sql.SQL("SELECT DISTINCT lower(known_period) FROM {} ORDER BY 1").format(
                sql.Identifier(schema, "price")
            )
        )
    ]
    assert len(starts) == 40  # every write created something, each at its own knowledge time
    assert (
        conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE upper_inf(known_period)").format(
                sql.Identifier(schema, "price")
            )
        ).fetchone()[0]  # type: ignore[index]
        >= 1
    )


def test_temporal_reference_boundaries(store: Store, schema: str) -> None:
    t, product, prices = store.app_tables, f"{schema}.product", f"{schema}.price"
    t.record(product, {"sku": "A1", "name": "Anvil"}, valid_from=FEB, valid_to=APR)
    # Exactly the parent's period, and inside it: fine.
    t.record(prices, price(), valid_from=FEB, valid_to=APR)
    t.record(prices, price(currency="USD"), valid_from=MAR, valid_to=APR)
    # One microsecond outside on either side: refused.
    with pytest.raises(TemporalReferenceError, match="price_sku_fkey"):
        t.record(prices, price(currency="GBP"), valid_from=FEB - US, valid_to=APR)
    with pytest.raises(TemporalReferenceError):
        t.record(prices, price(currency="GBP"), valid_from=FEB, valid_to=APR + US)
    with pytest.raises(TemporalReferenceError):
        t.record(prices, price(currency="GBP"), valid_from=FEB)
    # The parent cannot shrink under a child, by a microsecond at either end...
    with pytest.raises(TemporalReferenceError):
        t.retract(product, {"sku": "A1"}, valid_from=APR - US)
    with pytest.raises(TemporalReferenceError):
        t.retract(product, {"sku": "A1"}, valid_from=FEB, valid_to=FEB + US)
    # ...nor open a gap inside it; a new value for part of it keeps it covered.
    with pytest.raises(TemporalReferenceError):
        t.retract(product, {"sku": "A1"}, valid_from=MAR, valid_to=MAR + timedelta(days=1))
    t.record(product, {"sku": "A1", "name": "Anvil Mk II"}, valid_from=MAR)
    # The parent extends; then the child may too. Parent outside the child: free to change.
    t.record(prices, price(currency="GBP"), valid_from=FEB, valid_to=MAY)
    t.retract(product, {"sku": "A1"}, valid_from=MAY)
    # Shrink the child first, then the parent.
    t.retract(prices, {"sku": "A1", "currency": "GBP"}, valid_from=APR)
    t.retract(product, {"sku": "A1"}, valid_from=APR)
    assert [v.row["name"] for v in t.as_of(product, {"sku": "A1"}, valid_at=MAR)] == ["Anvil Mk II"]


def test_a_reference_is_checked_by_the_write_not_at_commit(
    schema: str, connect: Callable[..., psycopg.Connection[Any]]
) -> None:
    conn = connect()
    t, product, prices = Store(conn).app_tables, f"{schema}.product", f"{schema}.price"
    t.record(product, {"sku": "A1", "name": "Anvil"}, valid_from=FEB)
    t.record(prices, price(), valid_from=MAR)
    # Inside a transaction the deferred checks would wait for COMMIT: each write
    # runs them itself, on the child's side and on the parent's.
    with conn.transaction():
        with pytest.raises(TemporalReferenceError, match="price_sku_fkey"), conn.transaction():
            t.record(prices, price(currency="USD"), valid_from=JAN)
        with pytest.raises(TemporalReferenceError, match="price_sku_fkey"), conn.transaction():
            t.retract(product, {"sku": "A1"}, valid_from=APR)
        t.record(prices, price(currency="USD"), valid_from=APR)
    assert [
        v.row["currency"] for v in t.as_of(prices, {"sku": "A1", "currency": "USD"}, valid_at=MAY)
    ] == ["USD"]


def test_concurrent_parent_retract_and_child_write_cannot_both_win(
    connect: Callable[..., psycopg.Connection[Any]], schema: str
) -> None:
    Store(connect()).app_tables.record(f"{schema}.product", {"sku": "A1", "name": "Anvil"})
    parent_conn, child_conn = connect(autocommit=False), connect(autocommit=False)
    Store(parent_conn).app_tables.retract(
        f"{schema}.product", {"sku": "A1"}
    )  # holds the key's lock
    results: list[str] = []

    def child() -> None:
        try:
            Store(child_conn).app_tables.record(f"{schema}.price", price())
            child_conn.commit()
            results.append("child committed")
        except TemporalReferenceError:
            child_conn.rollback()
            results.append("child refused")

    thread = threading.Thread(target=child)
    thread.start()
    thread.join(0.5)
    assert thread.is_alive(), "the child's check must wait for the parent's writer"
    parent_conn.commit()
    thread.join()
    assert results == ["child refused"]


def test_as_of_with_a_key_uses_the_gist_index(
    connect: Callable[..., psycopg.Connection[Any]], schema: str
) -> None:
    conn = connect()
    conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
    conn.execute("SET enable_seqscan = off")  # a tiny table: ask which index the planner can use
    plan = "\n".join(
        r[0]
        for r in conn.execute(
            "EXPLAIN SELECT * FROM price_as_of(%s, %s) WHERE sku = 'A1' AND currency = 'EUR'",
            (MAR, MAR),
        )
    )
    assert "price_no_overlap" in plan, plan
    assert "Seq Scan" not in plan


def test_a_writer_role_needs_only_execute(
    connect: Callable[..., psycopg.Connection[Any]], schema: str
) -> None:
    role = f"app_writer_{uuid.uuid4().hex[:8]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
    try:
        conn.execute(
            sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                sql.Identifier(schema), sql.Identifier(role)
            )
        )
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA bitemporal TO {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                sql.SQL("SELECT {}('A1', 'Anvil')").format(sql.Identifier(schema, "product_record"))
            )
        conn.execute("RESET ROLE")
        conn.execute(
            sql.SQL(
                "GRANT EXECUTE ON FUNCTION {}(text, text, "
                "timestamptz, timestamptz, timestamptz) TO {}"
            ).format(sql.Identifier(schema, "product_record"), sql.Identifier(role))
        )
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("SELECT {}('A1', 'Anvil')").format(sql.Identifier(schema, "product_record"))
        )
        # The function writes as the table's owner; the role itself may not touch the table.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                sql.SQL(
                    "INSERT INTO {} (sku, name, valid_period, known_period) VALUES "
                    "('B2', 'x', '[,)', tstzrange(now(), NULL))"
                ).format(sql.Identifier(schema, "product"))
            )
    finally:
        conn.execute("RESET ROLE")
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_a_value_column_added_later_reaches_the_functions(
    store: Store, schema: str, connect: Callable[..., psycopg.Connection[Any]]
) -> None:
    t, product = store.app_tables, f"{schema}.product"
    t.record(product, {"sku": "A1", "name": "Anvil"}, valid_from=JAN)
    conn = connect()
    conn.execute(
        sql.SQL("ALTER TABLE {} ADD COLUMN weight_kg numeric").format(
            sql.Identifier(schema, "product")
        )
    )
    conn.execute("SELECT bitemporal.refresh_table(%s::regclass)", (product,))
    fresh = Store(connect()).app_tables  # definitions are cached per store
    fresh.record(
        product, {"sku": "A1", "name": "Anvil", "weight_kg": Decimal("7.5")}, valid_from=MAR
    )
    rows = fresh.as_of(product, {"sku": "A1"}, valid_at=MAR)
    assert [v.row for v in rows] == [{"sku": "A1", "name": "Anvil", "weight_kg": Decimal("7.5")}]
    # The version recorded before the column existed reads NULL for it.
    assert [v.row["weight_kg"] for v in fresh.as_of(product, {"sku": "A1"}, valid_at=FEB)] == [None]


def test_refresh_keeps_the_grants_of_the_functions(
    schema: str, connect: Callable[..., psycopg.Connection[Any]]
) -> None:
    role = f"app_reader_{uuid.uuid4().hex[:8]}"
    conn = connect()
    conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))

    def privileges() -> list[tuple[str, bool, bool]]:
        """(function, role may execute, PUBLIC may execute) for each of product's functions."""
        return [
            tuple(r)
            for r in conn.execute(
                "SELECT p.proname, has_function_privilege(%s, p.oid, 'EXECUTE'),"
                " coalesce(p.proacl IS NULL OR EXISTS (SELECT FROM "
                "aclexplode(p.proacl) a WHERE a.grantee = 0), false)"
                " FROM pg_proc p WHERE p.pronamespace = %s::regnamespace "
                "AND starts_with(p.proname, 'product_') ORDER BY 1",
                (role, schema),
            ).fetchall()
        ]

    conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
    try:
        conn.execute(
            sql.SQL("GRANT EXECUTE ON FUNCTION product_retract TO {}").format(sql.Identifier(role))
        )
        # An ACL that is not the default but still holds PUBLIC's EXECUTE.
        conn.execute(
            sql.SQL("GRANT EXECUTE ON FUNCTION product_changes TO {}").format(sql.Identifier(role))
        )
        conn.execute("REVOKE EXECUTE ON FUNCTION product_history FROM PUBLIC")
        expected = [
            ("product_as_of", True, True),
            ("product_changes", True, True),
            ("product_erase", False, False),
            ("product_history", False, False),
            ("product_record", False, False),
            ("product_retract", True, False),
        ]
        assert privileges() == expected
        conn.execute("ALTER TABLE product ADD COLUMN weight_kg numeric")
        conn.execute("SELECT bitemporal.refresh_table('product')")
        assert privileges() == expected
        assert conn.execute(
            "SELECT pronargs FROM pg_proc WHERE oid = 'product_record'::regproc"
        ).fetchone() == (6,)
    finally:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_reads_refuse_bad_questions(store: Store, schema: str) -> None:
    t, prices = store.app_tables, f"{schema}.price"
    with pytest.raises(NaiveDatetimeError):
        t.as_of(prices, valid_at=datetime(2026, 3, 1))
    with pytest.raises(InvalidKeyError):
        t.as_of(prices, {"sku": "A1"})  # half a key
    with pytest.raises(InvalidValueError):
        t.history(prices, {"sku": "A1", "currency": "EUR", "colour": "red"})
    with pytest.raises(InvalidPeriodError):
        t.changes(prices, MAR, FEB)
    with pytest.raises(UnknownTableError):
        t.as_of(f"{schema}.price_key")  # a table, but not a bitemporal one


def test_schema_functions_refuse_bad_input_and_change_nothing(
    schema: str, connect: Callable[..., psycopg.Connection[Any]]
) -> None:
    conn = connect()
    conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
    catalog = (
        "SELECT (SELECT count(*) FROM bitemporal.app_reference), "
        "(SELECT count(*) FROM bitemporal.app_table),"
        " (SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
        "   WHERE c.relnamespace = to_regnamespace(%s)),"
        " (SELECT count(*) FROM pg_proc WHERE pronamespace = to_regnamespace(%s))"
    )
    before = conn.execute(catalog, (schema, schema)).fetchone()
    refused = [
        (
            "BT402",
            "has 1 key columns",
            "SELECT bitemporal.add_reference('price', ARRAY['sku', 'currency'], 'product')",
        ),
        (
            "BT402",
            "no column nope",
            "SELECT bitemporal.add_reference('price', ARRAY['nope'], 'product')",
        ),
        (
            "BT402",
            "type is not that of",
            "SELECT bitemporal.add_reference('price', ARRAY['amount'], 'product')",
        ),
        (
            "BT402",
            "already has a reference",
            "SELECT bitemporal.add_reference('price', ARRAY['sku'], 'product')",
        ),
        (
            "BT402",
            "at most 56",
            "SELECT bitemporal.add_reference('price', ARRAY['sku'], 'product', repeat('r', 57))",
        ),
        (
            "BT401",
            "not a bitemporal table",
            "SELECT bitemporal.add_reference('price_key', ARRAY['sku'], 'product')",
        ),
        (
            "BT401",
            "no temporal reference named",
            "SELECT bitemporal.drop_reference('price', 'nope')",
        ),
        ("BT402", "refers to it", "SELECT bitemporal.drop_table('product')"),
        ("BT402", "temporal references", "SELECT bitemporal.disable_table('price')"),
        ("BT401", "not a bitemporal table", "SELECT bitemporal.refresh_table('price_key')"),
        ("BT402", "bitemporal already", "SELECT bitemporal.enable_table('price', ARRAY['sku'])"),
    ]
    for code, message, statement in refused:
        with raises_sqlstate(code, match=message):
            conn.execute(statement)
    assert conn.execute(catalog, (schema, schema)).fetchone() == before


# Every identifier the generated statements and functions use (aliases, CTE and
# column names, parameters and variables of the internal functions), as a column.
INTERNAL_NAMES = (
    "piece",
    "p",
    "e",
    "v",
    "w",
    "s",
    "c",
    "k",
    "u",
    "i",
    "ended",
    "ids",
    "change",
    "changed_at",
    "by_version_ids",
    "image",
    "d",
    "tab",
    "columns",
    "period",
    "t",
    "me",
    "result",
    "same_id",
    "unseen",
    "found",
    "ref",
    "names",
    "ddl",
    "fns",
    "relation",
    "lower",
    "upper",
    "unnest",
    "range_agg",
    "tstzrange",
    "coalesce",
    "now",
)


def test_columns_named_like_internal_identifiers(
    connect: Callable[..., psycopg.Connection[Any]],
) -> None:
    """No generated statement collides with a column's name (issue 11, finding 13: a
    value column named piece broke every cut and retract with 42702)."""
    name = f"app_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(name)))
    values = [c for c in INTERNAL_NAMES if c not in ("k", "v")]
    conn.execute(
        sql.SQL("CREATE TABLE weird (k text, v text, {})").format(
            sql.SQL(", ").join(sql.SQL("{} int").format(sql.Identifier(c)) for c in values)
        )
    )
    conn.execute("SELECT bitemporal.enable_table('weird', ARRAY['k', 'v'])")
    conn.execute("CREATE TABLE child (id text, k text, v text, piece int)")
    conn.execute("SELECT bitemporal.enable_table('child', ARRAY['id'])")
    conn.execute("SELECT bitemporal.add_reference('child', ARRAY['k', 'v'], 'weird')")
    record = sql.SQL("SELECT weird_record('K', 'V', {}, %s, %s)").format(
        sql.SQL(", ").join(sql.Literal(n) for n in range(len(values)))
    )
    try:
        conn.execute(record, (JAN, None))
        conn.execute(
            sql.SQL("SELECT weird_record('K', 'V', {}, %s, %s)").format(
                sql.SQL(", ").join(sql.Literal(n + 1) for n in range(len(values)))
            ),
            (FEB, MAR),
        )
        conn.execute("SELECT child_record('C', 'K', 'V', 1, %s, %s)", (FEB, MAR))
        assert conn.execute("SELECT weird_retract('K', 'V', %s, %s)", (APR, MAY)).fetchone() != (
            [],
        )
        assert conn.execute(
            "SELECT piece, k, v FROM weird_as_of(%s) WHERE k = 'K'", (FEB,)
        ).fetchall() == [(1, "K", "V")]
        assert len(conn.execute("SELECT * FROM weird_history('K', 'V')").fetchall()) == 6
        assert len(conn.execute("SELECT * FROM weird_changes()").fetchall()) >= 3
        with raises_sqlstate("BT004"):
            conn.execute("SELECT * FROM weird_history('K', 'X')")
        with raises_sqlstate("BT403"):
            conn.execute("SELECT weird_retract('K', 'V', %s, %s)", (FEB, MAR))
        conn.execute("SELECT bitemporal.refresh_table('weird')")
    finally:
        conn.execute("RESET search_path")
        for table in ("child", "weird"):
            conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (f"{name}.{table}",))
        conn.execute(sql.SQL("DROP SCHEMA {}").format(sql.Identifier(name)))


@pytest.mark.parametrize("type_name", ["json", "xml", "point"])
def test_a_column_type_without_equality_is_refused(
    connect: Callable[..., psycopg.Connection[Any]], type_name: str
) -> None:
    """Every write compares a row's values with the known ones: a type without = made every
    write fail, reported as SchemaNotMigratedError (issue 11, finding 12)."""
    name = f"app_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(name)))
    try:
        conn.execute(sql.SQL("CREATE TABLE doc (sku text, body {})").format(sql.SQL(type_name)))
        with raises_sqlstate(
            "BT402", match=f"its column body is of type {type_name}, which has no equality operator"
        ):
            conn.execute("SELECT bitemporal.enable_table('doc', ARRAY['sku'])")
        assert conn.execute(
            "SELECT count(*) FROM bitemporal.app_table WHERE table_schema = %s", (name,)
        ).fetchone() == (0,)
        # Added after enable_table: refresh_table refuses it.
        conn.execute("CREATE TABLE note (sku text, body text)")
        conn.execute("SELECT bitemporal.enable_table('note', ARRAY['sku'])")
        conn.execute(sql.SQL("ALTER TABLE note ADD COLUMN extra {}").format(sql.SQL(type_name)))
        with raises_sqlstate("BT402", match="has no equality operator"):
            conn.execute("SELECT bitemporal.refresh_table('note')")
    finally:
        conn.execute("RESET search_path")
        if conn.execute("SELECT to_regclass(%s)", (f"{name}.note_key",)).fetchone() != (None,):
            conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (f"{name}.note",))
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def test_only_a_missing_bitemporal_object_means_not_migrated(
    connect: Callable[..., psycopg.Connection[Any]],
) -> None:
    """SchemaNotMigratedError is for a statement naming a bitemporal function or schema that
    does not exist, not for the same SQLSTATE raised inside a function."""
    conn = connect()
    for statement, not_migrated in [
        ("SELECT bitemporal.no_such_function()", True),
        ("SELECT no_such_schema.f()", True),
        ("DO $$ BEGIN PERFORM bitemporal.no_such_function(); END $$", False),
        ("DO $$ BEGIN PERFORM '{}'::json = '{}'::json; END $$", False),
    ]:
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(statement)
        assert isinstance(error_for(caught.value), SchemaNotMigratedError) is not_migrated, (
            statement
        )


def test_store_tables_is_a_deprecated_name_of_app_tables(store: Store) -> None:
    with pytest.warns(
        DeprecationWarning, match=r"Store\.tables is deprecated .* Store\.app_tables"
    ):
        tables = store.tables
    assert tables is store.app_tables


def as_of_with_plan(
    conn: psycopg.Connection[Any],
    table: str,
    key: dict[str, Any],
    plan_cache_mode: str,
    **question: Any,
) -> tuple[list[Any], str]:
    """``store.app_tables.as_of(table, key, **question)`` on ``conn``, and the plan of its
    statement (auto_explain), planned in ``plan_cache_mode``."""
    messages: list[str] = []
    conn.add_notice_handler(lambda d: messages.append(d.message_primary or ""))
    with conn.transaction(force_rollback=True):
        conn.execute("LOAD 'auto_explain'")
        for setting, value in (
            ("auto_explain.log_min_duration", "0"),
            ("plan_cache_mode", plan_cache_mode),
            ("enable_seqscan", "off"),  # a tiny table: ask which index the planner can use
            ("client_min_messages", "log"),
        ):
            conn.execute("SELECT set_config(%s, %s, true)", (setting, value))
        found = Store(conn).app_tables.as_of(table, key, **question)
        conn.execute("SET LOCAL client_min_messages = notice")
    name = table.rsplit(".", 1)[-1]
    plans = [m for m in messages if f'"{name}" AS v' in m and "Query Text" in m]
    assert plans, messages
    return found, plans[-1]


@pytest.mark.not_on_citus(
    "a single-node plan; on Citus the lookup joins the erasures, a reference table, and is a "
    "one-task Citus plan"
)
def test_store_as_of_of_one_key_stays_an_index_lookup_in_a_generic_plan(
    connect: Callable[..., psycopg.Connection[Any]], schema: str
) -> None:
    # psycopg prepares a statement after five runs, and PostgreSQL then may settle
    # on a generic plan: the key must stay an index condition there, not a filter
    # applied to every version valid at the question.
    conn = connect()
    store = Store(conn)
    table = f"{schema}.price"
    for sku in ("A1", "A2", "A3"):
        store.app_tables.record(f"{schema}.product", {"sku": sku, "name": sku}, valid_from=JAN)
        store.app_tables.record(table, price(sku), valid_from=JAN)
    found, plan = as_of_with_plan(
        conn, table, {"sku": "A2", "currency": "EUR"}, "force_generic_plan", valid_at=MAR
    )
    assert [v.row["sku"] for v in found] == ["A2"]
    assert "price_no_overlap" in plan and "Seq Scan" not in plan, plan
    # The key is part of the index condition (a filter would scan every SKU's versions).
    condition = plan[plan.index("Index Cond") :]
    assert "sku" in condition.split("\n")[0], plan


@pytest.fixture
def ledger(connect: Callable[..., psycopg.Connection[Any]], schema: str) -> Iterator[str]:
    """A table keyed by columns of other types than text: bigint, integer and date."""
    conn = connect()
    table = f"{schema}.ledger"
    conn.execute(
        sql.SQL(
            "CREATE TABLE {} (account bigint, book integer, day date, amount numeric NOT NULL)"
        ).format(sql.Identifier(schema, "ledger"))
    )
    conn.execute(
        "SELECT bitemporal.enable_table(%s::regclass, ARRAY['account', 'book', 'day'])", (table,)
    )
    yield table
    conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (table,))


def test_store_as_of_finds_a_key_of_numbers_and_dates(
    connect: Callable[..., psycopg.Connection[Any]], ledger: str
) -> None:
    store = Store(connect())
    day = JAN.date()
    for account in (1, 2, 70_000, 5_000_000_000):
        store.app_tables.record(
            ledger,
            {"account": account, "book": 7, "day": day, "amount": Decimal(account)},
            valid_from=JAN,
        )
    # Python ints of every size (psycopg sends 1 as a smallint, 70,000 as an integer).
    for account in (1, 70_000, 5_000_000_000):
        found = store.app_tables.as_of(ledger, {"account": account, "book": 7, "day": day})
        assert [v.row["amount"] for v in found] == [Decimal(account)]
    assert store.app_tables.as_of(ledger, {"account": 3, "book": 7, "day": day}) == []
    assert (
        store.app_tables.as_of(ledger, {"account": 1, "book": 7, "day": day}, valid_at=JAN - US)
        == []
    )


@pytest.mark.not_on_citus(
    "a single-node plan; on Citus the lookup joins the erasures, a reference table, and is a "
    "one-task Citus plan"
)
@pytest.mark.parametrize("plan_cache_mode", ["force_generic_plan", "force_custom_plan"])
def test_store_as_of_of_a_key_of_numbers_and_dates_is_an_index_lookup(
    connect: Callable[..., psycopg.Connection[Any]], ledger: str, plan_cache_mode: str
) -> None:
    # A Python int goes as a smallint or an integer, and the GiST index's bigint operator
    # class (btree_gist) has no operator taking either: compared as they come, the key
    # was a filter applied to every version valid at the question (tens of ms at a million
    # versions). Each key parameter is cast to its column's type.
    conn = connect()
    store = Store(conn)
    for account in (1, 2, 3):
        store.app_tables.record(
            ledger, {"account": account, "book": 7, "day": JAN.date(), "amount": 1}, valid_from=JAN
        )
    found, plan = as_of_with_plan(
        conn, ledger, {"account": 2, "book": 7, "day": JAN.date()}, plan_cache_mode
    )
    assert [v.row["account"] for v in found] == [2]
    assert "ledger_no_overlap" in plan and "Seq Scan" not in plan, plan
    condition = plan[plan.index("Index Cond") :].split("\n")[0]
    assert all(c in condition for c in ("account", "book", "day")), plan
    assert "Filter" not in plan[plan.index("Index Cond") :].split("SubPlan")[0], plan
