"""Erasure of fact values (issue 16): bitemporal.erase, erase_entity, the record
bitemporal.erasures, the status erased, the role bitemporal_eraser.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

``erasure.v1.sql``: the table ``bitemporal.erasures`` (append-only for every
role), the erased marker on ``bitemporal.fact_version`` (``value`` NULL,
``erasure_id``, ``erased_at``), the append-only guard that lets an erasure
through only with its record, the erase functions, the status, interpretation
and stale cause ``erased`` (resolve, explain, explain_sentence, stale,
distinct_values, conflicts_now), ``bitemporal.history`` with ``recorded_at``,
``closed_at`` and the erasure, and ``grant_roles``/``revoke_roles`` with a
fourth role, the eraser, which this revision creates and grants (the other
roles keep their grants as they are). ``facts_write.v4.sql`` and
``facts_bulk.v3.sql``: ``record`` and ``record_many`` never take a period an
erased version shares for one already holding the value (their no-op test
compares values with IS NOT DISTINCT FROM).

The downgrade restores what 0011 had. Erased values cannot come back: a
database holding erased versions is refused (they cannot be represented
before this revision); without them, the record of erasures (if any) is a
table holding history, which the downgrade guard refuses to drop unless
forced. Enum labels cannot be dropped, so the three enum types are created
again without ``erased``, and what uses them is pointed at the new ones.
"""

import re

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("erasure.v1.sql", "facts_write.v4.sql", "facts_bulk.v3.sql")

# As 0009 loaded its files: SQL-standard bodies are bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"
PREVIOUS = "surface.v1.sql"
ERASER = "bitemporal_eraser"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    # The new role only: the grants of the other roles stay as they were.
    op.execute("SELECT bitemporal.grant_roles(reader => NULL, writer => NULL, auditor => NULL)")
    op.execute("SET LOCAL search_path TO DEFAULT")


def _atomic(filename: str, function: str) -> str:
    """A function with a SQL-standard body (``BEGIN ATOMIC ... END;``) as a frozen file
    defines it (search_path.v1.sql gives no COMMENT of its own)."""
    found = re.search(
        rf"^CREATE OR REPLACE FUNCTION {re.escape(function)}\(.*?^END;$",
        sql_text(filename),
        re.MULTILINE | re.DOTALL,
    )
    if found is None:
        raise LookupError(f"{filename} does not define {function}")
    return found[0]


def _comment(filename: str, function: str) -> str:
    found = re.search(
        rf"^COMMENT ON FUNCTION {re.escape(function)}\(.*?';$",
        sql_text(filename),
        re.MULTILINE | re.DOTALL,
    )
    if found is None:
        raise LookupError(f"{filename} has no comment on {function}")
    return found[0]


