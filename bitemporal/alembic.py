"""Deprecated alias (until 1.0) of :mod:`bitemporal.alembic_ops`: the Alembic operations for
application tables.
"""

# Importing alembic_ops registers the operations, as importing this module did.
from . import alembic_ops as _alembic_ops
from ._deprecated import forward

__getattr__ = forward(__name__, _alembic_ops)
