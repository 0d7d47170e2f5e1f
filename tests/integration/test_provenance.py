"""Provenance: derived artifacts, the invalidation list (transitive), and NOTIFY on supersession."""

from __future__ import annotations

import json
import uuid
from datetime import date
from typing import Any

import psycopg
import pytest

from bitemporal import (
    CHANNEL,
    InvalidArtifactError,
    Invalidation,
    Key,
    KnowledgeTimeInFutureError,
    StaleArtifact,
    StaleCause,
    Store,
    UnknownArtifactError,
    UnknownVersionError,
)
from tests.helpers import Connect, at, no_notify_on_citus


def mine(stale: list[StaleArtifact], ids: set[int]) -> dict[int, StaleArtifact]:
    """The stale artifacts among ``ids`` (the session database is shared)."""
    return {s.artifact_id: s for s in stale if s.artifact_id in ids}


@pytest.fixture
def ref() -> str:
    return f"doc-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def derived(store: Store, key: Key, ref: str) -> dict[str, int]:
    """50 MB from January; a chunk of the policy, its embedding and a summary built on the chunk."""
    v50 = store.facts.record(
        key, 50, source="policy", valid_from=date(2026, 1, 1), known_at=at("2025-12-15")
    )
    chunk = store.provenance.record(
        "chunk", f"{ref}#limits", versions=[v50.version_id], derived_at=at("2026-01-02")
    )
    embedding = store.provenance.record(
        "embedding", f"{ref}#limits", artifacts=[chunk], derived_at=at("2026-01-02")
    )
    summary = store.provenance.record(
        "summary",
        ref,
        artifacts=[chunk.artifact_id],
        detail={"model": "m-1"},
        derived_at=at("2026-01-03"),
    )
    return {
        "v50": v50.version_id,
        "chunk": chunk.artifact_id,
        "embedding": embedding.artifact_id,
        "summary": summary.artifact_id,
    }


def test_recorded_inputs(store: Store, derived: dict[str, int]) -> None:
    summary = store.provenance.get(derived["summary"])
    assert (
        summary.kind == "summary"
        and summary.artifacts == (derived["chunk"],)
        and summary.versions == ()
    )
    assert summary.detail == {"model": "m-1"} and summary.retired_at is None
    assert store.provenance.get(derived["chunk"]).versions == (derived["v50"],)


def test_a_supersession_makes_everything_derived_stale(
    store: Store, key: Key, derived: dict[str, int]
) -> None:
    ids = set(derived.values()) - {derived["v50"]}
    assert mine(store.provenance.stale(), ids) == {}
    v80 = store.facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-03", 9)
    )
    stale = mine(store.provenance.stale(), ids)
    assert set(stale) == ids
    [direct] = stale[derived["chunk"]].reasons
    assert direct.cause is StaleCause.SUPERSEDED and direct.version_id == derived["v50"]
    assert direct.changed_at == at("2026-09-03", 9) and direct.by_version_ids == (v80.version_id,)
    assert direct.via_artifact == derived["chunk"] and direct.key == key and direct.value == 50
    assert direct.text == (
        f"version {derived['v50']} ({key}, source policy: 50) superseded on "
        f"2026-09-03 09:00 UTC by version {v80.version_id} (80)"
    )
    [through] = stale[derived["summary"]].reasons
    assert through.via_artifact == derived["chunk"] and through.version_id == derived["v50"]
    assert through.text.endswith(
        f", through artifact {derived['chunk']} (chunk "
        f"{store.provenance.get(derived['chunk']).ref})"
    )
    # As known before the change, nothing was stale.
    assert mine(store.provenance.stale(at("2026-09-03", 8)), ids) == {}
    assert mine(store.provenance.stale(at("2026-09-03", 9)), ids).keys() == ids


def test_retraction(store: Store, key: Key, derived: dict[str, int]) -> None:
    store.facts.retract(
        key, source="policy", valid_from=date(2026, 6, 1), known_at=at("2026-05-20")
    )
    [reason] = mine(store.provenance.stale(), {derived["chunk"]})[derived["chunk"]].reasons
    assert reason.cause is StaleCause.RETRACTED and reason.by_version_ids == ()
    assert "retracted on 2026-05-20 12:00 UTC" in reason.text


