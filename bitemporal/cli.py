"""The bitemporal command: a thin layer over the same typed functions as the Python API.

    bitemporal db upgrade|current|sql               migrations (Alembic underneath)
    bitemporal db downgrade REVISION [--force]      --force: even if tables holding data go
    bitemporal db upgrade|sql --partitions N        ... with the version table hash-partitioned
    bitemporal db upgrade --citus                   ... on a Citus coordinator, distributed
    bitemporal db notify [on|off]                   the invalidation NOTIFY of writes (owner)
    bitemporal record ENTITY ATTRIBUTE VALUE --source S [--valid-from T] [--valid-to T]
    bitemporal retract ENTITY ATTRIBUTE --source S [--valid-from T] [--valid-to T]
    bitemporal resolve ENTITY ATTRIBUTE [--valid-at T] [--known-at T] [--json]
    bitemporal history ENTITY ATTRIBUTE [--json]
    bitemporal plot ENTITY ATTRIBUTE -o FILE.png
    bitemporal import FILE [--format csv|jsonl] [--batch-size N]   bulk ingestion (record_many)
    bitemporal retention apply|list                 retention policies (docs/erasure.md)
    bitemporal demo

The database URL comes from ``--url`` (before or after the command), else
``BITEMPORAL_DATABASE_URL``, else ``DATABASE_URL``, else the embedded server (said in a
note on stderr). Times are ISO 8601 with a time zone (``2026-09-01T12:00:00+02:00``) or
dates (midnight UTC). Help texts are plain text: no markup.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from importlib.metadata import version
from typing import Any, NoReturn

import psycopg
import sqlalchemy.exc

from . import database, demo, migrations
from .cli_output import Progress, print_problems, versions_table
from .errors import (
    BitemporalError,
    ConfigurationError,
    ImportFailed,
    InvalidInputError,
    InvalidValueError,
)
from .formatting import counted, human_duration, shown, stamp
from .importing import check_jobs, import_file, source_name
from .jsonvalues import dumps
from .jsonvalues import parse as parse_json
from .model import Answer, Key, Status, Version
from .periods import Instant, parse_instant
from .plot import draw
from .store import Store, connect


def parse_value(text: str) -> Any:
    """A JSON value from the command line."""
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise InvalidValueError(
            f"value {shown(text)} is not JSON", hint="quote text as JSON: '\"text\"'"
        ) from exc
    except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
        raise InvalidValueError(
            f"value {shown(text)} cannot be read: {exc or 'nested too deeply'}"
        ) from exc


#: The epilog of the commands that take times.
TIMES = (
    "TIME is an ISO 8601 date, read as midnight UTC (2026-09-01), or a date and time with "
    "its offset (2026-09-01T12:00:00+02:00, 2026-09-01T10:00:00Z)."
)


def _instant_arg(text: str) -> Instant:
    # argparse reports an ArgumentTypeError's message as a usage error (exit 2).
    try:
        return parse_instant(text)
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _url_arg(text: str) -> str:
    # An empty --url (say, of an unset shell variable) would otherwise mean "no --url".
    if not text.strip():
        raise argparse.ArgumentTypeError("the database URL is empty")
    return text


def _count_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a whole number") from exc


def _url(args: argparse.Namespace) -> str:
    """The database URL of a command (see the module's docstring); a note on stderr when
    it is the embedded server, which a user who forgot ``--url`` would not expect."""
    given = getattr(args, "url", None)
    if given or any(os.environ.get(name) for name in database.URL_VARIABLES):
        return database.database_url(given)
    print(
        f"bitemporal: note: no --url, {' or '.join(database.URL_VARIABLES)}: using the "
        f"embedded PostgreSQL 18 in {database.embedded_data_dir()}",
        file=sys.stderr,
    )
    return database.embedded_url()


def _open(args: argparse.Namespace, pool_size: int = 0) -> Store:
    """A store on the database (on a pool of ``pool_size``, if given), or
    ConfigurationError saying why there is none."""
    with _reaching():
        return connect(_url(args), pool_size=pool_size)


@contextmanager
def _reaching() -> Iterator[None]:
    """psycopg's and SQLAlchemy's (migrations') refusals of a malformed URL or an
    unreachable server as one ConfigurationError; bitemporal's own errors (a refused
    migration among them, some of which are ValueErrors too) pass as they are."""
    try:
        yield
    except BitemporalError:
        raise
    except (psycopg.Error, sqlalchemy.exc.SQLAlchemyError, ValueError) as exc:
        # Their first line says which (SQLAlchemy appends a link).
        reason = " ".join(str(getattr(exc, "orig", None) or exc).split())
        raise ConfigurationError(f"cannot connect to the database: {reason}") from exc


def _version_json(v: Version) -> dict[str, Any]:
    return {
        "version_id": v.version_id,
        "source": v.source,
        "value": v.value,
        "valid_from": _iso(v.valid_period.start),
        "valid_to": _iso(v.valid_period.end),
        "known_from": _iso(v.known_period.start),
        "known_to": _iso(v.known_period.end),
        "recorded_by": v.recorded_by,
        "carried_from": v.carried_from,
        "erased": v.erased,
        "erased_at": _iso(v.erased_at),
    }


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat()


def answer_json(answer: Answer) -> dict[str, Any]:
    """An answer as plain JSON data."""
    return {
        "entity": answer.key.entity,
        "attribute": answer.key.attribute,
        "status": answer.status.value,
        "value": answer.value,
        "values": list(answer.values),
        "interpretation": answer.interpretation.value,
        "valid_at": answer.valid_at.isoformat(),
        "known_at": answer.known_at.isoformat(),
        "now": answer.now.isoformat(),
        "sources": list(answer.sources),
        "versions": [_version_json(v) for v in answer.versions],
    }


def _db(args: argparse.Namespace) -> int:
    if args.db_command == "sql":  # offline: no database
        sys.stdout.write(
            migrations.sql_script(args.revision, start=args.start, partitions=args.partitions)
        )
        return 0
    if args.db_command == "notify":
        return _notify(args)
    url = _url(args)
    with _reaching():
        if args.db_command == "upgrade":
            migrations.migrate(
                url, args.revision, partitions=args.partitions, citus=args.citus or None
            )
        elif args.db_command == "downgrade":
            migrations.downgrade(url, args.revision, force=args.force)
        else:
            print(migrations.current(url) or "(not migrated)")
    return 0


def _notify(args: argparse.Namespace) -> int:
    with _open(args) as store:
        if args.state is None:
            print(f"invalidation NOTIFY: {_on_off(store.provenance.notify_enabled())}")
        else:
            was = store.provenance.set_notify(args.state == "on")
            print(f"invalidation NOTIFY: {args.state} (was {_on_off(was)})")
    return 0


def _on_off(enabled: bool) -> str:
    return "on" if enabled else "off"


def _record(args: argparse.Namespace) -> int:
    with _open(args) as store:
        result = store.facts.record(
            Key(args.entity, args.attribute),
            parse_value(args.value),
            source=args.source,
            valid_from=args.valid_from,
            valid_to=args.valid_to,
            known_at=args.known_at,
            recorded_by=args.recorded_by,
        )
    if result.created:
        superseded = ", ".join(map(str, result.superseded)) or "none"
        print(f"recorded version {result.version_id} (superseded: {superseded})")
    else:
        print(f"unchanged: already known as version {result.version_id}")
    return 0


def _retract(args: argparse.Namespace) -> int:
    with _open(args) as store:
        ended = store.facts.retract(
            Key(args.entity, args.attribute),
            source=args.source,
            valid_from=args.valid_from,
            valid_to=args.valid_to,
            known_at=args.known_at,
        )
    print(f"retracted: versions {', '.join(map(str, ended))}" if ended else "nothing to retract")
    return 0


def _erase(args: argparse.Namespace) -> int:
    with _open(args) as store:
        erasure = store.facts.erase(Key(args.entity, args.attribute), reason=args.reason)
    if erasure is None:
        print("nothing to erase: every version was already erased")
    else:
        ids = ", ".join(map(str, erasure.version_ids))
        print(f"erased: erasure {erasure.erasure_id}, versions {ids}")
    return 0


def _retention(args: argparse.Namespace) -> int:
    with _open(args) as store:
        if args.retention_command == "apply":
            runs = store.retention.apply()
            for run in runs:
                print(f"{run.policy}: erased {run.versions} versions of {run.keys} keys")
            if not runs:
                print("no retention policy")
        else:
            policies = store.retention.policies()
            for p in policies:
                comment = f" ({p.comment})" if p.comment else ""
                print(f"{p.policy}: keep closed knowledge {human_duration(p.keep_for)}{comment}")
            if not policies:
                print("no retention policy")
    return 0


def _resolve(args: argparse.Namespace) -> int:
    with _open(args) as store:
        answer = store.facts.resolve(
            Key(args.entity, args.attribute),
            valid_at=args.valid_at,
            known_at=args.known_at,
            now=args.now,
        )
    if args.json:
        print(dumps(answer_json(answer), indent=2))
        return 0
    value = (
        dumps(answer.value)
        if answer.value is not None
        else "(erased)"
        if answer.status is Status.ERASED
        else (" | ".join(map(dumps, answer.values)) or "-")
    )
    print(
        f"{answer.key}: {value}\n"
        f"status: {answer.status.value}; interpretation: {answer.interpretation.value}\n"
        f"valid at {stamp(answer.valid_at)}, known at {stamp(answer.known_at)}, "
        f"asked on {stamp(answer.now)} (times in UTC)"
    )
    if answer.versions:
        sys.stdout.write(versions_table(answer.versions))
    return 0


def _history(args: argparse.Namespace) -> int:
    with _open(args) as store:
        versions = store.facts.history(Key(args.entity, args.attribute))
    if args.json:
        print(dumps([_version_json(v) for v in versions], indent=2))
    else:
        sys.stdout.write(versions_table(versions))
    return 0


def _plot(args: argparse.Namespace) -> int:
    key = Key(args.entity, args.attribute)
    with _open(args) as store:
        versions = store.facts.history(key)
        now = store.now()
    shapes = draw(versions, args.output, title=str(key), now=now)
    print(f"drew {len(shapes)} versions to {args.output}")
    return 0


def _import(args: argparse.Namespace) -> int:
    jobs = check_jobs(args.jobs)  # before a pool of that size is opened
    with _open(args, pool_size=jobs if jobs > 1 else 0) as store:
        try:
            report = import_file(
                store.facts,
                args.file,
                fmt=args.format,
                batch_size=args.batch_size,
                max_errors=args.max_errors,
                progress=None if args.quiet else Progress(sys.stderr).update,
                jobs=jobs,
            )
        except ImportFailed as exc:
            fail(f"{source_name(args.file)}: {exc}")
            print_problems(exc)
            return 1
    print(
        f"imported {counted(report.rows, 'row')} from {source_name(args.file)}: "
        f"{report.created:,} created, {report.unchanged:,} unchanged (already known), "
        f"in {counted(report.batches, 'batch', 'batches')} "
        f"(one transaction each), {report.seconds:.1f} s"
    )
    return 0


def _demo(args: argparse.Namespace) -> int:
    # The demo makes its own scratch database on the server: the driver's errors there
    # (an unreachable server, a malformed URL) are those of _open's.
    with _reaching():
        demo.run(sys.stdout, getattr(args, "url", None))
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, reporting a malformed command line as one ``bitemporal: error:`` line."""

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("bitemporal").strip()
        self.exit(
            2,
            f"bitemporal: error: {where + ': ' if where else ''}{message} "
            f"(see '{self.prog} --help')\n",
        )


def parser() -> argparse.ArgumentParser:
    # The global options, accepted before or after the (sub)command: every parser has them,
    # and SUPPRESS keeps a subcommand that was not given them from resetting the top's.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--url",
        type=_url_arg,
        default=argparse.SUPPRESS,
        help="database URL (default: $BITEMPORAL_DATABASE_URL, $DATABASE_URL, "
        "else an embedded PostgreSQL 18, with a note on stderr)",
    )
    top = _Parser(prog="bitemporal", description=__doc__.split("\n")[0], parents=[common])
    top.add_argument("--version", action="version", version=f"bitemporal {version('bitemporal')}")
    commands = top.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(parent: Any, name: str, help: str, **kwargs: Any) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = parent.add_parser(
            name, help=help, description=kwargs.pop("description", help), parents=[common], **kwargs
        )
        return sub

    db = command(commands, "db", "migrate the database schema")
    db_commands = db.add_subparsers(dest="db_command", required=True, parser_class=_Parser)
    partitions_help = (
        "hash-partition the version table by entity into N partitions "
        "(applied by migration 0008; see docs/operations.md, Partitioned layout)"
    )
    upgrade = command(db_commands, "upgrade", "upgrade to a revision (default head)")
    upgrade.add_argument("revision", nargs="?", default="head")
    upgrade.add_argument("--partitions", type=_count_arg, metavar="N", help=partitions_help)
    upgrade.add_argument(
        "--citus",
        action="store_true",
        help="require a Citus coordinator with its workers added, and distribute the store "
        "by entity (a database with the citus extension is distributed anyway; see "
        "docs/citus.md)",
    )
    downgrade = command(
        db_commands, "downgrade", "downgrade to a revision (base: drop the schema's objects)"
    )
    downgrade.add_argument("revision", help="the revision to go down to, e.g. 0007, -1 or base")
    downgrade.add_argument(
        "--force",
        action="store_true",
        help="drop tables that hold data (history is lost); refused without it",
    )
    command(db_commands, "current", "print the current revision")
    sql = command(db_commands, "sql", "print the upgrade SQL for review (offline)")
    sql.add_argument("revision", nargs="?", default="head")
    sql.add_argument("--start", help="revision the database is at (default: empty)")
    sql.add_argument("--partitions", type=_count_arg, metavar="N", help=partitions_help)
    notify = command(
        db_commands,
        "notify",
        "show or switch the invalidation NOTIFY of writes (owner)",
        description="Without an argument, says whether a transaction that supersedes or "
        "retracts a version announces it on the channel bitemporal_invalidation when it "
        "commits. on/off switches that for the whole database (the store's owner only): "
        "PostgreSQL commits the transactions that sent a NOTIFY one at a time, so with "
        "concurrent writers and no listener, off writes faster. See docs/agents.md.",
    )
    notify.add_argument("state", nargs="?", choices=("on", "off"))
    db.set_defaults(handler=_db)

    def keyed(name: str, help: str, **kwargs: Any) -> argparse.ArgumentParser:
        sub = command(commands, name, help, **kwargs)
        sub.add_argument("entity")
        sub.add_argument("attribute")
        return sub

    def time(sub: argparse.ArgumentParser, option: str, help: str | None = None) -> None:
        sub.add_argument(option, type=_instant_arg, metavar="TIME", help=help)

    def period(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--source", required=True)
        time(sub, "--valid-from", "default: open")
        time(sub, "--valid-to", "default: open")
        time(sub, "--known-at", "default: the transaction time")

    record = keyed("record", "record a value (JSON) for a valid period", epilog=TIMES)
    record.add_argument("value", help="a JSON value, e.g. 80 or '\"text\"'")
    period(record)
    record.add_argument("--recorded-by")
    record.set_defaults(handler=_record)

    retract = keyed("retract", "retract a source's value for a valid period", epilog=TIMES)
    period(retract)
    retract.set_defaults(handler=_retract)

    erase = keyed(
        "erase",
        "erase the value of every version of a key (role bitemporal_eraser)",
        description="Erase the value of every version of a key (right to erasure): the "
        "versions keep their periods and sources, the values and their evidence go, and "
        "the erasure (reason, role, time) is recorded in bitemporal.erasures.",
    )
    erase.add_argument("--reason", required=True, help="why: the request or the legal ground")
    erase.set_defaults(handler=_erase)

    retention = command(
        commands, "retention", "retention policies (set them in SQL: bitemporal.set_retention)"
    )
    retention_commands = retention.add_subparsers(
        dest="retention_command", required=True, parser_class=_Parser
    )
    command(
        retention_commands,
        "apply",
        "erase the closed knowledge the policies no longer keep (role bitemporal_eraser)",
        description="Runs bitemporal.apply_retention(): for each policy, erases the versions "
        "whose knowledge ended more than its interval ago, never current knowledge, one "
        "erasure record per key. Prints what each policy erased. Run it daily from cron.",
    )
    command(retention_commands, "list", "list the retention policies")
    retention.set_defaults(handler=_retention)

    resolve = keyed("resolve", "answer (valid_at, known_at) with status", epilog=TIMES)
    time(resolve, "--valid-at", "default: the present")
    time(resolve, "--known-at", "default: the present")
    time(resolve, "--now", "the present answers are read against (default: the database's)")
    resolve.add_argument("--json", action="store_true")
    resolve.set_defaults(handler=_resolve)

    history = keyed("history", "every version of a key")
    history.add_argument("--json", action="store_true")
    history.set_defaults(handler=_history)

    plot = keyed("plot", "draw the bitemporal diagram of a key (needs matplotlib)")
    plot.add_argument("-o", "--output", required=True, help="PNG file to write")
    plot.set_defaults(handler=_plot)

    ingest = command(
        commands,
        "import",
        "bulk-record the rows of a CSV or JSON Lines file (record_many)",
        description="Each row is recorded as by 'bitemporal record' (fields entity, attribute, "
        "source, value, valid_from, valid_to, known_at, recorded_by; CSV: a header "
        "naming them, value as JSON text; JSON Lines: one object per line). Rows go "
        "in batches, each batch one transaction: a batch with a bad row writes "
        "nothing, the import stops there, and the batches before it stay imported. "
        "Importing rows already recorded writes nothing new.",
    )
    ingest.add_argument(
        "file", help="the CSV or JSON Lines file; - reads standard input (give --format)"
    )
    ingest.add_argument("--format", choices=["csv", "jsonl"], help="default: from the file name")
    ingest.add_argument(
        "--batch-size", type=_count_arg, default=10_000, help="rows per batch (default 10000)"
    )
    ingest.add_argument(
        "--max-errors", type=_count_arg, default=100, help="bad rows to list (default 100)"
    )
    ingest.add_argument(
        "--jobs",
        type=_count_arg,
        default=1,
        help="batches recorded at once, over as many connections, each key's rows in one "
        "(default 1)",
    )
    ingest.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    ingest.set_defaults(handler=_import)

    command(commands, "demo", "replay the worked example in a scratch database").set_defaults(
        handler=_demo
    )
    return top


def fail(message: object) -> int:
    """Report a failure as one line on stderr; the exit status 1."""
    line = " ".join(str(message).split())
    print(f"bitemporal: error: {line}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    try:
        args = p.parse_args(argv)
        return int(args.handler(args))
    except BitemporalError as exc:
        return fail(exc)
    except OSError as exc:  # a file to read or write: missing, a directory, not allowed
        where = f": {exc.filename}" if exc.filename else ""
        return fail(f"{exc.strerror or exc}{where}")
    except KeyboardInterrupt:
        fail("interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - the last resort: never a traceback
        return fail(f"unexpected {type(exc).__name__}: {exc} (please report this)")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
