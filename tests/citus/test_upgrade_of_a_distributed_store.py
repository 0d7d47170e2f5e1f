"""On Citus: upgrading a store already distributed.

Migration 0031 (the integer key) changes a store distributed before it in place, on every
node, and its downgrade gives the store distributed at 0030 back; a store distributed at
0015 upgrades to head; one is never downgraded below 0030 (docs/citus.md, "Upgrading a
distributed store").
Migration 0032 leaves the record_many of a store distributed at 0031 as it was. Migration
0033 reorders the exclusion constraint's columns on every shard, up and down, and 0034 makes
it partial and replaces the current versions' index with one of every version (the catalogs
compared node by node show both). 0035 leaves distinct_values on the coordinator alone, as a
store distributed at head has it, and its downgrade sends it to the workers again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any, cast

import psycopg
import pytest
from sqlalchemy.engine import make_url

from bitemporal import DistributionError, Interpretation, Key, Store, migrations
from tests.conftest import _citus_workers, with_database
from tests.helpers import CITUS, DatabaseFactory, catalog

pytestmark = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")


# A distributed store's catalog on one node, comparable with another database's: each
# shard's id (a suffix of its tables' and indexes' names) written alike, and which of our
# functions Citus distributed, with their distribution argument and delegation.
_SHARD_ID = re.compile(r"_1\d{5,}\b")
DISTRIBUTED_FUNCTIONS = """
    SELECT p.oid::regprocedure::text, o.distribution_argument_index, o.force_delegation,
           o.colocationid IS NULL
      FROM pg_catalog.pg_dist_object o JOIN pg_catalog.pg_proc p ON p.oid = o.objid
     WHERE o.classid = 'pg_catalog.pg_proc'::regclass
       AND p.pronamespace IN ('bitemporal'::regnamespace, 'bitemporal_internal'::regnamespace)
     ORDER BY 1"""


def _cluster_catalog(server_url: str, url: str) -> list[dict[str, list[str]]]:
    """The catalog of ``url``'s database on the coordinator, then on each worker."""
    name = make_url(url).database
    assert name is not None
    found = []
    for node in (server_url, *_citus_workers(server_url)):
        node_url = with_database(node, name)
        tables = catalog(node_url)
        with psycopg.connect(node_url) as conn:
            tables["distributed functions"] = conn.execute(DISTRIBUTED_FUNCTIONS).fetchall()
        found.append(
            {k: sorted(_SHARD_ID.sub("_<shard>", repr(r)) for r in v) for k, v in tables.items()}
        )
    return found


def _assert_same_catalog(server_url: str, url: str, reference: str) -> None:
    """``url``'s database and ``reference``'s are alike on every node, or the assertion
    names the node, the kind of object and the rows found in one only."""
    for node, (found, expected) in enumerate(
        zip(_cluster_catalog(server_url, url), _cluster_catalog(server_url, reference), strict=True)
    ):
        for kind in expected:
            only_found = set(found[kind]) - set(expected[kind])
            only_expected = set(expected[kind]) - set(found[kind])
            assert found[kind] == expected[kind], (node, kind, only_found, only_expected)


KEYS = [Key(f"ship:{n}", attribute) for n in range(6) for attribute in ("status", "berth")]


def _write(store: Store, value: str) -> None:
    """Every kind of write on every key: a new value, a change from a date on, a retraction
    of a period, and a batch."""
    for k in KEYS:
        store.facts.record(k, f"{value}-1", source="ops")
        store.facts.record(k, f"{value}-2", source="ops", valid_from=date(2026, 1, 1))
        store.facts.retract(k, source="ops", valid_from=date(2026, 3, 1), valid_to=date(2026, 4, 1))
    store.facts.record_many(
        [
            {"entity": k.entity, "attribute": k.attribute, "source": "log", "value": value}
            for k in KEYS
        ]
    )


