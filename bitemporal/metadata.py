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
    Computed,
    ForeignKeyConstraint,
    Identity,
    Index,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import (
    ARRAY,
    DOUBLE_PRECISION,
    INTERVAL,
    JSONB,
    TIMESTAMP,
    TSTZRANGE,
    TSVECTOR,
    ExcludeConstraint,
)
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
    # The key as one integer in the version table's indexes (migration 0031).
    Column(
        "key_id",
        BigInteger,
        nullable=False,
        server_default=text("nextval('bitemporal.fact_key_key_id_seq'::regclass)"),
    ),
    PrimaryKeyConstraint("entity", "attribute", name="fact_key_pkey"),
    UniqueConstraint("key_id", "entity", name="fact_key_key_id_unique"),
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
    # NULL only once erased (migration 0012).
    Column("value", JSONB),
    Column("valid_period", TSTZRANGE, nullable=False),
    Column("known_period", TSTZRANGE, nullable=False),
    Column("recorded_by", Text),
    Column("carried_from", BigInteger),
    Column("recorded_in", Xid8, nullable=False, server_default=text("pg_current_xact_id()")),
    # Forced by a trigger (migration 0010): when the version was really written, and closed.
    Column("recorded_at", TSTZ),
    Column("closed_at", TSTZ),
    # The erasure that removed the value, and when (migration 0012).
    Column("erased_at", TSTZ),
    Column("erasure_id", BigInteger),
    # The key's fact_key.key_id, forced by a trigger; 0 only in a refused row (migration 0031).
    Column("key_id", BigInteger, nullable=False, server_default=text("0")),
    PrimaryKeyConstraint("version_id", name="fact_version_pkey"),
    ForeignKeyConstraint(
        ["entity", "attribute"],
        ["bitemporal.fact_key.entity", "bitemporal.fact_key.attribute"],
        name="fact_version_key_fkey",
    ),
    # Over current versions and those closed by the transaction that recorded them: what
    # the writes read (migration 0034).
    ExcludeConstraint(
        ("key_id", "="),
        ("source", "="),
        ("valid_period", "&&"),
        ("known_period", "&&"),
        ("entity", "="),
        name="fact_version_no_overlap",
        using="gist",
        where=text("upper_inf(known_period) OR closed_at = recorded_at"),
    ),
    Index(
        "fact_version_periods_idx",
        "key_id",
        "known_period",
        "valid_period",
        "entity",
        postgresql_using="gist",
    ),
)

fact_request = Table(
    "fact_request",
    metadata,
    Column("idempotency_key", Text, nullable=False),
    Column("entity", Text, nullable=False),
    Column("attribute", Text, nullable=False),
    Column("source", Text, nullable=False),
    # Cleared by an erasure of the key (migration 0012).
    Column("value", JSONB),
    Column("valid_period", TSTZRANGE, nullable=False),
    Column("known_at", TSTZ),
    Column("result", JSONB),
    Column("requested_at", TSTZ, nullable=False, server_default=text("now()")),
    PrimaryKeyConstraint("idempotency_key", name="fact_request_pkey"),
)

erasures = Table(
    "erasures",
    metadata,
    Column("erasure_id", BigInteger, Identity(always=True), nullable=False),
    Column("erased_at", TSTZ, nullable=False, server_default=text("now()")),
    # PostgreSQL's type name (of role names), which reflection reads as String.
    Column("erased_by", String, nullable=False, server_default=text("SESSION_USER")),
    Column("reason", Text, nullable=False),
    Column("scope", Text, nullable=False),
    Column("relation", Text),
    Column("entity", Text),
    Column("attribute", Text),
    Column("key", JSONB),
    Column("version_ids", ARRAY(BigInteger), nullable=False),
    Column("policy", Text),
    Column("recorded_in", Xid8, nullable=False, server_default=text("pg_current_xact_id()")),
    PrimaryKeyConstraint("erasure_id", name="erasures_pkey"),
    CheckConstraint("btrim(reason) <> ''", name="erasures_reason_not_blank"),
    CheckConstraint("btrim(scope) <> ''", name="erasures_scope_not_blank"),
    CheckConstraint(
        "scope <> 'fact' OR (entity IS NOT NULL AND relation IS NULL AND key IS NULL)",
        name="erasures_fact_scope",
    ),
    Index(
        "erasures_entity_idx",
        "entity",
        "attribute",
        postgresql_where=text("entity IS NOT NULL"),
    ),
)
# Which erasures list a version (migration 0013).
Index("erasures_version_ids_idx", erasures.c.version_ids, postgresql_using="gin")

