"""Deprecated alias (until 1.0) of :mod:`bitemporal.formatting`: text rendering."""

from . import formatting as _formatting
from ._deprecated import forward

__getattr__ = forward(__name__, _formatting)
