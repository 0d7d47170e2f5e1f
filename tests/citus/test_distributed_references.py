"""On Citus: temporal references between distributed application tables (issue 14).

A reference between two co-located distributed tables, the child distributed by the column
that names the parent's first key column, is checked by the tables' write functions with
the written key (migration 0030). The same writes run against such a pair and against a
pair kept on the coordinator (whose references are constraint triggers), in the same
database, and must be refused or accepted alike and leave the same rows; each check goes to
the key's worker; any other shape is refused and changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from alembic.migration import MigrationContext
from alembic.operations import Operations
from psycopg import sql
from sqlalchemy import Column, Integer, Numeric, Text, create_engine

import bitemporal.alembic_ops  # noqa: F401  (registers the operations)
from bitemporal import Store
from bitemporal.database import sqlalchemy_url
from bitemporal.errors import TemporalReferenceError
from tests.helpers import CITUS, RemoteCommands

pytestmark = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")

JAN = datetime(2026, 1, 1, tzinfo=UTC)
MAR = datetime(2026, 3, 1, tzinfo=UTC)
JUN = datetime(2026, 6, 1, tzinfo=UTC)
SEP = datetime(2026, 9, 1, tzinfo=UTC)

# (distributed, parent, child): one pair distributed, one kept on the coordinator.
PAIRS = ((True, "customer", "purchase"), (False, "local_customer", "local_purchase"))


@pytest.fixture
def url(migrated_database_url: str) -> Iterator[str]:
    """Two pairs of tables of one shape, a customer and its purchases, each purchase
    referring to its customer, created as a migration would."""
    engine = create_engine(sqlalchemy_url(migrated_database_url))
    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        for distributed, parent, child in PAIRS:
            op.create_bitemporal_table(  # type: ignore[attr-defined]
                parent,
                Column("id", Integer),
                Column("name", Text),
                key=["id"],
                distributed=distributed,
            )
            op.create_bitemporal_table(  # type: ignore[attr-defined]
                child,
                Column("customer_id", Integer),
                Column("purchase_id", Integer),
                Column("amount", Numeric),
                key=["customer_id", "purchase_id"],
                distributed=distributed,
            )
            op.create_temporal_reference(  # type: ignore[attr-defined]
                f"{child}_customer", child, parent, ["customer_id"]
            )
    engine.dispose()
    yield migrated_database_url


@pytest.fixture
def conn(url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(url, autocommit=True) as conn:
        yield conn


def test_the_distributed_reference_has_no_triggers(conn: psycopg.Connection[Any]) -> None:
    rows = conn.execute(
        "SELECT child_table, distributed FROM bitemporal.app_reference ORDER BY 1"
    ).fetchall()
    assert rows == [("local_purchase", False), ("purchase", True)]
    triggers = conn.execute(
        "SELECT tgrelid::regclass::text FROM pg_trigger"
        " WHERE tgname LIKE '%%_customer' OR tgname LIKE '%%_customer_parent' ORDER BY 1"
    ).fetchall()
    assert triggers == [("local_customer",), ("local_purchase",)]


def buy(customer: int, purchase: int, amount: int) -> dict[str, Any]:
    return {"customer_id": customer, "purchase_id": purchase, "amount": amount}


def _writes(parent: str, child: str) -> list[tuple[str, Callable[[Store], object]]]:
    """Writes to a pair, each accepted or refused (BT403) alike on both pairs."""

    def rec(table: str, row: dict[str, Any], **period: Any) -> Callable[[Store], object]:
        return lambda s: s.app_tables.record(table, row, **period)

    def ret(table: str, key: dict[str, Any], **period: Any) -> Callable[[Store], object]:
        return lambda s: s.app_tables.retract(table, key, **period)

    def both(store: Store) -> None:
        # Parent then child in one transaction; the child's check sees the parent.
        with store.transaction():
            store.app_tables.record(parent, {"id": 3, "name": "cy"}, valid_from=MAR)
            store.app_tables.record(child, buy(3, 1, 9), valid_from=JUN)

    def child_first(store: Store) -> None:
        with store.transaction():
            store.app_tables.record(child, buy(4, 1, 9), valid_from=JUN)
            store.app_tables.record(parent, {"id": 4, "name": "dee"}, valid_from=MAR)

    return [
        ("parent 1", rec(parent, {"id": 1, "name": "ada"}, valid_from=JAN)),
        ("parent 2", rec(parent, {"id": 2, "name": "bo"}, valid_from=MAR, valid_to=SEP)),
        ("child of 1", rec(child, buy(1, 1, 5), valid_from=MAR)),
        ("child before 1", rec(child, buy(1, 2, 5))),
        ("child of none", rec(child, buy(9, 1, 5), valid_from=MAR)),
        ("child in 2", rec(child, buy(2, 1, 5), valid_from=JUN, valid_to=SEP)),
        ("child past 2", rec(child, buy(2, 2, 5), valid_from=JUN)),
        ("child changed", rec(child, buy(1, 1, 7), valid_from=JUN)),
        ("parent renamed", rec(parent, {"id": 1, "name": "ada b"}, valid_from=JUN)),
        ("parent cut under a child", ret(parent, {"id": 2}, valid_from=JUN)),
        ("parent cut before a child", ret(parent, {"id": 2}, valid_from=MAR, valid_to=JUN)),
        ("parent cut before its children", ret(parent, {"id": 1}, valid_to=MAR)),
        ("child retracted", ret(child, {"customer_id": 2, "purchase_id": 1})),
        ("parent 2 retracted", ret(parent, {"id": 2})),
        ("parent and child", both),
        ("child then parent", child_first),
    ]


def _outcomes(store: Store, parent: str, child: str) -> list[tuple[str, str]]:
    outcomes = []
    for label, write in _writes(parent, child):
        try:
            write(store)
            outcomes.append((label, "accepted"))
        except TemporalReferenceError:
            outcomes.append((label, "refused"))
    return outcomes


def _rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    """The table's versions, ids and knowledge times aside."""
    rows = conn.execute(
        sql.SQL(
            "SELECT to_jsonb(t) - 'version_id' - 'known_period' - 'recorded_in' - 'carried_from',"
            " upper_inf(t.known_period) FROM {} t"
        ).format(sql.Identifier(table))
    ).fetchall()
    return sorted(rows, key=str)


