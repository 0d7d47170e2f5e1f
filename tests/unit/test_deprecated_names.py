"""The module names renamed before 1.0 still import, warn, and give the same objects."""

from __future__ import annotations

import importlib
import sys

import pytest

import bitemporal
from bitemporal import (
    alembic_ops,
    answers,
    app_tables,
    cli_output,
    errors,
    formatting,
    importing,
    metadata,
    record_many,
    reply_check,
)

#: old module -> (new module, a name users import from the old one)
RENAMED = [
    ("bitemporal.explain", answers, "Explanation"),
    ("bitemporal.explain", reply_check, "CheckReport"),
    ("bitemporal.explain", answers, "human_time"),  # re-exported from formatting
    ("bitemporal.report", formatting, "format_table"),
    ("bitemporal.bulk", record_many, "record_many"),
    ("bitemporal.bulk", record_many, "RecordRow"),
    ("bitemporal.bulk", importing, "import_file"),
    ("bitemporal.bulk", errors, "ImportFailed"),
    ("bitemporal.bulk", cli_output, "print_problems"),
    ("bitemporal.tables", metadata, "metadata"),
    ("bitemporal.applications", app_tables, "ApplicationTables"),
    ("bitemporal.alembic", alembic_ops, "include_object"),
]


@pytest.mark.parametrize(("old", "new", "name"), RENAMED)
def test_an_old_module_name_warns_and_forwards(old: str, new: object, name: str) -> None:
    sys.modules.pop(old, None)  # the warning is given once per import
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated and goes at 1\.0") as caught:
        __import__(old)  # as an import statement does (importlib.import_module adds a frame)
    module = sys.modules[old]
    # The warning points at the import statement, not at the shim.
    assert caught[0].filename == __file__
    assert getattr(module, name) is getattr(new, name)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018


def test_the_package_itself_uses_no_old_name() -> None:
    """Importing the package and its entry points loads no shim."""
    for old in {old for old, _, _ in RENAMED}:
        sys.modules.pop(old, None)
    for name in bitemporal.__all__:
        getattr(bitemporal, name)
    importlib.import_module("bitemporal.cli")
    importlib.import_module("bitemporal.orm")
    assert not {old for old, _, _ in RENAMED} & set(sys.modules)
