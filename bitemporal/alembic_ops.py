"""Alembic operations for bitemporal application tables.

Importing this module registers them with Alembic's operation plugin mechanism,
so that an application's migration can say::

    from alembic import op
    import sqlalchemy as sa
    import bitemporal.alembic_ops  # noqa: F401  (registers the operations)

    def upgrade():
        op.create_bitemporal_table(
            "price",
            sa.Column("sku", sa.Text),
            sa.Column("amount", sa.Numeric(10, 2), nullable=False),
            key=["sku"],
        )
        op.create_temporal_reference("price_sku_fkey", "price", "product", ["sku"])

    def downgrade():
        op.drop_temporal_reference("price_sku_fkey", "price")
        op.drop_bitemporal_table("price")

Each operation is a call of a SQL function of the ``bitemporal`` schema
(``enable_table``, ``drop_table``, ``disable_table``, ``add_reference``,
``drop_reference``, ``distribute_table``; see sql/tables.v1.sql and
sql/distributed_tables.v1.sql), after ``op.create_table`` for a new
table, so offline (``--sql``) scripts contain those calls with their literal
arguments. The database needs the bitemporal schema first: call
:func:`bitemporal.migrate` from the application's ``env.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from alembic.operations import MigrateOperation, Operations, ops, toimpl
from sqlalchemy import ARRAY, Column, DateTime, Text, bindparam, exc, text
from sqlalchemy.sql.elements import TextClause

from . import metadata as _metadata  # noqa: F401 - teaches reflection the xid8 type of recorded_in
from .errors import error_for

__all__ = [
    "DROP_HISTORY",
    "ConvertFromBitemporalOp",
    "ConvertToBitemporalOp",
    "CreateBitemporalTableOp",
    "CreateTemporalReferenceOp",
    "DistributeBitemporalTableOp",
    "DropBitemporalTableOp",
    "DropTemporalReferenceOp",
    "RefreshBitemporalTableOp",
    "include_object",
]

# Statements name a relation by :<prefix>_schema (None: the current schema)
# and :<prefix>_table, turned into a regclass by the database.


def _relation_params(prefix: str, table: str, schema: str | None) -> list[Any]:
    return [
        bindparam(f"{prefix}_schema", schema, type_=Text),
        bindparam(f"{prefix}_table", table, type_=Text),
    ]


def _call(template: str, *params: Any) -> TextClause:
    return text(template).bindparams(*params)


@Operations.register_operation("create_bitemporal_table")
class CreateBitemporalTableOp(MigrateOperation):
    """Create a table with key and value columns and make it bitemporal."""

    def __init__(
        self,
        table_name: str,
        columns: Sequence[Column[Any]],
        key: Sequence[str],
        schema: str | None = None,
        distributed: bool = False,
        **kw: Any,
    ) -> None:
        self.table_name = table_name
        self.columns = list(columns)
        self.key = list(key)
        self.schema = schema
        self.distributed = distributed
        self.kw = kw

    @classmethod
    def create_bitemporal_table(
        cls,
        operations: Operations,
        table_name: str,
        *columns: Column[Any],
        key: Sequence[str],
        schema: str | None = None,
        distributed: bool = False,
        **kw: Any,
    ) -> None:
        """``op.create_table(table_name, *columns, schema=schema, **kw)``, then
        ``bitemporal.enable_table`` keyed by ``key``: adds the version and period
        columns, constraints, indexes, append-only triggers, the ``<table>_key``
        table and the generated functions. ``distributed``: on a Citus
        coordinator, then ``bitemporal.distribute_table(relation)``, by the first key
        column (see docs/citus.md)."""
        operations.invoke(
            cls(table_name, columns, key, schema=schema, distributed=distributed, **kw)
        )

    def reverse(self) -> DropBitemporalTableOp:
        return DropBitemporalTableOp(self.table_name, schema=self.schema)

    def to_diff_tuple(self) -> tuple[Any, ...]:
        """What ``alembic check`` and ``compare_metadata`` report."""
        return ("add_bitemporal_table", self.schema, self.table_name, tuple(self.key))


@Operations.register_operation("drop_bitemporal_table")
class DropBitemporalTableOp(MigrateOperation):
    """Drop a bitemporal table with its history, key table and functions."""

    def __init__(self, table_name: str, schema: str | None = None) -> None:
        self.table_name = table_name
        self.schema = schema
        #: What creates the table again (autogenerate's downgrade), when known.
        self.recreate: CreateBitemporalTableOp | None = None

    def reverse(self) -> CreateBitemporalTableOp:
        if self.recreate is None:
            raise ValueError(
                f"the columns of {self.table_name} are not known: it cannot be created again"
            )
        return self.recreate

    def to_diff_tuple(self) -> tuple[Any, ...]:
        return ("remove_bitemporal_table", self.schema, self.table_name)

    @classmethod
    def drop_bitemporal_table(
        cls, operations: Operations, table_name: str, schema: str | None = None
    ) -> None:
        """``bitemporal.drop_table``: the table, its history, its ``<table>_key`` table,
        its generated functions and the temporal references it makes."""
        operations.invoke(cls(table_name, schema=schema))


@Operations.register_operation("convert_to_bitemporal")
class ConvertToBitemporalOp(MigrateOperation):
    """Make an existing table bitemporal, keeping its rows as the first versions."""

    def __init__(
        self,
        table_name: str,
        key: Sequence[str],
        valid_from: datetime | None = None,
        schema: str | None = None,
        distributed: bool = False,
    ) -> None:
        self.table_name = table_name
        self.key = list(key)
        self.valid_from = valid_from
        self.schema = schema
        self.distributed = distributed

    @classmethod
    def convert_to_bitemporal(
        cls,
        operations: Operations,
        table_name: str,
        key: Sequence[str],
        valid_from: datetime | None = None,
        schema: str | None = None,
        distributed: bool = False,
    ) -> None:
        """``bitemporal.enable_table`` on an existing table: its rows become versions valid
        from ``valid_from`` (None: unbounded) and known from the migration's transaction
        time; a primary key on exactly ``key`` is replaced (and restored by the reverse).
        ``distributed``: as for :meth:`CreateBitemporalTableOp.create_bitemporal_table`."""
        operations.invoke(
            cls(table_name, key, valid_from=valid_from, schema=schema, distributed=distributed)
        )

    def reverse(self) -> ConvertFromBitemporalOp:
        return ConvertFromBitemporalOp(self.table_name, schema=self.schema)

    def to_diff_tuple(self) -> tuple[Any, ...]:
        return ("convert_to_bitemporal", self.schema, self.table_name, tuple(self.key))


@Operations.register_operation("convert_from_bitemporal")
class ConvertFromBitemporalOp(MigrateOperation):
    """Turn a converted table back into an ordinary one, if no history would be lost."""

    def __init__(self, table_name: str, schema: str | None = None) -> None:
        self.table_name = table_name
        self.schema = schema

    def to_diff_tuple(self) -> tuple[Any, ...]:
        return ("convert_from_bitemporal", self.schema, self.table_name)

    @classmethod
    def convert_from_bitemporal(
        cls, operations: Operations, table_name: str, schema: str | None = None
    ) -> None:
        """``bitemporal.disable_table``: refused (BT402) once anything was recorded since
        the conversion, because that history would be lost."""
        operations.invoke(cls(table_name, schema=schema))


@Operations.register_operation("refresh_bitemporal_table")
class RefreshBitemporalTableOp(MigrateOperation):
    """Regenerate a bitemporal table's functions after its value columns changed."""

    def __init__(self, table_name: str, schema: str | None = None) -> None:
        self.table_name = table_name
        self.schema = schema

    @classmethod
    def refresh_bitemporal_table(
        cls, operations: Operations, table_name: str, schema: str | None = None
    ) -> None:
        """``bitemporal.refresh_table``, after ``op.add_column`` / ``op.drop_column`` on a
        bitemporal table: the generated functions take the new set of value columns
        and keep their ``EXECUTE`` grants."""
        operations.invoke(cls(table_name, schema=schema))

    def reverse(self) -> RefreshBitemporalTableOp:
        return self

    def to_diff_tuple(self) -> tuple[Any, ...]:
        return ("refresh_bitemporal_table", self.schema, self.table_name)


