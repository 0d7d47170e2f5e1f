"""Application tables: an application's own tables made bitemporal, with temporal references.

The knowledge-time rule of bitemporal.lock_key moves into functions of its own
(facts_write.v2.sql), shared by the fact store and application tables; the
downgrade restores version 1 of lock_key from facts_write.v1.sql.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_write.v2.sql", "tables.v1.sql")


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SELECT bitemporal.grant_roles()")


def downgrade() -> None:
    # Application tables made bitemporal belong to the application's own
    # migrations, which drop them (drop_bitemporal_table) before this runs.
    op.execute(
        """
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM bitemporal.app_table) THEN
                RAISE EXCEPTION 'bitemporal application tables still exist: %',
                    (SELECT string_agg(format('%I.%I', table_schema, table_name), ', ') FROM bitemporal.app_table)
                    USING ERRCODE = 'BT402',
                          HINT = 'Downgrade the application''s migrations that created them first.';
            END IF;
        END;
        $$;
        DROP FUNCTION bitemporal.disable_table(regclass);
        DROP FUNCTION bitemporal.refresh_table(regclass);
        DROP FUNCTION bitemporal.drop_table(regclass);
        DROP FUNCTION bitemporal.drop_table_functions(bitemporal.app_table);
        DROP FUNCTION bitemporal.drop_reference(regclass, text);
        DROP FUNCTION bitemporal.add_reference(regclass, text[], regclass, text);
        DROP FUNCTION bitemporal.reference_parent_check();
        DROP FUNCTION bitemporal.reference_child_check();
        DROP FUNCTION bitemporal.check_reference(bitemporal.app_reference, bigint);
        DROP TABLE bitemporal.app_reference;
        DROP FUNCTION bitemporal.enable_table(regclass, text[], timestamptz);
        DROP FUNCTION bitemporal.create_table_functions(regclass);
        DROP FUNCTION bitemporal.table_guard();
        DROP FUNCTION bitemporal.table_changes(regclass, timestamptz, timestamptz);
        DROP FUNCTION bitemporal.require_table_key(anyelement);
        DROP FUNCTION bitemporal.table_retract(anyelement, timestamptz, timestamptz, timestamptz);
        DROP FUNCTION bitemporal.table_record(anyelement, timestamptz, timestamptz, timestamptz);
        DROP FUNCTION bitemporal.check_table_references(bitemporal.app_table);
        DROP FUNCTION bitemporal.table_cut(bitemporal.app_table, anyelement, tstzrange, timestamptz);
        DROP FUNCTION bitemporal.advance_table_key(bitemporal.app_table, anyelement, timestamptz);
        DROP FUNCTION bitemporal.lock_table_key(bitemporal.app_table, anyelement, timestamptz, boolean);
        DROP FUNCTION bitemporal.key_text(bitemporal.app_table, anyelement);
        DROP FUNCTION bitemporal.key_match(bitemporal.app_table, text, text);
        DROP FUNCTION bitemporal.column_list(text[], text);
        DROP FUNCTION bitemporal.row_relation(regtype);
        DROP FUNCTION bitemporal.table_definition(regclass);
        DROP TABLE bitemporal.app_table;
        """
    )
    op.execute(previous_definition("facts_write.v1.sql", "bitemporal.lock_key"))
    op.execute(
        """
        DROP FUNCTION bitemporal.knowledge_time(timestamptz, timestamptz, xid8, text);
        DROP FUNCTION bitemporal.check_knowledge_time(timestamptz);
        """
    )
