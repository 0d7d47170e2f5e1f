"""Citus fixes (issue 14): one transaction id in every time zone, the store's transaction
time for programs, erasures readable through their view.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02

``citus.v2.sql``: ``bitemporal_internal.citus_transaction_id`` hashes the distributed
transaction's stamp as its epoch, not as text in the session's TimeZone (a coordinator
session in another zone than the workers got two ids for one transaction, and the
knowledge trigger refused its second write of a key, BT006); ``bitemporal.transaction_time()``
is the store's transaction time (``now()`` on one node, Citus's stamp of the distributed
transaction once distributed), which ``Store.now()`` asks; on Citus, each role granted
``bitemporal.table_erasures`` may read the columns of ``bitemporal.erasures`` the view
shows (Citus checks the asking role's privileges on a view's shards);
``bitemporal.distribute()`` and ``bitemporal.grant_roles`` grant them.
Nothing changes on plain PostgreSQL but the new function. The downgrade restores
the three functions as they were and drops the new ones.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("citus.v2.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"
PREVIOUS = "citus.v1.sql"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition(PREVIOUS, "bitemporal.distribute"))
    op.execute(previous_definition(PREVIOUS, "bitemporal_internal.citus_transaction_id"))
    op.execute(previous_definition("retention.v1.sql", "bitemporal.grant_roles"))
    op.execute(
        """
        DROP TRIGGER IF EXISTS evidence_version_removed ON bitemporal.evidence;
        DROP FUNCTION bitemporal_internal.citus_evidence_kept();
        DROP FUNCTION bitemporal_internal.citus_erasures_readable();
        DROP FUNCTION bitemporal.transaction_time();
        """
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