@Operations.register_operation("distribute_bitemporal_table")
class DistributeBitemporalTableOp(MigrateOperation):
    """Distribute a bitemporal table on Citus by its first key column."""

    def __init__(self, table_name: str, schema: str | None = None) -> None:
        self.table_name = table_name
        self.schema = schema

    @classmethod
    def distribute_bitemporal_table(
        cls, operations: Operations, table_name: str, schema: str | None = None
    ) -> None:
        """``bitemporal.distribute_table(relation)``, on a Citus coordinator whose store is
        distributed: the table and its ``<table>_key`` table are distributed by the
        first key column, co-located, its rows kept as they are. Idempotent; no
        reverse (Citus's ``undistribute_table`` is the way back)."""
        operations.invoke(cls(table_name, schema=schema))

    def to_diff_tuple(self) -> tuple[Any, ...]:
        return ("distribute_bitemporal_table", self.schema, self.table_name)


@Operations.register_operation("create_temporal_reference")
class CreateTemporalReferenceOp(MigrateOperation):
    """A child table's columns refer to a parent table's key over every valid time."""

    def __init__(
        self,
        constraint_name: str | None,
        source_table: str,
        referent_table: str,
        local_cols: Sequence[str],
        source_schema: str | None = None,
        referent_schema: str | None = None,
    ) -> None:
        self.constraint_name = constraint_name
        self.source_table = source_table
        self.referent_table = referent_table
        self.local_cols = list(local_cols)
        self.source_schema = source_schema
        self.referent_schema = referent_schema

    @classmethod
    def create_temporal_reference(
        cls,
        operations: Operations,
        constraint_name: str | None,
        source_table: str,
        referent_table: str,
        local_cols: Sequence[str],
        source_schema: str | None = None,
        referent_schema: str | None = None,
    ) -> None:
        """``bitemporal.add_reference``, shaped like ``op.create_foreign_key``: the
        referent's columns are its key."""
        operations.invoke(
            cls(
                constraint_name,
                source_table,
                referent_table,
                local_cols,
                source_schema=source_schema,
                referent_schema=referent_schema,
            )
        )

    def reverse(self) -> DropTemporalReferenceOp:
        if self.constraint_name is None:
            raise ValueError("name the temporal reference to be able to reverse it")
        return DropTemporalReferenceOp(
            self.constraint_name, self.source_table, source_schema=self.source_schema
        )


