"""The error hierarchy (no database)."""

from __future__ import annotations

from bitemporal import BitemporalError, errors


def test_each_sqlstate_names_one_class() -> None:
    declared = [cls for cls in errors._subclasses(BitemporalError) if cls.sqlstate is not None]
    assert len({cls.sqlstate for cls in declared}) == len(declared)
    assert {cls.sqlstate for cls in declared} == set(errors._BY_SQLSTATE)
