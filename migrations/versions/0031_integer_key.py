"""One integer for a key in the version table's indexes (issue 15).

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-05

``integer_key.v1.sql``: ``bitemporal.fact_key.key_id`` (a sequence for new keys; existing
keys numbered within their entity) and ``bitemporal.fact_version.key_id`` (set by the
knowledge trigger, never changed); the exclusion constraint ``fact_version_no_overlap``
becomes ``(key_id, entity, source, valid_period, known_period)`` and the current versions'
GiST index ``(key_id, source, valid_period)``; every function that read a key's versions
through them by ``(entity, attribute)`` reads by ``key_id`` (the file lists them). The
upgrade rewrites every version (to fill ``key_id``) and rebuilds both GiST indexes, under
an exclusive lock of the version table. The downgrade restores the functions as their
earlier files define them, then the indexes over ``(entity, attribute, ...)``, and drops
the two columns and the sequence.

On a store already distributed by Citus, the tables change on every shard
(``integer_key_citus.v1.sql``) and the functions (``integer_key.v1.sql``'s step 3) on the
coordinator; ``bitemporal.distribute()``, which follows every upgrade of a Citus database,
adapts them, and ``citus_functions.v1.sql`` sends them to the workers. The downgrade does
both itself. A ``--sql`` script cannot look, and takes the single-node path, which refuses
a distributed store when it runs.
"""

from alembic import op

from bitemporal.migrations import (
    is_distributed,
    previous_definition,
    sql_text,
    standard_body_definition,
)

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("integer_key.v1.sql", "integer_key_citus.v1.sql", "citus_functions.v1.sql")

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

# (file, function) as each ported function was before integer_key.v1.sql.
PREVIOUS = (
    ("append_only.v2.sql", "bitemporal_internal.fact_version_knowledge"),
    ("erasure.v1.sql", "bitemporal_internal.fact_version_guard"),
    ("facts_write.v9.sql", "bitemporal_internal.supersede"),
    ("facts_bulk.v3.sql", "bitemporal.record_many"),
    ("citus_bulk.v1.sql", "bitemporal_internal.record_many_by_row"),
    ("erasure.v1.sql", "bitemporal_internal.erase_versions"),
    ("erasure.v1.sql", "bitemporal.history"),
    ("erasure.v1.sql", "bitemporal.explain"),
    ("surface.v1.sql", "bitemporal.changes"),
    ("provenance.v2.sql", "bitemporal_internal.fact_version_notify_closed"),
    ("citus.v5.sql", "bitemporal.distribute"),
)
# The same for those with a SQL-standard body, whose files give no COMMENT.
PREVIOUS_STANDARD = (
    ("fast_reads.v1.sql", "bitemporal.as_of"),
    ("search_path.v1.sql", "bitemporal_internal.superseding_versions"),
    ("search_path.v1.sql", "bitemporal_internal.eligible"),
    ("search_path.v1.sql", "bitemporal_internal.knowledge_edges"),
    ("search_path.v1.sql", "bitemporal_internal.value_run"),
)


# Where integer_key.v1.sql's functions begin (its step 3): what a distributed store takes
# of the file after integer_key_citus.v1.sql has changed its tables.
FUNCTIONS_HEADING = "-- 3. The functions."