def test_rebuilding_retires_and_clears(
    store: Store, key: Key, ref: str, derived: dict[str, int]
) -> None:
    v80 = store.facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-03", 9)
    )
    current = [v.version_id for v in store.facts.as_of(key, valid_at=at("2026-06-01"))] + [
        v80.version_id
    ]
    # Rebuild the chunk under the same name: the old one is retired, the new one is fresh.
    chunk2 = store.provenance.record("chunk", f"{ref}#limits", versions=current)
    assert store.provenance.get(derived["chunk"]).retired_at is not None
    stale = mine(store.provenance.stale(), set(derived.values()) | {chunk2.artifact_id})
    assert chunk2.artifact_id not in stale and derived["chunk"] not in stale
    # The summary is still stale: built on the old chunk, now retired, whose input was superseded.
    causes = {(r.cause, r.input_artifact) for r in stale[derived["summary"]].reasons}
    assert causes == {(StaleCause.SUPERSEDED, None), (StaleCause.INPUT_RETIRED, derived["chunk"])}
    assert store.provenance.retire(derived["summary"]) is True
    assert store.provenance.retire(derived["summary"]) is False
    assert derived["summary"] not in mine(store.provenance.stale(), {derived["summary"]})
    assert [a.artifact_id for a in store.provenance.dependents(versions=[derived["v50"]])] == [
        derived["embedding"]
    ]  # the chunk and the summary are retired


def test_dependents_are_transitive(store: Store, derived: dict[str, int]) -> None:
    found = store.provenance.dependents(versions=[derived["v50"]])
    assert [a.artifact_id for a in found] == [
        derived["chunk"],
        derived["embedding"],
        derived["summary"],
    ]
    assert [a.artifact_id for a in store.provenance.dependents(artifacts=[derived["chunk"]])] == [
        derived["embedding"],
        derived["summary"],
    ]


def test_a_diamond_reports_each_cause_once(store: Store, key: Key, ref: str) -> None:
    v = store.facts.record(key, 1, source="s", known_at=at("2026-01-01"))
    left = store.provenance.record("chunk", f"{ref}/left", versions=[v.version_id])
    right = store.provenance.record("chunk", f"{ref}/right", versions=[v.version_id])
    top = store.provenance.record("answer", ref, artifacts=[left, right], versions=[v.version_id])
    store.facts.record(key, 2, source="s")
    [reason] = mine(store.provenance.stale(), {top.artifact_id})[top.artifact_id].reasons
    assert reason.via_artifact == top.artifact_id  # the direct path wins


def test_a_version_discarded_in_its_own_transaction(store: Store, key: Key, ref: str) -> None:
    with store.transaction():
        first = store.facts.record(key, 1, source="s")
        artifact = store.provenance.record("cached_answer", ref, versions=[first.version_id])
        store.facts.record(key, 2, source="s")  # same transaction: the first version is not kept
    assert [v.value for v in store.facts.history(key)] == [2]
    [reason] = mine(store.provenance.stale(), {artifact.artifact_id})[artifact.artifact_id].reasons
    assert reason.cause is StaleCause.DISCARDED and reason.changed_at is None
    assert "replaced inside the transaction" in reason.text


