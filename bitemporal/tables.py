"""Deprecated alias (until 1.0) of :mod:`bitemporal.metadata`: the SQLAlchemy description of
the store's own tables.
"""

from . import metadata as _metadata
from ._deprecated import forward

__getattr__ = forward(__name__, _metadata)
