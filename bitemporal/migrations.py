"""Schema migrations: every Alembic command as a plain function.

The migrations live in ``migrations/`` and the SQL they load in ``sql/``; the
wheel carries both (as ``bitemporal/_resources``), so an installed package can
migrate a database without a checkout. Our version table is
``bitemporal.alembic_version``, apart from an application's own
``alembic_version``, so both histories coexist in one database.
"""

from __future__ import annotations

import hashlib
import io
import re
from argparse import Namespace
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import psycopg
from alembic import command
from alembic.config import Config
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext, MigrationStep
from alembic.script import ScriptDirectory
from alembic.script.revision import RevisionError
from alembic.util import CommandError
from sqlalchemy import Connection, Engine, create_engine, exc, pool, text

from .database import database_url, sqlalchemy_url
from .errors import (
    ConfigurationError,
    DistributionError,
    DowngradeWouldLoseDataError,
    MigrationError,
    SchemaBehindError,
    SchemaNotMigratedError,
    error_for,
    translate,
)
from .formatting import counted

SCHEMA = "bitemporal"
VERSION_TABLE = "alembic_version"

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """``migrations`` or ``sql``: inside the installed wheel, else in the checkout."""
    for candidate in (_PACKAGE / "_resources" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bitemporal resource directory {name!r} not found")


# sha256 of every file in sql/, one "<hex>  <name>" line each (sha256sum's
# format): loaded SQL files are frozen, and a migration refuses a file whose
# bytes are not the ones it was released with.
MANIFEST = "MANIFEST.sha256"


def sql_manifest(directory: Path) -> dict[str, str]:
    """The checksums ``directory``'s manifest lists, by file name."""
    listed: dict[str, str] = {}
    for line in (directory / MANIFEST).read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    return listed


def sql_manifest_problems(directory: Path) -> list[str]:
    """How the SQL files in ``directory`` differ from its manifest (empty: they match)."""
    listed = sql_manifest(directory)
    present = {p.name for p in directory.glob("*.sql")}
    problems = [f"{name}: not in {MANIFEST}" for name in sorted(present - listed.keys())]
    problems += [
        f"{name}: listed in {MANIFEST} but missing" for name in sorted(listed.keys() - present)
    ]
    for name in sorted(present & listed.keys()):
        if hashlib.sha256((directory / name).read_bytes()).hexdigest() != listed[name]:
            problems.append(
                f"{name}: changed since it was frozen (its sha256 is not the one in {MANIFEST})"
            )
    return problems


def sql_text(filename: str) -> str:
    """The text of one versioned SQL file from ``sql/`` (for migrations), checked against
    the manifest: a frozen file that changed is refused rather than loaded."""
    directory = resource_dir("sql")
    data = (directory / filename).read_bytes()
    if sql_manifest(directory).get(filename) != hashlib.sha256(data).hexdigest():
        raise ConfigurationError(
            f"sql/{filename} is not the file {MANIFEST} lists: a loaded SQL file is frozen; "
            "put a changed definition in a new versioned file loaded by a new migration"
        )
    return data.decode("utf-8")


def previous_definition(filename: str, function: str) -> str:
    """``CREATE OR REPLACE`` of a function (and its ``COMMENT``) as an earlier, frozen SQL
    file defines it: what a migration that redefined the function restores on downgrade."""
    text_ = sql_text(filename)
    found = re.search(
        rf"^CREATE (?:OR REPLACE )?FUNCTION {re.escape(function)}\(.*?"
        rf"^COMMENT ON FUNCTION {re.escape(function)}\(.*?';$",
        text_,
        re.MULTILINE | re.DOTALL,
    )
    if found is None:
        raise LookupError(f"{filename} does not define {function}")
    return re.sub(
        r"^CREATE (?:OR REPLACE )?FUNCTION", "CREATE OR REPLACE FUNCTION", found[0], count=1
    )


def standard_body_definition(filename: str, function: str) -> str:
    """``CREATE OR REPLACE`` of a function with a SQL-standard body (``BEGIN ATOMIC ...
    END;``) as an earlier, frozen SQL file defines it, without a ``COMMENT`` (files such as
    search_path.v1.sql give none: the function keeps its own): what a migration that
    redefined it restores on downgrade."""
    return _definition_to(filename, function, r"^END;$")


def quoted_body_definition(filename: str, function: str) -> str:
    """:func:`standard_body_definition` for a function whose body is quoted (``AS $$ ...
    $$;``), as files that redefine a function and keep its ``COMMENT`` give it."""
    return _definition_to(filename, function, r"^\$\$;$")


def _definition_to(filename: str, function: str, end: str) -> str:
    found = re.search(
        rf"^CREATE (?:OR REPLACE )?FUNCTION {re.escape(function)}\(.*?{end}",
        sql_text(filename),
        re.MULTILINE | re.DOTALL,
    )
    if found is None:
        raise LookupError(f"{filename} does not define {function}")
    return re.sub(
        r"^CREATE (?:OR REPLACE )?FUNCTION", "CREATE OR REPLACE FUNCTION", found[0], count=1
    )


Target = str | Engine | Connection | None

# The migration option asking for the partitioned layout (migration 0008): how
# many hash partitions of entity bitemporal.fact_version gets; 0 or absent, none.
PARTITIONS_OPTION = "bitemporal_partitions"
MAX_PARTITIONS = 1024


def partitions_option(value: int | str | None) -> int | None:
    """The ``partitions`` option checked: None (not given) or 0..MAX_PARTITIONS."""
    if value is None:
        return None
    try:
        count = int(value)
    except ValueError:
        count = -1
    if not 0 <= count <= MAX_PARTITIONS:
        raise ConfigurationError(
            f"partitions must be an integer from 0 to {MAX_PARTITIONS}, not {value!r}"
        )
    return count


def config(*, output: io.StringIO | None = None) -> Config:
    """An Alembic config for our migrations (for ``alembic.command`` and ``ScriptDirectory``)."""
    cfg = Config(output_buffer=output) if output is not None else Config()
    cfg.set_main_option("script_location", str(resource_dir("migrations")))
    return cfg


# Migrations wait at most this long for a lock (a busy table), then fail and
# can be re-run, instead of queueing every other session behind them.
LOCK_TIMEOUT = "10s"


# Run before anything is migrated, online and in the offline script: a schema
# another role created first stays that role's, and its owner could replace our
# functions (which every caller runs, superusers included) or drop the history.
# No % or : in the text, so that it passes unchanged through SQLAlchemy and Alembic.
# The schemas migrations create: the API and, from 0009, the helpers. A role that
# owns either (created before the first migration) could replace what runs in it.
SCHEMAS = (SCHEMA, "bitemporal_internal")

OWNER_GUARD = f"""DO $guard$
DECLARE
    found record;
BEGIN
    FOR found IN
        SELECT n.nspname AS name, pg_catalog.pg_get_userbyid(n.nspowner) AS owner
          FROM pg_catalog.pg_namespace n
         WHERE n.nspname IN ({", ".join(f"'{name}'" for name in SCHEMAS)})
           AND n.nspowner <> (SELECT r.oid FROM pg_catalog.pg_roles r
                               WHERE r.rolname = current_user)
    LOOP
        RAISE EXCEPTION USING
            ERRCODE = 'BT501',
            MESSAGE = 'schema ' || found.name || ' is owned by role '
                   || pg_catalog.quote_ident(found.owner)
                   || ', not by ' || pg_catalog.quote_ident(current_user)
                   || ', who is migrating it; its owner could replace the bitemporal functions'
                   || ' or drop the history',
            HINT = 'Migrate as the schema''s owner (SET ROLE), or, if that role is not trusted, '
                   'drop the schema and migrate again.';
    END LOOP;
END
$guard$"""


def prepare(connection: Connection, lock_timeout: str = LOCK_TIMEOUT) -> None:
    """Take the migration lock, bound lock waits, refuse a schema another role owns
    (:class:`~bitemporal.errors.SchemaOwnershipError`), create the schema
    holding our version table, and keep autovacuum off that table (see
    ``VERSION_TABLE_LOCK``).

    The advisory lock makes concurrent deployments take turns; it is held
    until the transaction ends.
    """
    connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('bitemporal.migrations'))"))
    connection.execute(text("SELECT set_config('lock_timeout', :t, true)"), {"t": lock_timeout})
    connection.execute(text(OWNER_GUARD))
    connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
    connection.execute(text(VERSION_TABLE_LOCK))


