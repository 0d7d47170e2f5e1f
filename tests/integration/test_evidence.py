"""Retrieval filters before it ranks: full-text search and caller-supplied scores, on every server.

The failure this prevents: three passages about one rule, relevance old 0.97,
current 0.93, future announcement 0.99. Ranking alone picks the announcement;
keeping only the nearest passage and filtering afterwards leaves nothing
("missing") although the rule in force is in the store.
"""

from __future__ import annotations

import math
import uuid
from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest

from bitemporal import (
    InvalidEvidenceError,
    InvalidSearchError,
    Key,
    KnowledgeTimeInFutureError,
    Store,
    UnknownVersionError,
    VectorNotEnabledError,
    VectorUnavailableError,
)
from tests.helpers import Connect, Question, at

#: A date inside the current rule's period, asked with what the store knows on 29 September.
QUESTION: Question = {"valid_at": at("2026-09-15"), "known_at": at("2026-09-29")}


@pytest.fixture
def rule(store: Store, key: Key) -> dict[str, int]:
    """The old rule, the current one (ingested two days late) and a future announcement."""
    record = store.evidence.record
    old = record(
        key,
        50,
        source="policy",
        valid_from=date(2026, 1, 1),
        known_at=at("2025-12-15"),
        passage="Attachments are limited to 50 MB per message.",
        document="policy-2026.pdf#limits",
    )
    current = record(
        key,
        80,
        source="policy",
        valid_from=date(2026, 9, 1),
        known_at=at("2026-09-03", 9),
        passage="From 1 September 2026 the attachment limit is 80 MB.",
        document="policy-2026-09.pdf#limits",
    )
    future = record(
        key,
        100,
        source="policy",
        valid_from=date(2026, 10, 1),
        known_at=at("2026-09-20"),
        passage="Announcement: the attachment limit rises to 100 MB on 1 October 2026.",
        document="news/2026-09-20",
    )
    return {
        "old": old.recorded.version_id,
        "current": current.recorded.version_id,
        "future": future.recorded.version_id,
    }


def scores(rule: dict[str, int]) -> dict[int, float]:
    return {rule["old"]: 0.97, rule["current"]: 0.93, rule["future"]: 0.99}


