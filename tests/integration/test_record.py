"""Sequenced writes and as-of reads at every period edge, through the SQL functions."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
import sqlalchemy
from sqlalchemy.orm import Session

from bitemporal import Key, Status, Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
US = timedelta(microseconds=1)


def day(n: int) -> datetime:
    return T0 + timedelta(days=n)


def known(n: int) -> datetime:
    """Knowledge times in the past, one hour apart."""
    return datetime(2025, 6, 1, tzinfo=UTC) + timedelta(hours=n)


def current_pieces(store: Store, key: Key) -> list[tuple[object, datetime | None, datetime | None]]:
    return sorted(
        (
            (v.value, v.valid_period.start, v.valid_period.end)
            for v in store.facts.history(key)
            if v.known_period.is_open
        ),
        key=lambda p: p[1] or datetime.min.replace(tzinfo=UTC),
    )


class TestValidEdges:
    def test_start_inclusive_end_exclusive(self, store: Store, key: Key) -> None:
        store.facts.record(
            key, 1, source="s", valid_from=day(10), valid_to=day(20), known_at=known(0)
        )
        ask = lambda t: store.facts.resolve(key, valid_at=t, known_at=known(1), now=known(1))
        assert ask(day(10) - US).status is Status.MISSING
        assert ask(day(10)).value == 1
        assert ask(day(20) - US).value == 1
        assert ask(day(20)).status is Status.MISSING

    def test_open_ends(self, store: Store, key: Key) -> None:
        store.facts.record(key, "always", source="s", known_at=known(0))
        for t in (datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 1, tzinfo=UTC)):
            assert store.facts.resolve(key, valid_at=t).value == "always"
        [v] = store.facts.history(key)
        assert v.valid_period.start is None and v.valid_period.end is None

    @pytest.mark.parametrize("end", [datetime(9999, 12, 31, tzinfo=UTC), date(9999, 12, 31)])
    def test_end_of_time_sentinel_is_open(self, store: Store, key: Key, end: object) -> None:
        store.facts.record(key, 1, source="s", valid_from=day(0), valid_to=end)
        [v] = store.facts.history(key)
        assert v.valid_period.is_open

    def test_sql_infinity_is_open(self, store: Store, key: Key, connect) -> None:
        connect().execute(
            "SELECT bitemporal.record(%s, %s, 's', '1', '-infinity', 'infinity')",
            (key.entity, key.attribute),
        )
        [v] = store.facts.history(key)
        assert v.valid_period.start is None and v.valid_period.end is None

    def test_date_means_midnight_utc(self, store: Store, key: Key) -> None:
        store.facts.record(key, 1, source="s", valid_from=date(2026, 3, 1))
        [v] = store.facts.history(key)
        assert v.valid_period.start == datetime(2026, 3, 1, tzinfo=UTC)


class TestKnownEdges:
    def test_knowledge_start_inclusive_end_exclusive(self, store: Store, key: Key) -> None:
        store.facts.record(key, 1, source="s", known_at=known(1))
        store.facts.record(key, 2, source="s", known_at=known(2))
        ask = lambda k: store.facts.resolve(key, valid_at=day(0), known_at=k, now=known(3))
        assert ask(known(1) - US).status is Status.MISSING
        assert ask(known(1)).value == 1
        assert ask(known(2) - US).value == 1
        assert ask(known(2)).value == 2

    def test_closed_once_at_the_new_knowledge_time(self, store: Store, key: Key) -> None:
        first = store.facts.record(key, 1, source="s", known_at=known(1))
        second = store.facts.record(key, 2, source="s", known_at=known(2))
        assert second.superseded == (first.version_id,)
        old, new = store.facts.history(key)
        assert old.known_period.end == new.known_period.start == known(2)


class TestSplits:
    def test_interior_write_splits_into_three_adjacent_pieces(self, store: Store, key: Key) -> None:
        store.facts.record(
            key, 1, source="s", valid_from=day(0), valid_to=day(30), known_at=known(0)
        )
        store.facts.record(
            key, 2, source="s", valid_from=day(10), valid_to=day(20), known_at=known(1)
        )
        assert current_pieces(store, key) == [
            (1, day(0), day(10)),
            (2, day(10), day(20)),
            (1, day(20), day(30)),
        ]
        remainders = [v for v in store.facts.history(key) if v.carried_from is not None]
        assert {v.carried_from for v in remainders} == {store.facts.history(key)[0].version_id}

    def test_write_over_several_versions(self, store: Store, key: Key) -> None:
        for i, start in enumerate((0, 10, 20)):
            store.facts.record(
                key,
                i,
                source="s",
                valid_from=day(start),
                valid_to=day(start + 10),
                known_at=known(i),
            )
        result = store.facts.record(
            key, 9, source="s", valid_from=day(5), valid_to=day(25), known_at=known(5)
        )
        assert len(result.superseded) == 3
        assert current_pieces(store, key) == [
            (0, day(0), day(5)),
            (9, day(5), day(25)),
            (2, day(25), day(30)),
        ]

    def test_retract_interior(self, store: Store, key: Key) -> None:
        store.facts.record(key, 1, source="s", known_at=known(0))
        ended = store.facts.retract(
            key, source="s", valid_from=day(1), valid_to=day(2), known_at=known(1)
        )
        assert len(ended) == 1
        assert current_pieces(store, key) == [(1, None, day(1)), (1, day(2), None)]
        assert store.facts.resolve(key, valid_at=day(1)).status is Status.MISSING
        # What was known before the retraction is still answerable.
        assert store.facts.resolve(key, valid_at=day(1), known_at=known(0)).value == 1

    def test_retract_nothing_changes_nothing(self, store: Store, key: Key) -> None:
        store.facts.record(key, 1, source="s", valid_to=day(0), known_at=known(0))
        before = store.facts.history(key)
        assert store.facts.retract(key, source="s", valid_from=day(5)) == ()
        assert store.facts.history(key) == before

    def test_sources_are_independent(self, store: Store, key: Key) -> None:
        store.facts.record(key, 1, source="a", known_at=known(0))
        store.facts.record(key, 2, source="b", known_at=known(1))
        answer = store.facts.resolve(key)
        assert answer.status is Status.CONFLICT and answer.values == (1, 2)
        store.facts.retract(key, source="b", known_at=known(2))
        assert store.facts.resolve(key).value == 1


class TestNoOp:
    def test_same_value_for_a_covered_period_changes_nothing(self, store: Store, key: Key) -> None:
        first = store.facts.record(
            key, {"mb": 50}, source="s", valid_from=day(0), known_at=known(0)
        )
        again = store.facts.record(key, {"mb": 50}, source="s", valid_from=day(3), valid_to=day(4))
        assert again.created is False and again.version_id == first.version_id
        assert len(store.facts.history(key)) == 1

    def test_same_value_across_adjacent_pieces_changes_nothing(
        self, store: Store, key: Key
    ) -> None:
        store.facts.record(
            key, 1, source="s", valid_from=day(0), valid_to=day(10), known_at=known(0)
        )
        store.facts.record(
            key, 1, source="s", valid_from=day(10), valid_to=day(20), known_at=known(1)
        )
        assert (
            store.facts.record(key, 1, source="s", valid_from=day(5), valid_to=day(15)).created
            is False
        )

    def test_gap_or_other_value_is_a_change(self, store: Store, key: Key) -> None:
        store.facts.record(
            key, 1, source="s", valid_from=day(0), valid_to=day(10), known_at=known(0)
        )
        assert store.facts.record(
            key, 1, source="s", valid_from=day(5), valid_to=day(15), known_at=known(1)
        ).created
        assert store.facts.record(
            key, 2, source="s", valid_from=day(5), valid_to=day(6), known_at=known(2)
        ).created

    def test_no_op_does_not_advance_knowledge(self, store: Store, key: Key) -> None:
        store.facts.record(key, 1, source="s", known_at=known(0))
        store.facts.record(key, 1, source="s", known_at=known(5))
        # known(5) was not recorded, so an earlier explicit time is still allowed.
        assert store.facts.record(key, 2, source="s", known_at=known(3)).created


class TestOneTransaction:
    def test_several_writes_share_the_transaction_time(self, store: Store, key: Key) -> None:
        with store.transaction():
            store.facts.record(key, 1, source="s", valid_from=day(0))
            store.facts.record(key, 2, source="s", valid_from=day(10), valid_to=day(20))
            store.facts.record(key, 3, source="s", valid_from=day(15), valid_to=day(30))
        history = store.facts.history(key)
        # Superseded inside the transaction that made them: never seen, not kept.
        assert all(v.known_period.is_open for v in history)
        assert len({v.known_period.start for v in history}) == 1
        assert current_pieces(store, key) == [
            (1, day(0), day(10)),
            (2, day(10), day(15)),
            (3, day(15), day(30)),
            (1, day(30), None),
        ]

    def test_rolled_back_transaction_leaves_nothing(self, store: Store, key: Key) -> None:
        store.facts.record(key, 1, source="s", known_at=known(0))
        before = store.facts.history(key)
        with pytest.raises(RuntimeError), store.transaction():
            store.facts.record(key, 2, source="s")
            raise RuntimeError("abort")
        assert store.facts.history(key) == before

    def test_later_transaction_supersedes(self, store: Store, key: Key) -> None:
        store.facts.record(key, 1, source="s")
        store.facts.record(key, 2, source="s")
        old, new = store.facts.history(key)
        assert old.known_period.end == new.known_period.start


class TestPastAnswersNeverChange:
    def test_answers_for_past_knowledge_survive_later_writes(self, store: Store, key: Key) -> None:
        def answer_then() -> list[tuple[object, ...]]:
            # Which versions, values and periods; only the end of knowledge may be set later.
            return [
                (v.version_id, v.value, v.valid_period, v.known_period.start)
                for v in store.facts.as_of(key, valid_at=day(0), known_at=known(1))
            ]

        store.facts.record(key, 1, source="s", known_at=known(0))
        before = answer_then()
        store.facts.record(
            key, 2, source="s", valid_from=day(-5), valid_to=day(5), known_at=known(2)
        )
        store.facts.retract(key, source="s", known_at=known(3))
        assert answer_then() == before
        assert store.facts.resolve(key, valid_at=day(0)).status is Status.MISSING


class TestConnections:
    def test_store_on_a_sqlalchemy_session_joins_its_transaction(
        self, database_url: str, key: Key
    ) -> None:
        engine = sqlalchemy.create_engine(
            database_url.replace("postgresql://", "postgresql+psycopg://", 1)
        )
        try:
            with Session(engine) as session:
                Store(session).facts.record(key, 1, source="s")
                session.rollback()
                with pytest.raises(Exception, match="unknown key"):
                    Store(session).facts.history(key)
                session.rollback()
                Store(session).facts.record(key, 2, source="s")
                session.commit()
            with engine.connect() as connection:
                assert Store(connection).facts.resolve(key).value == 2
        finally:
            engine.dispose()

    def test_store_on_a_psycopg_transaction(self, connect, key: Key) -> None:
        conn = connect(autocommit=False)
        Store(conn).facts.record(key, 1, source="s")
        conn.rollback()
        other = Store(connect())
        with pytest.raises(Exception, match="unknown key"):
            other.facts.history(key)
