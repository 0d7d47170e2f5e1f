"""Fact store: fact_key and fact_version tables, append-only triggers, read and write functions.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from alembic import op

from bitemporal.migrations import sql_text

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of these files.
FILES = (
    "schema.v1.sql",
    "periods.v1.sql",
    "append_only.v1.sql",
    "facts_write.v1.sql",
    "facts_read.v1.sql",
)


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))


def downgrade() -> None:
    # The schema itself stays: it holds the version table. btree_gist stays
    # too: other schemas may use it.
    op.execute(
        """
        DROP FUNCTION bitemporal.history(text, text);
        DROP FUNCTION bitemporal.resolve(text, text, timestamptz, timestamptz, timestamptz);
        DROP FUNCTION bitemporal.distinct_values(text, text, timestamptz, timestamptz);
        DROP TYPE bitemporal.answer;
        DROP FUNCTION bitemporal.require_key(text, text);
        DROP FUNCTION bitemporal.as_of(text, text, timestamptz, timestamptz);
        DROP VIEW bitemporal.versions;
        DROP FUNCTION bitemporal.retract(text, text, text, timestamptz, timestamptz, timestamptz);
        DROP FUNCTION bitemporal.record(text, text, text, jsonb, timestamptz, timestamptz, timestamptz, text, text);
        DROP FUNCTION bitemporal.cut(text, text, text, tstzrange, timestamptz);
        DROP FUNCTION bitemporal.advance_key(text, text, timestamptz);
        DROP FUNCTION bitemporal.lock_key(text, text, timestamptz, boolean);
        DROP FUNCTION bitemporal.check_key_part(text, text, text);
        DROP TYPE bitemporal.recorded;
        DROP TABLE bitemporal.fact_request;
        DROP TABLE bitemporal.fact_version;
        DROP TABLE bitemporal.fact_key;
        DROP FUNCTION bitemporal.fact_version_guard();
        DROP FUNCTION bitemporal.fact_version_stamp_insert();
        DROP FUNCTION bitemporal.valid_period(timestamptz, timestamptz);
        DROP FUNCTION bitemporal.check_instant(text, timestamptz);
        DROP FUNCTION bitemporal.open_end_sentinel();
        DROP TYPE bitemporal.interpretation;
        DROP TYPE bitemporal.answer_status;
        """
    )