class TestTheRetrievalFailure:
    def test_ranking_alone_picks_the_announcement(self, rule: dict[str, int]) -> None:
        relevance = scores(rule)
        assert max(relevance, key=relevance.__getitem__) == rule["future"]

    def test_nearest_then_filter_returns_missing(
        self, store: Store, key: Key, rule: dict[str, int]
    ) -> None:
        relevance = scores(rule)
        nearest = max(relevance, key=relevance.__getitem__)
        eligible = store.facts.as_of(key, **QUESTION)
        asserting = {v.carried_from or v.version_id for v in eligible}
        assert [
            v for v in [nearest] if v in asserting
        ] == []  # missing, though the rule in force is stored
        assert [v.value for v in eligible] == [80]

    def test_filter_then_rank_picks_the_current_rule(
        self, store: Store, key: Key, rule: dict[str, int]
    ) -> None:
        [hit] = store.evidence.rank(scores(rule), **QUESTION, limit=1)
        assert hit.value == 80 and hit.rank == 1 and math.isclose(hit.score, 0.93)
        # The 80 MB version was cut by the announcement: its remainder carries the score and
        # passage.
        assert hit.version.carried_from == rule["current"]
        assert hit.passage == "From 1 September 2026 the attachment limit is 80 MB."
        assert hit.document == "policy-2026-09.pdf#limits"

    def test_only_eligible_versions_are_ranked(
        self, store: Store, key: Key, rule: dict[str, int]
    ) -> None:
        hits = store.evidence.rank(scores(rule), **QUESTION, limit=None)
        assert [h.value for h in hits] == [80]
        # Inside each rule's own period, that rule is the answer.
        june = store.evidence.rank(
            scores(rule), valid_at=at("2026-06-15"), known_at=at("2026-09-29")
        )
        assert [h.value for h in june] == [50]
        october = store.evidence.rank(
            scores(rule), valid_at=at("2026-10-15"), known_at=at("2026-09-29")
        )
        assert [h.value for h in october] == [100]

    def test_known_then(self, store: Store, key: Key, rule: dict[str, int]) -> None:
        # On 2 September the store did not know about 80 MB yet: the old rule was the answer.
        hits = store.evidence.rank(
            scores(rule), valid_at=at("2026-09-02"), known_at=at("2026-09-02")
        )
        assert [(h.value, h.version.version_id) for h in hits] == [(50, rule["old"])]

    def test_sql_function_gives_the_same(
        self, connect: Connect, key: Key, rule: dict[str, int]
    ) -> None:
        ids, values = zip(*scores(rule).items(), strict=True)
        rows = (
            connect()
            .execute(
                "SELECT rank, value, passage FROM bitemporal.rank_versions(%s, %s, %s, %s, 1)",
                (list(ids), list(values), QUESTION["valid_at"], QUESTION["known_at"]),
            )
            .fetchall()
        )
        assert rows == [(1, 80, "From 1 September 2026 the attachment limit is 80 MB.")]

    def test_full_text_search_filters_first(
        self, store: Store, key: Key, rule: dict[str, int]
    ) -> None:
        [hit] = store.evidence.search("attachment limit", **QUESTION, key=key, limit=1)
        assert hit.value == 80 and "80 MB" in (hit.passage or "")
        everything = store.evidence.search("attachment limit", **QUESTION, key=key, limit=None)
        assert [h.value for h in everything] == [80]


def test_many_better_matches_never_crowd_out_the_eligible_one(store: Store, key: Key) -> None:
    word = f"zq{uuid.uuid4().hex[:12]}"
    store.evidence.record(
        key,
        80,
        source="policy",
        valid_from=date(2026, 9, 1),
        known_at=at("2026-09-03"),
        passage=f"The {word} limit is 80 MB.",
    )
    # Thirty announcements (other sources, not yet valid) that match the query far better.
    for i in range(30):
        store.evidence.record(
            key,
            100 + i,
            source=f"announcer-{i}",
            valid_from=date(2027, 1, 1),
            known_at=at("2026-09-04") + timedelta(minutes=i),
            passage=f"{word} {word} {word} limit limit limit.",
        )
    ranked_all = store.evidence.search(
        word, valid_at=at("2027-02-01"), known_at=at("2026-09-29"), limit=None
    )
    assert len(ranked_all) == 31 and ranked_all[0].score > ranked_all[-1].score
    # Top-1 of everything is an announcement; filtering first still finds the rule in force.
    [hit] = store.evidence.search(
        word, valid_at=at("2026-09-15"), known_at=at("2026-09-29"), limit=1
    )
    assert hit.value == 80


def test_rank_ties_are_broken_by_version_id(store: Store, key: Key) -> None:
    ids = [
        store.evidence.record(
            key,
            80,
            source=f"copy-{i}",
            valid_from=date(2026, 1, 1),
            known_at=at("2025-12-01") + timedelta(minutes=i),
            passage="limit is 80 MB",
        ).recorded.version_id
        for i in range(4)
    ]
    question: Question = {"valid_at": at("2026-06-01"), "known_at": at("2026-06-01")}
    tied = store.evidence.rank({i: 0.5 for i in reversed(ids)}, **question)
    assert [h.version.version_id for h in tied] == sorted(ids)
    assert [h.rank for h in tied] == [1, 2, 3, 4]
    searched = store.evidence.search("limit", **question, key=key)
    assert [h.version.version_id for h in searched] == sorted(ids)  # same passage, same score
    again = store.evidence.search("limit", **question, key=key)
    assert again == searched


