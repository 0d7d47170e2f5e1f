"""Safety: knowledge is never rewritten, values are bounded, notifications show ids only.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

Issue 11's SQL-side findings, on 0009's layout: new helpers go to schema
bitemporal_internal, helpers 0009 moved there are redefined there (same
signature, same SECURITY DEFINER, grants and search_path as 0009 left them),
and the files are loaded under 0009's pinned search_path.

* ``append_only.v2.sql`` (findings 7 and 21): every insert and closing of a
  version is a knowledge event that may not precede the key's latest knowledge,
  for the table owner too; ``bitemporal.fact_key`` only moves forward;
  ``fact_version.recorded_at`` and ``closed_at`` record when each version was
  really written and closed.
* ``provenance.v2.sql`` (finding 17): invalidation notifications carry ids,
  kind and time only; a reader looks an id up in the view
  ``bitemporal.versions``. ``invalidation_channel()`` (a constant) moves to
  bitemporal_internal: the public surface keeps to 45 functions.
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
  ``bitemporal_internal.key_guard`` on every ``<table>_key`` (tables made
  bitemporal before this revision, and later ones through a trigger on
  ``bitemporal.app_table``). The generated functions do not change.

The downgrade drops what this revision added (``recorded_at`` and its values
included) and restores 0009's definitions (surface.v1.sql) of what it
redefined, and ``invalidation_channel()`` to schema bitemporal.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0010"
down_revision = "0009"
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


# 0009's loading mechanism: SQL-standard bodies are bound to pg_catalog when
# created, and nothing the files run resolves a name through the caller's path.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"
# Where 0009 left the definitions this revision replaces.
PREVIOUS = "surface.v1.sql"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    # table_knowledge.v1.sql
    op.execute(
        """
        DO $$
        DECLARE a record;
        BEGIN
            FOR a IN SELECT t.table_schema, t.key_table FROM bitemporal.app_table t LOOP
                EXECUTE pg_catalog.format('DROP TRIGGER bitemporal_append_only ON %I.%I', a.table_schema, a.key_table);
                EXECUTE pg_catalog.format('DROP TRIGGER bitemporal_no_truncate ON %I.%I', a.table_schema, a.key_table);
            END LOOP;
        END;
        $$;
        DROP TRIGGER app_table_guard_key ON bitemporal.app_table;
        DROP FUNCTION bitemporal_internal.app_table_guard_key();
        DROP FUNCTION bitemporal_internal.guard_key_table(text, text);
        """
    )
    op.execute(previous_definition(PREVIOUS, "bitemporal_internal.table_guard"))
    op.execute(previous_definition(PREVIOUS, "bitemporal_internal.fact_version_stamp_insert"))
    op.execute("DROP FUNCTION bitemporal_internal.table_knowledge_event(text, text, anyelement, timestamptz, timestamptz)")
    # values.v1.sql, evidence.v2.sql
    op.execute(
        """
        DROP TRIGGER artifact_detail_check ON bitemporal.artifact;
        DROP FUNCTION bitemporal_internal.artifact_detail_check();
        DROP FUNCTION bitemporal_internal.check_json_value(text, jsonb);
        """
    )
    op.execute(previous_definition(PREVIOUS, "bitemporal_internal.text_search_config"))
    # provenance.v2.sql: the channel function back in bitemporal, with its comment.
    op.execute("ALTER FUNCTION bitemporal_internal.invalidation_channel() SET SCHEMA bitemporal")
    op.execute(previous_definition("provenance.v1.sql", "bitemporal.invalidation_channel"))
    op.execute(previous_definition(PREVIOUS, "bitemporal_internal.fact_version_notify_closed"))
    # facts_bulk.v2.sql, facts_write.v3.sql (0009's record_many is SECURITY
    # DEFINER in its text; CREATE OR REPLACE keeps the grants).
    op.execute(previous_definition(PREVIOUS, "bitemporal.record_many"))
    op.execute(previous_definition(PREVIOUS, "bitemporal_internal.lock_key"))
    # append_only.v2.sql, settled.v1.sql
    op.execute(
        """
        DROP TRIGGER fact_version_knowledge ON bitemporal.fact_version;
        DROP FUNCTION bitemporal_internal.fact_version_knowledge();
        DROP TRIGGER fact_key_no_truncate ON bitemporal.fact_key;
        DROP TRIGGER fact_key_append_only ON bitemporal.fact_key;
        DROP FUNCTION bitemporal_internal.key_guard();
        ALTER TABLE bitemporal.fact_version DROP COLUMN closed_at, DROP COLUMN recorded_at;
        DROP FUNCTION bitemporal.settled_knowledge_time();
        DROP FUNCTION bitemporal_internal.announce_knowledge(timestamptz, boolean);
        DROP FUNCTION bitemporal_internal.knowledge_from_micros(bigint);
        DROP FUNCTION bitemporal_internal.knowledge_micros(timestamptz);
        DROP SEQUENCE bitemporal.knowledge_floor;
        """
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