@Operations.register_operation("drop_temporal_reference")
class DropTemporalReferenceOp(MigrateOperation):
    """Drop a temporal reference."""

    def __init__(
        self, constraint_name: str, source_table: str, source_schema: str | None = None
    ) -> None:
        self.constraint_name = constraint_name
        self.source_table = source_table
        self.source_schema = source_schema

    @classmethod
    def drop_temporal_reference(
        cls,
        operations: Operations,
        constraint_name: str,
        source_table: str,
        source_schema: str | None = None,
    ) -> None:
        """``bitemporal.drop_reference``."""
        operations.invoke(cls(constraint_name, source_table, source_schema=source_schema))


@Operations.implementation_for(CreateBitemporalTableOp)
def _create_bitemporal_table(operations: Operations, operation: CreateBitemporalTableOp) -> None:
    operations.create_table(
        operation.table_name, *operation.columns, schema=operation.schema, **operation.kw
    )
    _enable(operations, operation.table_name, operation.schema, operation.key, None)
    if operation.distributed:
        _distribute(operations, operation.table_name, operation.schema)


@Operations.implementation_for(ConvertToBitemporalOp)
def _convert_to_bitemporal(operations: Operations, operation: ConvertToBitemporalOp) -> None:
    _enable(operations, operation.table_name, operation.schema, operation.key, operation.valid_from)
    if operation.distributed:
        _distribute(operations, operation.table_name, operation.schema)


@Operations.implementation_for(DistributeBitemporalTableOp)
def _distribute_bitemporal_table(
    operations: Operations, operation: DistributeBitemporalTableOp
) -> None:
    _distribute(operations, operation.table_name, operation.schema)


