"""The public SQL surface, and every function safe from the caller's search_path.

1. Search path. A function, operator or table named without its schema is
   looked up along the caller's search_path when the statement is parsed; one
   planted in a writable schema (public, before PostgreSQL 15) that matches
   the argument types exactly wins over pg_catalog's and runs with the
   caller's rights. After this migration every PL/pgSQL function (and
   key_text, a polymorphic SQL function) runs with ``search_path =
   pg_catalog, pg_temp``; the fact store's SQL functions, which the planner
   inlines into the caller's query (a SET clause would prevent that), have
   SQL-standard bodies, bound by OID when they are created
   (search_path.v1.sql): the files are loaded under ``SET LOCAL search_path =
   pg_catalog, pg_temp``. bitemporal.partition_versions creates those
   functions again when it rebuilds the version table (partitioning.v2.sql);
   enable_table and create_table_functions run with the pinned path, so a new
   table's constraints, index predicates and generated functions are bound to
   pg_catalog (tables.v2.sql).
2. Surface. Every helper moves to schema bitemporal_internal, which only the
   owner may use; bitemporal keeps the documented API (surface.v1.sql holds
   the one list of moved functions and says how the API reaches them).

3. enable_table and refresh_table refuse a caller who does not own the table
   (the generated write functions run with their owner's rights, and the
   table's triggers inside them).

The functions of tables made bitemporal earlier are generated again, in both
directions, owned as they were. The downgrade moves the functions back
and restores 0008's definitions from the frozen files, with the attributes
earlier migrations had given them with ALTER FUNCTION.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

import re

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("surface.v1.sql", "search_path.v1.sql", "partitioning.v2.sql", "tables.v2.sql")

# What the files above redefine (by name: no name is overloaded), and the file
# holding 0008's definition.
REDEFINED = {
    "check_instant": "periods.v1.sql",
    "valid_period": "periods.v1.sql",
    "fact_version_stamp_insert": "append_only.v1.sql",
    "fact_version_guard": "append_only.v1.sql",
    "check_key_part": "facts_write.v1.sql",
    "lock_key": "facts_write.v2.sql",
    "cut": "facts_write.v1.sql",
    "record": "facts_write.v1.sql",
    "retract": "facts_write.v1.sql",
    "require_key": "facts_read.v1.sql",
    "resolve": "facts_read.v1.sql",
    "history": "facts_read.v1.sql",
    "memory_log_guard": "decay.v1.sql",
    "memory_exp_or_zero": "decay.v1.sql",
    "memory_decay_crossing": "decay.v1.sql",
    "memory_check_name": "decay.v1.sql",
    "memory_check_stability": "decay.v1.sql",
    "memory_namespace_for_update": "decay.v1.sql",
    "memory_namespace_get": "decay.v1.sql",
    "memory_ensure_namespace": "decay.v1.sql",
    "memory_register": "decay.v1.sql",
    "memory_register_many": "decay.v1.sql",
    "memory_recall": "decay.v1.sql",
    "memory_step": "decay.v1.sql",
    "memory_is_present": "decay.v1.sql",
    "memory_working_set_size": "decay.v1.sql",
    "memory_item_get": "decay.v1.sql",
    "memory_retention": "decay.v1.sql",
    "memory_stability": "decay.v1.sql",
    "memory_items": "decay.v1.sql",
    "changes": "changes.v1.sql",
    "text_search_config": "evidence.v1.sql",
    "check_question": "evidence.v1.sql",
    "check_limit": "evidence.v1.sql",
    "search_evidence": "evidence.v1.sql",
    "rank_versions": "evidence.v1.sql",
    "require_vector": "evidence.v1.sql",
    "check_embedding": "evidence.v1.sql",
    "enable_vector": "evidence.v1.sql",
    "set_embedding": "evidence.v1.sql",
    "add_evidence": "evidence.v1.sql",
    "nearest_evidence": "evidence.v1.sql",
    "check_artifact_time": "provenance.v1.sql",
    "record_artifact": "provenance.v1.sql",
    "retire_artifact": "provenance.v1.sql",
    "fact_version_notify_closed": "provenance.v1.sql",
    "answer_since": "explain.v1.sql",
    "answer_corrected": "explain.v1.sql",
    "explain": "explain.v1.sql",
    "secure_write_function": "security.v1.sql",
    "grant_roles": "security.v1.sql",
    "revoke_roles": "security.v1.sql",
    "raise_batch_error": "facts_bulk.v1.sql",
    "record_many": "facts_bulk.v1.sql",
    "check_knowledge_time": "facts_write.v2.sql",
    "knowledge_time": "facts_write.v2.sql",
    "table_definition": "tables.v1.sql",
    "key_text": "tables.v1.sql",
    "lock_table_key": "tables.v1.sql",
    "advance_table_key": "tables.v1.sql",
    "table_cut": "tables.v1.sql",
    "check_table_references": "tables.v1.sql",
    "table_record": "tables.v1.sql",
    "table_retract": "tables.v1.sql",
    "require_table_key": "tables.v1.sql",
    "table_guard": "tables.v1.sql",
    "check_reference": "tables.v1.sql",
    "reference_child_check": "tables.v1.sql",
    "reference_parent_check": "tables.v1.sql",
    "add_reference": "tables.v1.sql",
    "drop_reference": "tables.v1.sql",
    "drop_table_functions": "tables.v1.sql",
    "drop_table": "tables.v1.sql",
    "disable_table": "tables.v1.sql",
    "version_reference_check": "partitioning.v1.sql",
    "version_reference_delete": "partitioning.v1.sql",
    "as_of": "facts_read.v2.sql",
    "distinct_values": "facts_read.v1.sql",
    "superseding_versions": "changes.v1.sql",
    "knowledge_edges": "explain.v1.sql",
    "value_run": "explain.v1.sql",
    "explain_version": "explain.v1.sql",
    "eligible": "evidence.v1.sql",
    "retrospective_diff": "audit.v1.sql",
    "stale": "provenance.v1.sql",
    "dependents": "provenance.v1.sql",
    "partition_versions": "partitioning.v1.sql",
    "create_table_functions": "tables.v1.sql",
    "enable_table": "tables.v1.sql",
    "table_changes": "tables.v1.sql",
    "refresh_table": "tables.v1.sql",
}

# Attributes 0008's definitions had beyond their file's text (set by
# secure_write_function and ALTER FUNCTION in migrations 0002-0005).
ALTERED = {
    "record": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "retract": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "memory_ensure_namespace": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "memory_register": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "memory_register_many": "SECURITY DEFINER SET plan_cache_mode = force_generic_plan SET search_path = pg_catalog, pg_temp",
    "memory_recall": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "memory_step": "SECURITY DEFINER SET plan_cache_mode = force_generic_plan SET search_path = pg_catalog, pg_temp",
    "set_embedding": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "add_evidence": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "record_artifact": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "retire_artifact": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "fact_version_notify_closed": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
    "record_many": "SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
}

PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"
# The functions of every application table generated again, owned as before.
REFRESH_TABLES = (
    "SELECT {}(pg_catalog.format('%I.%I', a.table_schema, a.table_name)::regclass) "
    "FROM bitemporal.app_table a ORDER BY a.table_schema, a.table_name"
)


def moved() -> list[str]:
    """The functions surface.v1.sql moves to bitemporal_internal (its one list), by name."""
    return re.findall(r"^ALTER FUNCTION bitemporal\.(\w+)\(.*\) SET SCHEMA bitemporal_internal;$",
                      sql_text("surface.v1.sql"), re.MULTILINE)


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute(REFRESH_TABLES.format("bitemporal_internal.regenerate_table"))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    for name in moved():
        op.execute(f"ALTER FUNCTION bitemporal_internal.{name} SET SCHEMA bitemporal")
    for function, filename in REDEFINED.items():
        op.execute(previous_definition(filename, f"bitemporal.{function}"))
        if function in ALTERED:
            op.execute(f"ALTER FUNCTION bitemporal.{function} {ALTERED[function]}")
    op.execute("ALTER FUNCTION bitemporal.memory_turn(text) SECURITY INVOKER RESET search_path")
    op.execute("DROP FUNCTION bitemporal_internal.regenerate_table(regclass)")
    op.execute("DROP FUNCTION bitemporal_internal.equality_problem(regclass)")
    op.execute("DROP SCHEMA bitemporal_internal")
    op.execute(REFRESH_TABLES.format("bitemporal.refresh_table"))
