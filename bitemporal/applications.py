"""Deprecated alias (until 1.0) of :mod:`bitemporal.app_tables`: application tables."""

from . import app_tables as _app_tables
from ._deprecated import forward

__getattr__ = forward(__name__, _app_tables)
