"""Frozen values built fast from rows the database has already checked.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (the
class's own ``__setattr__`` refuses), several times slower per field than a plain
attribute store: building the ``Version`` objects of a history of thousands of versions
took more time than fetching their rows (issue 15). A class's :func:`twin` is a mutable
class with the same fields in the same slots (so the same memory layout): an instance of
the twin, its fields filled with plain stores, becomes an instance of the class itself by
``__class__`` assignment, which Python allows between classes of the same layout.
:func:`builder` gives a constructor that does this; a reader of many rows may fill the
twins itself, several objects in one function call (``bitemporal.facts``: a version and
its two periods). The result is what the class's own constructor gives (type, equality,
hash, repr, immutability), except that ``__post_init__`` does not run: for values whose
checks the database has made (its constraints), not for input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def twin(cls: type[Any]) -> type[Any]:
    """The mutable twin of ``cls`` (a frozen dataclass with slots, defaults as plain
    values, no default factory): an instance made by ``object.__new__(twin)`` has no field
    set, not even those with defaults; once every field is stored, assigning
    ``__class__ = cls`` makes it a ``cls``."""
    fields = dataclasses.fields(cls)
    if not all(f.default_factory is dataclasses.MISSING for f in fields):
        raise TypeError(f"{cls.__name__}: no field may have a default factory")
    fields_twin = dataclasses.make_dataclass(
        f"_{cls.__name__}Fields",
        [
            (f.name, f.type)
            if f.default is dataclasses.MISSING
            else (f.name, f.type, dataclasses.field(default=f.default))
            for f in fields
        ],
        slots=True,
        eq=False,
        match_args=False,
    )
    if vars(fields_twin)["__slots__"] != vars(cls).get("__slots__"):
        raise TypeError(f"{cls.__name__} must be a dataclass with slots")
    return fields_twin


def builder(cls: type[T]) -> Callable[..., T]:
    """A constructor of ``cls`` (as :func:`twin` requires) taking every field as a
    positional argument in the class's order: those of its ``__init__``, and those its
    ``__post_init__`` computes (``init=False``), which the caller computes instead, as
    ``__post_init__`` does not run (see the module docstring)."""
    fields_twin = twin(cls)

    def build(*args: Any) -> T:
        value = fields_twin(*args)
        value.__class__ = cls
        return value  # type: ignore[no-any-return]

    build.__doc__ = f"A {cls.__name__}, checked by the database already (bitemporal.builders)."
    return build
