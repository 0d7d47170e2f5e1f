"""The catalogue: bitemporal products and prices, an ordinary supplier table.

Revision ID: shop0001
"""

import sqlalchemy as sa
from alembic import op

import bitemporal.alembic_ops  # noqa: F401 - registers op.create_bitemporal_table and friends

revision = "shop0001"
down_revision = None


def upgrade():
    op.execute("CREATE SCHEMA shop")
    op.create_bitemporal_table(
        "product",
        sa.Column("sku", sa.Text),
        sa.Column("name", sa.Text, nullable=False),
        key=["sku"],
        schema="shop",
    )
    op.create_bitemporal_table(
        "price",
        sa.Column("sku", sa.Text),
        sa.Column("currency", sa.Text),
        sa.Column("amount", sa.Numeric(10, 2), nullable=False),
        key=["sku", "currency"],
        schema="shop",
    )
    # At every valid time of a price, its product exists.
    op.create_temporal_reference(
        "price_product", "price", "product", ["sku"], source_schema="shop", referent_schema="shop"
    )
    op.create_table(
        "supplier",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        schema="shop",
    )
    op.execute("INSERT INTO shop.supplier VALUES (1, 'Acme'), (2, 'Globex')")


def downgrade():
    op.drop_table("supplier", schema="shop")
    op.drop_temporal_reference("price_product", "price", source_schema="shop")
    op.drop_bitemporal_table("price", schema="shop")
    op.drop_bitemporal_table("product", schema="shop")
    op.execute("DROP SCHEMA shop")