# Each step's STAMP takes the version table's SHARE UPDATE EXCLUSIVE lock, as
# autovacuum does. An autovacuum of it that started during a migration could
# wait for the migration's transaction (its in-place update of the table's
# pg_class row waits for a transaction that changed that row: a REVOKE, say)
# while the next STAMP waits for it: a deadlock, seen once on PostgreSQL 18 in
# a downgrade to base. Holding that lock from the start keeps autovacuum off
# the table until the migration ends.
VERSION_TABLE_LOCK = f"""DO $lock$
BEGIN
    IF pg_catalog.to_regclass('{SCHEMA}.{VERSION_TABLE}') IS NOT NULL THEN
        LOCK TABLE {SCHEMA}.{VERSION_TABLE} IN SHARE UPDATE EXCLUSIVE MODE;
    END IF;
END
$lock$"""


# The reader and writer roles may not read the version table (the auditor may),
# but every role reads the catalog: each migration leaves the revision in the
# version table's comment too, where connect() checks it. No % or : in the
# text, so that it passes unchanged through SQLAlchemy and the offline script.
STAMP_PREFIX = "bitemporal schema at revision "
STAMP = f"""DO $stamp$
BEGIN
    EXECUTE 'COMMENT ON TABLE {SCHEMA}.{VERSION_TABLE} IS ' || pg_catalog.quote_literal(
        '{STAMP_PREFIX}' || coalesce((SELECT pg_catalog.string_agg(v.version_num, ' ')
                                        FROM {SCHEMA}.{VERSION_TABLE} v), 'none'));
END
$stamp$"""


