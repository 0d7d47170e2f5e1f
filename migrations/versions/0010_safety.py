"""Safety: knowledge is never rewritten, values are bounded, notifications show ids only.

Revision ID: 0010
Revises: 0008
Create Date: 2026-12-01

Issue 11's SQL-side findings:

* ``append_only.v2.sql`` (findings 7 and 21): every insert and closing of a
  version is a knowledge event that may not precede the key's latest knowledge,
  for the table owner too; ``bitemporal.fact_key`` only moves forward;
  ``fact_version.recorded_at`` and ``closed_at`` record when each version was
  really written and closed.
* ``provenance.v2.sql`` (finding 17): invalidation notifications carry ids,
  kind and time only; ``bitemporal.version(id)`` resolves an id for a reader.
* ``evidence.v2.sql`` (finding 5): evidence refuses a text search
  configuration in a temporary schema.
* ``settled.v1.sql``, ``facts_write.v3.sql``, ``facts_bulk.v2.sql`` (finding
  8): ``bitemporal.settled_knowledge_time()``, a knowledge time whose answers
  never change; ``lock_key`` and ``record_many`` announce their knowledge
  times to it.
* ``values.v1.sql`` (finding 6, SQL part): jsonb values of fact versions and
  application tables, and artifacts' detail, are refused (BT007) beyond what
  Python reads back.
* ``table_knowledge.v1.sql`` (finding 7 for application tables): the same
  knowledge rule through the trigger functions the tables share, and
  ``bitemporal.key_guard`` on every ``<table>_key``.

The downgrade drops what this revision added (``recorded_at`` and its values
included) and restores the previous definitions of what it redefined.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0010"
down_revision = "0008"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = (
    "settled.v1.sql",
    "append_only.v2.sql",
    "facts_write.v3.sql",
    "facts_bulk.v2.sql",
    "provenance.v2.sql",
    "evidence.v2.sql",
    "values.v1.sql",
    "table_knowledge.v1.sql",
)


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))


def downgrade() -> None:
    # table_knowledge.v1.sql
    op.execute(
        """
        DO $$
        DECLARE a record;
        BEGIN
            FOR a IN SELECT t.table_schema, t.key_table FROM bitemporal.app_table t LOOP
                EXECUTE format('DROP TRIGGER bitemporal_append_only ON %I.%I', a.table_schema, a.key_table);
                EXECUTE format('DROP TRIGGER bitemporal_no_truncate ON %I.%I', a.table_schema, a.key_table);
            END LOOP;
        END;
        $$;
        DROP TRIGGER app_table_guard_key ON bitemporal.app_table;
        DROP FUNCTION bitemporal.app_table_guard_key();
        DROP FUNCTION bitemporal.guard_key_table(text, text);
        """
    )
    op.execute(previous_definition("tables.v1.sql", "bitemporal.table_guard"))
    op.execute(previous_definition("append_only.v1.sql", "bitemporal.fact_version_stamp_insert"))
    op.execute("DROP FUNCTION bitemporal.table_knowledge_event(text, text, anyelement, timestamptz, timestamptz)")
    # values.v1.sql, evidence.v2.sql, provenance.v2.sql
    op.execute(
        """
        DROP TRIGGER artifact_detail_check ON bitemporal.artifact;
        DROP FUNCTION bitemporal.artifact_detail_check();
        DROP FUNCTION bitemporal.check_json_value(text, jsonb);
        """
    )
    op.execute(previous_definition("evidence.v1.sql", "bitemporal.text_search_config"))
    op.execute(previous_definition("provenance.v1.sql", "bitemporal.fact_version_notify_closed"))
    op.execute("DROP FUNCTION bitemporal.version(bigint)")
    # facts_bulk.v2.sql, facts_write.v3.sql; version 1 of record_many is not
    # SECURITY DEFINER in its text: migration 0005 made it so.
    op.execute(previous_definition("facts_bulk.v1.sql", "bitemporal.record_many"))
    op.execute("SELECT bitemporal.secure_write_function('bitemporal.record_many(bitemporal.batch_row[], integer)')")
    op.execute(previous_definition("facts_write.v2.sql", "bitemporal.lock_key"))
    # append_only.v2.sql, settled.v1.sql
    op.execute(
        """
        DROP TRIGGER fact_version_knowledge ON bitemporal.fact_version;
        DROP FUNCTION bitemporal.fact_version_knowledge();
        DROP TRIGGER fact_key_no_truncate ON bitemporal.fact_key;
        DROP TRIGGER fact_key_append_only ON bitemporal.fact_key;
        DROP FUNCTION bitemporal.key_guard();
        ALTER TABLE bitemporal.fact_version DROP COLUMN closed_at, DROP COLUMN recorded_at;
        DROP FUNCTION bitemporal.settled_knowledge_time();
        DROP FUNCTION bitemporal.announce_knowledge(timestamptz, boolean);
        DROP FUNCTION bitemporal.knowledge_from_micros(bigint);
        DROP FUNCTION bitemporal.knowledge_micros(timestamptz);
        DROP SEQUENCE bitemporal.knowledge_floor;
        """
    )