def _distribute(operations: Operations, table: str, schema: str | None) -> None:
    # Its refusals (BT502: no Citus, the store not distributed, references) as
    # DistributionError, which the migration's author can act on.
    _run_guard(
        operations,
        _call(
            "SELECT bitemporal.distribute_table("
            "CAST(quote_ident(coalesce(:t_schema, current_schema())) || '.' "
            "|| quote_ident(:t_table) AS regclass))",
            *_relation_params("t", table, schema),
        ),
    )


def _enable(
    operations: Operations,
    table: str,
    schema: str | None,
    key: Sequence[str],
    valid_from: datetime | None,
) -> None:
    operations.execute(
        _call(
            "SELECT bitemporal.enable_table("
            "CAST(quote_ident(coalesce(:t_schema, current_schema())) || '.' "
            "|| quote_ident(:t_table) AS regclass), :key, :valid_from)",
            *_relation_params("t", table, schema),
            bindparam("key", list(key), type_=ARRAY(Text)),
            bindparam("valid_from", valid_from, type_=DateTime(timezone=True)),
        )
    )


@Operations.implementation_for(DropBitemporalTableOp)
def _drop_bitemporal_table(operations: Operations, operation: DropBitemporalTableOp) -> None:
    operations.execute(
        _call(
            "SELECT bitemporal.drop_table("
            "CAST(quote_ident(coalesce(:t_schema, current_schema())) || '.' "
            "|| quote_ident(:t_table) AS regclass))",
            *_relation_params("t", operation.table_name, operation.schema),
        )
    )


@Operations.implementation_for(ConvertFromBitemporalOp)
def _convert_from_bitemporal(operations: Operations, operation: ConvertFromBitemporalOp) -> None:
    operations.execute(
        _call(
            "SELECT bitemporal.disable_table("
            "CAST(quote_ident(coalesce(:t_schema, current_schema())) || '.' "
            "|| quote_ident(:t_table) AS regclass))",
            *_relation_params("t", operation.table_name, operation.schema),
        )
    )


@Operations.implementation_for(RefreshBitemporalTableOp)
def _refresh_bitemporal_table(operations: Operations, operation: RefreshBitemporalTableOp) -> None:
    operations.execute(
        _call(
            "SELECT bitemporal.refresh_table("
            "CAST(quote_ident(coalesce(:t_schema, current_schema())) || '.' "
            "|| quote_ident(:t_table) AS regclass))",
            *_relation_params("t", operation.table_name, operation.schema),
        )
    )


@Operations.implementation_for(CreateTemporalReferenceOp)
def _create_temporal_reference(
    operations: Operations, operation: CreateTemporalReferenceOp
) -> None:
    operations.execute(
        _call(
            "SELECT bitemporal.add_reference("
            "CAST(quote_ident(coalesce(:c_schema, current_schema())) || '.' "
            "|| quote_ident(:c_table) AS regclass), :columns, "
            "CAST(quote_ident(coalesce(:p_schema, current_schema())) || '.' "
            "|| quote_ident(:p_table) AS regclass), :name)",
            *_relation_params("c", operation.source_table, operation.source_schema),
            *_relation_params("p", operation.referent_table, operation.referent_schema),
            bindparam("columns", operation.local_cols, type_=ARRAY(Text)),
            bindparam("name", operation.constraint_name, type_=Text),
        )
    )


@Operations.implementation_for(DropTemporalReferenceOp)
def _drop_temporal_reference(operations: Operations, operation: DropTemporalReferenceOp) -> None:
    operations.execute(
        _call(
            "SELECT bitemporal.drop_reference("
            "CAST(quote_ident(coalesce(:c_schema, current_schema())) || '.' "
            "|| quote_ident(:c_table) AS regclass), :name)",
            *_relation_params("c", operation.source_table, operation.source_schema),
            bindparam("name", operation.constraint_name, type_=Text),
        )
    )


# History-safe column changes. op.drop_column, and op.alter_column with a type_ that does not
# give every stored value back when cast to the old type, would rewrite the history of a
# bitemporal table that holds versions: refused (BT402) unless the migration passes
# bitemporal_drop_history=True. The check is a DO block run just before the DDL, so the
# offline (--sql) script carries it too.
DROP_HISTORY = "bitemporal_drop_history"


