"""The SQLAlchemy metadata in bitemporal.metadata matches what the migrations create.

The metadata describes the default layout. On the partitioned one (migration
0008's option) the partitions are not in it, and evidence's foreign key to
fact_version is a pair of triggers instead (a partitioned table cannot be
referenced by version_id alone): that one difference is expected.
"""

from __future__ import annotations

import re
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, pool

# Imported as an application's env.py would: its comparator (registered globally) must
# hide nothing from the comparison of the library's own metadata.
import bitemporal.alembic_autogenerate  # noqa: F401
from bitemporal.database import sqlalchemy_url
from bitemporal.metadata import SCHEMA, metadata

PARTITION = re.compile(r"fact_version_p\d+")


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    if type_ == "schema":
        return name == SCHEMA
    return not (type_ == "table" and (name == "alembic_version" or PARTITION.fullmatch(name or "")))


def test_metadata_matches_the_migrated_database(database_url: str) -> None:
    engine = create_engine(sqlalchemy_url(database_url), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection,
                opts={"include_schemas": True, "include_name": include_name, "compare_type": True},
            )
            differences = compare_metadata(context, metadata)
            partitioned = connection.exec_driver_sql(
                "SELECT bitemporal.version_partitions()"
            ).scalar()
    finally:
        engine.dispose()
    # Comments are kept in the SQL files only.
    differences = [d for d in differences if not _is_comment(d)]
    if partitioned:
        assert [(d[0], d[1].name) for d in differences] == [("add_fk", "evidence_version_fkey")]
    else:
        assert differences == []


def _is_comment(difference: Any) -> bool:
    changes = difference if isinstance(difference, list) else [difference]
    return all(
        c[0] in ("modify_comment", "add_table_comment", "remove_table_comment") for c in changes
    )