def test_remainders_keep_their_passages(store: Store, key: Key) -> None:
    first = store.evidence.record(
        key,
        50,
        source="policy",
        valid_from=date(2026, 1, 1),
        known_at=at("2025-12-15"),
        passage="Attachments are limited to 50 MB.",
        document="policy.pdf",
    )
    store.facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-03")
    )
    [hit] = store.evidence.search("attachments", valid_at=at("2026-06-01"), key=key)
    assert hit.version.carried_from == first.recorded.version_id
    assert hit.evidence_id == first.evidence_id
    assert [p.passage for p in store.evidence.passages(hit.version.version_id)] == [
        "Attachments are limited to 50 MB."
    ]
    # The 80 MB version has no passage: ranked by a caller score, it comes back without one.
    [scored] = store.evidence.rank(
        {hit.version.version_id: 1.0, first.recorded.version_id + 10**12: 2.0},
        valid_at=at("2026-06-01"),
    )
    assert scored.passage == "Attachments are limited to 50 MB." and scored.score == 1.0
    [bare] = store.evidence.rank(
        {v.version_id: 1.0 for v in store.facts.as_of(key, valid_at=at("2026-10-01"))},
        valid_at=at("2026-10-01"),
    )
    assert bare.value == 80 and bare.passage is None and bare.evidence_id is None


def test_recording_a_known_value_attaches_the_passage_to_the_existing_version(
    store: Store, key: Key
) -> None:
    first = store.evidence.record(key, 50, source="policy", passage="50 MB, says the policy.")
    again = store.evidence.record(key, 50, source="policy", passage="The policy repeats: 50 MB.")
    assert not again.recorded.created and again.recorded.version_id == first.recorded.version_id
    assert [p.passage for p in store.evidence.passages(first.recorded.version_id)] == [
        "50 MB, says the policy.",
        "The policy repeats: 50 MB.",
    ]


class TestLanguages:
    def test_each_passage_is_parsed_in_its_language(self, store: Store, key: Key) -> None:
        version = store.facts.record(key, 80, source="policy").version_id
        store.evidence.add(
            version, "Die Größe der Anhänge ist auf 80 MB begrenzt.", language="german"
        )
        store.evidence.add(version, "Attachments are limited to 80 MB.")  # english by default
        store.evidence.add(version, "Attachments are limited to 80 MB.", language="simple")
        german = store.evidence.search("Anhang", key=key)
        assert [h.passage for h in german] == ["Die Größe der Anhänge ist auf 80 MB begrenzt."]
        stemmed = store.evidence.search(
            "attachment limits", key=key
        )  # english stems, simple does not
        assert [h.passage for h in stemmed] == ["Attachments are limited to 80 MB."]
        only_simple = store.evidence.search("attachments", key=key, language="simple")
        assert len(only_simple) == 1
        assert store.evidence.passages(version)[2].language == "simple"

    def test_unknown_language(self, store: Store, key: Key) -> None:
        version = store.facts.record(key, 80, source="policy").version_id
        with pytest.raises(InvalidEvidenceError, match="klingon"):
            store.evidence.add(version, "Attachments are limited.", language="klingon")
        with pytest.raises(InvalidSearchError, match="klingon"):
            store.evidence.search("attachments", language="klingon")