# The downgrade's table changes, one statement a call: Citus sends some commands (DROP
# INDEX and CREATE INDEX, for two) to the workers as the whole query string that holds them,
# which the workers refuse when it holds several.
TABLES_BACK = (
    """
    DO $$
    DECLARE
        tbls  regclass[];
        names text[];
    BEGIN
        SELECT pg_catalog.array_agg(c.conrelid::regclass ORDER BY c.oid),
               pg_catalog.array_agg(c.conname::text ORDER BY c.oid)
          INTO tbls, names
          FROM pg_catalog.pg_constraint c
         WHERE c.contype = 'x' AND c.conislocal
           AND c.conname OPERATOR(pg_catalog.~~) 'fact_version_no_overlap%'
           AND (c.conrelid = 'bitemporal.fact_version'::regclass
                OR c.conrelid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                                   WHERE i.inhparent = 'bitemporal.fact_version'::regclass));
        FOR i IN 1 .. pg_catalog.cardinality(names) LOOP
            EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', tbls[i], names[i]);
            EXECUTE pg_catalog.format(
                'ALTER TABLE %s ADD CONSTRAINT %I EXCLUDE USING gist (entity WITH =, '
                'attribute WITH =, source WITH =, valid_period WITH &&, known_period WITH &&)',
                tbls[i], names[i]);
            EXECUTE pg_catalog.format(
                'COMMENT ON INDEX bitemporal.%I IS %L', names[i],
                'Enforces that one source never holds two overlapping valid periods for a key '
                'within one knowledge period; serves as-of lookups for an earlier knowledge time '
                '(bitemporal.as_of), history and the per-key audit functions.');
        END LOOP;
    END
    $$;
    """,
    """
    DROP INDEX bitemporal.fact_version_current_idx;
    """,
    """
    CREATE INDEX fact_version_current_idx ON bitemporal.fact_version
        USING gist (entity, attribute, source, valid_period)
        WHERE upper_inf(known_period);
    """,
    """
    COMMENT ON INDEX bitemporal.fact_version_current_idx IS
        'Current versions (open knowledge) by key, source and valid period: what record() and retract() read, whatever the length of the history.';
    """,
    """
    -- The partitions' copies named as partition_versions names them (see the file).
    DO $$
    DECLARE
        r record;
    BEGIN
        FOR r IN
            SELECT i.inhrelid::regclass AS child, p.relname AS parent, c.relname AS part
              FROM pg_catalog.pg_inherits i
              JOIN pg_catalog.pg_class p ON p.oid = i.inhparent
              JOIN pg_catalog.pg_index x ON x.indexrelid = i.inhrelid
              JOIN pg_catalog.pg_class c ON c.oid = x.indrelid
             WHERE p.relnamespace = 'bitemporal'::regnamespace
               AND p.relname IN ('fact_version_no_overlap', 'fact_version_current_idx')
        LOOP
            EXECUTE pg_catalog.format(
                'ALTER INDEX %s RENAME TO %I', r.child,
                r.parent || pg_catalog.substr(r.part, pg_catalog.length('fact_version') + 1));
        END LOOP;
    END
    $$;
    """,
    """
    ALTER TABLE bitemporal.fact_version DROP COLUMN key_id;
    """,
    """
    ALTER TABLE bitemporal.fact_key DROP CONSTRAINT fact_key_key_id_unique;
    """,
    # Dropped by name, not with the column that owns it: Citus would leave the workers'
    # copies of the sequence behind.
    """
    ALTER TABLE bitemporal.fact_key ALTER COLUMN key_id DROP DEFAULT;
    """,
    """
    DROP SEQUENCE bitemporal.fact_key_key_id_seq;
    """,
    """
    ALTER TABLE bitemporal.fact_key DROP COLUMN key_id;
    """,
)


def _distributed() -> bool:
    return not op.get_context().as_sql and is_distributed(op.get_bind())


def upgrade() -> None:
    op.execute(PINNED_PATH)
    single_node = sql_text("integer_key.v1.sql")
    if _distributed():
        op.execute(sql_text("integer_key_citus.v1.sql"))
        # Their Citus forms, on the coordinator and the workers, come with the
        # distribute() that follows every upgrade of a Citus database.
        op.execute(single_node[single_node.index(FUNCTIONS_HEADING) :])
    else:
        op.execute(single_node)
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    distributed = _distributed()
    if distributed:
        # The functions on the coordinator alone, the tables on every shard (as
        # integer_key_citus.v1.sql changes them).
        op.execute("SET LOCAL citus.enable_ddl_propagation = off")
    for file, function in PREVIOUS:
        op.execute(previous_definition(file, function))
    for file, function in PREVIOUS_STANDARD:
        op.execute(standard_body_definition(file, function))
    if distributed:
        # Citus's forms first: a function with a SQL-standard body depends on the version
        # table, and Citus refuses to alter a table that such a function depends on
        # ("circular dependencies between distributed objects").
        op.execute("SELECT bitemporal.distribute()")
        op.execute(
            "SET LOCAL citus.enable_ddl_propagation = on;"
            " SET LOCAL citus.multi_shard_modify_mode = 'sequential';"
            " SET LOCAL citus.enable_unsafe_triggers = on"
        )
    for statement in TABLES_BACK:
        op.execute(statement)
    if distributed:
        # What bitemporal.migrations.distribute does after an upgrade: the workers'
        # copies of the functions made the coordinator's.
        op.execute(sql_text("citus_functions.v1.sql"))
    op.execute("SET LOCAL search_path TO DEFAULT")