def _view(filename: str, view: str) -> str:
    found = re.search(
        rf"^CREATE VIEW {re.escape(view)} AS.*?;$", sql_text(filename), re.MULTILINE | re.DOTALL
    )
    if found is None:
        raise LookupError(f"{filename} does not define {view}")
    return found[0].replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1)


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(
        """
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM bitemporal.fact_version v WHERE v.erasure_id IS NOT NULL) THEN
                RAISE EXCEPTION 'the store holds erased versions, which cannot exist before migration 0012: their values are gone'
                    USING ERRCODE = 'BT006',
                          HINT = 'Stay at 0012 or later; an erasure cannot be undone.';
            END IF;
        END;
        $$;
        """
    )
    # The erase functions and the eraser's grants.
    op.execute(
        f"""
        DROP FUNCTION bitemporal.erase(text, text, text);
        DROP FUNCTION bitemporal.erase_entity(text, text);
        DROP FUNCTION bitemporal_internal.erase_versions(text, text, text, bigint[], text);
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = '{ERASER}') THEN
                REVOKE ALL ON SCHEMA bitemporal FROM {ERASER};
            END IF;
        END;
        $$;
        DROP FUNCTION bitemporal.grant_roles(text, text, text, text);
        DROP FUNCTION bitemporal.revoke_roles(text, text, text, text);
        """
    )
    op.execute(previous_definition(PREVIOUS, "bitemporal.grant_roles"))
    op.execute(previous_definition(PREVIOUS, "bitemporal.revoke_roles"))
    # The write functions' no-op test.
    op.execute(previous_definition(PREVIOUS, "bitemporal.record"))
    op.execute(previous_definition("facts_bulk.v2.sql", "bitemporal.record_many"))
    # Reads.
    op.execute(previous_definition(PREVIOUS, "bitemporal.resolve"))
    op.execute(previous_definition(PREVIOUS, "bitemporal.explain"))
    op.execute(
        "DROP FUNCTION bitemporal.history(text, text); DROP TYPE bitemporal.history_version;"
    )
    op.execute(previous_definition(PREVIOUS, "bitemporal.history"))
    # explain.v1.sql names the formatting helpers where they were before 0009
    # moved them (by OID, so the function bound to them reads the same).
    op.execute(
        previous_definition("explain.v1.sql", "bitemporal.explain_sentence").replace(
            "bitemporal.human_", "bitemporal_internal.human_"
        )
    )
    op.execute(_atomic("search_path.v1.sql", "bitemporal_internal.distinct_values"))
    op.execute(_atomic("search_path.v1.sql", "bitemporal_internal.explain_version"))
    op.execute(_view("audit.v1.sql", "bitemporal.conflicts_now"))
    op.execute(
        "COMMENT ON VIEW bitemporal.conflicts_now IS "
        "'Keys whose sources disagree now: the distinct values, the sources and the versions. "
        "A conflict is reported, never averaged or settled by ingestion order.'"
    )
    # The enum types without 'erased', and what uses them.
    op.execute(
        """
        ALTER TYPE bitemporal.stale_cause RENAME TO stale_cause_erased;
        CREATE TYPE bitemporal.stale_cause AS ENUM ('superseded', 'retracted', 'discarded', 'input_retired');
        ALTER TYPE bitemporal.stale_input ALTER ATTRIBUTE cause TYPE bitemporal.stale_cause;
        """
    )
    op.execute(_atomic("search_path.v1.sql", "bitemporal.stale"))
    op.execute(_comment("provenance.v1.sql", "bitemporal.stale"))
    op.execute(
        """
        DROP TYPE bitemporal.stale_cause_erased;
        COMMENT ON TYPE bitemporal.stale_cause IS
            'Why an artifact is stale: an input version was superseded, retracted, or discarded (replaced inside the transaction that created it), or an input artifact was retired.';

        """
    )
    # Writes: the guards.
    op.execute(previous_definition(PREVIOUS, "bitemporal_internal.fact_version_guard"))
    op.execute(
        previous_definition(
            "table_knowledge.v1.sql", "bitemporal_internal.fact_version_stamp_insert"
        )
    )
    op.execute(
        """
        ALTER TABLE bitemporal.fact_request ALTER COLUMN value SET NOT NULL;
        COMMENT ON COLUMN bitemporal.fact_request.value IS NULL;
        ALTER TABLE bitemporal.fact_version
            DROP CONSTRAINT fact_version_erased,
            DROP COLUMN erased_at,
            DROP COLUMN erasure_id,
            ALTER COLUMN value SET NOT NULL;
        COMMENT ON COLUMN bitemporal.fact_version.value IS NULL;
        DROP TABLE bitemporal.erasures;
        DROP FUNCTION bitemporal_internal.erasures_guard();
        """
    )
    op.execute(
        """
        DROP FUNCTION bitemporal.retrospective_diff(text, text, timestamptz, timestamptz, timestamptz);
        ALTER TYPE bitemporal.answer_status RENAME TO answer_status_erased;
        CREATE TYPE bitemporal.answer_status AS ENUM ('missing', 'supported', 'conflict');
        ALTER TYPE bitemporal.answer ALTER ATTRIBUTE status TYPE bitemporal.answer_status;
        DROP TYPE bitemporal.answer_status_erased;
        COMMENT ON TYPE bitemporal.answer_status IS
            'missing: no eligible version (unknown, not zero); supported: one distinct value among eligible versions (the sources agree, not certified truth); conflict: several distinct values (never averaged, never settled by ingestion order).';

        ALTER TYPE bitemporal.interpretation RENAME TO interpretation_erased;
        CREATE TYPE bitemporal.interpretation AS ENUM (
            'current', 'known_then', 'historical', 'retrospective', 'announced_future', 'missing');
        ALTER TYPE bitemporal.answer ALTER ATTRIBUTE interpretation TYPE bitemporal.interpretation;
        DROP TYPE bitemporal.interpretation_erased;
        COMMENT ON TYPE bitemporal.interpretation IS
            'How to read an answer relative to the present: current (valid_at = known_at = now), known_then (what the store said then), historical (unchanged since), retrospective (later knowledge changed the answer for that time), announced_future (valid after the knowledge time: announced, not in force), missing.';
        """
    )
    op.execute(_atomic("search_path.v1.sql", "bitemporal.retrospective_diff"))
    op.execute(_comment("audit.v1.sql", "bitemporal.retrospective_diff"))
    op.execute("SET LOCAL search_path TO DEFAULT")