_DISTRIBUTED = """SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL
                   AND to_regclass('bitemporal.fact_key') IS NOT NULL
                   AND EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                                WHERE logicalrelid = to_regclass('bitemporal.fact_key'))"""


def has_citus(connection: Connection) -> bool:
    """Whether the database has the ``citus`` extension (a Citus coordinator's)."""
    return bool(
        connection.execute(
            text("SELECT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus')")
        ).scalar()
    )


def is_distributed(connection: Connection) -> bool:
    """Whether the store is distributed by Citus (its key table is a distributed table)."""
    # Without Citus, _DISTRIBUTED would not parse: it names Citus's catalog.
    return has_citus(connection) and bool(connection.execute(text(_DISTRIBUTED)).scalar())


def if_distributed(statements: str) -> str:
    """A ``DO`` block running PL/pgSQL ``statements`` on a store distributed by Citus, and
    nothing on any other: for a migration, whose script may run where it cannot look first
    (``--sql``)."""
    return f"""
DO $do$
DECLARE
    distributed boolean := false;
BEGIN
    -- pg_dist_partition exists only with Citus: looked up by name, at run time.
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p'
                ' WHERE p.logicalrelid = $1)'
           INTO distributed USING 'bitemporal.fact_version'::regclass;
    END IF;
    IF distributed THEN
{statements}
    END IF;
END
$do$;
"""


def citus_propagation(on: bool) -> str:
    """Citus's DDL propagation turned on or off for the rest of the transaction, on a
    distributed store (:func:`if_distributed`): a migration creates or replaces functions
    that are the coordinator's alone with it off, since Citus would make each one a
    distributed object."""
    value = "on" if on else "off"
    return if_distributed(
        f"        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', '{value}', true);"
    )