def _literal(value: str | None) -> str:
    return "NULL" if value is None else "'" + value.replace("'", "''") + "'"


def _history_guard(
    operation_name: str, table: str, schema: str | None, column: str, lost: str, why: str
) -> TextClause:
    """A DO block raising BT402 if ``schema.table`` is bitemporal and the SQL expression
    ``lost`` (run with the table's name in ``tab``; an error counts as lost) says how many
    versions would lose what they hold; ``why`` says what they would lose."""
    schema_sql = f"coalesce({_literal(schema)}, pg_catalog.current_schema())"
    return text(f"""DO $bitemporal_guard$
DECLARE
    tab text = pg_catalog.quote_ident({schema_sql}) || '.'
               || pg_catalog.quote_ident({_literal(table)});
    col text = {_literal(column)};
    versions bigint;
    failure text;
BEGIN
    IF pg_catalog.to_regclass('bitemporal.app_table') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT FROM bitemporal.app_table a
                    WHERE a.table_schema = {schema_sql} AND a.table_name = {_literal(table)}) THEN
        RETURN;
    END IF;
    BEGIN
        EXECUTE {lost} INTO versions;
    EXCEPTION WHEN others THEN
        EXECUTE 'SELECT count(*) FROM ' || tab INTO versions;
        failure = SQLERRM;
    END;
    IF versions > 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'BT402',
            MESSAGE = {_literal(operation_name)} || ' on ' || tab || ' refused: ' || versions
                   || ' versions of its history ' || {_literal(why)}
                   || coalesce(' (' || failure || ')', ''),
            HINT = 'Pass bitemporal_drop_history=True to ' || {_literal(operation_name)}
                   || ' to rewrite the history of column ' || col || ' on purpose.';
    END IF;
END
$bitemporal_guard$""")


def _run_guard(operations: Operations, guard: TextClause) -> None:
    try:
        operations.execute(guard)
    except exc.DBAPIError as error:
        if isinstance(error.orig, psycopg.Error):
            raise error_for(error.orig) from error
        raise


@Operations.implementation_for(ops.DropColumnOp, replace=True)
def _drop_column(operations: Operations, operation: ops.DropColumnOp) -> None:
    if not operation.kw.pop(DROP_HISTORY, False):
        _run_guard(
            operations,
            _history_guard(
                "op.drop_column",
                operation.table_name,
                operation.schema,
                operation.column_name,
                "'SELECT count(*) FROM ' || tab || ' WHERE ' || pg_catalog.quote_ident(col)"
                " || ' IS NOT NULL'",
                f"hold values in column {operation.column_name}, which would be lost for good",
            ),
        )
    toimpl.drop_column(operations, operation)


@Operations.implementation_for(ops.AlterColumnOp, replace=True)
def _alter_column(operations: Operations, operation: ops.AlterColumnOp) -> None:
    if operation.modify_type is not None and not operation.kw.pop(DROP_HISTORY, False):
        type_ = operation.modify_type
        new_type = (type_() if isinstance(type_, type) else type_).compile(
            dialect=operations.impl.dialect
        )
        using = operation.kw.get("postgresql_using")
        converted = _literal(using) if using else "pg_catalog.quote_ident(col)"
        # A value that does not come back unchanged through the new type and back was changed.
        _run_guard(
            operations,
            _history_guard(
                "op.alter_column",
                operation.table_name,
                operation.schema,
                operation.column_name,
                "'SELECT count(*) FROM ' || tab || ' WHERE ' || pg_catalog.quote_ident(col)"
                " || ' IS DISTINCT FROM CAST(CAST('"
                f" || {converted} || ' AS ' || {_literal(new_type)} || ') AS '"
                " || (SELECT pg_catalog.format_type(a.atttypid, a.atttypmod)"
                " FROM pg_catalog.pg_attribute a"
                "      WHERE a.attrelid = CAST(tab AS regclass) AND a.attname = col) || ')'",
                f"hold values of column {operation.column_name} "
                f"that type {new_type} would change or refuse",
            ),
        )
    operation.kw.pop(DROP_HISTORY, None)
    toimpl.alter_column(operations, operation)


