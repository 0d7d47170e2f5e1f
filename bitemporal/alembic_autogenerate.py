"""Alembic autogenerate for bitemporal tables: what ``alembic revision --autogenerate``
and ``alembic check`` propose for models mapped with :class:`bitemporal.orm.Bitemporal`.

Importing this module (one line in the application's ``env.py``) registers a comparator
that runs after Alembic's own and rewrites what they proposed:

- a new model with the mixin: ``op.create_bitemporal_table(...)`` instead of ``op.create_table``;
- the mixin added to a model of an existing table: ``op.convert_to_bitemporal(...)`` instead of
  adding the version columns;
- a value column added, changed or dropped on a bitemporal table: that change, then
  ``op.refresh_bitemporal_table(...)`` (and the same order in the downgrade);
- never a change to what the library manages: the schemas ``bitemporal`` and
  ``bitemporal_internal``, the ``<table>_key`` tables, the version columns, the indexes and
  constraints ``enable_table`` and ``add_reference`` create (triggers and functions Alembic
  does not compare).

Which tables are bitemporal is read from the database's registry (``bitemporal.app_table``)
and from the models' classes, never guessed from names; with neither, nothing is changed:
unlike a comparator that owns objects globally, this one proposes nothing in a project
without bitemporal tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from alembic.autogenerate import comparators, render_op_text, renderers
from alembic.autogenerate.api import AutogenContext
from alembic.operations import ops
from sqlalchemy import Column, Connection, Constraint, Table, inspect, text

from .alembic_ops import (
    ConvertFromBitemporalOp,
    ConvertToBitemporalOp,
    CreateBitemporalTableOp,
    DropBitemporalTableOp,
    RefreshBitemporalTableOp,
)
from .metadata import metadata as store_metadata
from .migrations import SCHEMAS
from .orm import Bitemporal

__all__ = ["ModifyBitemporalTableOps"]

# The columns enable_table adds (the mixin declares all but recorded_in).
VERSION_COLUMNS = frozenset(
    {"version_id", "valid_period", "known_period", "carried_from", "recorded_in"}
)

# Constraints enable_table gives a table, by suffix of the table's name.
_MANAGED_CONSTRAINTS = (
    "_pkey",
    "_no_overlap",
    "_key_fkey",
    "_valid_period_half_open",
    "_known_period_half_open",
    "_recorded_in_here",
)

Name = tuple[str, str]  # (schema, table)
ModelName = tuple[str | None, str]  # (schema or None for the default, table)


class ModifyBitemporalTableOps(ops.ModifyTableOps):
    """Changes to a bitemporal table's value columns, followed by
    ``op.refresh_bitemporal_table``: its reverse (the downgrade) also refreshes last."""

    def reverse(self) -> ModifyBitemporalTableOps:
        return ModifyBitemporalTableOps(
            self.table_name,
            ops=list(reversed([op.reverse() for op in self.ops])),
            schema=self.schema,
        )


class _Registry:
    """What the database holds: its bitemporal tables, their key tables, and the names of
    the indexes the library created on them."""

    def __init__(self, connection: Connection) -> None:
        self.tables: dict[Name, tuple[str, ...]] = {}  # their key columns
        self.key_tables: set[Name] = set()
        self.managed_indexes: set[tuple[str, str, str]] = set()
        if connection.execute(text("SELECT to_regclass('bitemporal.app_table')")).scalar() is None:
            return
        for schema, table, key_table, key in connection.execute(
            text(
                "SELECT table_schema, table_name, key_table, key_columns FROM bitemporal.app_table"
            )
        ):
            self.tables[(schema, table)] = tuple(key)
            self.key_tables.add((schema, key_table))
        # Every index the library creates on a table is over, or filtered by, known_period.
        for schema, table, index in connection.execute(
            text(
                "SELECT a.table_schema, a.table_name, i.relname"
                "  FROM bitemporal.app_table a"
                "  JOIN pg_catalog.pg_index x"
                "    ON x.indrelid = CAST(quote_ident(a.table_schema) || '.' "
                "|| quote_ident(a.table_name) AS regclass)"
                "  JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid"
                " WHERE pg_catalog.pg_get_indexdef(x.indexrelid) LIKE '%known_period%'"
            )
        ):
            self.managed_indexes.add((schema, table, index))


def _models(metadata: Any) -> dict[ModelName, tuple[str, ...]]:
    """The tables of ``metadata`` mapped by a class with the mixin: their key columns,
    by (schema or None, name)."""
    tables = {id(t) for t in _all_tables(metadata)}
    found: dict[ModelName, tuple[str, ...]] = {}
    for cls in _subclasses(Bitemporal):
        mapper: Any = inspect(cls, raiseerr=False)
        table = getattr(mapper, "local_table", None)
        if isinstance(table, Table) and id(table) in tables and hasattr(cls, "__bitemporal_key__"):
            found[(table.schema, table.name)] = tuple(cls.__bitemporal_key__)
    return found


def _all_tables(metadata: Any) -> Iterator[Table]:
    for m in metadata if isinstance(metadata, list | tuple) else [metadata]:
        if m is not None:
            yield from m.tables.values()


def _subclasses(cls: type) -> Iterator[type]:
    sub: type
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _is_version_part(item: Any, table: str) -> bool:
    """A column or constraint that enable_table creates: a version column, or a constraint
    over one or named as enable_table names them."""
    if isinstance(item, Column):
        return item.name in VERSION_COLUMNS
    if isinstance(item, Constraint):
        return item.name in {table + s for s in _MANAGED_CONSTRAINTS} or any(
            c.name in VERSION_COLUMNS for c in getattr(item, "columns", ())
        )
    return False


def _column_name(op: ops.MigrateOperation) -> str | None:
    if isinstance(op, ops.AddColumnOp):
        return str(op.column.name)
    if isinstance(op, ops.DropColumnOp | ops.AlterColumnOp):
        return op.column_name
    return None


def _managed(op: ops.MigrateOperation, schema: str, table: str, registry: _Registry) -> bool:
    """Whether ``op`` on the bitemporal table ``schema.table`` touches what the library manages."""
    if _column_name(op) in VERSION_COLUMNS:
        return True
    if isinstance(op, ops.DropIndexOp | ops.CreateIndexOp):
        return (schema, table, op.index_name) in registry.managed_indexes
    if isinstance(op, ops.DropConstraintOp | ops.AddConstraintOp):
        return getattr(op, "constraint_name", None) in {table + s for s in _MANAGED_CONSTRAINTS}
    return False


def _rewrite(autogen_context: AutogenContext, upgrade_ops: ops.UpgradeOps, schemas: Any) -> Any:
    if autogen_context.metadata is store_metadata:
        # The library's own drift check (tests/migrations/test_drift.py) compares its
        # schema with its own table descriptions: nothing there may be hidden.
        return _CONTINUE
    connection = autogen_context.connection
    assert connection is not None
    default = str(connection.dialect.default_schema_name)
    registry = _Registry(connection)
    models = _models(autogen_context.metadata)

    def key_of(schema: str | None, table: str) -> tuple[str, ...] | None:
        return models.get((schema, table)) or models.get(
            (None, table) if schema == default else (schema, table)
        )

    rewritten: list[ops.MigrateOperation] = []
    for op in upgrade_ops.ops:
        op_schema = getattr(op, "schema", None)
        schema = op_schema or default
        table = getattr(op, "table_name", None)
        if schema in SCHEMAS or (schema, table) in registry.key_tables:
            continue
        key = key_of(op_schema, table) if table is not None else None
        if isinstance(op, ops.CreateTableOp) and key is not None:
            # Columns and table constraints, as op.create_table takes them.
            parts: list[Any] = [c for c in op.columns if not _is_version_part(c, op.table_name)]
            rewritten.append(
                CreateBitemporalTableOp(op.table_name, parts, key=key, schema=op.schema, **op.kw)
            )
        elif isinstance(op, ops.DropTableOp) and (schema, op.table_name) in registry.tables:
            # The model is gone: drop the table with its key table and functions.
            dropped = DropBitemporalTableOp(op.table_name, schema=op.schema)
            reflected: list[Any] = [
                c for c in op.reverse().columns if not _is_version_part(c, op.table_name)
            ]
            dropped.recreate = CreateBitemporalTableOp(
                op.table_name,
                reflected,
                key=registry.tables[(schema, op.table_name)],
                schema=op.schema,
            )
            rewritten.append(dropped)
        elif isinstance(op, ops.ModifyTableOps) and (schema, op.table_name) in registry.tables:
            kept = [o for o in op.ops if not _managed(o, schema, op.table_name, registry)]
            if any(_column_name(o) is not None for o in kept):
                rewritten.append(ModifyBitemporalTableOps(op.table_name, kept, schema=op.schema))
            elif kept:
                rewritten.append(ops.ModifyTableOps(op.table_name, kept, schema=op.schema))
        elif isinstance(op, ops.ModifyTableOps) and key is not None:
            # The mixin was added: enable_table adds the version columns and indexes.
            kept = [o for o in op.ops if _column_name(o) not in VERSION_COLUMNS]
            if kept:
                rewritten.append(ops.ModifyTableOps(op.table_name, kept, schema=op.schema))
            rewritten.append(ConvertToBitemporalOp(op.table_name, key, schema=op.schema))
        else:
            rewritten.append(op)
    upgrade_ops.ops[:] = rewritten
    return _CONTINUE


try:  # Alembic >= 1.18: run after Alembic's own comparators, which this one rewrites.
    from alembic.util import DispatchPriority, PriorityDispatchResult

    _CONTINUE: Any = PriorityDispatchResult.CONTINUE
    comparators.dispatch_for("schema", priority=DispatchPriority.LAST)(_rewrite)
except ImportError:  # registered after them, so it runs after them
    _CONTINUE = None
    comparators.dispatch_for("schema")(_rewrite)


def _table_args(table: str, schema: str | None) -> str:
    return repr(table) + ("" if schema is None else f", schema={schema!r}")


@renderers.dispatch_for(CreateBitemporalTableOp)
def _render_create(autogen_context: AutogenContext, op: CreateBitemporalTableOp) -> str:
    # Alembic renders the table's columns and constraints as for op.create_table.
    created = render_op_text(
        autogen_context, ops.CreateTableOp(op.table_name, op.columns, schema=op.schema, **op.kw)
    )
    head, _, rest = created.partition("create_table(")
    return f"{head}create_bitemporal_table({rest.rstrip()[:-1].rstrip()},\nkey={op.key!r})"


@renderers.dispatch_for(DropBitemporalTableOp)
def _render_drop(autogen_context: AutogenContext, op: DropBitemporalTableOp) -> str:
    return f"op.drop_bitemporal_table({_table_args(op.table_name, op.schema)})"


@renderers.dispatch_for(ConvertToBitemporalOp)
def _render_convert(autogen_context: AutogenContext, op: ConvertToBitemporalOp) -> str:
    schema = "" if op.schema is None else f", schema={op.schema!r}"
    # valid_from=None: the existing rows are valid from the beginning of time.
    return f"op.convert_to_bitemporal({op.table_name!r}, key={op.key!r}, valid_from=None{schema})"


@renderers.dispatch_for(ConvertFromBitemporalOp)
def _render_convert_back(autogen_context: AutogenContext, op: ConvertFromBitemporalOp) -> str:
    return f"op.convert_from_bitemporal({_table_args(op.table_name, op.schema)})"


@renderers.dispatch_for(RefreshBitemporalTableOp)
def _render_refresh(autogen_context: AutogenContext, op: RefreshBitemporalTableOp) -> str:
    return f"op.refresh_bitemporal_table({_table_args(op.table_name, op.schema)})"


@renderers.dispatch_for(ModifyBitemporalTableOps)
def _render_modify(autogen_context: AutogenContext, op: ModifyBitemporalTableOps) -> list[str]:
    plain = ops.ModifyTableOps(op.table_name, op.ops, schema=op.schema)
    lines = render_op_text(autogen_context, plain).splitlines()
    return [
        *lines,
        _render_refresh(autogen_context, RefreshBitemporalTableOp(op.table_name, schema=op.schema)),
    ]
