"""bitemporal.builders: a value built from a checked row is the value its class's own
constructor gives, in every way a caller can tell (type, equality, hash, repr, pickling,
immutability), while skipping ``__post_init__``, whose computed fields the caller gives."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import UTC, datetime

import pytest

from bitemporal import Answer, Interpretation, Key, Period, Status, Version
from bitemporal.builders import builder, twin
from bitemporal.errors import InvalidPeriodError
from bitemporal.facts import _version
from bitemporal.model import sources_of

START = datetime(2026, 1, 1, tzinfo=UTC)
END = datetime(2026, 2, 1, tzinfo=UTC)


def test_a_built_version_is_the_constructed_one() -> None:
    new_version, new_period = builder(Version), builder(Period)
    built = new_version(7, Key("e", "a"), "s", 1, new_period(START, END), new_period(START, None))
    made = Version(7, Key("e", "a"), "s", 1, Period(START, END), Period(START, None))
    assert type(built) is Version and type(built.valid_period) is Period
    assert built == made and made == built
    assert hash(built) == hash(made) and repr(built) == repr(made)
    assert pickle.loads(pickle.dumps(built)) == made and copy.deepcopy(built) == made
    # The defaults of the fields not given, then every field given.
    assert built.recorded_at is None and built.erasure_id is None
    fields = (7, Key("e", "a"), "s", None, Period(START, END), Period(START, END), "me", 3)
    times = (START, END, END, 9)
    assert new_version(*fields, *times) == Version(*fields, *times)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.source = "t"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.valid_period.end = None  # type: ignore[misc]


def test_post_init_does_not_run() -> None:
    # For rows the database checked: Period's own check is skipped, not repeated.
    assert builder(Period)(END, START).start == END
    with pytest.raises(InvalidPeriodError):
        Period(END, START)


def test_a_field_post_init_computes_is_given() -> None:
    # Answer.sources (init=False): the caller gives what __post_init__ would compute.
    versions = tuple(
        Version(i, Key("e", "a"), source, 1, Period(START, END), Period(START, None))
        for i, source in ((1, "b"), (2, "a"), (3, "b"))
    )
    fields = (Key("e", "a"), Status.CONFLICT, None, (1,), versions, START, END)
    made = Answer(*fields, Interpretation.CURRENT, END)
    built = builder(Answer)(*fields, Interpretation.CURRENT, END, sources_of(versions))
    assert type(built) is Answer and built == made and repr(built) == repr(made)
    assert built.sources == made.sources == ("a", "b")


def test_a_filled_twin_is_the_constructed_value() -> None:
    blank = object.__new__(twin(Period))
    with pytest.raises(AttributeError):
        blank.start  # noqa: B018 (no field is set, not even a default)
    blank.start, blank.end = START, None
    blank.__class__ = Period
    assert type(blank) is Period and blank == Period(START, None)
    assert hash(blank) == hash(Period(START, None)) and repr(blank) == repr(Period(START, None))
    with pytest.raises(dataclasses.FrozenInstanceError):
        blank.end = END  # type: ignore[misc]


def test_a_version_read_from_a_row_is_the_constructed_one() -> None:
    # The columns of as_of and resolve (nine), then history's (thirteen); the value comes
    # as its JSON text, an erased one as None, and an end from 9999-12-30 on is open.
    late = datetime(9999, 12, 30, tzinfo=UTC)
    read = _version(Key("e", "a"), (7, "s", '{"n": 1.5}', START, late, START, END, "me", 3))
    assert read == Version(
        7, Key("e", "a"), "s", {"n": 1.5}, Period(START, None), Period(START, END), "me", 3
    )
    assert type(read) is Version and type(read.valid_period) is Period
    times = (START, END, END, 9)
    read = _version(Key("e", "a"), (7, "s", None, None, END, START, None, None, None, *times))
    made = Version(7, Key("e", "a"), "s", None, Period(None, END), Period(START, None))
    assert read == dataclasses.replace(
        made, recorded_at=START, closed_at=END, erased_at=END, erasure_id=9
    )
    assert read.erased and repr(read) == repr(dataclasses.replace(read))


def test_only_for_slotted_dataclasses_without_factories() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = dataclasses.field(default_factory=list)

    for cls in (NoSlots, Factory):
        with pytest.raises(TypeError):
            builder(cls)
        with pytest.raises(TypeError):
            twin(cls)
