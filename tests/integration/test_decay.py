"""Working memory in PostgreSQL: the issue's numbers, equality with the in-memory engine,
concurrency, pins, eviction, bad input, the audit log and the step's plan.

Every test works in namespaces of its own (uuid names): the database is shared.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bitemporal import (
    AppendOnlyError,
    BitemporalError,
    DecayPolicy,
    InMemoryMemory,
    InvalidKeyError,
    InvalidMemoryNameError,
    InvalidPolicyError,
    InvalidStabilityError,
    Key,
    Memory,
    PolicyMismatchError,
    Store,
    UnknownItemError,
    UnknownNamespaceError,
    WindowPolicy,
)
from bitemporal.decay import Policy, decay_crossing, decay_retention
from bitemporal.errors import translate


def fresh(prefix: str = "test") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def serial_stability(baseline: float, recalls: int) -> float:
    s = baseline
    for count in range(2, recalls + 2):
        s = s * (1 + math.log(1 + count))
    return s


def log_rows(
    conn: psycopg.Connection[Any], namespace: str, item: str | None = None
) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT event, turn, recall_count, last_touched_turn, retention, stability_before, "
        "stability_after, crossing_turn FROM bitemporal.memory_log "
        "WHERE namespace = %s AND (%s::text IS NULL OR item_id = %s) ORDER BY log_id",
        (namespace, item, item),
    ).fetchall()


def snapshot(memory: Memory) -> tuple[Any, ...]:
    return (memory.items(), memory.turn, memory.working_set_size())


# --- the numbers, through PostgreSQL ---------------------------------------------


def test_unrecalled_item_is_evicted_by_the_step_at_13_turns(store: Store) -> None:
    memory = store.memory(fresh())
    memory.register("noise")
    evicted_at = None
    for _ in range(20):
        turn = memory.turn
        if memory.step() == ["noise"]:
            evicted_at = turn
            break
    assert evicted_at == 1 + 13
    item = memory.items()[0]
    assert (item.present, item.evicted_turn, item.crossing_turn) == (False, 14, None)
    assert memory.retention("noise") == 0.0


def test_four_recalls_then_111_silent_turns(store: Store) -> None:
    memory = store.memory(fresh())
    memory.register("rule")
    for _ in range(4):
        assert memory.recall("rule")
    s = memory.stability("rule")
    assert s == serial_stability(8.0, 4)
    assert s == pytest.approx(291.7, abs=0.2)
    for _ in range(111):
        assert memory.step() == []
    assert memory.turn == 112
    assert memory.retention("rule") == math.exp(-111 / s)
    assert round(memory.retention("rule"), 3) == 0.684


def test_at_15_turns_0_153_against_0_950(store: Store) -> None:
    memory = store.memory(fresh())
    memory.register("once", pinned=True)  # kept so it can be measured
    memory.register("used")
    for _ in range(4):
        memory.recall("used")
    for _ in range(15):
        memory.step()
    assert round(memory.retention("once"), 3) == 0.153
    assert round(memory.retention("used"), 3) == 0.950


def test_window_policy_through_postgres(store: Store) -> None:
    memory = store.memory(fresh(), WindowPolicy(window=15))
    memory.register("a")
    memory.register("b")
    for _ in range(5):
        memory.step()
    assert memory.recall("b")
    assert memory.stability("b") is None
    gone = {}
    for _ in range(30):
        turn = memory.turn
        for item in memory.step():
            gone[item] = turn
    assert gone == {"a": 1 + 16, "b": 6 + 16}


@pytest.mark.parametrize("steps", [1, 8, 13, 40])
def test_items_exactly_on_the_boundary(store: Store, steps: int) -> None:
    """threshold = the retention at ``steps`` turns: kept at that turn, gone at the next."""
    stability = 8.0
    threshold = decay_retention(steps, stability)
    memory = store.memory(fresh(), DecayPolicy(threshold=threshold, baseline_stability=stability))
    memory.register("edge")
    item = memory.items()[0]
    assert item.crossing_turn == decay_crossing(1, stability, threshold)
    for _ in range(steps):
        assert memory.step() == []
    assert memory.retention("edge") == threshold  # exactly on it: not below
    assert memory.step() == []
    assert memory.step() == ["edge"]
    assert memory.items()[0].evicted_turn == 1 + steps + 1


# --- the same as the in-memory engine, on random sessions ---------------------------------

IDS = ("a", "b", "c", "d", "e")


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    kind = draw(st.sampled_from(["decay", "boundary", "window"]))
    if kind == "window":
        return WindowPolicy(window=draw(st.integers(1, 6)))
    baseline = draw(st.floats(0.5, 12.0))
    if kind == "boundary":
        # Items registered with the baseline sit exactly on the threshold after n turns.
        threshold = decay_retention(draw(st.integers(1, 8)), baseline)
        if not 0.0 < threshold < 1.0:
            threshold = 0.5
    else:
        threshold = draw(st.floats(0.01, 0.99))
    return DecayPolicy(threshold=threshold, baseline_stability=baseline)


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("register"),
            st.sampled_from(IDS),
            st.booleans(),
            st.one_of(st.none(), st.floats(0.2, 30.0)),
        ),
        st.tuples(
            st.just("register_many"), st.lists(st.sampled_from(IDS), unique=True, max_size=3)
        ),
        st.tuples(st.just("recall"), st.sampled_from(IDS)),
        st.tuples(st.just("step")),
        st.tuples(st.just("step")),
        st.tuples(st.just("step")),
    ),
    max_size=35,
)


def apply(memory: Memory | InMemoryMemory, op: tuple[Any, ...]) -> Any:
    name = op[0]
    try:
        if name == "register":
            _, item, pinned, stability = op
            return memory.register(item, pinned=pinned, stability=stability)
        if name == "register_many":
            return memory.register_many(op[1])
        if name == "recall":
            return memory.recall(op[1])
        return memory.step()
    except BitemporalError as exc:
        return type(exc)


def observe(memory: Memory | InMemoryMemory) -> tuple[Any, ...]:
    def safe(fn: Callable[[str], Any], item: str) -> Any:
        try:
            return fn(item)
        except UnknownItemError:
            return "unknown"

    return (
        memory.turn,
        memory.working_set_size(),
        memory.items(),
        [(memory.is_present(i), safe(memory.retention, i), safe(memory.stability, i)) for i in IDS],
    )


@pytest.fixture(scope="module")
def shared_store(database_url: str) -> Iterator[Store]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield Store(conn)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies(), ops=operations)
def test_random_sessions_match_the_in_memory_engine(
    shared_store: Store, policy: Policy, ops: list[tuple[Any, ...]]
) -> None:
    pg = shared_store.memory(fresh("prop"), policy)
    reference = InMemoryMemory(policy)
    for op in ops:
        assert apply(pg, op) == apply(reference, op), op
    assert observe(pg) == observe(reference)


# --- concurrency -----------------------------------------------------------------------------


def run_threads(count: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def guarded(k: int) -> None:
        try:
            target(k)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_concurrent_recalls_are_all_counted(connect: Any) -> None:
    namespace, threads, each = fresh(), 4, 25
    Store(connect()).memory(namespace).register("hot")
    stores = [Store(connect()) for _ in range(threads)]
    barrier = threading.Barrier(threads)

    def recall(k: int) -> None:
        memory = stores[k].memory(namespace)
        barrier.wait()
        for _ in range(each):
            assert memory.recall("hot")

    run_threads(threads, recall)
    memory = Store(connect()).memory(namespace)
    item = memory.items()[0]
    assert item.recall_count == 1 + threads * each
    serial = InMemoryMemory(DecayPolicy())
    serial.register("hot")
    for _ in range(threads * each):
        serial.recall("hot")
    assert item.stability == serial.stability("hot")
    assert item.crossing_turn == serial.items()[0].crossing_turn
    counts = [row[2] for row in log_rows(connect(), namespace, "hot") if row[0] == "recall"]
    assert counts == list(range(2, 2 + threads * each))


def test_concurrent_steps_serialise(connect: Any) -> None:
    namespace, threads, each = fresh(), 3, 10
    memory = Store(connect()).memory(namespace, WindowPolicy(window=2))
    memory.register_many([f"i{k}" for k in range(40)])
    stores = [Store(connect()) for _ in range(threads)]
    evicted: list[list[str]] = [[] for _ in range(threads)]

    def step(k: int) -> None:
        m = stores[k].memory(namespace, WindowPolicy(window=2))
        for _ in range(each):
            evicted[k].extend(m.step())

    run_threads(threads, step)
    assert memory.turn == 1 + threads * each
    assert sorted(x for e in evicted for x in e) == sorted(f"i{k}" for k in range(40))
    assert {i.evicted_turn for i in memory.items()} == {4}


def test_recalls_wait_for_a_step_of_their_namespace(connect: Any) -> None:
    """A recall during a step sees the turn after it: the namespace row serialises them."""
    namespace = fresh()
    Store(connect()).memory(namespace).register("x")
    other = Store(connect()).memory(namespace)
    stepping = connect(autocommit=False)
    stepping.execute("SELECT bitemporal.memory_step(%s)", (namespace,))  # holds the row
    done = threading.Event()

    def recall() -> None:
        assert other.recall("x")
        done.set()

    t = threading.Thread(target=recall)
    t.start()
    assert not done.wait(0.3)
    stepping.commit()
    t.join()
    assert Store(connect()).memory(namespace).items()[0].last_touched_turn == 2


# --- pins, eviction, recall ------------------------------------------------------------------


def test_pinned_items_stay_and_unpinning_lets_them_go(store: Store) -> None:
    memory = store.memory(fresh())
    memory.register("pin", pinned=True)
    memory.register("free")
    evicted = [x for _ in range(60) for x in memory.step()]
    assert evicted == ["free"]
    assert memory.is_present("pin")
    assert memory.items()[0].crossing_turn is None
    assert memory.recall("pin")
    memory.register("pin")  # a fresh registration, unpinned
    evicted = [x for _ in range(20) for x in memory.step()]
    assert evicted == ["pin"]


def test_an_evicted_item_stays_evicted(store: Store) -> None:
    memory = store.memory(fresh(), WindowPolicy(window=1))
    memory.register("x")
    memory.register("y")
    memory.step()
    memory.step()
    assert memory.step() == ["x", "y"]
    before = snapshot(memory)
    log_before = log_rows(store.connection, memory.namespace)
    assert not memory.recall("x")
    assert not memory.recall("unknown")
    assert not memory.is_present("x")
    assert snapshot(memory) == before
    assert log_rows(store.connection, memory.namespace) == log_before
    for _ in range(5):
        assert memory.step() == []
    assert [i.evicted_turn for i in memory.items()] == [3, 3]
    assert [r[0] for r in log_rows(store.connection, memory.namespace, "x")] == [
        "register",
        "evict",
    ]
    memory.register("x")  # explicitly brought back, as new and last
    assert [i.item_id for i in memory.items() if i.present] == ["x"]
    assert [i.item_id for i in memory.items()] == ["y", "x"]


def test_the_log_explains_survival_and_eviction(store: Store) -> None:
    memory = store.memory(fresh())
    memory.register("rule")
    memory.register("noise")
    memory.step()
    memory.recall("rule")
    for _ in range(13):
        memory.step()
    rule = log_rows(store.connection, memory.namespace, "rule")
    assert [r[0] for r in rule] == ["register", "recall"]
    _, turn, count, last, retention, before, after, crossing = rule[1]
    assert (turn, count, last, before) == (2, 2, 1, 8.0)
    assert retention == math.exp(-1 / 8) and after == 8.0 * (1 + math.log(3))
    assert crossing == memory.items()[0].crossing_turn
    noise = log_rows(store.connection, memory.namespace, "noise")
    assert [r[0] for r in noise] == ["register", "evict"]
    assert noise[1][1] == 14 and noise[1][4] < 0.20 <= math.exp(-12 / 8)


def test_the_log_is_append_only(store: Store) -> None:
    memory = store.memory(fresh())
    memory.register("x")
    conn = store.connection
    for statement in (
        "UPDATE bitemporal.memory_log SET retention = 1 WHERE namespace = %s",
        "DELETE FROM bitemporal.memory_log WHERE namespace = %s",
    ):
        with pytest.raises(AppendOnlyError), translate():
            conn.execute(statement, (memory.namespace,))
    with pytest.raises(AppendOnlyError), translate():
        conn.execute("TRUNCATE bitemporal.memory_log")
    assert len(log_rows(conn, memory.namespace)) == 1


def test_items_carry_a_fact_key_that_resolves_against_the_fact_store(store: Store) -> None:
    key = Key(fresh("entity"), "attachment_limit_mb")
    store.facts.record(key, 80, source="policy")
    memory = store.memory(fresh())
    memory.register("limit", key=key)
    assert memory.items()[0].key == key
    rows = store.connection.execute(
        "SELECT i.item_id, v.value FROM bitemporal.memory_item i "
        "CROSS JOIN LATERAL bitemporal.as_of(i.entity, i.attribute) v "
        "WHERE i.namespace = %s AND i.state = 'present'",
        (memory.namespace,),
    ).fetchall()
    assert rows == [("limit", 80)]


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda m: m.register(""), InvalidMemoryNameError),
        (lambda m: m.register("x" * 1025), InvalidMemoryNameError),
        (lambda m: m.register("x", stability=0.0), InvalidStabilityError),
        (lambda m: m.register("x", stability=math.nan), InvalidStabilityError),
        (lambda m: m.register("x", key=("e", "a")), InvalidKeyError),
        (lambda m: m.register_many(["kept", "new", "new"]), InvalidMemoryNameError),
        (lambda m: m.recall(""), InvalidMemoryNameError),
        (lambda m: m.retention("nope"), UnknownItemError),
        (lambda m: m.stability("nope"), UnknownItemError),
    ],
)
def test_bad_input_through_the_api_changes_nothing(
    store: Store, call: Callable[[Memory], Any], error: type[Exception]
) -> None:
    memory = store.memory(fresh())
    memory.register("kept")
    before = (snapshot(memory), log_rows(store.connection, memory.namespace))
    with pytest.raises(error):
        call(memory)
    assert (snapshot(memory), log_rows(store.connection, memory.namespace)) == before


@pytest.mark.parametrize(
    ("sql", "params", "error"),
    [
        ("SELECT bitemporal.memory_ensure_namespace(%s, 'decay', 1.5)", (), InvalidPolicyError),
        ("SELECT bitemporal.memory_ensure_namespace(%s, 'decay', 0)", (), InvalidPolicyError),
        ("SELECT bitemporal.memory_ensure_namespace(%s, 'decay', 'NaN')", (), InvalidPolicyError),
        (
            "SELECT bitemporal.memory_ensure_namespace(%s, 'decay', NULL, -8)",
            (),
            InvalidPolicyError,
        ),
        (
            "SELECT bitemporal.memory_ensure_namespace(%s, 'decay', NULL, 'Infinity')",
            (),
            InvalidPolicyError,
        ),
        (
            "SELECT bitemporal.memory_ensure_namespace(%s, 'window', NULL, NULL, 0)",
            (),
            InvalidPolicyError,
        ),
        ("SELECT bitemporal.memory_ensure_namespace(%s, 'window', 0.2)", (), InvalidPolicyError),
        ("SELECT bitemporal.memory_ensure_namespace(%s, 'lru')", (), InvalidPolicyError),
        ("SELECT bitemporal.memory_ensure_namespace('')", None, InvalidMemoryNameError),
        ("SELECT bitemporal.memory_ensure_namespace(%s, 'window')", (), PolicyMismatchError),
        ("SELECT bitemporal.memory_register(%s, '')", (), InvalidMemoryNameError),
        ("SELECT bitemporal.memory_register(%s, NULL)", (), InvalidMemoryNameError),
        ("SELECT bitemporal.memory_register(%s, 'x', stability => 0)", (), InvalidStabilityError),
        (
            "SELECT bitemporal.memory_register(%s, 'x', stability => 'NaN')",
            (),
            InvalidStabilityError,
        ),
        (
            "SELECT bitemporal.memory_register(%s, 'x', stability => 1e301)",
            (),
            InvalidStabilityError,
        ),
        ("SELECT bitemporal.memory_register(%s, 'x', 'entity')", (), InvalidKeyError),
        ("SELECT bitemporal.memory_register_many(%s, ARRAY['y', 'y'])", (), InvalidMemoryNameError),
        ("SELECT bitemporal.memory_register_many(%s, ARRAY['y', ''])", (), InvalidMemoryNameError),
        ("SELECT bitemporal.memory_register_many(%s, NULL)", (), InvalidMemoryNameError),
        ("SELECT bitemporal.memory_recall('no such namespace', 'x')", None, UnknownNamespaceError),
        ("SELECT bitemporal.memory_step('no such namespace')", None, UnknownNamespaceError),
        ("SELECT bitemporal.memory_retention(%s, 'nope')", (), UnknownItemError),
        ("SELECT bitemporal.memory_stability(%s, 'nope')", (), UnknownItemError),
    ],
)
def test_bad_input_in_sql_raises_its_sqlstate_and_changes_nothing(
    store: Store, sql: str, params: tuple[Any, ...] | None, error: type[BitemporalError]
) -> None:
    memory = store.memory(fresh())
    memory.register("kept")
    before = (snapshot(memory), log_rows(store.connection, memory.namespace))
    with pytest.raises(error) as raised, translate():
        store.connection.execute(sql, None if params is None else (memory.namespace, *params))
    assert isinstance(raised.value.__cause__, psycopg.Error)
    assert raised.value.__cause__.sqlstate == error.sqlstate
    assert (snapshot(memory), log_rows(store.connection, memory.namespace)) == before


def test_window_namespace_refuses_an_item_stability(store: Store) -> None:
    memory = store.memory(fresh(), WindowPolicy())
    with pytest.raises(InvalidStabilityError), translate():
        store.connection.execute(
            "SELECT bitemporal.memory_register(%s, 'x', stability => 3)", (memory.namespace,)
        )
    assert memory.items() == []


def test_a_refused_call_leaves_the_callers_transaction_usable(store: Store) -> None:
    namespace = fresh()
    with store.transaction():
        memory = store.memory(namespace, WindowPolicy())
        memory.register("x")
        with pytest.raises(PolicyMismatchError):
            store.memory(namespace, DecayPolicy())
        memory.register("y")
    assert [i.item_id for i in memory.items()] == ["x", "y"]


def test_unknown_namespace_on_reads(store: Store) -> None:
    with pytest.raises(UnknownNamespaceError), translate():
        store.connection.execute("SELECT bitemporal.memory_turn('no such namespace')")


# --- cost: the step evicts by a range scan of the crossing-turn index ----------------------------


def test_step_evicts_through_the_crossing_turn_index(store: Store, connect: Any) -> None:
    memory = store.memory(fresh("plan"))
    memory.register_many([f"bulk-{i}" for i in range(20_000)], stability=1e9)
    memory.register_many([f"due-{i}" for i in range(5)], stability=0.5)
    conn = connect()
    conn.execute("ANALYZE bitemporal.memory_item")
    try:
        conn.execute("LOAD 'auto_explain'")
    except psycopg.errors.InsufficientPrivilege:
        pytest.skip("auto_explain needs a superuser here")
    for setting in (
        "auto_explain.log_min_duration = 0",
        "auto_explain.log_nested_statements = on",
        "auto_explain.log_level = notice",
    ):
        conn.execute(f"SET {setting}")
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    plans = []
    for _ in range(2):  # the first step and one from the cached plan
        notices.clear()
        evicted = conn.execute("SELECT bitemporal.memory_step(%s)", (memory.namespace,)).fetchone()
        plans.append(next(n for n in notices if "UPDATE bitemporal.memory_item" in n))
    assert evicted == ([f"due-{i}" for i in range(5)],)
    for plan in plans:
        assert "memory_item_crossing_idx" in plan, plan
        assert "Seq Scan on memory_item" not in plan, plan
