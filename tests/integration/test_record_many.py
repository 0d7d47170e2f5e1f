"""record_many: a batch has exactly the semantics of record() called row by row in one
transaction, set-based; bad rows are reported by line and nothing is written.

The property test applies random batches (several keys, several rows per key,
periods meeting and nesting on a small grid, no-ops, explicit increasing
knowledge times mixed with defaults, sometimes a knowledge time that goes back)
twice, on twin keys: row by row through ``record`` inside one
``store.transaction()``, and through ``record_many``. Both must leave the same
versions (source, value, valid period, known period; the two transactions'
own times compared as "this transaction's time"), give the same per-row
results, and fail on the same first row with the same SQLSTATE.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from psycopg import sql

from bitemporal import (
    BatchError,
    BitemporalError,
    InvalidInputError,
    Key,
    PermissionDeniedError,
    Recorded,
    RecordRow,
    Store,
    UnknownKeyError,
    cli,
)
from tests.helpers import examples
from tests.strategies import GRID  # bound 0: open start, len(GRID) + 1: open end

#: Explicit knowledge times: hours after this, all in the past.
KNOWN_BASE = datetime(2025, 6, 1, tzinfo=UTC)
SOURCES = ("policy", "forum")
VALUES = (50, 80, "80")


@dataclass(frozen=True)
class Row:
    key: int
    source: str
    value: Any
    lo: int
    hi: int
    known: int | None  # hours after KNOWN_BASE; None: the transaction time

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        return (
            None if self.lo == 0 else GRID[self.lo - 1],
            None if self.hi == len(GRID) + 1 else GRID[self.hi - 1],
        )


@st.composite
def rows(draw: st.DrawFn, keys: int) -> Row:
    lo = draw(st.integers(0, len(GRID)))
    hi = draw(st.integers(lo + 1, len(GRID) + 1))
    return Row(
        draw(st.integers(0, keys - 1)),
        draw(st.sampled_from(SOURCES)),
        draw(st.sampled_from(VALUES)),
        lo,
        hi,
        None,
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Row], list[Row]]:
    """(rows committed before, at explicit times; the batch)."""
    keys = draw(st.integers(1, 3), label="keys")
    before = draw(st.lists(rows(keys), max_size=4), label="before")
    batch = draw(st.lists(rows(keys), min_size=1, max_size=12), label="batch")
    # Explicit knowledge times, increasing, on a prefix of the batch (a later
    # explicit time after a default one would go back: tested below).
    explicit = draw(st.integers(0, len(batch)), label="explicit prefix")
    hours = sorted(draw(st.lists(st.integers(100, 400), min_size=len(batch), max_size=len(batch))))
    chosen = [
        i < explicit and draw(st.booleans(), label=f"explicit {i}") for i in range(len(batch))
    ]
    for i in reversed(range(explicit)):
        # A default row followed by an explicit one of the same key would go back:
        # keep that to the case below, let keys interleave freely otherwise.
        if not chosen[i] and any(
            chosen[j] and batch[j].key == batch[i].key for j in range(i + 1, len(batch))
        ):
            chosen[i] = True
    batch = [
        Row(r.key, r.source, r.value, r.lo, r.hi, hours[i] if chosen[i] else None)
        for i, r in enumerate(batch)
    ]
    if draw(st.integers(0, 9), label="back in time") == 0:
        # A knowledge time earlier than knowledge already recorded: BT002 for that row.
        i = draw(st.integers(0, len(batch) - 1))
        r = batch[i]
        batch[i] = Row(r.key, r.source, r.value, r.lo, r.hi, draw(st.integers(0, 99)))
    before = [Row(r.key, r.source, r.value, r.lo, r.hi, 50 + i) for i, r in enumerate(before)]
    return before, batch


def hours(n: int | None) -> datetime | None:
    return None if n is None else KNOWN_BASE + timedelta(hours=n)


def twin_keys(tag: str, count: int = 3) -> list[Key]:
    prefix = uuid.uuid4().hex
    return [Key(f"many:{prefix}:{tag}:{i}", "limit") for i in range(count)]


def write_row(store: Store, keys: list[Key], r: Row) -> Recorded:
    start, end = r.bounds()
    return store.facts.record(
        keys[r.key],
        r.value,
        source=r.source,
        valid_from=start,
        valid_to=end,
        known_at=hours(r.known),
    )


def batch_rows(keys: list[Key], batch: list[Row]) -> list[dict[str, Any]]:
    return [
        {
            "key": keys[r.key],
            "source": r.source,
            "value": r.value,
            "valid_from": r.bounds()[0],
            "valid_to": r.bounds()[1],
            "known_at": hours(r.known),
        }
        for r in batch
    ]


def history(store: Store, keys: list[Key], tx: datetime) -> list[Counter[tuple[Any, ...]]]:
    """Per key, the multiset of (source, value, valid period, known period), with the
    transaction's own time written as "TX"."""

    def at(t: datetime | None) -> Any:
        return "TX" if t == tx else t

    out = []
    for key in keys:
        versions = versions_of(store, key)
        out.append(
            Counter(
                (
                    v.source,
                    json.dumps(v.value),
                    v.valid_period.start,
                    v.valid_period.end,
                    at(v.known_period.start),
                    at(v.known_period.end),
                )
                for v in versions
            )
        )
    return out