def test_writes_are_refused_and_accepted_as_on_the_coordinator(
    conn: psycopg.Connection[Any],
) -> None:
    store = Store(conn)
    (_, parent, child), (_, local_parent, local_child) = PAIRS
    distributed = _outcomes(store, parent, child)
    on_coordinator = _outcomes(store, local_parent, local_child)
    assert distributed == on_coordinator
    assert ("child of none", "refused") in distributed
    assert ("parent cut under a child", "refused") in distributed
    assert ("child then parent", "refused") in distributed
    assert ("parent and child", "accepted") in distributed
    assert _rows(conn, parent) == _rows(conn, local_parent)
    assert _rows(conn, child) == _rows(conn, local_child)


def test_a_refused_write_changes_nothing(conn: psycopg.Connection[Any]) -> None:
    store = Store(conn)
    store.app_tables.record("customer", {"id": 1, "name": "ada"}, valid_from=JAN)
    store.app_tables.record("purchase", buy(1, 1, 5), valid_from=MAR)
    before = (_rows(conn, "customer"), _rows(conn, "purchase"))
    with pytest.raises(TemporalReferenceError, match="refers to \\(1\\) of public.customer"):
        store.app_tables.retract("customer", {"id": 1}, valid_from=JUN)
    with pytest.raises(TemporalReferenceError, match="which holds it only over no period"):
        store.app_tables.record("purchase", buy(2, 1, 5))
    assert (_rows(conn, "customer"), _rows(conn, "purchase")) == before


def test_each_check_goes_to_the_keys_worker_and_commits_in_one_phase(
    conn: psycopg.Connection[Any],
) -> None:
    store = Store(conn)
    store.app_tables.record("customer", {"id": 7, "name": "eve"}, valid_from=JAN)
    store.app_tables.record("purchase", buy(7, 1, 5), valid_from=MAR)
    remote = RemoteCommands(conn)
    # A child's write locks the parent's key and asks the coverage; a parent's write,
    # which holds its key locked already, asks the coverage alone.
    for write, checked in (
        (lambda: store.app_tables.record("purchase", buy(7, 1, 6), valid_from=JUN), 2),
        (lambda: store.app_tables.record("customer", {"id": 7, "name": "b"}, valid_from=JUN), 1),
        (lambda: store.app_tables.retract("customer", {"id": 7}, valid_to=MAR), 1),
    ):
        sent = remote.during(write)
        assert len({w for _, w in sent}) == 1, sent
        checks = [c for c, _ in sent if "FOR SHARE OF k" in c or "covered" in c]
        assert len(checks) == checked, sent
        assert sent[-1][0] == "COMMIT", sent
        assert not [c for c, _ in sent if c.startswith(("COPY", "PREPARE"))], sent


def _waiting_write(
    first: psycopg.Connection[Any],
    second: psycopg.Connection[Any],
    write: Callable[[Store], object],
) -> str:
    """Runs ``write`` on ``second`` while ``first``'s transaction is open: it must wait
    for it. Commits ``first``, then ``second``; says whether the write was "committed" or
    "refused" (BT403)."""
    outcome: list[str] = []

    def run() -> None:
        try:
            write(Store(second))
            second.commit()
            outcome.append("committed")
        except TemporalReferenceError:
            second.rollback()
            outcome.append("refused")

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(0.5)
    assert thread.is_alive(), "the second write must wait for the first transaction"
    first.commit()
    thread.join()
    return outcome[0]