# What enable_table and add_reference add to a table, which a model mapped with
# bitemporal.orm.Bitemporal does not declare.
_MANAGED_INDEX_SUFFIXES = ("_current_idx", "_known_from_idx", "_known_to_idx")


def _is_bitemporal(table: Any) -> bool:
    columns = getattr(table, "c", None)
    return columns is not None and "valid_period" in columns and "known_period" in columns


def include_object(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    """An ``include_object`` hook for ``context.configure`` in an application's ``env.py``:
    autogenerate (and ``alembic check``) then ignores what bitemporal manages for tables
    mapped with :class:`bitemporal.orm.Bitemporal` (their ``<table>_key`` tables, the
    ``recorded_in`` column, the indexes of current versions and knowledge bounds, the
    key table's foreign key and the temporal references' indexes), instead of proposing
    to drop it."""
    if not reflected or compare_to is not None or name is None:
        return True
    if type_ == "table":
        # A key table has the shape enable_table gives it.
        return not (
            name.endswith("_key")
            and {"first_known_at", "last_known_at", "last_txid"} <= set(obj.c.keys())
        )
    table = getattr(obj, "table", None)
    if table is None or not _is_bitemporal(table):
        return True
    if type_ == "column":
        return name != "recorded_in"
    if type_ == "index":
        managed = name.startswith(table.name) and name.endswith(_MANAGED_INDEX_SUFFIXES)
        return not (
            managed
            or (
                name.endswith("_idx")
                and "upper_inf(known_period)"
                in str(obj.dialect_options["postgresql"].get("where", ""))
            )
        )
    if type_ == "foreign_key_constraint":
        return name != f"{table.name}_key_fkey"
    return True


# Foreign keys from ordinary tables to a bitemporal table (issue 13): a key repeats across
# versions, so no plain foreign key can point at the versions; the table's <table>_key table
# holds each key ever recorded exactly once, and a key is never removed from it (a retraction
# ends versions, not the key), so a foreign key to it means "a key this table has known".


@Operations.register_operation("create_key_foreign_key")
class CreateKeyForeignKeyOp(MigrateOperation):
    """A plain foreign key from an ordinary table to a bitemporal table's ``<table>_key``."""

    def __init__(
        self,
        constraint_name: str | None,
        source_table: str,
        referent_table: str,
        local_cols: Sequence[str],
        remote_cols: Sequence[str] | None = None,
        source_schema: str | None = None,
        referent_schema: str | None = None,
        **kw: Any,
    ) -> None:
        self.constraint_name = constraint_name
        self.source_table = source_table
        self.referent_table = referent_table
        self.local_cols = list(local_cols)
        self.remote_cols = list(remote_cols if remote_cols is not None else local_cols)
        self.source_schema = source_schema
        self.referent_schema = referent_schema
        self.kw = kw

    @classmethod
    def create_key_foreign_key(
        cls,
        operations: Operations,
        constraint_name: str | None,
        source_table: str,
        referent_table: str,
        local_cols: Sequence[str],
        remote_cols: Sequence[str] | None = None,
        source_schema: str | None = None,
        referent_schema: str | None = None,
        **kw: Any,
    ) -> None:
        """``op.create_foreign_key`` from ``source_table`` to ``<referent_table>_key``, the
        bitemporal table's key table (``remote_cols``: its key columns, by default named
        as ``local_cols``). It guarantees the key was recorded at some time, not that a
        version is valid or current now (for that, see ``op.create_temporal_reference``
        between two bitemporal tables). Extra keywords (``ondelete``, ...) go to
        ``create_foreign_key``."""
        operations.invoke(
            cls(
                constraint_name,
                source_table,
                referent_table,
                local_cols,
                remote_cols,
                source_schema=source_schema,
                referent_schema=referent_schema,
                **kw,
            )
        )


@Operations.implementation_for(CreateKeyForeignKeyOp)
def _create_key_foreign_key(operations: Operations, operation: CreateKeyForeignKeyOp) -> None:
    operations.create_foreign_key(
        operation.constraint_name,
        operation.source_table,
        f"{operation.referent_table}_key",
        operation.local_cols,
        operation.remote_cols,
        source_schema=operation.source_schema,
        referent_schema=operation.referent_schema,
        **operation.kw,
    )