_CITUS_OWNER = (
    "SELECT r.rolname, current_user FROM pg_catalog.pg_extension e"
    " JOIN pg_catalog.pg_roles r ON r.oid = e.extowner WHERE e.extname = 'citus'"
)


def prepare_citus(connection: Connection) -> None:
    """Before migrating a Citus coordinator (``citus=True``): refuse a database without
    the ``citus`` extension, or a role other than the extension's owner
    (:class:`~bitemporal.errors.DistributionError`); while the
    store is not distributed yet, migrate the coordinator alone (Citus's DDL
    propagation off for this transaction) and leave distributing to
    :func:`distribute`. A distributed store's migrations propagate as usual."""
    if not has_citus(connection):
        raise DistributionError(
            "this database has no citus extension: migrate without citus, "
            "or create the extension and add the workers first",
            hint="CREATE EXTENSION citus; SELECT citus_add_node(host, port) for each worker",
        )
    owner, me = connection.execute(text(_CITUS_OWNER)).one()
    if owner != me:
        # Citus writes its metadata on the workers over connections as the extension's
        # owner, which cannot see what this transaction created there when it runs as
        # another role (citusdata/citus#3398): as a superuser, distribute() fails with
        # "function bitemporal_internal.citus_transaction_id() does not exist".
        raise DistributionError(
            f"migrate a Citus coordinator as the owner of its citus extension ({owner}), "
            f"not as {me}: Citus writes its metadata on the workers as {owner}, "
            "over connections that cannot see the objects this migration creates",
            hint=f"connect as {owner}: postgresql://{owner}@host/database",
        )
    if not is_distributed(connection):
        connection.execute(text("SELECT set_config('citus.enable_ddl_propagation', 'off', true)"))


def _below_distribute(connection: Connection) -> bool:
    return bool(
        connection.execute(
            text("SELECT to_regprocedure('bitemporal.distribute(integer)') IS NULL")
        ).scalar()
    )


def distribute(connection: Connection, *, required: bool = True) -> None:
    """Distribute the store on a Citus coordinator (``bitemporal.distribute()``, migration
    0015): idempotent, run after every migration of a Citus database. Then the workers'
    copies of our distributed functions are made the coordinator's
    (``sql/citus_functions.v1.sql``): Citus sends a function once, when it distributes it,
    so a definition a migration changed later, and ``distribute()`` adapted, would not
    reach them; and a copy made anew keeps PUBLIC out as the coordinator's does
    (``sql/citus_function_acls.v1.sql``). Below 0015 there is nothing to distribute with:
    :class:`~bitemporal.errors.DistributionError` if ``required``, else nothing happens."""
    if _below_distribute(connection):
        if not required:
            return
        raise DistributionError(
            "distributing the store needs migration 0015 or later",
            hint="upgrade to head: bitemporal db upgrade --citus",
        )
    connection.execute(text("SELECT bitemporal.distribute()"))
    connection.exec_driver_sql(sql_text("citus_functions.v1.sql"))
    connection.exec_driver_sql(sql_text("citus_function_acls.v1.sql"))


def check_layout(connection: Connection, partitions: int | None) -> None:
    """After migrating: the version table has the layout the ``partitions`` option asked for.

    Migration 0008 applies the option when it runs. On a database already past
    it, migrating does not rebuild the table behind the operator's back: it
    fails and says how to convert it.
    """
    if partitions is None:
        return
    installed = connection.execute(
        text("SELECT to_regprocedure('bitemporal.version_partitions()')")
    ).scalar()
    actual: int | None = 0
    if installed:
        actual = connection.execute(text("SELECT bitemporal.version_partitions()")).scalar()
    if actual == partitions:
        return
    if not installed:
        raise ConfigurationError(
            "the partitioned layout needs migration 0008 or later: upgrade to head"
        )
    raise ConfigurationError(
        f"bitemporal.fact_version has {actual} partitions, not {partitions}: "
        "migration 0008 chose the "
        f"layout when it ran; to change it, run (as the table's owner) "
        f"SELECT bitemporal.partition_versions({partitions})"
    )