def test_a_parent_retract_and_a_child_write_cannot_both_win(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as setup:
        Store(setup).app_tables.record("customer", {"id": 5, "name": "fay"}, valid_from=JAN)
    with psycopg.connect(url) as parent_conn, psycopg.connect(url) as child_conn:
        Store(parent_conn).app_tables.retract("customer", {"id": 5})  # holds the key's lock
        outcome = _waiting_write(
            parent_conn,
            child_conn,
            lambda store: store.app_tables.record("purchase", buy(5, 1, 1), valid_from=MAR),
        )
    assert outcome == "refused"


def test_rows_already_there_are_checked_when_it_is_added(conn: psycopg.Connection[Any]) -> None:
    store = Store(conn)
    conn.execute("SELECT bitemporal.drop_reference('purchase', 'purchase_customer')")
    store.app_tables.record("customer", {"id": 1, "name": "ada"}, valid_from=MAR)
    store.app_tables.record("purchase", buy(1, 1, 5), valid_from=JAN)
    with pytest.raises(psycopg.Error) as refused:
        conn.execute(
            "SELECT bitemporal.add_reference('purchase', ARRAY['customer_id'], 'customer')"
        )
    assert refused.value.sqlstate == "BT403"
    assert conn.execute(
        "SELECT count(*) FROM bitemporal.app_reference WHERE child_table = 'purchase'"
    ).fetchone() == (0,)
    # Once the parent covers it, the reference is added; dropped, it checks nothing.
    store.app_tables.record("customer", {"id": 1, "name": "ada"}, valid_from=JAN)
    conn.execute("SELECT bitemporal.add_reference('purchase', ARRAY['customer_id'], 'customer')")
    conn.execute("SELECT bitemporal.drop_reference('purchase', 'purchase_customer_id_fkey')")
    store.app_tables.record("purchase", buy(8, 1, 5))
    indexes = conn.execute(
        "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'purchase_customer%%_idx'"
    ).fetchone()
    assert indexes == (0,)


def test_other_shapes_are_refused_and_nothing_changes(conn: psycopg.Connection[Any]) -> None:
    def refused(child: str, column: str, parent: str) -> str:
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(
                "SELECT bitemporal.add_reference(%s::regclass, %s, %s::regclass, 'r')",
                (child, [column], parent),
            )
        assert caught.value.sqlstate == "BT502", caught.value
        return str(caught.value)

    # A distributed table and one on the coordinator, either way round.
    assert "public.purchase is distributed and public.local_customer is not" in refused(
        "purchase", "customer_id", "local_customer"
    )
    assert "is distributed and" in refused("local_purchase", "customer_id", "customer")
    # A child distributed by another column than the one naming the parent's.
    conn.execute("CREATE TABLE line (purchase_id integer, customer_id integer)")
    conn.execute("SELECT bitemporal.enable_table('line', ARRAY['purchase_id', 'customer_id'])")
    conn.execute("SELECT bitemporal.distribute_table('line')")
    assert "distributed by purchase_id" in refused("line", "customer_id", "customer")
    # Tables that are not co-located.
    conn.execute("SELECT update_distributed_table_colocation('line', colocate_with => 'none')")
    conn.execute("SELECT update_distributed_table_colocation('line_key', colocate_with => 'line')")
    assert "are not co-located" in refused("line", "purchase_id", "customer")
    assert conn.execute("SELECT count(*) FROM bitemporal.app_reference").fetchone() == (2,)
    assert not conn.execute("SELECT FROM pg_indexes WHERE indexname = 'r_idx'").fetchall()


def test_a_table_with_references_is_still_not_distributed(
    conn: psycopg.Connection[Any],
) -> None:
    # Distributing one end of an existing reference would leave its triggers to run on a
    # worker: drop the reference, distribute both ends, then add it again.
    with pytest.raises(psycopg.Error, match="temporal references") as refused:
        conn.execute("SELECT bitemporal.distribute_table('local_customer')")
    assert refused.value.sqlstate == "BT502"
    assert not conn.execute(
        "SELECT FROM pg_dist_partition WHERE logicalrelid = 'local_customer'::regclass"
    ).fetchall()


def test_a_write_waiting_for_the_reference_being_added_is_checked(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as setup:
        setup.execute("SELECT bitemporal.drop_reference('purchase', 'purchase_customer')")
        store = Store(setup)
        store.app_tables.record("customer", {"id": 6, "name": "gus"}, valid_from=JAN)
        store.app_tables.record("purchase", buy(6, 1, 1), valid_from=MAR)
    with psycopg.connect(url) as adding, psycopg.connect(url) as writing:
        adding.execute(
            "SELECT bitemporal.add_reference('purchase', ARRAY['customer_id'], 'customer')"
        )
        outcome = _waiting_write(
            adding, writing, lambda store: store.app_tables.retract("customer", {"id": 6})
        )
    assert outcome == "refused"
