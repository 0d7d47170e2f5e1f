"""Old module names kept as aliases until 1.0.

A renamed module leaves behind a shim that warns once, when it is imported, and forwards
every attribute to the module(s) that now hold it::

    from . import answers, reply_check
    from ._deprecated import forward

    __getattr__ = forward(__name__, answers, reply_check)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any


def forward(old: str, *new: ModuleType) -> Callable[[str], Any]:
    """Warn that module ``old`` is deprecated, and return the ``__getattr__`` that finds
    its names in the ``new`` modules, in order."""
    names = " and ".join(module.__name__ for module in new)
    # stacklevel 2: the warning is the shim's, so the package's own use of an old name
    # fails the test suite (pyproject's filterwarnings).
    warnings.warn(f"{old} is deprecated and goes at 1.0: import from {names}",
                  DeprecationWarning, stacklevel=2)

    def __getattr__(name: str) -> Any:
        for module in new:
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r}")

    return __getattr__