class TestErrors:
    def test_unknown_inputs(self, store: Store, ref: str) -> None:
        with pytest.raises(UnknownVersionError):
            store.provenance.record("chunk", ref, versions=[2**62])
        with pytest.raises(UnknownArtifactError):
            store.provenance.record("chunk", ref, artifacts=[2**62])
        with pytest.raises(UnknownArtifactError):
            store.provenance.retire(2**62)
        with pytest.raises(UnknownArtifactError):
            store.provenance.get(2**62)

    def test_invalid_artifacts(self, store: Store, key: Key, ref: str) -> None:
        v = store.facts.record(key, 1, source="s", known_at=at("2026-02-01"))
        with pytest.raises(InvalidArtifactError, match="no inputs"):
            store.provenance.record("chunk", ref)
        with pytest.raises(InvalidArtifactError):
            store.provenance.record("", ref, versions=[v.version_id])
        with pytest.raises(InvalidArtifactError, match="only knew"):
            store.provenance.record(
                "chunk", ref, versions=[v.version_id], derived_at=at("2026-01-01")
            )
        with pytest.raises(KnowledgeTimeInFutureError):
            store.provenance.record(
                "chunk", ref, versions=[v.version_id], derived_at=at("2999-01-01")
            )
        with pytest.raises(InvalidArtifactError):
            store.provenance.record("chunk", ref, versions=["1"])  # type: ignore[list-item]
        later = store.provenance.record(
            "chunk", ref, versions=[v.version_id], derived_at=at("2026-03-01")
        )
        with pytest.raises(InvalidArtifactError, match="derived later"):
            store.provenance.record(
                "chunk", ref, versions=[v.version_id], derived_at=at("2026-02-15")
            )
        with pytest.raises(InvalidArtifactError, match="before it was derived"):
            store.provenance.retire(later.artifact_id, at=at("2026-02-20"))
        assert store.provenance.get(later.artifact_id).retired_at is None


@no_notify_on_citus
class TestNotify:
    def listener(self, connect: Connect) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] = connect()
        conn.execute(f"LISTEN {CHANNEL}")
        return conn

    def received(
        self,
        conn: psycopg.Connection[Any],
        key: Key,
        *,
        expect: int | None = None,
        timeout: float = 0.2,
    ) -> list[Invalidation]:
        """Notifications about ``key`` (told by resolving their ids): wait for ``expect`` of
        them (at most 5 s), or ``timeout`` seconds when none are expected."""
        found = []
        reader = Store(psycopg.connect(conn.info.dsn, autocommit=True))
        try:
            for n in conn.notifies(timeout=5.0 if expect else timeout, stop_after=expect):
                assert n.channel == CHANNEL
                invalidation = Invalidation.from_payload(n.payload)
                version = reader.facts.version(invalidation.version_id)
                if version is not None and version.key == key:
                    found.append(invalidation)
        finally:
            reader.connection.close()
        return found

    def test_supersession_and_retraction_are_announced(
        self, store: Store, key: Key, connect: Connect
    ) -> None:
        first = store.facts.record(
            key, 50, source="policy", valid_from=date(2026, 1, 1), known_at=at("2025-12-15")
        )
        listener = self.listener(connect)
        second = store.facts.record(
            key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-03", 9)
        )
        [superseded] = self.received(listener, key, expect=1)
        assert (superseded.version_id, superseded.change) == (first.version_id, "superseded")
        assert superseded.by == (second.version_id,) and superseded.known_at == at("2026-09-03", 9)
        ended = store.facts.retract(key, source="policy", valid_from=date(2026, 12, 1))
        invalidations = self.received(listener, key, expect=1)
        assert [(i.version_id, i.change) for i in invalidations] == [(ended[0], "retracted")]

    def test_sent_at_commit_only(self, key: Key, connect: Connect) -> None:
        writer = Store(connect(autocommit=False))
        writer.facts.record(key, 1, source="s")
        writer.connection.commit()
        listener = self.listener(connect)
        writer.facts.record(key, 2, source="s")
        assert self.received(listener, key) == []  # not committed yet
        writer.connection.rollback()
        assert self.received(listener, key) == []  # rolled back: nothing happened
        writer.facts.record(key, 3, source="s")
        writer.connection.commit()
        assert [i.change for i in self.received(listener, key, expect=1)] == ["superseded"]

    def test_new_facts_are_not_invalidations(
        self, store: Store, key: Key, connect: Connect
    ) -> None:
        listener = self.listener(connect)
        store.facts.record(key, 1, source="s")
        store.facts.record(key, 1, source="other")
        assert self.received(listener, key) == []

    def test_long_keys_are_announced_in_full(self, store: Store, connect: Connect) -> None:
        key = Key(
            "\u0001" * 1000, "attribute"
        )  # JSON writes each as \u0001: over 8000 bytes in all
        first = store.facts.record(key, 1, source="\u0001" * 1000)
        listener = self.listener(connect)
        second = store.facts.record(key, 2, source="\u0001" * 1000)
        payloads = [
            Invalidation.from_payload(n.payload)
            for n in listener.notifies(timeout=5.0, stop_after=1)
        ]
        [mine_] = [p for p in payloads if second.version_id in p.by]
        assert mine_.change == "superseded"
        resolved = store.facts.version(mine_.version_id)
        assert resolved is not None and resolved.version_id == first.version_id
        assert (resolved.key, resolved.source) == (key, "\u0001" * 1000)


