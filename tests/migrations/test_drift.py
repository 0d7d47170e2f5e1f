"""The SQLAlchemy metadata in bitemporal.tables matches what the migrations create."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, pool

from bitemporal.database import sqlalchemy_url
from bitemporal.tables import SCHEMA, metadata


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    if type_ == "schema":
        return name == SCHEMA
    return not (type_ == "table" and name == "alembic_version")


def test_metadata_matches_the_migrated_database(database_url: str) -> None:
    engine = create_engine(sqlalchemy_url(database_url), poolclass=pool.NullPool)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection,
                opts={"include_schemas": True, "include_name": include_name, "compare_type": True},
            )
            differences = compare_metadata(context, metadata)
    finally:
        engine.dispose()
    # Comments are kept in the SQL files only.
    differences = [d for d in differences if not _is_comment(d)]
    assert differences == []


def _is_comment(difference: Any) -> bool:
    changes = difference if isinstance(difference, list) else [difference]
    return all(c[0] in ("modify_comment", "add_table_comment", "remove_table_comment") for c in changes)
