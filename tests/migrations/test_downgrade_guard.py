"""A downgrade names its target, and one that would drop stored data is refused unless forced."""

from __future__ import annotations

import psycopg
import pytest

import bitemporal
from bitemporal import (
    DowngradeWouldLoseDataError,
    Key,
    Store,
    TableDefinitionError,
    cli,
    migrations,
)
from tests.helpers import run_cli

pytestmark = pytest.mark.not_on_citus(
    "migration paths (step by step, downgrades, offline scripts, layouts) are single-node: "
    "on Citus every test database is migrated with citus=True, and a distributed store "
    "is not downgraded (docs/citus.md)"
)

VERSIONS = 5


def seed(url: str) -> None:
    """Versions, a memory item and evidence in a migrated database."""
    with psycopg.connect(url, autocommit=True) as conn:
        store = Store(conn)
        version = 0
        for n in range(VERSIONS):
            version = store.facts.record(Key(f"e{n}", "limit"), n + 1, source="policy").version_id
        store.memory("session").register("item")
        store.evidence.add(version, "The limit is 5 MB.")


def versions(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM bitemporal.fact_version").fetchone()
    assert row is not None
    return int(row[0])


def test_a_downgrade_needs_an_explicit_target(
    migrated_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = migrated_database_url
    seed(url)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--url", url, "db", "downgrade"])
    assert exit_.value.code == 2 and "revision" in capsys.readouterr().err
    with pytest.raises(TypeError):
        bitemporal.downgrade(url)  # type: ignore[call-arg]
    assert migrations.current(url) == migrations.head() and versions(url) == VERSIONS


def test_a_downgrade_that_would_drop_history_is_refused(migrated_database_url: str) -> None:
    url = migrated_database_url
    seed(url)
    with pytest.raises(DowngradeWouldLoseDataError) as refused:
        bitemporal.downgrade(url, "base")
    assert refused.value.tables["bitemporal.fact_version"] == VERSIONS
    assert refused.value.tables["bitemporal.memory_item"] == 1
    assert refused.value.tables["bitemporal.evidence"] == 1
    message = str(refused.value)
    assert f"bitemporal.fact_version ({VERSIONS} rows)" in message and "force" in message
    # Refused means untouched: same revision, same history.
    assert migrations.current(url) == migrations.head() and versions(url) == VERSIONS
    # A step that drops only the evidence tables is refused for them alone.
    with pytest.raises(DowngradeWouldLoseDataError) as refused:
        bitemporal.downgrade(url, "0002")
    assert "bitemporal.evidence" in refused.value.tables
    assert "bitemporal.fact_version" not in refused.value.tables
    assert migrations.current(url) == migrations.head()
    bitemporal.downgrade(url, "base", force=True)
    assert migrations.current(url) is None


def test_the_cli_refuses_and_says_how_to_proceed(
    migrated_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = migrated_database_url
    seed(url)
    code, _, err = run_cli(capsys, "--url", url, "db", "downgrade", "base")
    assert code == 1 and err.startswith("bitemporal: error: ")
    assert f"bitemporal.fact_version ({VERSIONS} rows)" in err and "--force" in err
    assert migrations.current(url) == migrations.head() and versions(url) == VERSIONS
    code, _, err = run_cli(capsys, "--url", url, "db", "downgrade", "not-a-revision")
    assert code == 1 and "not-a-revision" in err
    assert run_cli(capsys, "--url", url, "db", "downgrade", "base", "--force")[0] == 0
    assert migrations.current(url) is None


def test_empty_tables_go_without_force(
    migrated_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = migrated_database_url
    assert run_cli(capsys, "--url", url, "db", "downgrade", "0001")[0] == 0
    assert migrations.current(url) == "0001"
    bitemporal.downgrade(url, "base")
    assert migrations.current(url) is None


def test_application_tables_are_never_dropped(
    migrated_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = migrated_database_url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.plan (code text PRIMARY KEY, price int)")
        conn.execute("SELECT bitemporal.enable_table('public.plan', ARRAY['code'], NULL)")
        Store(conn).app_tables.record("public.plan", {"code": "basic", "price": 5})
    # Forced or not: they belong to the application's migrations, which drop them first.
    for force in (False, True):
        with pytest.raises(
            TableDefinitionError, match="application tables still exist: public.plan"
        ):
            bitemporal.downgrade(url, "0005", force=force)
    # The command says so as it is, not as a server it could not reach.
    code, _, err = run_cli(capsys, "--url", url, "db", "downgrade", "base")
    assert code == 1 and err == (
        "bitemporal: error: bitemporal application tables still exist: public.plan "
        "(Downgrade the application's migrations that created them first.)\n"
    )
    assert migrations.current(url) == migrations.head()


def test_the_partitioned_layout_is_counted_as_one_table(empty_database_url: str) -> None:
    url = empty_database_url
    bitemporal.migrate(url, partitions=4)
    seed(url)
    with pytest.raises(DowngradeWouldLoseDataError) as refused:
        bitemporal.downgrade(url, "base")
    assert refused.value.tables["bitemporal.fact_version"] == VERSIONS
    assert not [t for t in refused.value.tables if t.startswith("bitemporal.fact_version_")]
    # Leaving the partitioned layout (0008's downgrade) keeps every version: no force needed.
    bitemporal.downgrade(url, "0007")
    assert versions(url) == VERSIONS
