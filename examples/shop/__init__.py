"""An example application: products and prices, bitemporal, migrated with Alembic."""
