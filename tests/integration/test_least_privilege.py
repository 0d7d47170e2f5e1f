"""Applications and the CLI run as the reader and writer roles: no DDL rights, no migration.

Only `bitemporal db upgrade` (or connect(migrate=True)) migrates; connecting to a database
whose schema is missing or behind says which command to run, and changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date

import psycopg
import pytest
from sqlalchemy.engine import make_url

import bitemporal
from bitemporal import (
    Key,
    PermissionDeniedError,
    SchemaBehindError,
    SchemaNotMigratedError,
    migrations,
)
from tests.helpers import login_roles, run_cli


def as_user(url: str, role: str) -> str:
    return make_url(url).set(username=role).render_as_string(hide_password=False)


def schema_exists(url: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'bitemporal'"
        ).fetchone()
    return row == (1,)


@pytest.fixture
def roles(migrated_database_url: str) -> Iterator[dict[str, str]]:
    """A migrated database and LOGIN roles granted through bitemporal.grant_roles: an
    application (reader and writer) and a reader. Neither may create anything."""
    with login_roles(migrated_database_url, "bt", "app", "reader") as names:
        with psycopg.connect(migrated_database_url, autocommit=True) as admin:
            admin.execute(
                "SELECT bitemporal.grant_roles(reader => %s, writer => %s, auditor => NULL)",
                (names["app"], names["app"]),
            )
            admin.execute(
                "SELECT bitemporal.grant_roles(reader => %s, writer => NULL, auditor => NULL)",
                (names["reader"],),
            )
            # Least privilege, also on servers older than 15 where PUBLIC may create in public.
            admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        yield {"owner": migrated_database_url} | {
            kind: as_user(migrated_database_url, name) for kind, name in names.items()
        }


def test_the_cli_works_for_the_application_and_reader_roles(
    roles: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    app, reader = roles["app"], roles["reader"]
    code, out, err = run_cli(
        capsys,
        "--url",
        app,
        "record",
        "mailer:prod",
        "limit",
        "50",
        "--source",
        "policy",
        "--valid-from",
        "2026-01-01",
    )
    assert (code, err) == (0, "") and out.startswith("recorded version")
    code, out, err = run_cli(capsys, "--url", app, "history", "mailer:prod", "limit", "--json")
    assert code == 0 and [v["value"] for v in json.loads(out)] == [50]
    code, out, err = run_cli(capsys, "--url", reader, "resolve", "mailer:prod", "limit", "--json")
    assert (code, err) == (0, "") and json.loads(out)["value"] == 50
    code, _, err = run_cli(
        capsys, "--url", reader, "record", "mailer:prod", "limit", "80", "--source", "policy"
    )
    assert code == 1 and err.startswith("bitemporal: error: permission denied")
    # Migrating is for the schema's owner: the roles get a typed error, not a traceback.
    for role in (app, reader):
        for command in (
            ("db", "upgrade"),
            ("db", "downgrade", "base", "--force"),
            ("db", "current"),
        ):
            code, _, err = run_cli(capsys, "--url", role, *command)
            assert code == 1 and err.startswith("bitemporal: error: "), (command, err)
    assert migrations.current(roles["owner"]) == migrations.head()


def test_the_api_works_for_the_application_and_reader_roles(roles: dict[str, str]) -> None:
    key = Key("mailer:prod", "limit")
    with bitemporal.connect(roles["app"]) as store:
        assert store.facts.record(key, 50, source="policy", valid_from=date(2026, 1, 1)).created
        assert store.facts.resolve(key, valid_at=date(2026, 2, 1)).value == 50
        store.memory("session").register("item")
    with bitemporal.connect(roles["reader"]) as store:
        assert [v.value for v in store.facts.history(key)] == [50]
        # The store's transaction time (bitemporal.transaction_time(), on Citus the
        # distributed transaction's stamp) for a role without rights on the internals.
        with store.transaction():
            assert store.now() == store.now()
        with pytest.raises(PermissionDeniedError):
            store.facts.record(key, 80, source="policy")


def test_a_missing_schema_names_the_command_and_creates_nothing(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = empty_database_url
    with pytest.raises(SchemaNotMigratedError, match="bitemporal db upgrade"):
        bitemporal.connect(url)
    code, _, err = run_cli(capsys, "--url", url, "resolve", "mailer:prod", "limit")
    assert code == 1 and "bitemporal db upgrade" in err
    code, _, err = run_cli(
        capsys, "--url", url, "record", "mailer:prod", "limit", "1", "--source", "s"
    )
    assert code == 1 and "bitemporal db upgrade" in err
    assert not schema_exists(url)
    # Migrating is asked for explicitly.
    with bitemporal.connect(url, migrate=True) as store:
        assert store.facts.record(Key("mailer:prod", "limit"), 1, source="s").created
    assert migrations.current(url) == migrations.head()


def test_an_unreachable_database_is_an_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    nowhere = "postgresql://127.0.0.1:1/nowhere?connect_timeout=2"
    for command in (("db", "upgrade"), ("db", "current"), ("resolve", "e", "a")):
        code, _, err = run_cli(capsys, "--url", nowhere, *command)
        assert code == 1 and err.startswith("bitemporal: error: "), (command, err)


@pytest.mark.not_on_citus("downgrades a distributed store, which is not supported (docs/citus.md)")
def test_a_schema_behind_head_names_the_command(
    roles: dict[str, str], migrated_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    behind = migrations.revisions()[-2]
    migrations.downgrade(migrated_database_url, behind)
    for url in (migrated_database_url, roles["app"], roles["reader"]):
        with pytest.raises(SchemaBehindError, match=f"revision {behind}.*bitemporal db upgrade"):
            bitemporal.connect(url)
        code, _, err = run_cli(capsys, "--url", url, "resolve", "mailer:prod", "limit")
        assert code == 1 and "bitemporal db upgrade" in err
    assert migrations.current(migrated_database_url) == behind
    code, _, err = run_cli(capsys, "--url", migrated_database_url, "db", "upgrade")
    assert (code, err) == (0, "")
    with bitemporal.connect(roles["reader"]) as store:
        assert store.facts.as_of(Key("mailer:prod", "limit")) == []
