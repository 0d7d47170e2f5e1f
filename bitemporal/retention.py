"""Retention: closed knowledge erased once it ended long enough ago.

A retention policy (sql/retention.v1.sql) says how long the fact store keeps the
versions of an attribute, or an application table its versions, after their
knowledge ended: :meth:`Retention.apply` (``bitemporal.apply_retention()``, the job
to run from cron or pg_cron, or ``bitemporal retention apply``) erases those whose
knowledge ended more than ``keep_for`` ago, through the erasure machinery, one
``bitemporal.erasures`` row per key with the policy's name. Current knowledge is
never touched. Setting and applying policies is for the eraser role
(``bitemporal_eraser``); see docs/erasure.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .app_tables import TableRef, table_oid
from .errors import InvalidRetentionPolicyError, check_optional_text
from .model import check_key_part
from .operations import (
    AsyncRepository,
    Statement,
    Steps,
    SyncRepository,
    one,
    reads,
    writes,
)


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """A retention policy: ``fact:<attribute>`` or ``table:<schema.table>``."""

    policy: str
    #: ``fact`` or ``table``.
    scope: str
    attribute: str | None
    relation: str | None
    #: How long a version is kept after its knowledge ended (a month read as 30 days).
    keep_for: timedelta
    created_at: datetime
    created_by: str
    comment: str | None


@dataclass(frozen=True, slots=True)
class RetentionRun:
    """What one policy erased in one :meth:`Retention.apply`."""

    policy: str
    #: Keys with versions erased (one ``bitemporal.erasures`` row each).
    keys: int
    versions: int


def _keep_for(keep_for: timedelta | None) -> timedelta | None:
    if keep_for is not None and (not isinstance(keep_for, timedelta) or keep_for <= timedelta(0)):
        raise InvalidRetentionPolicyError(
            f"keep_for must be a positive timedelta (None drops the policy), not {keep_for!r}"
        )
    return keep_for


def _set_retention(policy: str, keep_for: timedelta | None, comment: str | None) -> Steps[str]:
    row = one(
        (
            yield Statement(
                "SELECT bitemporal.set_retention(%s, %s, %s)",
                (policy, _keep_for(keep_for), check_optional_text("comment", comment)),
            )
        )
    )
    name: str = row[0]
    return name


class RetentionOperations:
    """Retention policies and their application; run by :class:`Retention` (sync API) and
    :class:`AsyncRetention` (async API)."""

    @writes
    def set(
        self, attribute: str, keep_for: timedelta | None, *, comment: str | None = None
    ) -> Steps[str]:
        """Keep the closed versions of ``attribute`` for ``keep_for`` after their knowledge
        ended (None drops the policy); returns the policy's name, ``fact:<attribute>``."""
        check_key_part("attribute", attribute)
        return (yield from _set_retention(f"fact:{attribute}", keep_for, comment))

    @writes
    def set_table(
        self, table: TableRef, keep_for: timedelta | None, *, comment: str | None = None
    ) -> Steps[str]:
        """The same for a bitemporal application table; the name is ``table:<schema.table>``.
        Raises :class:`~bitemporal.UnknownTableError` for any other table."""
        _keep_for(keep_for)
        oid = yield from table_oid(table)
        # Schema-qualified: the SQL function does not see this session's search path.
        qualified = one(
            (
                yield Statement(
                    "SELECT format('%%I.%%I', n.nspname, c.relname) FROM pg_class c"
                    " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s::oid",
                    (oid,),
                )
            )
        )
        return (yield from _set_retention(f"table:{qualified[0]}", keep_for, comment))

    @reads
    def policies(self) -> Steps[list[RetentionPolicy]]:
        """Every retention policy, by name."""
        rows = yield Statement(
            "SELECT policy, scope, attribute, relation, keep_for, created_at, created_by::text,"
            " comment FROM bitemporal.retention_policy ORDER BY policy"
        )
        return [RetentionPolicy(*r) for r in rows]

    @writes
    def apply(self) -> Steps[list[RetentionRun]]:
        """Apply every policy now (``bitemporal.apply_retention()``): what each erased."""
        rows = yield Statement("SELECT policy, keys, versions FROM bitemporal.apply_retention()")
        return [RetentionRun(*r) for r in rows]


class Retention(RetentionOperations, SyncRepository):
    """The retention repository of :class:`~bitemporal.Store` (see
    :class:`RetentionOperations`)."""


class AsyncRetention(RetentionOperations, AsyncRepository):
    """The retention repository of :class:`~bitemporal.AsyncStore`: :class:`Retention`'s
    methods, awaitable."""
