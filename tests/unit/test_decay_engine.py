"""The decay arithmetic and the in-memory engine, without a database.

The numbers come from the issue ("Decay for working memory", point 2); each is
checked against the formula it comes from, not only against its rounding.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bitemporal import (
    DecayPolicy,
    InMemoryMemory,
    InvalidInputError,
    InvalidKeyError,
    InvalidMemoryNameError,
    InvalidPolicyError,
    InvalidStabilityError,
    Key,
    UnknownItemError,
    WindowPolicy,
)
from bitemporal.decay import MAX_STABILITY, decay_crossing, decay_retention


def serial_stability(baseline: float, recalls: int) -> float:
    """S after ``recalls`` recalls: registration is use 1, recall k brings the count to k + 1."""
    s = baseline
    for count in range(2, recalls + 2):
        s = s * (1 + math.log(1 + count))
    return s


def steps_until_evicted(memory: InMemoryMemory, item: str, limit: int = 1000) -> int:
    """How many turns had elapsed since registration at the step that evicted ``item``."""
    registered = next(i.registered_turn for i in memory.items() if i.item_id == item)
    for _ in range(limit):
        turn = memory.turn
        if item in memory.step():
            return turn - registered
    raise AssertionError(f"{item} was never evicted")


# --- the numbers ------------------------------------------------------------


def test_unrecalled_item_crosses_after_12_88_turns_and_goes_at_13() -> None:
    policy = DecayPolicy()
    assert (policy.threshold, policy.baseline_stability) == (0.20, 8.0)
    assert 8.0 * math.log(1 / 0.20) == pytest.approx(12.88, abs=0.005)
    assert policy.retention(12, 8.0) >= 0.20 > policy.retention(13, 8.0)

    memory = InMemoryMemory(policy)
    memory.register("noise")
    assert steps_until_evicted(memory, "noise") == 13
    assert not memory.is_present("noise")


def test_four_recalls_give_s_291_7_and_0_684_after_111_silent_turns() -> None:
    memory = InMemoryMemory(DecayPolicy())
    memory.register("rule")
    for _ in range(4):
        assert memory.recall("rule")
        memory.step()
    s = memory.stability("rule")
    assert s == serial_stability(8.0, 4)
    assert s == pytest.approx(291.7, abs=0.2)  # the issue rounds 291.86 to 291.7
    item = next(i for i in memory.items() if i.item_id == "rule")
    assert item.recall_count == 5
    last = item.last_touched_turn
    while memory.turn - last < 111:
        assert memory.step() == []
    assert memory.turn - last == 111
    assert memory.retention("rule") == math.exp(-111 / s)
    assert round(memory.retention("rule"), 3) == 0.684


def test_at_15_turns_never_recalled_is_0_153_and_reinforced_is_0_950() -> None:
    memory = InMemoryMemory(DecayPolicy())
    # Pinned, so that the never-recalled item is still there to be measured
    # (unpinned it is evicted at 13 turns); retention decays all the same.
    memory.register("once", pinned=True)
    memory.register("used")
    for _ in range(4):
        memory.recall("used")
    for _ in range(15):
        memory.step()
    assert round(memory.retention("once"), 3) == 0.153
    assert round(memory.retention("used"), 3) == 0.950
    assert memory.retention("once") == math.exp(-15 / 8)


# --- window semantics ---------------------------------------------------------------


def test_window_evicts_when_elapsed_exceeds_the_window() -> None:
    memory = InMemoryMemory(WindowPolicy(window=15))
    memory.register("a")
    memory.register("b")
    for _ in range(10):
        memory.step()
    assert memory.recall("b")
    assert memory.stability("b") is None  # no stability under the window
    assert steps_until_evicted(memory, "a") == 16
    # b was touched at turn 11: retention 1 inside the window, 0 outside.
    while memory.turn - 11 <= 15:
        assert memory.retention("b") == 1.0
        assert memory.step() == []
    assert memory.retention("b") == 0.0 and memory.is_present("b")
    assert memory.step() == ["b"]
    assert memory.retention("b") == 0.0


def test_window_ignores_recall_count() -> None:
    memory = InMemoryMemory(WindowPolicy(window=3))
    memory.register("used")
    memory.register("once")
    for _ in range(10):
        memory.recall("used")
    evicted = [memory.step() for _ in range(5)]
    assert evicted == [[], [], [], [], ["used", "once"]]


# --- registration, pins, recall ------------------------------------------------------


def test_step_returns_evictions_in_registration_order_and_reregistering_moves_to_the_end() -> None:
    memory = InMemoryMemory(WindowPolicy(window=1))
    for name in ("c", "a", "b"):
        memory.register(name)
    memory.register("c")  # a fresh registration: now the last one
    memory.step()
    assert memory.step() == []
    assert memory.step() == ["a", "b", "c"]
    assert [i.item_id for i in memory.items()] == ["a", "b", "c"]


def test_registering_resets_a_present_item_and_brings_back_an_evicted_one() -> None:
    memory = InMemoryMemory(DecayPolicy())
    memory.register("x")
    memory.recall("x")
    memory.step()
    memory.register("x")
    item = memory.items()[0]
    assert (item.recall_count, item.stability, item.registered_turn) == (1, 8.0, 2)
    steps_until_evicted(memory, "x")
    assert not memory.recall("x")
    back = memory.register("x")
    assert back.present and back.evicted_turn is None and back.registered_turn == memory.turn
    assert memory.recall("x")


def test_pinned_items_are_never_evicted() -> None:
    memory = InMemoryMemory(DecayPolicy())
    memory.register("pin", pinned=True)
    memory.register("free")
    evicted = [x for _ in range(200) for x in memory.step()]
    assert evicted == ["free"]
    assert memory.is_present("pin") and memory.retention("pin") < 1e-10
    assert memory.items()[0].crossing_turn is None
    assert memory.recall("pin")
    assert memory.working_set_size() == 1


def test_recall_of_unknown_or_evicted_returns_false_and_changes_nothing() -> None:
    memory = InMemoryMemory(WindowPolicy(window=1))
    memory.register("x")
    memory.step()
    memory.step()
    assert memory.step() == ["x"]
    before = (memory.items(), memory.turn, memory.working_set_size())
    assert not memory.recall("x")
    assert not memory.recall("never")
    assert (memory.items(), memory.turn, memory.working_set_size()) == before
    assert not memory.is_present("never")


def test_own_stability_and_key() -> None:
    memory = InMemoryMemory(DecayPolicy())
    key = Key("mailer:prod", "attachment_limit_mb")
    item = memory.register("important", stability=100.0, key=key)
    assert (item.stability, item.key) == (100.0, key)
    assert steps_until_evicted(memory, "important") == math.floor(100 * math.log(5)) + 1


def test_stability_saturates_instead_of_overflowing() -> None:
    memory = InMemoryMemory(DecayPolicy())
    memory.register("x")
    for _ in range(400):
        memory.recall("x")
    assert memory.stability("x") == MAX_STABILITY
    assert math.isfinite(memory.items()[0].crossing_turn or math.inf)


# --- arithmetic edges -------------------------------------------------------------------


def test_retention_never_raises_and_matches_exp() -> None:
    assert decay_retention(0, 1e-300) == 1.0
    assert decay_retention(10**15, 1e-300) == 0.0  # the quotient alone would overflow
    for elapsed in (700, 740, 745, 745.5, 746, 800):
        assert decay_retention(int(elapsed), 1.0) == math.exp(-int(elapsed))


@given(
    last=st.integers(1, 10**6),
    stability=st.floats(0.01, 1e4),
    steps=st.integers(1, 200),
)
def test_crossing_sits_exactly_on_the_boundary_of_the_direct_comparison(
    last: int, stability: float, steps: int
) -> None:
    """Thresholds equal to a retention value put an item exactly on the boundary."""
    threshold = decay_retention(steps, stability)
    if not 0.0 < threshold < 1.0:
        return
    crossing = decay_crossing(last, stability, threshold)
    for turn in range(max(last, math.floor(crossing) - 2), math.floor(crossing) + 3):
        below = decay_retention(turn - last, stability) < threshold
        assert (turn > crossing) == below, (turn, crossing)
    # On the boundary itself retention equals the threshold: not below, kept.
    assert not decay_retention(steps, stability) < threshold
    assert crossing >= last + steps


def test_item_exactly_on_the_boundary_is_kept_then_evicted_by_the_next_step() -> None:
    threshold = math.exp(-1.0)  # with S = 8 retention equals it at exactly 8 turns
    memory = InMemoryMemory(DecayPolicy(threshold=threshold, baseline_stability=8.0))
    memory.register("edge")
    assert memory.items()[0].crossing_turn == 1 + 8.0
    assert steps_until_evicted(memory, "edge") == 9


@settings(max_examples=60)
@given(threshold=st.floats(0.01, 0.99), stability=st.floats(0.1, 500.0))
def test_in_memory_eviction_turn_matches_the_crossing_turn(
    threshold: float, stability: float
) -> None:
    memory = InMemoryMemory(DecayPolicy(threshold=threshold, baseline_stability=8.0))
    item = memory.register("x", stability=stability)
    assert item.crossing_turn is not None
    elapsed = steps_until_evicted(memory, "x", limit=10_000)
    assert elapsed == math.floor(item.crossing_turn) + 1 - item.last_touched_turn


# --- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 0.0},
        {"threshold": 1.0},
        {"threshold": -0.1},
        {"threshold": 1.5},
        {"threshold": math.nan},
        {"threshold": math.inf},
        {"threshold": True},
        {"threshold": "0.2"},
        {"baseline_stability": 0.0},
        {"baseline_stability": -8.0},
        {"baseline_stability": math.nan},
        {"baseline_stability": math.inf},
        {"baseline_stability": 1e301},
        {"baseline_stability": 1e-301},
    ],
)
def test_bad_decay_policy(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidPolicyError) as raised:
        DecayPolicy(**kwargs)  # type: ignore[arg-type]
    assert isinstance(raised.value, InvalidInputError) and isinstance(raised.value, ValueError)


@pytest.mark.parametrize("window", [0, -1, 1.5, True, "15", 2**53 + 1])
def test_bad_window_policy(window: object) -> None:
    with pytest.raises(InvalidPolicyError):
        WindowPolicy(window=window)  # type: ignore[arg-type]


def test_policies_normalise_numbers() -> None:
    assert DecayPolicy(threshold=0.2, baseline_stability=8) == DecayPolicy()
    assert WindowPolicy() == WindowPolicy(window=15)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda m: m.register(""), InvalidMemoryNameError),
        (lambda m: m.register(5), InvalidMemoryNameError),
        (lambda m: m.register("a\x00b"), InvalidMemoryNameError),
        (lambda m: m.register("x" * 1025), InvalidMemoryNameError),
        (lambda m: m.register("x", stability=0.0), InvalidStabilityError),
        (lambda m: m.register("x", stability=-1.0), InvalidStabilityError),
        (lambda m: m.register("x", stability=math.nan), InvalidStabilityError),
        (lambda m: m.register("x", stability=math.inf), InvalidStabilityError),
        (lambda m: m.register("x", stability="8"), InvalidStabilityError),
        (lambda m: m.register("x", key=("e", "a")), InvalidKeyError),
        (lambda m: m.register("x", pinned="yes"), InvalidInputError),
        (lambda m: m.register_many(["y", "y"]), InvalidMemoryNameError),
        (lambda m: m.register_many(["y", ""]), InvalidMemoryNameError),
        (lambda m: m.register_many("yz"), InvalidMemoryNameError),
        (lambda m: m.recall(""), InvalidMemoryNameError),
        (lambda m: m.retention("nope"), UnknownItemError),
        (lambda m: m.stability("nope"), UnknownItemError),
    ],
)
def test_bad_input_raises_typed_errors_and_changes_nothing(
    call: object, error: type[Exception]
) -> None:
    memory = InMemoryMemory(DecayPolicy())
    memory.register("kept")
    before = (memory.items(), memory.turn)
    with pytest.raises(error):
        call(memory)  # type: ignore[operator]
    assert (memory.items(), memory.turn) == before


def test_window_policy_refuses_an_item_stability() -> None:
    memory = InMemoryMemory(WindowPolicy())
    with pytest.raises(InvalidStabilityError):
        memory.register("x", stability=3.0)
    assert memory.items() == []
