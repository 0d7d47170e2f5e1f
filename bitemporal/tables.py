"""SQLAlchemy table metadata for the tables the migrations create.

For applications that query the store with SQLAlchemy (``select(fact_version)``,
joins with their own tables) and for the drift test, which checks that this
metadata and the migrated database agree (what ``alembic check`` checks).
Writes go through the SQL functions, never through these tables: the triggers
refuse anything else. Comments live in the SQL files only (psql shows them).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKeyConstraint,
    Identity,
    Index,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, JSONB, TIMESTAMP, TSTZRANGE, ExcludeConstraint
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
)

fact_version = Table(
    "fact_version",
    metadata,
    Column("version_id", BigInteger, Identity(always=True), nullable=False),
    Column("entity", Text, nullable=False),
    Column("attribute", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("value", JSONB, nullable=False),
    Column("valid_period", TSTZRANGE, nullable=False),
    Column("known_period", TSTZRANGE, nullable=False),
    Column("recorded_by", Text),
    Column("carried_from", BigInteger),
    Column("recorded_in", Xid8, nullable=False, server_default=text("pg_current_xact_id()")),
    PrimaryKeyConstraint("version_id", name="fact_version_pkey"),
    ForeignKeyConstraint(["entity", "attribute"], ["bitemporal.fact_key.entity", "bitemporal.fact_key.attribute"],
                         name="fact_version_key_fkey"),
    ExcludeConstraint(
        ("entity", "="), ("attribute", "="), ("source", "="), ("valid_period", "&&"), ("known_period", "&&"),
        name="fact_version_no_overlap", using="gist",
    ),
)

memory_namespace = Table(
    "memory_namespace",
    metadata,
    Column("name", Text, nullable=False),
    Column("policy", Text, nullable=False),
    Column("threshold", DOUBLE_PRECISION),
    Column("baseline_stability", DOUBLE_PRECISION),
    Column("window_turns", BigInteger),
    Column("turn", BigInteger, nullable=False, server_default=text("1")),
    Column("created_at", TSTZ, nullable=False, server_default=text("now()")),
    PrimaryKeyConstraint("name", name="memory_namespace_pkey"),
)

memory_item = Table(
    "memory_item",
    metadata,
    Column("namespace", Text, nullable=False),
    Column("item_id", Text, nullable=False),
    Column("entity", Text),
    Column("attribute", Text),
    Column("pinned", Boolean, nullable=False),
    Column("state", Text, nullable=False),
    Column("stability", DOUBLE_PRECISION),
    Column("recall_count", BigInteger, nullable=False),
    Column("registered_turn", BigInteger, nullable=False),
    Column("last_touched_turn", BigInteger, nullable=False),
    Column("evicted_turn", BigInteger),
    Column("crossing_turn", DOUBLE_PRECISION),
    Column("registration_seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("namespace", "item_id", name="memory_item_pkey"),
    ForeignKeyConstraint(["namespace"], ["bitemporal.memory_namespace.name"], name="memory_item_namespace_fkey"),
    Index("memory_item_crossing_idx", "namespace", "crossing_turn",
          postgresql_where=text("state = 'present' AND NOT pinned")),
)

memory_log = Table(
    "memory_log",
    metadata,
    Column("log_id", BigInteger, Identity(always=True), nullable=False),
    Column("namespace", Text, nullable=False),
    Column("item_id", Text, nullable=False),
    Column("turn", BigInteger, nullable=False),
    Column("event", Text, nullable=False),
    Column("previous_state", Text),
    Column("pinned", Boolean),
    Column("recall_count", BigInteger),
    Column("last_touched_turn", BigInteger),
    Column("retention", DOUBLE_PRECISION),
    Column("stability_before", DOUBLE_PRECISION),
    Column("stability_after", DOUBLE_PRECISION),
    Column("crossing_turn", DOUBLE_PRECISION),
    Column("logged_at", TSTZ, nullable=False, server_default=text("now()")),
    PrimaryKeyConstraint("log_id", name="memory_log_pkey"),
    Index("memory_log_item_idx", "namespace", "item_id", "log_id"),
)
