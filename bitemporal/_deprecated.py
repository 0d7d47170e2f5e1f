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
    # stacklevel 3: past this function and the shim to the import statement (the warnings
    # module skips importlib's frames), so the warning names the user's line.
    warnings.warn(
        f"{old} is deprecated and goes at 1.0: import from {names}",
        DeprecationWarning,
        stacklevel=3,
    )

    def __getattr__(name: str) -> Any:
        for module in new:
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r}")

    return __getattr__
