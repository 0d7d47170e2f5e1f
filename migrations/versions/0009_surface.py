"""Search path: every function is safe from objects planted in a schema on the caller's search_path.

A function, operator or table named without its schema is looked up along the
caller's search_path when the statement is parsed; one planted in a writable
schema (public, before PostgreSQL 15) that matches the argument types exactly
wins over pg_catalog's, and runs with the caller's rights. After this
migration:

* every PL/pgSQL function (and the one SQL function with polymorphic
  arguments, key_text) runs with search_path = pg_catalog, pg_temp
  (PINNED, set here with ALTER FUNCTION);
* the fact store's SQL functions, which the planner inlines into the caller's
  query (a SET clause would prevent that), get SQL-standard bodies, bound by
  OID when they are created (search_path.v1.sql); the files are loaded under
  SET LOCAL search_path = pg_catalog, pg_temp so that binding finds only
  pg_catalog's objects and schema-qualified ones;
* bitemporal.partition_versions creates those functions again when it
  rebuilds the version table (partitioning.v2.sql);
* enable_table and create_table_functions run with a pinned search_path, so a
  new table's CHECK constraints, index predicates and generated functions are
  bound to pg_catalog; the functions of tables made bitemporal earlier are
  generated again (refresh_table).

The downgrade restores 0008's definitions from the frozen files.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("search_path.v1.sql", "partitioning.v2.sql", "tables.v2.sql")

# Functions of schema bitemporal given SET search_path = pg_catalog, pg_temp
# (they had no SET clause before).
PINNED = (
    "check_instant(text,timestamp with time zone)",
    "valid_period(timestamp with time zone,timestamp with time zone)",
    "fact_version_stamp_insert()",
    "fact_version_guard()",
    "check_key_part(text,text,text)",
    "lock_key(text,text,timestamp with time zone,boolean)",
    "cut(text,text,text,tstzrange,timestamp with time zone)",
    "require_key(text,text)",
    "resolve(text,text,timestamp with time zone,timestamp with time zone,timestamp with time zone)",
    "history(text,text)",
    "memory_log_guard()",
    "memory_exp_or_zero(double precision)",
    "memory_decay_crossing(bigint,double precision,double precision)",
    "memory_check_name(text,text)",
    "memory_check_stability(double precision)",
    "memory_namespace_for_update(text,boolean)",
    "memory_namespace_get(text)",
    "memory_is_present(text,text)",
    "memory_working_set_size(text)",
    "memory_item_get(text,text)",
    "memory_retention(text,text)",
    "memory_stability(text,text)",
    "memory_items(text)",
    "changes(timestamp with time zone,timestamp with time zone,text,text)",
    "text_search_config(text,text)",
    "check_question(timestamp with time zone,timestamp with time zone)",
    "check_limit(integer)",
    "search_evidence(text,timestamp with time zone,timestamp with time zone,integer,text,text,text)",
    "rank_versions(bigint[],double precision[],timestamp with time zone,timestamp with time zone,integer,text,text)",
    "require_vector()",
    "check_embedding(real[],integer)",
    "enable_vector(integer)",
    "nearest_evidence(real[],timestamp with time zone,timestamp with time zone,integer,text,text)",
    "check_artifact_time(text,timestamp with time zone)",
    "answer_since(text,text,timestamp with time zone,timestamp with time zone)",
    "answer_corrected(text,text,timestamp with time zone,timestamp with time zone,timestamp with time zone)",
    "explain(text,text,timestamp with time zone,timestamp with time zone,timestamp with time zone)",
    "secure_write_function(regprocedure)",
    "grant_roles(text,text,text)",
    "revoke_roles(text,text,text)",
    "raise_batch_error(bigint,jsonb)",
    "check_knowledge_time(timestamp with time zone)",
    "knowledge_time(timestamp with time zone,timestamp with time zone,xid8,text)",
    "table_definition(regclass)",
    "key_text(bitemporal.app_table,anyelement)",
    "lock_table_key(bitemporal.app_table,anyelement,timestamp with time zone,boolean)",
    "advance_table_key(bitemporal.app_table,anyelement,timestamp with time zone)",
    "table_cut(bitemporal.app_table,anyelement,tstzrange,timestamp with time zone)",
    "check_table_references(bitemporal.app_table)",
    "table_record(anyelement,timestamp with time zone,timestamp with time zone,timestamp with time zone)",
    "table_retract(anyelement,timestamp with time zone,timestamp with time zone,timestamp with time zone)",
    "require_table_key(anyelement)",
    "table_changes(regclass,timestamp with time zone,timestamp with time zone)",
    "table_guard()",
    "refresh_table(regclass)",
    "check_reference(bitemporal.app_reference,bigint)",
    "reference_child_check()",
    "reference_parent_check()",
    "add_reference(regclass,text[],regclass,text)",
    "drop_reference(regclass,text)",
    "drop_table_functions(bitemporal.app_table)",
    "drop_table(regclass)",
    "disable_table(regclass)",
    "version_reference_check()",
    "version_reference_delete()",
)

# What the files above redefine, and the file holding 0008's definition.
REDEFINED = {
    "bitemporal.as_of": "facts_read.v2.sql",
    "bitemporal.distinct_values": "facts_read.v1.sql",
    "bitemporal.superseding_versions": "changes.v1.sql",
    "bitemporal.knowledge_edges": "explain.v1.sql",
    "bitemporal.value_run": "explain.v1.sql",
    "bitemporal.explain_version": "explain.v1.sql",
    "bitemporal.eligible": "evidence.v1.sql",
    "bitemporal.retrospective_diff": "audit.v1.sql",
    "bitemporal.stale": "provenance.v1.sql",
    "bitemporal.dependents": "provenance.v1.sql",
    "bitemporal.partition_versions": "partitioning.v1.sql",
    "bitemporal.create_table_functions": "tables.v1.sql",
    "bitemporal.enable_table": "tables.v1.sql",
}

PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"
REFRESH_TABLES = (
    "SELECT bitemporal.refresh_table(pg_catalog.format('%I.%I', a.table_schema, a.table_name)::regclass) "
    "FROM bitemporal.app_table a ORDER BY a.table_schema, a.table_name"
)


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    for signature in PINNED:
        op.execute(f"ALTER FUNCTION bitemporal.{signature} SET search_path = pg_catalog, pg_temp")
    op.execute(REFRESH_TABLES)
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    for signature in PINNED:
        op.execute(f"ALTER FUNCTION bitemporal.{signature} RESET search_path")
    for function, filename in REDEFINED.items():
        op.execute(previous_definition(filename, function))
    op.execute(REFRESH_TABLES)