# Retention policies (migration 0013).
retention_policy = Table(
    "retention_policy",
    metadata,
    Column("policy", Text, nullable=False),
    Column("scope", Text, nullable=False),
    Column("attribute", Text),
    Column("relation", Text),
    Column("keep_for", INTERVAL, nullable=False),
    Column("created_at", TSTZ, nullable=False, server_default=text("now()")),
    Column("created_by", String, nullable=False, server_default=text("SESSION_USER")),
    Column("comment", Text),
    PrimaryKeyConstraint("policy", name="retention_policy_pkey"),
    CheckConstraint(
        "(scope = 'fact' AND attribute IS NOT NULL AND relation IS NULL"
        " AND policy = 'fact:' || attribute)"
        " OR (scope = 'table' AND relation IS NOT NULL AND attribute IS NULL"
        " AND policy = 'table:' || relation)",
        name="retention_policy_target",
    ),
    CheckConstraint("keep_for > interval '0'", name="retention_policy_keep_for_positive"),
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
    ForeignKeyConstraint(
        ["namespace"], ["bitemporal.memory_namespace.name"], name="memory_item_namespace_fkey"
    ),
    Index(
        "memory_item_crossing_idx",
        "namespace",
        "crossing_turn",
        postgresql_where=text("state = 'present' AND NOT pinned"),
    ),
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


# Evidence, provenance and changes (sql/evidence.v1.sql, provenance.v1.sql, changes.v1.sql).


class Regconfig(UserDefinedType[Any]):
    """PostgreSQL's text search configuration type (english, german, simple, ...)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "regconfig"


ischema_names.setdefault("regconfig", Regconfig)

Index("fact_version_known_from_idx", func.lower(fact_version.c.known_period))
Index(
    "fact_version_known_to_idx",
    func.upper(fact_version.c.known_period),
    postgresql_where=text("NOT upper_inf(known_period)"),
)

# Current versions by key and valid-period end, then start (sql/facts_read.v2.sql).
Index(
    "fact_version_current_valid_idx",
    fact_version.c.entity,
    fact_version.c.attribute,
    func.coalesce(
        func.upper(fact_version.c.valid_period), text("'infinity'::timestamp with time zone")
    ),
    func.coalesce(
        func.lower(fact_version.c.valid_period), text("'-infinity'::timestamp with time zone")
    ),
    postgresql_where=text("upper_inf(known_period)"),
)

evidence = Table(
    "evidence",
    metadata,
    Column("evidence_id", BigInteger, Identity(always=True), nullable=False),
    Column("version_id", BigInteger, nullable=False),
    Column("passage", Text, nullable=False),
    Column("document", Text),
    Column("language", Regconfig, nullable=False, server_default=text("'english'::regconfig")),
    Column("search_vector", TSVECTOR, Computed("to_tsvector(language, passage)", persisted=True)),
    Column("recorded_at", TSTZ, nullable=False, server_default=text("now()")),
    Column("recorded_by", Text),
    PrimaryKeyConstraint("evidence_id", name="evidence_pkey"),
    ForeignKeyConstraint(
        ["version_id"],
        ["bitemporal.fact_version.version_id"],
        name="evidence_version_fkey",
        ondelete="CASCADE",
    ),
    CheckConstraint("btrim(passage) <> ''", name="evidence_passage_not_blank"),
    CheckConstraint("document <> ''", name="evidence_document_not_blank"),
    Index("evidence_version_idx", "version_id"),
    Index("evidence_search_idx", "search_vector", postgresql_using="gin"),
)

artifact = Table(
    "artifact",
    metadata,
    Column("artifact_id", BigInteger, Identity(always=True), nullable=False),
    Column("kind", Text, nullable=False),
    Column("ref", Text, nullable=False),
    Column("detail", JSONB),
    Column("derived_at", TSTZ, nullable=False),
    Column("retired_at", TSTZ),
    Column("recorded_by", Text),
    PrimaryKeyConstraint("artifact_id", name="artifact_pkey"),
    CheckConstraint("retired_at >= derived_at", name="artifact_retired_after_derived"),
    Index(
        "artifact_current_ref_key",
        "kind",
        "ref",
        unique=True,
        postgresql_where=text("retired_at IS NULL"),
    ),
)

artifact_input = Table(
    "artifact_input",
    metadata,
    Column("artifact_id", BigInteger, nullable=False),
    # No foreign key to fact_version: see sql/provenance.v1.sql.
    Column("input_version", BigInteger),
    Column("input_artifact", BigInteger),
    ForeignKeyConstraint(
        ["artifact_id"], ["bitemporal.artifact.artifact_id"], name="artifact_input_artifact_fkey"
    ),
    ForeignKeyConstraint(
        ["input_artifact"],
        ["bitemporal.artifact.artifact_id"],
        name="artifact_input_input_artifact_fkey",
    ),
    CheckConstraint(
        "num_nonnulls(input_version, input_artifact) = 1", name="artifact_input_exactly_one"
    ),
    CheckConstraint("input_artifact < artifact_id", name="artifact_input_older"),
    Index(
        "artifact_input_version_key",
        "artifact_id",
        "input_version",
        unique=True,
        postgresql_where=text("input_version IS NOT NULL"),
    ),
    Index(
        "artifact_input_artifact_key",
        "artifact_id",
        "input_artifact",
        unique=True,
        postgresql_where=text("input_artifact IS NOT NULL"),
    ),
    Index(
        "artifact_input_by_version_idx",
        "input_version",
        postgresql_where=text("input_version IS NOT NULL"),
    ),
    Index(
        "artifact_input_by_artifact_idx",
        "input_artifact",
        postgresql_where=text("input_artifact IS NOT NULL"),
    ),
)

app_table = Table(
    "app_table",
    metadata,
    Column("table_schema", Text, nullable=False),
    Column("table_name", Text, nullable=False),
    Column("key_columns", ARRAY(Text), nullable=False),
    Column("value_columns", ARRAY(Text), nullable=False),
    Column("key_table", Text, nullable=False),
    Column("old_primary_key", Text),
    Column("functions", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column("enabled_at", TSTZ, nullable=False, server_default=text("now()")),
    PrimaryKeyConstraint("table_schema", "table_name", name="app_table_pkey"),
    CheckConstraint("cardinality(key_columns) > 0", name="app_table_has_key"),
)

app_reference = Table(
    "app_reference",
    metadata,
    Column("child_schema", Text, nullable=False),
    Column("child_table", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("child_columns", ARRAY(Text), nullable=False),
    Column("parent_schema", Text, nullable=False),
    Column("parent_table", Text, nullable=False),
    # Migration 0030: a reference between distributed tables (Citus), checked by the
    # write functions rather than by triggers.
    Column("distributed", Boolean, nullable=False, server_default=text("false")),
    PrimaryKeyConstraint("child_schema", "child_table", "name", name="app_reference_pkey"),
    ForeignKeyConstraint(
        ["child_schema", "child_table"],
        ["bitemporal.app_table.table_schema", "bitemporal.app_table.table_name"],
        name="app_reference_child_fkey",
    ),
    ForeignKeyConstraint(
        ["parent_schema", "parent_table"],
        ["bitemporal.app_table.table_schema", "bitemporal.app_table.table_name"],
        name="app_reference_parent_fkey",
    ),
)