@no_notify_on_citus
def test_a_writer_role_records_artifacts_and_its_supersessions_are_announced(
    database_url: str, store: Store, key: Key, ref: str, connect: Connect
) -> None:
    """Writers write only through SECURITY DEFINER functions (sql/security.v1.sql); the
    notification trigger, which fires at commit as the writer, must still work."""
    admin = connect()
    if admin.execute("SELECT to_regrole('bitemporal_writer')").fetchone() == (None,):
        pytest.skip("no bitemporal_writer role in this schema version")
    name = f"bt_test_writer_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE ROLE "{name}" LOGIN IN ROLE bitemporal_writer')
    try:
        with psycopg.connect(database_url, user=name, autocommit=True) as conn:
            writer = Store(conn)
            first = writer.facts.record(key, 50, source="policy", known_at=at("2026-01-01"))
            artifact = writer.provenance.record("summary", ref, versions=[first.version_id])
            assert artifact.versions == (first.version_id,) and artifact.kind == "summary"
            listener = connect()
            listener.execute(f"LISTEN {CHANNEL}")
            writer.facts.record(key, 80, source="policy")
            [n] = listener.notifies(timeout=5.0, stop_after=1)
            assert Invalidation.from_payload(n.payload).version_id == first.version_id
        assert artifact.artifact_id in {s.artifact_id for s in store.provenance.stale()}
    finally:
        admin.execute(f'DROP ROLE "{name}"')


@no_notify_on_citus
def test_the_channel_tells_a_stranger_ids_only_and_a_reader_resolves_them(
    database_url: str, store: Store, connect: Any
) -> None:
    """Any role that may connect may LISTEN (PostgreSQL has no privilege for it): the
    payload names no key, source or value; a reader resolves the id through a function."""
    admin = connect()
    if admin.execute("SELECT to_regrole('bitemporal_reader')").fetchone() == (None,):
        pytest.skip("no bitemporal_reader role in this schema version")
    suffix = uuid.uuid4().hex[:8]
    stranger, reader = f"bt_test_stranger_{suffix}", f"bt_test_reader_{suffix}"
    admin.execute(f'CREATE ROLE "{stranger}" LOGIN')
    admin.execute(f'CREATE ROLE "{reader}" LOGIN IN ROLE bitemporal_reader')
    key = Key(f"secret-entity-{suffix}", "secret-attribute")
    try:
        with psycopg.connect(database_url, user=stranger, autocommit=True) as listener:
            listener.execute(f"LISTEN {CHANNEL}")
            first = store.facts.record(key, 50, source="secret-source", known_at=at("2026-01-01"))
            second = store.facts.record(key, 80, source="secret-source")
            notes = list(listener.notifies(timeout=5.0, stop_after=1))
            [note] = [n for n in notes if f'"by": [{second.version_id}]' in n.payload]
            payload = json.loads(note.payload)
            assert sorted(payload) == ["by", "change", "known_at", "version_id"]
            assert payload["version_id"] == first.version_id and payload["change"] == "superseded"
            assert "secret" not in note.payload
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                listener.execute(
                    "SELECT * FROM bitemporal.versions WHERE version_id = %s", (first.version_id,)
                )
        with psycopg.connect(database_url, user=reader, autocommit=True) as conn:
            resolved = Store(conn).facts.version(Invalidation.from_payload(note.payload).version_id)
            assert resolved is not None
            assert (resolved.key, resolved.source, resolved.value) == (key, "secret-source", 50)
    finally:
        admin.execute(f'DROP ROLE "{stranger}"')
        admin.execute(f'DROP ROLE "{reader}"')
