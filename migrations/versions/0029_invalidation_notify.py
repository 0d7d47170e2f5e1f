"""The invalidation NOTIFY, on or off (issue 15).

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-04

``invalidation_notify.v1.sql``: ``bitemporal.invalidation_notify()`` says whether writes
announce the versions they close on ``bitemporal_invalidation``, and
``bitemporal.set_invalidation_notify(enabled)`` (owner only) switches that trigger on or
off: PostgreSQL commits the transactions that sent a ``NOTIFY`` one at a time, so
concurrent writers of a store whose caches do not listen gain by switching it off. The
trigger stays on, as before, until the owner switches it. The downgrade switches it on again
(migration 0028's store always announces) and drops both functions.
"""

from alembic import op

from bitemporal.migrations import sql_text

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("invalidation_notify.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(
        """
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM pg_catalog.pg_trigger t
                        WHERE t.tgrelid = 'bitemporal.fact_version'::regclass
                          AND t.tgname = 'fact_version_notify_closed') THEN
                ALTER TABLE bitemporal.fact_version ENABLE TRIGGER fact_version_notify_closed;
            END IF;
        END
        $$;
        DROP FUNCTION bitemporal.set_invalidation_notify(boolean);
        DROP FUNCTION bitemporal.invalidation_notify();
        """
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
