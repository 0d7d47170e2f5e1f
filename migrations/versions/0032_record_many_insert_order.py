"""record_many inserts a round's versions in an order unrelated to the keys' integers
(issue 15).

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-05

``facts_bulk.v4.sql``: ``bitemporal.record_many`` (version 4) inserts each round's new
versions in the order of a hash of their version ids, not in key order, in which a batch of
new keys added entries with ever larger ``key_id`` to the same end of both GiST indexes
(the file gives the figures). Nothing else changes. On a store distributed by Citus,
``record_many`` is ``bitemporal.distribute``'s wrapper of
``bitemporal_internal.record_many_by_row``: put back after the file, and after the earlier
definition on downgrade, so that this migration leaves a distributed store's writes as they
were; both on the coordinator alone, as on a store distributed after this migration. The downgrade restores ``record_many`` as ``integer_key.v1.sql`` defines it.
"""

import re

from alembic import op

from bitemporal.migrations import if_distributed, quoted_body_definition, sql_text

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_bulk.v4.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

# record_many changes on the coordinator alone: on a distributed store it is the
# coordinator's wrapper, and Citus would otherwise make it a distributed object (and its
# writer role a distributed role), which a store distributed at head does not have.
COORDINATOR_ONLY = if_distributed(
    "        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);"
)


def _citus_form() -> str:
    """record_many on a distributed store: the wrapper bitemporal.distribute creates, as
    integer_key.v1.sql writes it (the same text); then Citus's propagation on again."""
    wrapper = re.search(
        r"^    CREATE OR REPLACE FUNCTION bitemporal\.record_many\(.*?^    \$record_many\$;$",
        sql_text("integer_key.v1.sql"),
        re.MULTILINE | re.DOTALL,
    )
    if wrapper is None:
        raise LookupError("integer_key.v1.sql: bitemporal.distribute's record_many not found")
    return if_distributed(
        wrapper[0]
        + "\n        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);"
    )


def upgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(COORDINATOR_ONLY)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute(_citus_form())
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(COORDINATOR_ONLY)
    op.execute(quoted_body_definition("integer_key.v1.sql", "bitemporal.record_many"))
    op.execute(_citus_form())
    op.execute("SET LOCAL search_path TO DEFAULT")
