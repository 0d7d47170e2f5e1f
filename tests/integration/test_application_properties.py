"""Property tests: an application table against the fact store's reference model.

The table ``claim(item, source, value jsonb)``, keyed by ``(item, source)``,
holds what the fact store holds for one entity/attribute: a source's value over
a valid period. The same random writes as tests/integration/test_properties.py
(valid bounds from a small grid, values from a small set, one to three sources)
go through the table's generated functions and to
:class:`tests.reference_model.FactModel`; then the versions eligible at many
``(valid_at, known_at)`` questions, most of them on an edge, and the whole
history must be the model's.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from psycopg import sql

from bitemporal import BitemporalError, Store, TableVersion, UnknownKeyError
from tests.helpers import examples
from tests.reference_model import FactModel, Period
from tests.reference_model import Version as ModelVersion
from tests.strategies import (
    KNOWN_BASE,
    SOURCES,
    US,
    VALID_QUESTIONS,
    Op,
    knowledge_times,
    scenarios,
)


@pytest.fixture(scope="module")
def claim_table(database_url: str) -> Iterator[str]:
    name = f"claim_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE TABLE {} (item text, source text, value jsonb NOT NULL)").format(
                sql.Identifier(name)
            )
        )
        conn.execute(
            "SELECT bitemporal.enable_table(%s::regclass, ARRAY['item', 'source'])", (name,)
        )
        yield name
        conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (name,))


def fingerprint(v: TableVersion) -> tuple[Any, ...]:
    return ModelVersion(
        v.row["source"],
        v.row["value"],
        Period(v.valid_period.start, v.valid_period.end),
        Period(v.known_period.start, v.known_period.end),
    ).fingerprint()


def apply(
    store: Store, table: str, model: FactModel, item: str, op: Op, known_at: datetime
) -> None:
    key = {"item": item, "source": op.source}
    if op.kind == "record":
        recorded = store.app_tables.record(
            table,
            {**key, "value": op.value},
            valid_from=op.valid.start,
            valid_to=op.valid.end,
            known_at=known_at,
        )
        created = model.record(op.source, op.value, op.valid, known_at)
        assert recorded.created == created, op
        assert recorded.known_at == (known_at if created else None), op
        event(f"record {'created' if created else 'no-op'}")
        return
    try:
        ended = store.app_tables.retract(
            table, key, valid_from=op.valid.start, valid_to=op.valid.end, known_at=known_at
        )
    except UnknownKeyError:
        # The table's key includes the source: one never recorded is unknown, and the
        # model has nothing of that source to retract either.
        assert model.retract(op.source, op.valid, known_at) == 0
        event("retract of a key never recorded")
        return
    assert len(ended) == model.retract(op.source, op.valid, known_at), op


@settings(
    deadline=None,
    max_examples=examples(30, 10),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_application_table_agrees_with_the_model(
    claim_table: str, raw: psycopg.Connection[Any], data: st.DataObject
) -> None:
    store = Store(raw)
    item = uuid.uuid4().hex
    model = FactModel()
    writes = data.draw(scenarios(), label="writes")
    times = data.draw(knowledge_times(len(writes)), label="knowledge times")
    for op, t in zip(writes, times, strict=True):
        apply(store, claim_table, model, item, op, t)

    known_questions = sorted({KNOWN_BASE - timedelta(days=1), *times, *(t - US for t in times)})
    for valid_at in (*VALID_QUESTIONS, *times):
        for known_at in known_questions:
            got = Counter(
                fingerprint(v)
                for source in SOURCES
                for v in store.app_tables.as_of(
                    claim_table,
                    {"item": item, "source": source},
                    valid_at=valid_at,
                    known_at=known_at,
                )
            )
            want = Counter(v.fingerprint() for v in model.as_of(valid_at, known_at))
            assert got == want, f"{writes} at {times}: valid_at={valid_at}, known_at={known_at}"

    versions = [
        v
        for source in {op.source for op in writes if op.kind == "record"}
        for v in store.app_tables.history(claim_table, {"item": item, "source": source})
    ]
    assert Counter(fingerprint(v) for v in versions) == Counter(
        v.fingerprint() for v in model.history()
    )
    # The knowledge-window changes, in the whole history and in windows ending and
    # starting at each knowledge time, against the rule stated over those versions.
    windows = [(None, None), *((None, t) for t in times), *((t, None) for t in times)]
    ids = {v.version_id for v in versions}
    for known_from, known_to in windows:
        changes = [
            (c.change.value, c.changed_at, c.version_id, c.by_version_ids)
            for c in store.app_tables.changes(claim_table, known_from, known_to)
            if c.version_id in ids
        ]
        assert changes == expected_changes(versions, known_from, known_to), (known_from, known_to)


def expected_changes(
    versions: list[TableVersion], known_from: datetime | None, known_to: datetime | None
) -> list[tuple[str, datetime, int, tuple[int, ...]]]:
    """What bitemporal.table_changes answers, by its rule: a version not re-recorded from
    another is learned when its knowledge starts; a closed version is superseded by the
    versions of its key learned when it was closed whose valid periods overlap it, else
    retracted."""

    def within(t: datetime) -> bool:
        return (known_from is None or t >= known_from) and (known_to is None or t < known_to)

    def key(v: TableVersion) -> tuple[Any, ...]:
        return (v.row["item"], v.row["source"])

    def overlap(a: TableVersion, b: TableVersion) -> bool:
        return Period(a.valid_period.start, a.valid_period.end).overlaps(
            Period(b.valid_period.start, b.valid_period.end)
        )

    out: list[tuple[str, datetime, int, tuple[int, ...]]] = []
    for v in versions:
        start = v.known_period.start
        assert start is not None  # knowledge always starts
        if v.carried_from is None and within(start):
            out.append(("learned", start, v.version_id, ()))
        end = v.known_period.end
        if end is not None and within(end):
            by = tuple(
                sorted(
                    w.version_id
                    for w in versions
                    if key(w) == key(v)
                    and w.carried_from is None
                    and w.known_period.start == end
                    and overlap(w, v)
                )
            )
            out.append(("superseded" if by else "retracted", end, v.version_id, by))
    return sorted(out, key=lambda c: (c[1], c[2], c[0]))


@pytest.fixture(scope="module")
def fuzz_table(database_url: str) -> Iterator[str]:
    name = f"fuzz_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (k text, n integer, amount "
                "numeric(6, 2) NOT NULL, label varchar(8),"
                " CHECK (amount >= 0))"
            ).format(sql.Identifier(name))
        )
        conn.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['k', 'n'])", (name,))
        yield name
        conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (name,))


column_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.text(max_size=12),
    st.sampled_from(["", "'", "\x00", "%s", "$1", ";--", "9" * 20]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
instants = st.one_of(
    st.none(),
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=-12)), None]),
    ),
)


@settings(
    deadline=None, max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    row=st.dictionaries(
        st.sampled_from(["k", "n", "amount", "label", "other"]), column_values, max_size=5
    ),
    valid_from=instants,
    valid_to=instants,
    known_at=instants,
    retract=st.booleans(),
)
def test_bad_rows_get_documented_errors_and_write_nothing(
    fuzz_table: str,
    raw: psycopg.Connection[Any],
    row: dict[str, Any],
    valid_from: Any,
    valid_to: Any,
    known_at: Any,
    retract: bool,
) -> None:
    store = Store(raw)
    count = sql.SQL(
        "SELECT count(*), count(*) FILTER (WHERE upper_inf(known_period)) FROM {}"
    ).format(sql.Identifier(fuzz_table))
    before = store.connection.execute(count).fetchone()
    try:
        if retract:
            store.app_tables.retract(
                fuzz_table, row, valid_from=valid_from, valid_to=valid_to, known_at=known_at
            )
        else:
            store.app_tables.record(
                fuzz_table, row, valid_from=valid_from, valid_to=valid_to, known_at=known_at
            )
    except BitemporalError:
        assert store.connection.execute(count).fetchone() == before
        return
    event("written")