class TestErrors:
    def test_bad_scores(self, store: Store) -> None:
        for bad in (math.nan, math.inf, "high"):
            with pytest.raises(InvalidSearchError):
                store.evidence.rank({1: bad})  # type: ignore[dict-item]

    def test_bad_scores_in_sql(self, connect: Connect) -> None:
        conn = connect()
        for call in (
            "SELECT * FROM bitemporal.rank_versions('{1}', '{NaN}')",
            "SELECT * FROM bitemporal.rank_versions('{1,2}', '{0.5}')",
            "SELECT * FROM bitemporal.rank_versions('{1,1}', '{0.5,0.6}')",
            "SELECT * FROM bitemporal.search_evidence('x', lim => -1)",
        ):
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(call)
            assert caught.value.sqlstate == "BT204", call

    def test_bad_limit(self, store: Store) -> None:
        with pytest.raises(InvalidSearchError):
            store.evidence.search("limit", limit=-1)

    def test_question_from_the_future(self, store: Store) -> None:
        with pytest.raises(KnowledgeTimeInFutureError):
            store.evidence.search("limit", known_at=datetime(2999, 1, 1, tzinfo=UTC))

    def test_unknown_version_and_blank_passage(self, store: Store, key: Key) -> None:
        with pytest.raises(UnknownVersionError):
            store.evidence.add(2**62, "Attachments are limited.")
        version = store.facts.record(key, 80, source="policy").version_id
        with pytest.raises(InvalidEvidenceError):
            store.evidence.add(version, "   ")
        with pytest.raises(InvalidEvidenceError):
            store.evidence.add(version, "text", document="")
        assert store.evidence.passages(version) == []


def test_vector_retrieval_reports_clearly_where_it_cannot_work(
    store: Store, server_version: int
) -> None:
    if store.evidence.vector_available():
        # pgvector is there (tests/integration/test_vector.py uses it); not enabled here.
        assert store.evidence.vector_dimensions() is None
        with pytest.raises(VectorNotEnabledError, match="enable_vector"):
            store.evidence.nearest([1.0, 0.0])
        return
    for call in (
        lambda: store.evidence.nearest([1.0, 0.0]),
        lambda: store.evidence.enable_vector(2),
    ):
        with pytest.raises(VectorUnavailableError) as caught:
            call()
        assert f"PostgreSQL {server_version}" in str(caught.value) and "pgvector" in str(
            caught.value
        )
        assert "full-text search" in (caught.value.hint or "")
    assert store.evidence.vector_dimensions() is None


@pytest.mark.parametrize("name", ["pg_temp.bt_evil", "PG_TEMP.bt_evil"])
def test_a_temporary_text_search_configuration_is_refused(
    store: Store, key: Key, connect: Connect, name: str
) -> None:
    """A passage indexed with a configuration in the writer's pg_temp would break every later
    search reaching it, for every session, once the writer disconnects."""
    version = store.facts.record(key, 80, source="policy").version_id
    writer_conn = connect()
    writer_conn.execute(
        "CREATE TEXT SEARCH CONFIGURATION pg_temp.bt_evil (COPY = pg_catalog.simple)"
    )
    writer = Store(writer_conn)
    with pytest.raises(InvalidEvidenceError, match="temporary"):
        writer.evidence.add(version, "attachments up to 80 MB", language=name)
    writer_conn.close()
    assert store.evidence.passages(version) == []
    # Another session's searches keep working.
    other = Store(connect())
    other.evidence.add(version, "attachments up to 80 MB")
    assert [h.version.version_id for h in other.evidence.search("attachments", key=key)] == [
        version
    ]


def test_evidence_of_a_version_its_own_transaction_removed_goes_with_it(
    connect: Connect, key: Key
) -> None:
    """A version superseded by the transaction that wrote it, at the same knowledge time,
    was never seen and is not kept: neither is the evidence attached to it (on Citus, at
    commit)."""
    conn = connect(autocommit=False)
    store = Store(conn)
    first = store.facts.record(key, 1, source="report")
    evidence_id = store.evidence.add(first.version_id, "The first figure was 1.")
    second = store.facts.record(key, 2, source="report")
    kept = store.evidence.add(second.version_id, "The figure is 2.")
    conn.commit()
    assert [v.version_id for v in store.facts.history(key)] == [second.version_id]
    rows = conn.execute(
        "SELECT evidence_id FROM bitemporal.evidence WHERE evidence_id IN (%s, %s)",
        (evidence_id, kept),
    ).fetchall()
    conn.rollback()
    assert rows == [(kept,)]
