"""Erasure of application tables, and retention policies (issue 16, items 1 and 4).

* ``table_erasure.v1.sql``: ``bitemporal_internal.table_erase`` and the generated
  ``<table>_erase(key..., reason)`` (``create_table_functions`` version 3, generated
  here for the tables made bitemporal before); ``table_guard`` version 3 lets an
  erasure clear the value columns of the versions it listed in ``bitemporal.erasures``;
  ``table_record`` version 2 does not take an erased version for one holding a row whose
  value columns are all NULL.
* ``retention.v1.sql``: ``bitemporal.retention_policy``, ``bitemporal.set_retention``
  and ``bitemporal.apply_retention`` (which erases some versions of a key through
  erasure.v1.sql's ``bitemporal_internal.erase_versions`` and ``table_erase``).
* ``bitemporal.erasures`` gets a GIN index on ``version_ids``: "is this version erased"
  is asked for every version an application table's history or as_of returns.

``grant_roles`` (as erasure.v1.sql defines it) gives the eraser alone ``set_retention``
and ``apply_retention``; the upgrade grants them to the eraser, and the view
``bitemporal.table_erasures`` to the roles that may read ``bitemporal.app_table``.

The downgrade drops what this revision added (the policies included) and restores the
previous definitions (erasure.v1.sql, tables.v2.sql, table_knowledge.v1.sql,
surface.v1.sql); the tables' erase functions go, their erased values stay erased.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("table_erasure.v1.sql", "retention.v1.sql")

# 0009's loading mechanism: SQL-standard bodies are bound to pg_catalog when
# created, and nothing the files run resolves a name through the caller's path.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

# Every table's functions generated again (as migration 0009 does).
REGENERATE_TABLES = (
    "SELECT bitemporal_internal.regenerate_table("
    "pg_catalog.format('%I.%I', a.table_schema, a.table_name)::regclass) "
    "FROM bitemporal.app_table a ORDER BY a.table_schema, a.table_name"
)


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute(
        "CREATE INDEX erasures_version_ids_idx ON bitemporal.erasures USING gin (version_ids)"
    )
    op.execute(
        "COMMENT ON INDEX bitemporal.erasures_version_ids_idx IS "
        "'Which erasures list a version (version_ids @> ARRAY[id]).'"
    )
    op.execute(REGENERATE_TABLES)
    # The eraser gets set_retention and apply_retention (the other roles' grants stay as
    # they were); whoever may read the registry of application tables (the reader and
    # auditor roles granted before) may read which of their versions are erased.
    op.execute("SELECT bitemporal.grant_roles(reader => NULL, writer => NULL, auditor => NULL)")
    op.execute(
        """
        DO $$
        DECLARE grantee text;
        BEGIN
            FOR grantee IN
                SELECT DISTINCT pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee))
                  FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
                 WHERE c.oid = 'bitemporal.app_table'::regclass AND a.privilege_type = 'SELECT'
                   AND a.grantee <> 0 AND a.grantee <> c.relowner
            LOOP
                EXECUTE pg_catalog.format('GRANT SELECT ON bitemporal.table_erasures TO %s', grantee);
            END LOOP;
        END;
        $$;
        """
    )
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("erasure.v1.sql", "bitemporal.grant_roles"))
    op.execute(
        """
        DROP FUNCTION bitemporal.apply_retention();
        DROP FUNCTION bitemporal.set_retention(text, interval, text);
        DROP TABLE bitemporal.retention_policy;
        DROP INDEX bitemporal.erasures_version_ids_idx;
        """
    )
    # The generated erase functions go first (regenerate_table gives the functions it
    # makes the grants of those at the same position, and version 2 makes five).
    op.execute(
        """
        DO $$
        DECLARE a record;
        BEGIN
            FOR a IN SELECT t.table_schema, t.table_name, t.functions FROM bitemporal.app_table t LOOP
                EXECUTE pg_catalog.format('DROP FUNCTION %s', a.functions[6]);
                UPDATE bitemporal.app_table t SET functions = a.functions[1:5]
                 WHERE t.table_schema = a.table_schema AND t.table_name = a.table_name;
            END LOOP;
        END;
        $$;
        """
    )
    op.execute(previous_definition("tables.v2.sql", "bitemporal_internal.create_table_functions"))
    op.execute(previous_definition("table_knowledge.v1.sql", "bitemporal_internal.table_guard"))
    op.execute(previous_definition("surface.v1.sql", "bitemporal_internal.table_record"))
    op.execute(
        """
        DROP FUNCTION bitemporal_internal.table_erasing(regclass, anyelement, anyelement);
        DROP FUNCTION bitemporal_internal.table_erase(anyelement, text, text, bigint[]);
        DROP VIEW bitemporal.table_erasures;
        """
    )
    op.execute(REGENERATE_TABLES)
    op.execute("SET LOCAL search_path TO DEFAULT")
