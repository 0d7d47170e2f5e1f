"""The partitioned layout (migration 0008's ``partitions`` option): conversion both ways,
constraints per key, pruning, every way of asking for it.

The rest of the suite runs on this layout with ``BITEMPORAL_TEST_PARTITIONS=8``;
these tests build their own databases and run on any setting.
"""

from __future__ import annotations

import io
import re
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from alembic import command
from alembic.config import Config
from psycopg import errors

from bitemporal import cli, migrations
from bitemporal.database import sqlalchemy_url
from bitemporal.errors import ConfigurationError
from bitemporal.migrations import partitions_option
from tests.helpers import DatabaseFactory, catalog

pytestmark = pytest.mark.not_on_citus(
    "migration paths (step by step, downgrades, offline scripts, layouts) are single-node: "
    "on Citus every test database is migrated with citus=True, and a distributed store "
    "is not downgraded (docs/citus.md)"
)

#: The revision before 0008, which brought the partitioned layout.
BEFORE = migrations.revisions()[migrations.revisions().index("0008") - 1]
N = 4

WRITES = """
    SELECT bitemporal.record('e' || k, 'a', 's', to_jsonb(i),
                             '2020-01-01'::timestamptz + i * interval '1 day', NULL,
                             '2020-01-01'::timestamptz + (k * 10 + i) * interval '1 minute')
      FROM generate_series(1, 12) k, generate_series(0, 2) i ORDER BY k, i;
    SELECT bitemporal.add_evidence(min(version_id), 'The first passage.')
      FROM bitemporal.fact_version;
"""
STATE = {
    # The columns the table has before 0008 (later migrations add more).
    "versions": "SELECT version_id, entity, attribute, source, value, valid_period, known_period, "
    "recorded_by, carried_from, recorded_in FROM bitemporal.fact_version ORDER BY version_id",
    "evidence": "SELECT evidence_id, version_id, passage FROM bitemporal.evidence ORDER BY 1",
    "sequence": "SELECT last_value, is_called FROM bitemporal.fact_version_version_id_seq",
    "privileges": """
        SELECT relname, relacl, pg_get_userbyid(relowner) FROM pg_class
         WHERE relnamespace = 'bitemporal'::regnamespace AND relname = 'fact_version'""",
}