def _answers(store: Store, known_at: datetime) -> list[object]:
    """Each key's history (with when each version was really written), its versions now and
    at ``known_at`` (read through the GiST index), and its resolved values."""
    return [
        (
            [
                (v.version_id, v.source, v.value, v.valid_period, v.known_period, v.recorded_at)
                for v in store.facts.history(k)
            ],
            store.facts.as_of(k, valid_at=date(2026, 3, 15)),
            store.facts.as_of(k, valid_at=date(2026, 3, 15), known_at=known_at),
            store.facts.resolve(k, valid_at=date(2026, 6, 1)).values,
        )
        for k in KEYS
    ]


@contextmanager
def _store(url: str) -> Iterator[Store]:
    """A store on ``url`` at whichever revision it is (bitemporal.connect wants head)."""
    with psycopg.connect(url, autocommit=True) as conn:
        yield Store(conn)


def _server_now(url: str) -> datetime:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    return cast(datetime, row[0])


def test_0031_upgrades_a_store_already_distributed(
    server_url: str, make_database: DatabaseFactory
) -> None:
    """Distributed at 0030, upgraded in place: every node's catalog is that of a store
    distributed at head, the history and the answers are unchanged, each version carries
    its key's integer, and writing goes on; downgraded, every node's catalog is that of a
    store distributed at 0030, with the same answers."""
    url = make_database()
    migrations.migrate(url, "0030", citus=True)
    with _store(url) as store:
        _write(store, "a")
    between = _server_now(url)
    with _store(url) as store:
        _write(store, "b")
        before = _answers(store, between)

    migrations.migrate(url, citus=True)
    assert migrations.current(url) == migrations.head()
    _assert_same_catalog(server_url, url, make_database(migrated=True))
    with psycopg.connect(url) as conn:
        assert conn.execute(
            "SELECT count(*) FILTER (WHERE v.key_id = 0),"
            "       count(*) FILTER (WHERE v.key_id <> k.key_id)"
            "  FROM bitemporal.fact_version v JOIN bitemporal.fact_key k"
            "    ON k.entity = v.entity AND k.attribute = v.attribute"
        ).fetchone() == (0, 0)
    with _store(url) as store:
        assert _answers(store, between) == before
        _write(store, "c")
        # Erasure reads a key's versions by its integer too, on the key's worker.
        erasure = store.facts.erase(KEYS[-1], reason="upgrade test")
        assert erasure is not None
        assert {v.value for v in store.facts.history(KEYS[-1])} == {None}
        after = _answers(store, between)
    assert after != before

    migrations.downgrade(url, "0030")
    at_0030 = make_database()
    migrations.migrate(at_0030, "0030", citus=True)
    _assert_same_catalog(server_url, url, at_0030)
    with _store(url) as store:
        assert _answers(store, between) == after
        _write(store, "d")
        assert store.facts.resolve(KEYS[0], valid_at=date(2026, 6, 1)).values == ("d", "d-2")


def test_a_distributed_store_is_not_downgraded_below_0030(
    server_url: str, make_database: DatabaseFactory
) -> None:
    """The downgrades of 0030 and earlier do not know a distributed store's shape: refused,
    typed, before anything changes (0032's and 0031's ran in the same transaction)."""
    url = make_database(migrated=True)
    with _store(url) as store:
        _write(store, "a")
    catalog_before = _cluster_catalog(server_url, url)
    with pytest.raises(DistributionError) as caught:
        migrations.downgrade(url, "0029")
    assert caught.value.sqlstate == "BT502"
    assert "below revision 0030" in str(caught.value) and "nothing was changed" in str(caught.value)
    assert migrations.current(url) == migrations.head()
    assert _cluster_catalog(server_url, url) == catalog_before
    with _store(url) as store:
        assert store.facts.resolve(KEYS[0], valid_at=date(2026, 6, 1)).values == ("a", "a-2")


VERSIONS = (
    "SELECT version_id, entity, attribute, source, value, valid_period, known_period,"
    " recorded_by, carried_from FROM bitemporal.fact_version ORDER BY version_id"
)