def versions_of(store: Store, key: Key) -> list[Any]:
    try:
        return store.facts.history(key)
    except UnknownKeyError:
        return []


def key_state(conn: psycopg.Connection[Any], keys: list[Key], tx: datetime) -> list[Any]:
    out = []
    for key in keys:
        row = conn.execute(
            "SELECT first_known_at, last_known_at FROM bitemporal.fact_key "
            "WHERE entity = %s AND attribute = %s",
            (key.entity, key.attribute),
        ).fetchone()
        out.append(None if row is None else tuple("TX" if t == tx else t for t in row))
    return out


def summary(results: list[Recorded], tx: datetime) -> list[tuple[bool, Any, int]]:
    return [
        (r.created, "TX" if r.known_at == tx else r.known_at, len(r.superseded)) for r in results
    ]


@settings(
    deadline=None,
    max_examples=examples(150, 40),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(scenario=scenarios())
def test_record_many_equals_record_row_by_row(
    store: Store, raw: psycopg.Connection[Any], scenario: tuple[list[Row], list[Row]]
) -> None:
    before, batch = scenario
    one, many = twin_keys("one"), twin_keys("many")
    for keys in (one, many):
        for r in before:
            write_row(store, keys, r)

    # Row by row, in one transaction.
    expected: list[Recorded] | BitemporalError
    written: list[Recorded] = []
    try:
        with store.transaction():
            tx_one = store.now()
            for r in batch:
                written.append(write_row(store, one, r))
        expected = written
    except BitemporalError as exc:
        expected = exc
    # The batch, in another.
    got: list[Recorded] | BatchError
    try:
        with store.transaction():
            tx_many = store.now()
            got = store.facts.record_many(batch_rows(many, batch))
    except BatchError as exc:
        got = exc

    if isinstance(expected, BitemporalError):
        event(f"batch refused: {expected.sqlstate}")
        assert isinstance(got, BatchError), f"record raised {expected!r}; record_many did not"
        # The row record() failed on is the first line record_many reports, for the same reason.
        first_line, first_state, _ = min(got.errors)
        assert (first_line, first_state) == (len(written) + 1, expected.sqlstate)
        with store.transaction():
            probe = store.now()
        assert history(store, many, probe) == history(store, one, probe), "nothing written"
        return
    assert not isinstance(got, BatchError), f"record_many raised {got!r}; record did not"
    event(f"rows: {len(batch)}, created: {sum(r.created for r in got)}")
    if any(r.known is not None for r in batch):
        event("explicit knowledge times")
    assert summary(got, tx_many) == summary(expected, tx_one)
    assert history(store, many, tx_many) == history(store, one, tx_one)
    assert key_state(raw, many, tx_many) == key_state(raw, one, tx_one)
    # A no-op names the version holding the value, as record() does.
    by_id = {v.version_id: v for key in many for v in versions_of(store, key)}
    for r, result in zip(batch, got, strict=True):
        if not result.created and result.version_id in by_id:
            assert by_id[result.version_id].value == r.value


def test_results_and_supersession(store: Store, key: Key) -> None:
    store.facts.record(
        key,
        50,
        source="policy",
        valid_from=date(2026, 1, 1),
        known_at=datetime(2025, 12, 15, tzinfo=UTC),
    )
    results = store.facts.record_many(
        [
            RecordRow(key, 80, "policy", valid_from=date(2026, 9, 1)),
            {
                "entity": key.entity,
                "attribute": key.attribute,
                "source": "policy",
                "value": 80,
                "valid_from": date(2026, 10, 1),
                "valid_to": date(2026, 11, 1),
            },  # a no-op now
            {
                "key": key,
                "source": "forum",
                "value": 90,
                "valid_from": date(2026, 9, 1),
                "valid_to": date(2026, 10, 1),
                "recorded_by": "importer",
            },
        ]
    )
    assert [r.created for r in results] == [True, False, True]
    first, noop, forum = results
    assert len(first.superseded) == 1 and first.known_at is not None
    assert noop.version_id == first.version_id and noop.known_at is None
    assert forum.superseded == () and forum.known_at == first.known_at
    answer = store.facts.resolve(key, valid_at=date(2026, 9, 15))
    assert answer.values == (80, 90)
    assert {v.recorded_by for v in answer.versions} == {None, "importer"}
    assert store.facts.record_many([]) == []


def test_bad_rows_are_reported_by_line_and_nothing_is_written(
    store: Store, raw: psycopg.Connection[Any]
) -> None:
    keys = twin_keys("bad", 2)
    good = {"key": keys[0], "source": "s", "value": 1}
    batch = [
        good,
        {"key": keys[1], "source": "", "value": 1},  # 2: BT005
        {
            "key": keys[1],
            "source": "s",
            "value": 1,
            "valid_from": date(2026, 2, 1),
            "valid_to": date(2026, 1, 1),
        },  # 3: inverted
        good,
        {"key": keys[1], "source": "s", "value": None},  # 5: null value
        {"key": keys[1], "source": "s", "value": 1, "valid_from": datetime(2026, 1, 1)},  # 6: naive
        {"entity": keys[1].entity, "source": "s", "value": 1},  # 7: no attribute
        {"key": keys[1], "source": "s", "value": float("nan")},  # 8: not JSON
    ]
    with pytest.raises(BatchError) as caught:
        store.facts.record_many(batch)
    err = caught.value
    assert isinstance(err, InvalidInputError) and isinstance(err, ValueError)
    assert [line for line, _ in err.rows] == [2, 3, 5, 6, 7, 8] and err.total == 6
    reasons = dict(err.rows)
    assert "source" in reasons[2] and "inverted" in reasons[3] and "None" in reasons[5]
    assert "time zone" in reasons[6] and "attribute" in reasons[7] and "JSON" in reasons[8]
    assert {line: state for line, state, _ in err.errors}[2] == "BT005"
    assert "line 2" in str(err)

    # Problems only the database sees: reported the same way, by line, all of them.
    far = datetime(2100, 1, 1, tzinfo=UTC)
    batch = [
        good,
        {**good, "known_at": far},
        good,
        {**good, "valid_from": datetime(1, 1, 1, tzinfo=UTC)},
        {**good, "valid_from": datetime(9999, 12, 30, 12, tzinfo=UTC)},
    ]
    with pytest.raises(BatchError) as caught:
        store.facts.record_many(batch)
    assert [(line, state) for line, state, _ in caught.value.errors] == [
        (2, "BT003"),
        (4, "BT001"),
        (5, "BT001"),
    ]
    assert "later than the present" in caught.value.rows[0][1]
    assert "outside the supported range" in caught.value.rows[2][1]
    for key in keys:  # not even the keys were created
        row = raw.execute(
            "SELECT count(*) FROM bitemporal.fact_key WHERE entity = %s", (key.entity,)
        )
        assert row.fetchone() == (0,)

    # A knowledge time going back, found while applying: the later rows of that key
    # are skipped, the other keys still checked; nothing written.
    t1, t2 = datetime(2025, 7, 1, tzinfo=UTC), datetime(2025, 8, 1, tzinfo=UTC)
    batch = [
        {**good, "known_at": t2},
        {**good, "key": keys[1], "known_at": t2},
        {**good, "value": 2, "known_at": t1},  # 3: BT002
        {**good, "value": 3},  # skipped
        {**good, "key": keys[1], "value": 2, "known_at": t1},  # 5: BT002
    ]
    with pytest.raises(BatchError) as caught:
        store.facts.record_many(batch)
    assert [(line, state) for line, state, _ in caught.value.errors] == [(3, "BT002"), (5, "BT002")]
    assert "not later than knowledge already recorded" in caught.value.rows[0][1]
    for key in keys:
        with pytest.raises(UnknownKeyError):
            store.facts.history(key)

    # At most max_errors rows listed; total counts them all.
    with pytest.raises(BatchError) as caught:
        store.facts.record_many([{**good, "source": ""}] * 7, max_errors=3)
    assert [line for line, _ in caught.value.rows] == [1, 2, 3] and caught.value.total == 7
    with pytest.raises(BatchError) as caught:
        store.facts.record_many([good, {**good, "known_at": far}] * 4, max_errors=2)
    assert [line for line, _ in caught.value.rows] == [2, 4] and caught.value.total == 4


def test_sql_interface(raw: psycopg.Connection[Any], key: Key) -> None:
    """psql users call bitemporal.record_many with an array of bitemporal.batch_row."""
    rows = raw.execute(
        """SELECT line, created, known_at IS NOT NULL FROM bitemporal.record_many(ARRAY[
               ROW(%(e)s, 'a', 's', '50', '2026-01-01', NULL, NULL, NULL),
               ROW(%(e)s, 'a', 's', '50', '2026-02-01', '2026-03-01', NULL, NULL)
           ]::bitemporal.batch_row[]) ORDER BY line""",
        {"e": key.entity},
    ).fetchall()
    assert rows == [(1, True, True), (2, False, False)]
    with pytest.raises(psycopg.Error) as caught:
        raw.execute(
            "SELECT * FROM bitemporal.record_many(ARRAY[ROW('e', 'a', 's', 'null', NULL, NULL, "
            "NULL, NULL)]::bitemporal.batch_row[])"
        )
    assert caught.value.sqlstate == "BT301"
    detail = json.loads(caught.value.diag.message_detail or "")
    assert detail == {"total": 1, "rows": [[1, "BT007", "value must not be null"]]}


def test_inside_the_callers_transaction(
    connect: Callable[..., psycopg.Connection[Any]], key: Key
) -> None:
    conn = connect(autocommit=False)
    store = Store(conn)
    store.facts.record(key, 1, source="s")
    with pytest.raises(BatchError):
        store.facts.record_many(
            [{"key": key, "source": "s", "value": 2}, {"key": key, "source": "", "value": 3}]
        )
    # The failed batch left the caller's transaction usable and unchanged.
    results = store.facts.record_many(
        [{"key": key, "source": "s", "value": 2}, {"key": key, "source": "t", "value": 3}]
    )
    assert [r.created for r in results] == [True, True]
    conn.commit()
    assert Store(connect()).facts.resolve(key).values == (2, 3)
    # Same transaction as the record() before it: its version was superseded unseen.
    assert len(Store(connect()).facts.history(key)) == 2


def test_a_large_batch(store: Store, raw: psycopg.Connection[Any]) -> None:
    """20,000 rows: 8,000 new keys, each with a history of 2 or 3 rows, one round per row."""
    prefix = uuid.uuid4().hex
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    batch = [
        {
            "entity": f"big:{prefix}:{k}",
            "attribute": "a",
            "source": "s",
            "value": n,
            "valid_from": GRID[n],
            "known_at": t0 + timedelta(days=n),
        }
        for n in range(3)
        for k in range(8000)
        if n < 2 or k < 4000
    ]
    assert len(batch) == 20_000
    started = time.monotonic()
    results = store.facts.record_many(batch)
    elapsed = time.monotonic() - started
    assert all(r.created for r in results)
    assert [len(r.superseded) for r in results[:2]] == [0, 0]
    assert all(len(r.superseded) == 1 for r in results[8000:])
    row = raw.execute(
        "SELECT count(*), count(*) FILTER (WHERE upper_inf(known_period)) "
        "FROM bitemporal.fact_version WHERE entity LIKE %s",
        (f"big:{prefix}:%",),
    ).fetchone()
    # Per key: n rows leave 2n-1 versions, n of them current.
    assert row == (4000 * 5 + 4000 * 3, 4000 * 3 + 4000 * 2)
    answer = store.facts.resolve(
        Key(f"big:{prefix}:7", "a"), valid_at=GRID[2], known_at=t0 + timedelta(days=1)
    )
    assert answer.value == 1
    assert elapsed < 60


def in_thread(
    conn: psycopg.Connection[Any], action: Callable[[], Any], done: list[Any]
) -> threading.Thread:
    """Runs ``action`` and commits ``conn`` in a thread; appends the result or the error to
    ``done``."""

    def run() -> None:
        try:
            done.append(action())
            conn.commit()
        except BaseException as exc:  # noqa: BLE001 - checked by the caller
            done.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch first", "record first"])
def test_concurrent_record_on_a_key_of_the_batch(
    connect: Callable[..., psycopg.Connection[Any]], batch_first: bool
) -> None:
    """A batch and a single record() of one of its keys serialise, in either order: no
    deadlock, and the result is that of the serial order."""
    keys = twin_keys("race", 5)
    batcher, single = Store(connect(autocommit=False)), Store(connect(autocommit=False))
    batch = [
        {"key": k, "source": "s", "value": i, "valid_from": GRID[0]} for i, k in enumerate(keys)
    ]
    done: list[Any] = []
    if batch_first:
        batcher.facts.record_many(batch)  # holds every key of the batch
        thread = in_thread(
            single.connection,
            lambda: single.facts.record(keys[2], 99, source="s", valid_from=GRID[1]),
            done,
        )
        time.sleep(0.3)
        assert thread.is_alive(), "the single record waits for the batch"
        batcher.connection.commit()
    else:
        single.facts.record(keys[2], 99, source="s", valid_from=GRID[1])
        thread = in_thread(batcher.connection, lambda: batcher.facts.record_many(batch), done)
        time.sleep(0.3)
        assert thread.is_alive(), "the batch waits for the single record"
        single.connection.commit()
    thread.join(timeout=30)
    assert not thread.is_alive() and not any(isinstance(d, BaseException) for d in done), done
    history = Store(connect()).facts.history(keys[2])
    if batch_first:  # the batch's 2 from January, then 99 from February: split in two
        assert sorted((v.value, v.known_period.end is None) for v in history) == [
            (2, False),
            (2, True),
            (99, True),
        ]
    else:  # 99 from February, then the batch's 2 from January replaces it all
        assert sorted((v.value, v.known_period.end is None) for v in history) == [
            (2, True),
            (99, False),
        ]
    assert len({v.known_period.start for v in history}) == 2, (
        "the second writer's knowledge time is later"
    )
    for key in keys:
        assert Store(connect()).facts.resolve(key, valid_at=GRID[0]).value == keys.index(key)


def test_concurrent_batches_with_shared_keys_do_not_deadlock(
    connect: Callable[..., psycopg.Connection[Any]],
) -> None:
    keys = twin_keys("batches", 30)
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(i: int) -> None:
        try:
            store = Store(connect())
            order = keys[i:] + keys[:i] if i % 2 else list(reversed(keys))
            barrier.wait()
            for n in range(3):
                store.facts.record_many(
                    [{"key": k, "source": "s", "value": i * 10 + n} for k in order]
                )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    store = Store(connect())
    for k in keys:
        assert len([v for v in store.facts.history(k) if v.known_period.end is None]) == 1


# -- roles ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def writer_login(database_url: str) -> Iterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:8]
    names = {"writer": f"bt_bulk_writer_{suffix}", "reader": f"bt_bulk_reader_{suffix}"}
    with psycopg.connect(database_url, autocommit=True) as admin:
        for kind, name in names.items():
            admin.execute(
                sql.SQL("CREATE ROLE {} LOGIN IN ROLE {}").format(
                    sql.Identifier(name), sql.Identifier(f"bitemporal_{kind}")
                )
            )
    yield names
    with psycopg.connect(database_url, autocommit=True) as admin:
        for name in names.values():
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_a_writer_only_role_can_record_many(
    database_url: str, writer_login: dict[str, str], store: Store, key: Key
) -> None:
    with psycopg.connect(database_url, user=writer_login["writer"], autocommit=True) as conn:
        writer = Store(conn)
        results = writer.facts.record_many(
            [
                {"key": key, "source": "s", "value": 1},
                {"key": key, "source": "s", "value": 2, "valid_from": GRID[0]},
            ]
        )
        assert [r.created for r in results] == [True, True]
        with pytest.raises(BatchError):
            writer.facts.record_many([{"key": key, "source": "", "value": 1}])
        # Still no direct writes.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(
                "INSERT INTO bitemporal.fact_key VALUES ('x', "
                "'y', now(), now(), pg_current_xact_id())"
            )
    assert [v.value for v in store.facts.as_of(key, valid_at=GRID[1])] == [2]
    with (
        psycopg.connect(database_url, user=writer_login["reader"], autocommit=True) as conn,
        pytest.raises(PermissionDeniedError),
    ):
        Store(conn).facts.record_many([{"key": key, "source": "s", "value": 3}])


