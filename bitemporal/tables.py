"""SQLAlchemy table metadata for the tables the migrations create.

For applications that query the store with SQLAlchemy (``select(fact_version)``,
joins with their own tables) and for the drift test, which checks that this
metadata and the migrated database agree (what ``alembic check`` checks).
Writes go through the SQL functions, never through these tables: the triggers
refuse anything else.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKeyConstraint,
    Identity,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP, TSTZRANGE, ExcludeConstraint
from sqlalchemy.dialects.postgresql.base import ischema_names
from sqlalchemy.types import UserDefinedType


class Xid8(UserDefinedType[Any]):
    """PostgreSQL's 64-bit transaction id type."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "xid8"


# Let reflection (and so Alembic's comparisons) recognise the type too.
ischema_names.setdefault("xid8", Xid8)

SCHEMA = "bitemporal"
metadata = MetaData(schema=SCHEMA)

TSTZ = TIMESTAMP(timezone=True)

fact_key = Table(
    "fact_key",
    metadata,
    Column("entity", Text, nullable=False),
    Column("attribute", Text, nullable=False),
    Column("first_known_at", TSTZ, nullable=False),
    Column("last_known_at", TSTZ, nullable=False),
    Column("last_txid", Xid8, nullable=False),
    PrimaryKeyConstraint("entity", "attribute", name="fact_key_pkey"),
    CheckConstraint("entity <> '' AND attribute <> ''", name="fact_key_not_blank"),
    CheckConstraint("first_known_at <= last_known_at", name="fact_key_known_order"),
    comment="Every (entity, attribute) key the store has recorded, with its first and latest "
    "knowledge time. Its row lock serialises writers of one key.",
)

fact_version = Table(
    "fact_version",
    metadata,
    Column("version_id", BigInteger, Identity(always=True), nullable=False),
    Column("entity", Text, nullable=False),
    Column("attribute", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("value", JSONB, nullable=False),
    Column("valid_period", TSTZRANGE, nullable=False,
           comment="When the value applies in the world: [start, end), unbounded end = end not known."),
    Column("known_period", TSTZRANGE, nullable=False,
           comment="When the store held this version: [recorded, superseded), unbounded end = still held."),
    Column("recorded_by", Text),
    Column("carried_from", BigInteger,
           comment="For a remainder re-recorded when a write cut an older version: the version "
           "whose assertion it carries forward."),
    Column("recorded_in", Xid8, nullable=False, server_default=text("pg_current_xact_id()")),
    PrimaryKeyConstraint("version_id", name="fact_version_pkey"),
    ForeignKeyConstraint(["entity", "attribute"], ["bitemporal.fact_key.entity", "bitemporal.fact_key.attribute"],
                         name="fact_version_key_fkey"),
    ExcludeConstraint(
        ("entity", "="), ("attribute", "="), ("source", "="), ("valid_period", "&&"), ("known_period", "&&"),
        name="fact_version_no_overlap", using="gist",
    ),
    comment="Append-only fact versions. Write through bitemporal.record / bitemporal.retract; "
    "read through bitemporal.as_of, bitemporal.resolve, bitemporal.history.",
)
