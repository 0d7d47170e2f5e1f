"""Frozen values built fast from rows the database has already checked.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (the
class's own ``__setattr__`` refuses), several times slower per field than a plain
attribute store: building the ``Version`` objects of a history of thousands of versions
took more time than fetching their rows (issue 15). :func:`builder` gives a
constructor that fills a mutable twin of the class (the same fields in the same slots,
so the same memory layout) with plain stores, then makes the object an instance of the
class itself by ``__class__`` assignment, which Python allows between classes of the same
layout. The result is what the class's own constructor gives (type, equality, hash,
repr, immutability), except that ``__post_init__`` does not run: for values whose checks
the database has made (its constraints), not for input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def builder(cls: type[T]) -> Callable[..., T]:
    """A constructor of ``cls`` (a frozen dataclass with slots, defaults as plain values,
    no default factory) taking every field as a positional argument in the class's order:
    those of its ``__init__``, and those its ``__post_init__`` computes (``init=False``),
    which the caller computes instead, as ``__post_init__`` does not run (see the module
    docstring)."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not all(f.default_factory is dataclasses.MISSING for f in fields):
        raise TypeError(f"{cls.__name__}: no field may have a default factory")
    twin = dataclasses.make_dataclass(
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
    if vars(twin)["__slots__"] != vars(cls).get("__slots__"):
        raise TypeError(f"{cls.__name__} must be a dataclass with slots")

    def build(*args: Any) -> T:
        value = twin(*args)
        value.__class__ = cls
        return value  # type: ignore[no-any-return]

    build.__doc__ = f"A {cls.__name__}, checked by the database already (bitemporal.builders)."
    return build