# -- bitemporal import ----------------------------------------------------------------------


def test_import_csv_and_jsonl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], database_url: str, store: Store
) -> None:
    prefix = uuid.uuid4().hex
    csv_file = tmp_path / "facts.csv"
    csv_file.write_text(
        "entity,attribute,source,value,valid_from,valid_to,known_at,recorded_by\n"
        f"{prefix}:mailer,limit,policy,50,2026-01-01,,2025-12-15T12:00:00+00:00,import\n"
        f"{prefix}:mailer,limit,policy,80,2026-09-01,,2026-09-03T09:00:00+00:00,\n"
        f'{prefix}:mailer,note,policy,"[1,\n2]",,,,\n'
        f"{prefix}:mailer,limit,forum,90,2026-09-01,2026-10-01,,\n",
        encoding="utf-8",
    )
    code = cli.main(["--url", database_url, "import", str(csv_file), "--batch-size", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "4 rows" in out and "4 created" in out and "2 batches" in out
    assert "rows" in err  # the progress bar
    limit = Key(f"{prefix}:mailer", "limit")
    assert store.facts.resolve(limit, valid_at=date(2026, 9, 15)).values == (80, 90)
    assert store.facts.resolve(Key(f"{prefix}:mailer", "note")).value == [1, 2]
    first = min(store.facts.history(limit), key=lambda v: v.version_id)
    assert first.recorded_by == "import" and first.known_period.start == datetime(
        2025, 12, 15, 12, tzinfo=UTC
    )

    jsonl = tmp_path / "facts.jsonl"
    lines = [
        {
            "entity": f"{prefix}:mailer",
            "attribute": "limit",
            "source": "policy",
            "value": 100,
            "valid_from": "2026-10-01",
        },
        {
            "entity": f"{prefix}:mailer",
            "attribute": "limit",
            "source": "policy",
            "value": 100,
            "valid_from": "2026-11-01",
            "valid_to": "2026-12-01",
        },
        {
            "entity": f"{prefix}:mailer",
            "attribute": "tags",
            "source": "policy",
            "value": {"a": [1, 2]},
        },
    ]
    jsonl.write_text("\n".join(map(json.dumps, lines)) + "\n\n", encoding="utf-8")
    code = cli.main(["--url", database_url, "import", str(jsonl)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "3 rows" in out and "2 created" in out and "1 unchanged" in out
    assert store.facts.resolve(limit, valid_at=date(2026, 10, 15)).value == 100
    assert store.facts.resolve(Key(f"{prefix}:mailer", "tags")).value == {"a": [1, 2]}


def test_import_reports_bad_rows_by_file_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], database_url: str, store: Store
) -> None:
    prefix = uuid.uuid4().hex
    good = {"entity": f"{prefix}:e", "attribute": "a", "source": "s", "value": 1}
    path = tmp_path / "bad.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(good),  # 1 (batch 1)
                json.dumps({**good, "value": 2}),  # 2 (batch 1)
                json.dumps({**good, "value": 3}),  # 3 (batch 2)
                "",  # 4 blank
                "{not json",  # 5
                json.dumps(
                    {**good, "known_at": "2100-01-01T00:00:00+00:00"}
                ),  # 6: BT003 (database)
                json.dumps({**good, "valid_from": "yesterday"}),  # 7
            ]
        )
        + "\n",
        encoding="utf-8",
    )

    code = cli.main(["--url", database_url, "import", str(path), "--batch-size", "2", "--quiet"])
    err = capsys.readouterr().err
    # Batches: lines 1-2 (imported), 3-5 (line 5 is bad: nothing of it written), 6-7 (not reached).
    assert code == 1 and "line 5: not JSON" in err and "line 7" not in err
    assert "lines 3-5" in err and f"lines 1-2 of {path} were committed (2 rows)" in err
    assert [v.value for v in store.facts.history(Key(f"{prefix}:e", "a"))] == [2]

    # Problems seen before the database are reported first; once fixed, the database's.
    future = {**good, "known_at": "2100-01-01T00:00:00+00:00"}
    path.write_text(
        "\n".join(map(json.dumps, [good, future, {**good, "source": ""}])) + "\n", encoding="utf-8"
    )
    code = cli.main(["--url", database_url, "import", str(path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "line 3: source" in err and "line 2" not in err
    path.write_text("\n".join(map(json.dumps, [good, future])) + "\n", encoding="utf-8")
    code = cli.main(["--url", database_url, "import", str(path), "--quiet"])
    err = capsys.readouterr().err
    assert (
        code == 1 and "line 2: knowledge time 2100-01-01" in err and "later than the present" in err
    )

    csv_file = tmp_path / "bad.csv"
    csv_file.write_text(
        "entity,attribute,source,value\n"
        f"{prefix}:c,a,s,1\n{prefix}:c,a,s,not json\n{prefix}:c,a,s\n",
        encoding="utf-8",
    )
    code = cli.main(["--url", database_url, "import", str(csv_file), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "line 3:" in err and "not JSON" in err and "line 4:" in err
    with pytest.raises(UnknownKeyError):
        store.facts.history(Key(f"{prefix}:c", "a"))

    csv_file.write_text("entity,attribute,what\n", encoding="utf-8")
    code = cli.main(["--url", database_url, "import", str(csv_file)])
    assert code == 1 and "unknown column(s) what" in capsys.readouterr().err
    # An empty file, and a spreadsheet's export separated by semicolons, say so.
    for text, said in (
        ("", "the file is empty: a CSV file starts with a header naming its columns"),
        ("entity;attribute;source;value\n", "separated by commas, not ';'"),
    ):
        csv_file.write_text(text, encoding="utf-8")
        code = cli.main(["--url", database_url, "import", str(csv_file)])
        assert code == 1 and said in capsys.readouterr().err


def test_rows_are_checked_like_record(store: Store, key: Key) -> None:
    """What record() refuses before the database, record_many refuses per row."""
    with pytest.raises(BatchError) as caught:
        store.facts.record_many(
            [
                {"key": key, "source": "s", "value": 1, "colour": "red"},
                ("not", "a", "row"),  # type: ignore[list-item]
                {"key": "k", "source": "s", "value": 1},
                {"key": key, "source": "s", "value": "a\x00b"},
                {"key": key, "source": "s", "value": 1, "recorded_by": "a\x00"},
            ]
        )
    reasons = [reason for _, reason in caught.value.rows]
    assert "unknown field" in reasons[0] and "mapping" in reasons[1] and "Key" in reasons[2]
    assert "\\u0000" in reasons[3] and "NUL" in reasons[4]
    with pytest.raises(InvalidInputError):
        store.facts.record_many([], max_errors=0)