def _tables(connection: Connection) -> list[str]:
    """Our tables (a partitioned table once, its partitions not), version table aside."""
    return list(
        connection.execute(
            text("""SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname)
                  FROM pg_catalog.pg_class c
                  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = :schema AND c.relkind IN ('r', 'p') AND NOT c.relispartition
                   AND c.relname <> :version_table"""),
            {"schema": SCHEMA, "version_table": VERSION_TABLE},
        ).scalars()
    )


def _rows(connection: Connection, table: str) -> int:
    return int(connection.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def _downgrade_keeping_data(
    connection: Connection, migrate_down: Callable[[], None], revision: str, force: bool
) -> None:
    """Run ``migrate_down`` in a savepoint; if it dropped tables that held rows and
    ``force`` is false, roll it back and raise :class:`DowngradeWouldLoseDataError`.

    Which tables a downgrade drops is seen by running it, so the rule holds for
    every migration, later ones included.
    """
    holding = [
        t
        for t in _tables(connection)
        # SELECT 1: Citus refuses a subquery with no columns over a distributed table.
        if connection.execute(text(f"SELECT EXISTS (SELECT 1 FROM {t})")).scalar()
    ]
    savepoint = connection.begin_nested()
    migrate_down()
    remaining = set(_tables(connection))
    dropped = [t for t in holding if t not in remaining]
    if not dropped or force:
        savepoint.commit()
        return
    savepoint.rollback()
    lost = {t: _rows(connection, t) for t in dropped}
    listed = ", ".join(f"{t} ({counted(n, 'row')})" for t, n in lost.items())
    raise DowngradeWouldLoseDataError(
        f"downgrading to {revision} would drop {len(lost)} tables holding data, "
        f"lost for good: {listed}; nothing was changed",
        hint=f"back them up first with pg_dump --schema={SCHEMA}, then repeat with --force, "
        "or with force=True from Python",
        tables=lost,
    )


@contextmanager
def translated(failure: str) -> Iterator[None]:
    """Alembic's and the database's errors as typed ones: the error the SQLSTATE
    declares (see :func:`bitemporal.errors.error_for`), else a
    :class:`~bitemporal.errors.MigrationError` saying ``failure``."""
    try:
        yield
    except CommandError as error:
        raise MigrationError(f"{failure}: {error}") from error
    except exc.DBAPIError as error:
        cause = error.orig
        mapped = error_for(cause) if isinstance(cause, psycopg.Error) else None
        raise (mapped or MigrationError(f"{failure}: {cause}")) from error


def run(
    connection: Connection,
    revision: str,
    *,
    downgrade: bool = False,
    force: bool = False,
    lock_timeout: str = LOCK_TIMEOUT,
    partitions: int | None = None,
    citus: bool | None = None,
) -> None:
    """Upgrade (or downgrade) to ``revision`` on ``connection``, inside its transaction.

    This drives Alembic's MigrationContext directly instead of going through
    ``env.py``, so it also works while another Alembic command is running, e.g.
    from an application's own ``env.py``. ``partitions``, ``citus``: see :func:`migrate`;
    ``force``: see :func:`downgrade`. A refusal or a failure raises a
    :class:`~bitemporal.errors.BitemporalError` (the database's error as its cause).
    """
    partitions = partitions_option(partitions)
    script = ScriptDirectory.from_config(config())

    # The steps from the current revision to the target, as Alembic's own commands plan them,
    # through its public API.
    def steps(current: Any, _context: MigrationContext) -> list[MigrationStep]:
        try:
            if downgrade:
                return [
                    MigrationStep.downgrade_from_script(script.revision_map, s)
                    for s in script.iterate_revisions(current, revision, select_for_downgrade=True)
                ]
            return [
                MigrationStep.upgrade_from_script(script.revision_map, s)
                for s in reversed(
                    list(script.iterate_revisions(revision, current, implicit_base=True))
                )
            ]
        except RevisionError as error:
            raise CommandError(
                f"{revision!r} is not a valid {direction} target from revision "
                f"{' '.join(current) or 'none'} ({error})"
            ) from error

    direction = "downgrade" if downgrade else "upgrade"
    with translated(f"cannot {direction} to {revision!r}"):
        prepare(connection, lock_timeout)
        auto_citus = citus is None
        if citus is None:
            citus = has_citus(connection)
        if citus:
            prepare_citus(connection)
        context = MigrationContext.configure(
            connection,
            opts={
                "version_table": VERSION_TABLE,
                "version_table_schema": SCHEMA,
                "fn": steps,
                "script": script,
                PARTITIONS_OPTION: partitions,
            },
        )

        def migrate_steps() -> None:
            with Operations.context(context):
                context.run_migrations()

        if downgrade:
            _downgrade_keeping_data(connection, migrate_steps, revision, force)
        else:
            migrate_steps()
        connection.execute(text(STAMP))
        if citus and not downgrade:
            distribute(connection, required=not auto_citus)
        check_layout(connection, partitions)


@contextmanager
def _connection(target: Target) -> Iterator[Connection]:
    if isinstance(target, Connection):
        yield target
        return
    engine = (
        target
        if isinstance(target, Engine)
        else create_engine(sqlalchemy_url(database_url(target)), poolclass=pool.NullPool)
    )
    try:
        try:
            connection = engine.connect()
        except exc.DBAPIError as error:
            # Never connected, so not ConnectionLostError's "reconnect and retry".
            reason = " ".join(str(error.orig).split())
            raise ConfigurationError(f"cannot connect to the database: {reason}") from error
        with connection, connection.begin():
            yield connection
    finally:
        if not isinstance(target, Engine):
            engine.dispose()


def migrate(
    target: Target = None,
    revision: str = "head",
    *,
    lock_timeout: str = LOCK_TIMEOUT,
    partitions: int | None = None,
    citus: bool | None = None,
) -> None:
    """Upgrade the database to ``revision``.

    ``target`` is a URL (default: as for :func:`bitemporal.connect`), a
    SQLAlchemy engine, or a SQLAlchemy connection, whose transaction the
    migration joins (the caller commits). A lock wait longer than
    ``lock_timeout`` fails the migration, which leaves nothing behind (it runs
    in one transaction) and can simply be run again.

    ``partitions``: the partitioned layout, applied by migration 0008 (the
    version table as that many hash partitions of entity; 0: a plain table).
    If the database is past 0008 with another layout, the upgrade fails and
    says how to convert it.

    ``citus``: the database is a Citus coordinator, with its workers added; migrate
    it and distribute the store (``bitemporal.distribute()``: versions and keys
    by entity; see docs/citus.md). ``True`` requires it: without the ``citus``
    extension (or to a revision before 0015) it raises
    :class:`~bitemporal.errors.DistributionError`, changing nothing. ``None``
    (the default) does the same whenever the database has the extension, so
    that every later upgrade of a distributed store distributes what it adds.
    """
    with translated(f"cannot migrate to {revision!r}"), _connection(target) as connection:
        run(
            connection,
            revision,
            lock_timeout=lock_timeout,
            partitions=partitions,
            citus=citus,
        )


def downgrade(target: Target, revision: str, *, force: bool = False) -> None:
    """Downgrade the database to ``revision`` (``"base"``: remove the schema's objects).

    ``target`` as for :func:`migrate` (None: the default URL). The target revision is
    required. A downgrade that would drop tables holding rows (fact versions, keys,
    memory items, evidence, artifacts, the application table registry, ...) is
    refused with :class:`~bitemporal.errors.DowngradeWouldLoseDataError`, which lists
    them, unless ``force`` is true; it then changes nothing.
    """
    with translated(f"cannot downgrade to {revision!r}"), _connection(target) as connection:
        run(connection, revision, downgrade=True, force=force)


def current(target: Target = None) -> str | None:
    """The revision the database is at, or None if never migrated."""
    with translated("cannot read the schema's revision"), _connection(target) as connection:
        context = MigrationContext.configure(
            connection, opts={"version_table": VERSION_TABLE, "version_table_schema": SCHEMA}
        )
        return context.get_current_revision()


@cache
def revisions() -> tuple[str, ...]:
    """The revisions the package ships, oldest first."""
    script = ScriptDirectory.from_config(config())
    return tuple(r.revision for r in reversed(list(script.walk_revisions())))


def head() -> str:
    """The newest revision the package ships."""
    return revisions()[-1]


_SCHEMA_STATE = """
    SELECT n.oid IS NOT NULL,
           c.oid IS NOT NULL AND pg_catalog.has_table_privilege(c.oid, 'SELECT'),
           pg_catalog.obj_description(c.oid, 'pg_class')
      FROM (SELECT) AS one
      LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = %(schema)s
      LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = %(table)s"""

_UPGRADE = "run `bitemporal db upgrade` as a role that may create the schema"


def require_head(conn: psycopg.Connection[Any]) -> None:
    """Raise unless the database's schema is at this package's head revision.

    Never migrates, so any role can run it: the revision is read from the version
    table where the role may, else from the comment migrations leave on it. A
    revision this package does not know is a newer release's, and is accepted
    (applications on the previous release keep running while a deploy upgrades).
    Raises :class:`~bitemporal.errors.SchemaNotMigratedError` if there is no
    schema, :class:`~bitemporal.errors.SchemaBehindError` if it is older.
    """
    with translate():
        row = conn.execute(_SCHEMA_STATE, {"schema": SCHEMA, "table": VERSION_TABLE}).fetchone()
        assert row is not None
        has_schema, readable, comment = row
        revision: str | None = None
        if readable:
            found = conn.execute(
                f"SELECT string_agg(version_num, ' ') FROM {SCHEMA}.{VERSION_TABLE}"
            ).fetchone()
            revision = found[0] if found else None
        elif comment is not None and comment.startswith(STAMP_PREFIX):
            stamped = comment[len(STAMP_PREFIX) :]
            revision = None if stamped == "none" else stamped
        elif has_schema and comment is None:
            raise SchemaBehindError(
                f"the revision of the {SCHEMA} schema is not recorded where this role can read it "
                "(it was migrated by an older release)",
                hint=_UPGRADE,
            )
    if not has_schema or revision is None:
        raise SchemaNotMigratedError(
            f"the database has no {SCHEMA} schema", hint=f"{_UPGRADE}, or connect with migrate=True"
        )
    if revision != head() and revision in revisions():
        raise SchemaBehindError(
            f"the {SCHEMA} schema is at revision {revision}, older than this package's {head()}",
            hint=_UPGRADE,
        )


def sql_script(
    revision: str = "head", *, start: str | None = None, partitions: int | None = None
) -> str:
    """The SQL that upgrading to ``revision`` runs (offline mode), for a DBA to review.
    An unknown ``revision`` or ``start`` raises :class:`~bitemporal.MigrationError`."""
    buffer = io.StringIO()
    cfg = config(output=buffer)
    cfg.set_main_option("sqlalchemy.url", "postgresql+psycopg://")
    partitions = partitions_option(partitions)
    if partitions is not None:
        # As `alembic -x partitions=N` would pass it to env.py.
        cfg.cmd_opts = Namespace(x=[f"partitions={partitions}"])
    with translated(f"cannot write the SQL of upgrading to {revision!r}"):
        command.upgrade(cfg, revision if start is None else f"{start}:{revision}", sql=True)
    return buffer.getvalue()