def test_a_store_distributed_at_0015_upgrades_to_head(
    server_url: str, make_database: DatabaseFactory
) -> None:
    """From the first revision that distributes (0015), through every migration since, each
    run on the distributed store: every node's catalog ends as a store distributed at head
    has it, the versions are unchanged, and writing goes on."""
    url = make_database()
    migrations.migrate(url, "0015", citus=True)
    with psycopg.connect(url, autocommit=True) as conn:
        for k in KEYS:
            conn.execute(
                "SELECT bitemporal.record(%s, %s, 'ops', '\"a\"')", (k.entity, k.attribute)
            )
            conn.execute(
                "SELECT bitemporal.record(%s, %s, 'ops', '\"b\"', valid_from => '2026-01-01Z')",
                (k.entity, k.attribute),
            )
        before = conn.execute(VERSIONS).fetchall()
    migrations.migrate(url, citus=True)
    _assert_same_catalog(server_url, url, make_database(migrated=True))
    with _store(url) as store:
        assert store.connection.execute(VERSIONS).fetchall() == before
        _write(store, "c")
        assert store.facts.resolve(KEYS[0], valid_at=date(2026, 6, 1)).values == ("c", "c-2")


def _record_many_calls_the_citus_form(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT pg_get_functiondef('bitemporal.record_many(bitemporal.batch_row[], integer)'"
        "::regprocedure)"
    ).fetchone()
    assert row is not None
    return "bitemporal_internal.record_many_by_row(batch, max_errors)" in row[0]


def test_0032_keeps_record_many_of_a_store_distributed_at_0031(empty_database_url: str) -> None:
    """0032 changes record_many's local form only: a store distributed at 0031 keeps the
    wrapper bitemporal.distribute made, through the upgrade and the downgrade."""
    url = empty_database_url
    migrations.migrate(url, "0031", citus=True)
    _still_writes_through_the_citus_form(url, "0031", "distributed")
    migrations.migrate(url, "0032", citus=True)
    _still_writes_through_the_citus_form(url, "0032", "upgraded")
    migrations.downgrade(url, "0031")
    _still_writes_through_the_citus_form(url, "0031", "downgraded")


def _still_writes_through_the_citus_form(url: str, revision: str, value: str) -> None:
    """At ``revision``, record_many is distribute's wrapper and a batch of it writes."""
    assert migrations.current(url) == revision
    with psycopg.connect(url, autocommit=True) as conn:
        assert _record_many_calls_the_citus_form(conn)
        Store(conn).facts.record_many(
            [
                {"entity": f"ship:{n}", "attribute": "status", "source": "ops", "value": value}
                for n in range(3)
            ]
        )
        assert conn.execute(
            "SELECT value FROM bitemporal.as_of('ship:2', 'status')"
        ).fetchall() == [(value,)]


def test_0035_downgraded_gives_the_workers_distinct_values_back(
    server_url: str, make_database: DatabaseFactory
) -> None:
    """Distributed at head, distinct_values is on the coordinator alone (nothing a worker
    runs calls it); downgraded to 0034, where a worker's answer_rules calls it, every node's
    catalog is that of a store distributed at 0034, and a retrospective answer, which reads
    it on the key's worker, is the same as at head."""
    url = make_database(migrated=True)
    with _store(url) as store:
        _write(store, "a")
        at_head = _retrospective_answers(store)
    # Nothing was known on 2026-06-01 (the store was written now).
    assert {interpretation for _, _, interpretation in at_head} == {Interpretation.RETROSPECTIVE}

    migrations.downgrade(url, "0034")
    at_0034 = make_database()
    migrations.migrate(at_0034, "0034", citus=True)
    _assert_same_catalog(server_url, url, at_0034)
    with _store(url) as store:
        assert _retrospective_answers(store) == at_head


def _retrospective_answers(store: Store) -> list[tuple[object, ...]]:
    """Each key's answer for 2026-06-01, known now: what it rests on, and how."""
    answers = [store.facts.resolve(k, valid_at=date(2026, 6, 1)) for k in KEYS]
    return [(a.values, a.versions, a.interpretation) for a in answers]
