"""Optional layout: the version table hash-partitioned by entity (migration option ``partitions``).

Loads bitemporal.partition_versions and, when the option asks for partitions
(``alembic -x partitions=16 upgrade head``, ``bitemporal db upgrade --partitions 16``,
``bitemporal.migrate(url, partitions=16)``), rebuilds bitemporal.fact_version
as that many hash partitions of entity. Without the option the table stays as
it is. The layout is read back from the catalog: bitemporal.version_partitions().

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from alembic import op

from bitemporal.migrations import PARTITIONS_OPTION, sql_text

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("partitioning.v1.sql",)


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))
    partitions = op.get_context().opts.get(PARTITIONS_OPTION)
    if partitions:
        op.execute(f"SELECT bitemporal.partition_versions({int(partitions)})")


def downgrade() -> None:
    # Back to one plain table (a no-op if it is one) before the function goes.
    op.execute("SELECT bitemporal.partition_versions(0)")
    op.execute(
        """
        DROP FUNCTION bitemporal.partition_versions(integer);
        DROP FUNCTION bitemporal.version_reference_delete();
        DROP FUNCTION bitemporal.version_reference_check();
        DROP FUNCTION bitemporal.version_partitions();
        """
    )
