"""Suppliers get a history: the existing rows become versions valid from 2020.

Revision ID: shop0002
"""

from datetime import UTC, datetime

from alembic import op

import bitemporal.alembic_ops  # noqa: F401

revision = "shop0002"
down_revision = "shop0001"


def upgrade():
    op.convert_to_bitemporal(
        "supplier", key=["id"], valid_from=datetime(2020, 1, 1, tzinfo=UTC), schema="shop"
    )


def downgrade():
    # Refused (BT402) once anything was recorded since: that history would be lost.
    op.convert_from_bitemporal("supplier", schema="shop")
