"""Suppliers get a history: the existing rows become versions valid from 2020.

Revision ID: shop0002
"""

from datetime import UTC, datetime

from alembic import op

# Registers op.convert_to_bitemporal and friends at run time, where mypy cannot see them:
# hence the type: ignore[attr-defined] on each call.
import bitemporal.alembic_ops  # noqa: F401

revision = "shop0002"
down_revision = "shop0001"


def upgrade() -> None:
    op.convert_to_bitemporal(  # type: ignore[attr-defined]
        "supplier", key=["id"], valid_from=datetime(2020, 1, 1, tzinfo=UTC), schema="shop"
    )


def downgrade() -> None:
    # Refused (BT402) once anything was recorded since: that history would be lost.
    op.convert_from_bitemporal("supplier", schema="shop")  # type: ignore[attr-defined]
