"""Vector retrieval with pgvector: exact, and filtered before it ranks (servers with pgvector only).

These tests run in a database of their own, since enabling vectors fixes the
number of dimensions for a database. Where the server lacks pgvector they
are skipped with that reason; tests/integration/test_evidence.py checks that
the API then reports it clearly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import date, timedelta

import psycopg
import pytest

import bitemporal
from bitemporal import EmbeddingError, Key, Store, migrations
from tests.helpers import DatabaseFactory, Question, at

pytestmark = pytest.mark.vector


def unit(similarity: float) -> list[float]:
    """A 2-d unit vector whose cosine similarity to (1, 0) is ``similarity``."""
    return [similarity, math.sqrt(1 - similarity * similarity)]


QUERY = [1.0, 0.0]
QUESTION: Question = {"valid_at": at("2026-09-15"), "known_at": at("2026-09-29")}


@pytest.fixture(scope="module")
def vector_url(make_database: DatabaseFactory) -> str:
    return make_database(migrated=True)


@pytest.fixture
def vstore(_server_requirements: None, vector_url: str) -> Iterator[Store]:
    # _server_requirements (tests/conftest.py) skips first where pgvector is missing.
    with psycopg.connect(vector_url, autocommit=True) as conn:
        store = Store(conn)
        assert store.evidence.enable_vector(2) == 2
        yield store


@pytest.fixture
def rule(vstore: Store, key: Key) -> dict[str, int]:
    """Old rule 0.97, current rule 0.93, future announcement 0.99 (cosine similarity to QUERY)."""
    ids = {}
    for name, value, start, known, similarity in (
        ("old", 50, date(2026, 1, 1), at("2025-12-15"), 0.97),
        ("current", 80, date(2026, 9, 1), at("2026-09-03", 9), 0.93),
        ("future", 100, date(2026, 10, 1), at("2026-09-20"), 0.99),
    ):
        ids[name] = vstore.evidence.record(
            key,
            value,
            source="policy",
            valid_from=start,
            known_at=known,
            passage=f"The attachment limit is {value} MB.",
            embedding=unit(similarity),
        ).recorded.version_id
    return ids


def test_enable_is_idempotent_and_keeps_its_dimensions(vstore: Store) -> None:
    assert vstore.evidence.vector_available()
    assert vstore.evidence.enable_vector(2) == 2
    assert vstore.evidence.vector_dimensions() == 2
    with pytest.raises(EmbeddingError, match="already enabled with 2 dimensions"):
        vstore.evidence.enable_vector(3)


def test_nearest_filters_before_it_ranks(vstore: Store, key: Key, rule: dict[str, int]) -> None:
    everything = vstore.evidence.nearest(
        QUERY, valid_at=at("2026-09-15"), known_at=at("2026-09-29"), limit=None
    )
    # Eligible at that date: only the current rule (its remainder, carrying its passage).
    assert [h.value for h in everything if h.version.key == key] == [80]
    [hit] = vstore.evidence.nearest(QUERY, **QUESTION, key=key, limit=1)
    assert hit.value == 80 and hit.version.carried_from == rule["current"]
    assert hit.score == pytest.approx(0.93, abs=1e-6)


def test_nearest_then_filter_returns_missing(
    vstore: Store, vector_url: str, key: Key, rule: dict[str, int]
) -> None:
    with psycopg.connect(vector_url) as conn:
        [(nearest, value)] = conn.execute(
            "SELECT v.version_id, v.value FROM bitemporal.evidence_embedding x "
            "JOIN bitemporal.evidence e USING (evidence_id) "
            "JOIN bitemporal.fact_version v USING (version_id) "
            "WHERE v.entity = %s ORDER BY x.embedding <=> %s::real[]::vector LIMIT 1",
            (key.entity, QUERY),
        ).fetchall()
    assert (nearest, value) == (rule["future"], 100)  # ranking alone: the announcement
    eligible = {v.carried_from or v.version_id for v in vstore.facts.as_of(key, **QUESTION)}
    assert nearest not in eligible  # ...so filtering it afterwards leaves nothing


def test_an_approximate_index_cannot_make_it_miss(vstore: Store, vector_url: str, key: Key) -> None:
    """With an HNSW index, 'ORDER BY distance LIMIT k' then a filter can return nothing;
    bitemporal.nearest_evidence computes the similarity for every eligible passage."""
    vstore.evidence.record(
        key,
        80,
        source="policy",
        valid_from=date(2026, 9, 1),
        known_at=at("2026-09-03"),
        passage="The attachment limit is 80 MB.",
        embedding=unit(0.5),
    )
    for i in range(40):  # announcements much nearer to the query, not valid yet
        vstore.evidence.record(
            key,
            100 + i,
            source=f"announcer-{i}",
            valid_from=date(2027, 1, 1),
            known_at=at("2026-09-04") + timedelta(minutes=i),
            passage=f"Announcement {i}.",
            embedding=unit(0.999 - i / 10000),
        )
    with psycopg.connect(vector_url, autocommit=True) as conn:
        conn.execute(
            "CREATE INDEX IF NOT EXISTS test_embedding_hnsw ON bitemporal.evidence_embedding "
            "USING hnsw (embedding vector_cosine_ops)"
        )
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET hnsw.ef_search = 10")
        conn.execute("SET hnsw.iterative_scan = off")
        eligible = [
            r[0]
            for r in conn.execute(
                "SELECT e.evidence_id FROM bitemporal_internal.eligible(%s, %s, %s, %s) v "
                "JOIN bitemporal.evidence e ON e.version_id IN (v.version_id, v.carried_from)",
                (QUESTION["valid_at"], QUESTION["known_at"], key.entity, key.attribute),
            )
        ]
        assert len(eligible) == 1
        # "+ 0": a filter the primary key cannot answer, as a filter on periods could not.
        naive = (
            "SELECT x.evidence_id FROM bitemporal.evidence_embedding "
            "x WHERE x.evidence_id + 0 = ANY (%s) "
            "ORDER BY x.embedding <=> %s::real[]::vector LIMIT 1"
        )
        args = (eligible, QUERY)
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + naive, args))
        assert "test_embedding_hnsw" in plan, plan
        assert conn.execute(naive, args).fetchall() == []  # the approximate scan missed it
        hits = Store(conn).evidence.nearest(QUERY, **QUESTION, key=key)
        conn.execute("DROP INDEX bitemporal.test_embedding_hnsw")
    assert [h.value for h in hits] == [80]


def test_ties_are_broken_by_version_id(vstore: Store, key: Key) -> None:
    ids = [
        vstore.evidence.record(
            key,
            80,
            source=f"copy-{i}",
            known_at=at("2026-01-01") + timedelta(minutes=i),
            passage="limit",
            embedding=[0.0, 2.0],
        ).recorded.version_id
        for i in range(3)
    ]
    hits = vstore.evidence.nearest([0.0, 1.0], key=key)
    assert [h.version.version_id for h in hits] == ids
    assert all(h.score == pytest.approx(1.0) for h in hits)


def test_bad_embeddings(vstore: Store, key: Key) -> None:
    version = vstore.facts.record(key, 80, source="policy").version_id
    for bad in ([1.0, 2.0, 3.0], [0.0, 0.0], [math.nan, 1.0]):
        with pytest.raises(EmbeddingError):
            vstore.evidence.add(version, "text", embedding=bad)
        with pytest.raises(EmbeddingError):
            vstore.evidence.nearest(bad)
    assert vstore.evidence.passages(version) == []  # the failed adds left nothing behind


def test_downgrade_drops_the_embeddings_table(migrated_database_url: str) -> None:
    url = migrated_database_url
    with psycopg.connect(url, autocommit=True) as conn:
        store = Store(conn)
        store.evidence.enable_vector(3)
        version = store.facts.record(Key("doc", "limit"), 80, source="policy").version_id
        store.evidence.add(version, "The limit is 80 MB.", embedding=[1, 2, 3])
    migrations.downgrade(url, "0002", force=True)  # the evidence goes with its tables
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regclass('bitemporal.evidence_embedding')").fetchone() == (
            None,
        )
    bitemporal.migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        assert Store(conn).evidence.vector_dimensions() is None


def test_erasure_deletes_embeddings_with_the_evidence(vstore: Store, key: Key) -> None:
    version = vstore.facts.record(key, 50, source="policy")
    vstore.evidence.add(version.version_id, "The limit is 50 MB.", embedding=[1.0, 0.0])
    assert vstore.evidence.nearest(QUERY, key=key)
    vstore.facts.erase(key, reason="request")
    assert vstore.evidence.nearest(QUERY, key=key) == []
    with vstore.connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM bitemporal.evidence_embedding m "
            "JOIN bitemporal.evidence e USING (evidence_id) WHERE e.version_id = %s",
            (version.version_id,),
        )
        assert cur.fetchone() == (0,)
        cur.execute(
            "SELECT count(*) FROM bitemporal.evidence_embedding m WHERE NOT EXISTS "
            "(SELECT FROM bitemporal.evidence e WHERE e.evidence_id = m.evidence_id)"
        )
        assert cur.fetchone() == (0,)