def state(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        return {name: conn.execute(query).fetchall() for name, query in STATE.items()}


def scalar(url: str, query: str, *params: Any) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


@pytest.fixture(scope="module")
def partitioned(make_database: DatabaseFactory) -> Iterator[str]:
    """A database at head, partitioned into N, with some history."""
    url = make_database()
    migrations.migrate(url, partitions=N)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(WRITES)
    yield url


def test_conversion_keeps_everything_and_converts_back(empty_database_url: str) -> None:
    url = empty_database_url
    migrations.migrate(url, BEFORE)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(WRITES)
    before, schema_before = state(url), catalog(url)

    migrations.migrate(url, partitions=N)
    assert scalar(url, "SELECT bitemporal.version_partitions()") == N
    after = state(url)
    assert after["versions"] == before["versions"] and after["evidence"] == before["evidence"]
    assert after["sequence"] == before["sequence"]
    assert [r[1:] for r in after["privileges"]] == [r[1:] for r in before["privileges"]]
    assert (
        scalar(url, "SELECT relkind FROM pg_class WHERE oid = 'bitemporal.fact_version'::regclass")
        == "p"
    )

    migrations.downgrade(url, BEFORE)
    assert state(url) == before
    assert catalog(url) == schema_before


def test_each_key_lives_in_one_partition(partitioned: str) -> None:
    with psycopg.connect(partitioned) as conn:
        spread = conn.execute(
            "SELECT entity, count(DISTINCT tableoid) FROM bitemporal.fact_version GROUP BY entity"
        ).fetchall()
        used = conn.execute(
            "SELECT count(DISTINCT tableoid) FROM bitemporal.fact_version"
        ).fetchone()
        parts = conn.execute(
            "SELECT c.relname, obj_description(c.oid, 'pg_class') FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'bitemporal.fact_version'::regclass ORDER BY 1"
        ).fetchall()
    assert len(spread) == 12 and all(n == 1 for _, n in spread)
    assert used is not None and used[0] > 1
    assert [name for name, _ in parts] == [f"fact_version_p{k}" for k in range(N)]
    assert all(note for _, note in parts)


def test_exclusion_constraint_holds_on_the_partitioned_table(
    partitioned: str, server_version: int
) -> None:
    with psycopg.connect(partitioned) as conn:
        declared = conn.execute(
            "SELECT conrelid::regclass::text FROM pg_constraint "
            "WHERE contype = 'x' AND conname LIKE 'fact_version_no_overlap%' ORDER BY 1"
        ).fetchall()
        with pytest.raises(errors.ExclusionViolation) as caught:
            conn.execute(
                "INSERT INTO bitemporal.fact_version "
                "(entity, attribute, source, value, valid_period, known_period) "
                # Known from now: an earlier knowledge time is refused before the
                # constraint is checked (append_only.v2.sql).
                "VALUES ('e1', 'a', 's', '9', '(,)', tstzrange(now(), NULL, '[)'))"
            )
    partitions = [f"bitemporal.fact_version_p{k}" for k in range(N)]
    # From PostgreSQL 17 on the partitioned table (each partition holds its
    # copy); before, on each partition only.
    parent = ["bitemporal.fact_version"] if server_version >= 17 else []
    assert [r[0] for r in declared] == parent + partitions
    assert re.fullmatch(r"fact_version_no_overlap_p\d", caught.value.diag.constraint_name or "")


def test_history_stays_append_only_on_every_partition(partitioned: str) -> None:
    with psycopg.connect(partitioned, autocommit=True) as conn:
        for table in [
            "bitemporal.fact_version",
            *(f"bitemporal.fact_version_p{k}" for k in range(N)),
        ]:
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(f"TRUNCATE {table}")
            assert caught.value.sqlstate == "BT006", table
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(f"DELETE FROM {table}")
            assert caught.value.sqlstate == "BT006", table


def test_lookup_by_key_reads_one_partition(partitioned: str) -> None:
    with psycopg.connect(partitioned) as conn:
        conn.execute("ANALYZE bitemporal.fact_version")
        for query in (
            "SELECT * FROM bitemporal.as_of('e7', 'a', '2020-01-02')",
            "SELECT * FROM bitemporal.versions WHERE entity = 'e7' AND attribute = 'a'",
        ):
            plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN (COSTS OFF) {query}"))
            assert len(set(re.findall(r"fact_version_p\d+", plan))) == 1, plan


def test_foreign_keys_to_versions_become_triggers_and_come_back(
    make_database: DatabaseFactory,
) -> None:
    url = make_database(migrated=True, default_layout=True)
    with psycopg.connect(url, autocommit=True) as conn:
        # An application's own table referencing versions, beside evidence's.
        conn.execute("CREATE TABLE notes (version_id bigint REFERENCES bitemporal.fact_version)")
        conn.execute(WRITES)
        conn.execute("SELECT bitemporal.partition_versions(%s)", (N,))
        conn.execute("INSERT INTO notes VALUES (1)")
        with pytest.raises(errors.ForeignKeyViolation):
            conn.execute("INSERT INTO notes VALUES (-1)")
        with conn.transaction(), pytest.raises(errors.ForeignKeyViolation):
            conn.execute("SELECT bitemporal.record('n', 'a', 's', '1', '2020-01-01')")
            conn.execute("INSERT INTO notes SELECT max(version_id) FROM bitemporal.fact_version")
            # Deletable (written by this transaction), but still referenced.
            conn.execute("DELETE FROM bitemporal.fact_version WHERE entity = 'n'")
        # Evidence follows a version removed by the transaction that wrote it.
        with conn.transaction():
            conn.execute("SELECT bitemporal.record('m', 'a', 's', '1', '2020-01-01')")
            conn.execute(
                "SELECT bitemporal.add_evidence(max(version_id), "
                "'Soon gone.') FROM bitemporal.fact_version"
            )
            conn.execute("SELECT bitemporal.record('m', 'a', 's', '2', '2020-01-01')")
        assert conn.execute(
            "SELECT count(*) FROM bitemporal.evidence WHERE passage = 'Soon gone.'"
        ).fetchone() == (0,)
        conn.execute("SELECT bitemporal.partition_versions(0)")
        fkeys = conn.execute(
            "SELECT conrelid::regclass::text, conname, "
            "pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE confrelid = 'bitemporal.fact_version'::regclass ORDER BY 1"
        ).fetchall()
    assert fkeys == [
        (
            "bitemporal.evidence",
            "evidence_version_fkey",
            (
                "FOREIGN KEY (version_id) REFERENCES "
                "bitemporal.fact_version(version_id) ON DELETE CASCADE"
            ),
        ),
        (
            "notes",
            "notes_version_id_fkey",
            "FOREIGN KEY (version_id) REFERENCES bitemporal.fact_version(version_id)",
        ),
    ]


def test_roles_read_every_partition(partitioned: str) -> None:
    with psycopg.connect(partitioned) as conn:
        if conn.execute("SELECT to_regrole('bitemporal_reader')").fetchone() == (None,):
            pytest.skip("the migration could not create the roles here")
        conn.execute("SELECT bitemporal.grant_roles()")
        readable = conn.execute(
            "SELECT c.relname, has_table_privilege('bitemporal_reader', "
            "c.oid, 'SELECT') FROM pg_class c "
            "WHERE c.relnamespace = 'bitemporal'::regnamespace AND c.relname LIKE 'fact_version%' "
            "AND c.relkind IN ('r', 'p') ORDER BY 1"
        ).fetchall()
    assert readable == [("fact_version", True), *((f"fact_version_p{k}", True) for k in range(N))]


def test_the_option_past_0008_says_how_to_convert(make_database: DatabaseFactory) -> None:
    url = make_database(migrated=True, default_layout=True)
    with pytest.raises(ConfigurationError, match=re.escape(f"bitemporal.partition_versions({N})")):
        migrations.migrate(url, partitions=N)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(WRITES)
        versions = conn.execute(STATE["versions"]).fetchall()
        assert conn.execute("SELECT bitemporal.partition_versions(%s)", (N,)).fetchone() == (
            len(versions),
        )
        assert conn.execute("SELECT bitemporal.partition_versions(%s)", (N,)).fetchone() == (0,)
        conn.execute("SELECT bitemporal.partition_versions(2)")  # a new count rebuilds again
        assert conn.execute(STATE["versions"]).fetchall() == versions
    migrations.migrate(url, partitions=2)
    with pytest.raises(ConfigurationError, match="needs migration 0008"):
        migrations.migrate(make_database(), BEFORE, partitions=2)
    with pytest.raises(ConfigurationError):
        partitions_option("-1")


def test_offline_script_with_the_option_builds_the_same_schema(
    make_database: DatabaseFactory,
) -> None:
    online, offline = make_database(), make_database()
    migrations.migrate(online, partitions=N)
    script = migrations.sql_script(partitions=N)
    assert f"SELECT bitemporal.partition_versions({N})" in script
    with psycopg.connect(offline, autocommit=True) as conn:
        conn.execute(script.encode())
    assert catalog(offline) == catalog(online)


def test_alembic_and_cli_take_the_option(
    make_database: DatabaseFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    with_alembic, with_cli = make_database(), make_database()
    cfg = Config(str(Path(__file__).parents[2] / "alembic.ini"), stdout=io.StringIO())
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(with_alembic).replace("%", "%%"))
    cfg.cmd_opts = Namespace(x=[f"partitions={N}"])
    command.upgrade(cfg, "head")
    assert cli.main(["--url", with_cli, "db", "upgrade", "--partitions", str(N)]) == 0
    assert cli.main(["db", "sql", "--partitions", str(N)]) == 0
    assert f"SELECT bitemporal.partition_versions({N})" in capsys.readouterr().out
    assert catalog(with_alembic) == catalog(with_cli)
    assert scalar(with_cli, "SELECT bitemporal.version_partitions()") == N


@pytest.mark.parametrize(
    "blocker",
    [
        "ALTER TABLE bitemporal.fact_version ADD CONSTRAINT one_id UNIQUE (version_id)",
        "CREATE MATERIALIZED VIEW frozen AS SELECT * FROM bitemporal.fact_version",
    ],
)
def test_refuses_what_partitioning_cannot_keep(
    make_database: DatabaseFactory, blocker: str
) -> None:
    url = make_database(migrated=True, default_layout=True)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(blocker)
        with pytest.raises(errors.FeatureNotSupported):
            conn.execute("SELECT bitemporal.partition_versions(2)")
        assert conn.execute("SELECT bitemporal.version_partitions()").fetchone() == (0,)


def test_partition_counts_out_of_range_are_refused(partitioned: str) -> None:
    layout = scalar(partitioned, "SELECT bitemporal.version_partitions()")
    for n in (-1, 1025):
        with (
            psycopg.connect(partitioned) as conn,
            pytest.raises(errors.InvalidParameterValue, match="between 0"),
        ):
            conn.execute("SELECT bitemporal.partition_versions(%s)", (n,))
    assert scalar(partitioned, "SELECT bitemporal.version_partitions()") == layout


def test_the_suite_databases_have_the_layout_under_test(
    database_url: str,
    migrated_database_url: str,
    make_database: DatabaseFactory,
    partitions: int | None,
) -> None:
    """The templates the suite clones (tests/conftest.py) are migrated in the layout that
    BITEMPORAL_TEST_PARTITIONS asks for, and ``default_layout=True`` in the default one."""
    count = "SELECT bitemporal.version_partitions()"
    for url in (database_url, migrated_database_url, make_database(migrated=True)):
        assert scalar(url, count) == (partitions or 0)
    assert scalar(make_database(migrated=True, default_layout=True), count) == 0
