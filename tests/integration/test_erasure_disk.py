"""Erased values leave the disk: the files of the database, read page by page.

Each test records a distinctive value, shows that the database's files hold its bytes
(so the check can fail), erases it, runs the maintenance docs/erasure.md documents, and
finds the bytes in no file of the database: no table, TOAST table or index (GIN and GiST
included) of bitemporal, of the partitions of the partitioned layout, of the application
table, nor any catalog (``pg_statistic`` holds sampled values). It needs a superuser,
which reads the files (``pg_read_binary_file``, tests/disk.py). Run with ``-s`` to see
the before and after lines.

Two measurements justify the documented maintenance: plain ``VACUUM`` leaves a pruned
tuple's bytes in the page's free space, and a GIN index keeps the keys of entries whose
rows are gone; ``VACUUM FULL`` writes new files.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bitemporal import Key, Status, Store
from tests.disk import found_in, shown

pytestmark = pytest.mark.not_on_citus(
    "reads the coordinator's relation files, and on Citus the versions are in the workers' "
    "(the documented maintenance is per node there; not measured)"
)

#: The tables every erasure of the fact store touches.
FACT_STORE = ("bitemporal.fact_version", "bitemporal.evidence", "bitemporal.fact_request")

#: The documented maintenance after an erasure (docs/erasure.md, "Gone from the disk"), for
#: the tables {tables} (a list of names) and {names} (the same as text literals).
MAINTENANCE = (
    "VACUUM FULL {tables}",
    # ANALYZE keeps the old statistics of a table it finds empty: forget them first (the
    # tables', their partitions' and their indexes').
    (
        "WITH t AS (SELECT unnest(ARRAY[{names}]::regclass[])::oid AS oid),"
        " r AS (SELECT oid FROM t UNION"
        " SELECT inhrelid FROM pg_inherits WHERE inhparent IN (SELECT oid FROM t)),"
        " x AS (SELECT oid FROM r UNION"
        " SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM r))"
        " DELETE FROM pg_catalog.pg_statistic WHERE starelid IN (SELECT oid FROM x)"
    ),
    "ANALYZE {tables}",
    "VACUUM FULL pg_catalog.pg_statistic",
    "CHECKPOINT",
)


@pytest.fixture
def admin(migrated_database_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A superuser connection to a database of this test alone (so the scan reads only
    what this test wrote)."""
    with psycopg.connect(migrated_database_url, autocommit=True) as conn:
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        if not (row and row[0]):
            pytest.skip("reading the server's files needs a superuser")
        yield conn


#: Sessions, prepared transactions and replication slots whose snapshot is older than the
#: transaction id given: VACUUM FULL keeps the rows they may still see (docs/erasure.md).
OLDER_SNAPSHOTS = """
SELECT 'session ' || pid || ' (' || coalesce(datname, '-') || ')' FROM pg_stat_activity
 WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL
   AND age(backend_xmin) >= age(%(xid)s::xid)
UNION ALL
SELECT 'prepared ' || gid FROM pg_prepared_xacts WHERE age(transaction) >= age(%(xid)s::xid)
UNION ALL
SELECT 'slot ' || slot_name FROM pg_replication_slots
 WHERE age(coalesce(xmin, catalog_xmin)) >= age(%(xid)s::xid)
"""


def older_snapshots(conn: psycopg.Connection[Any], xid: str) -> list[str]:
    return [r[0] for r in conn.execute(OLDER_SNAPSHOTS, {"xid": xid})]


def wait_for_older_snapshots(conn: psycopg.Connection[Any]) -> list[str]:
    """Wait (up to a minute: the server may be shared) until no snapshot older than now is
    left; returns those still left then."""
    # The 32-bit xid of a transaction from now, as pg_stat_activity shows them.
    row = conn.execute("SELECT (pg_current_xact_id()::text::bigint % 4294967296)::text").fetchone()
    assert row is not None
    deadline = time.monotonic() + 60
    while (older := older_snapshots(conn, row[0])) and time.monotonic() < deadline:
        time.sleep(0.2)
    return older


def maintain(conn: psycopg.Connection[Any], *tables: str) -> list[str]:
    """The documented maintenance, each rewrite started once no snapshot older than what it
    must drop is left (the erasure's rows, the forgotten statistics: an autovacuum ANALYZE
    that started before keeps them, measured on PostgreSQL 15); returns the snapshots still
    left at a rewrite."""
    every = (*FACT_STORE, *tables)
    tables_sql = sql.SQL(", ").join(sql.Identifier(*t.split(".")) for t in every)
    names_sql = sql.SQL(", ").join(sql.Literal(t) for t in every)
    older: list[str] = []
    for statement in MAINTENANCE:
        if statement.startswith("VACUUM FULL"):
            older += wait_for_older_snapshots(conn)
        conn.execute(sql.SQL(statement).format(tables=tables_sql, names=names_sql))
    return older


def maintained(
    conn: psycopg.Connection[Any], needle: str, *tables: str
) -> tuple[dict[str, int], list[str]]:
    """:func:`maintain`, repeated once if the check still finds ``needle``, as
    docs/erasure.md says to (a CI run on PostgreSQL 15, 2026-12-03, found it once in
    pg_statistic after one pass, with no older snapshot left at any rewrite); returns what
    the check finds then and the older snapshots met."""
    older = maintain(conn, *tables)
    if after := found_in(conn, needle):
        print(f"found after one pass of the maintenance: {shown(after)}; repeated")
        older += maintain(conn, *tables)
        after = found_in(conn, needle)
    return after, older


def test_the_fact_stores_erased_values_leave_its_files(admin: psycopg.Connection[Any]) -> None:
    # Lower case, one word: the full-text index keeps it as it is (a lexeme).
    needle = f"erasemezq{uuid.uuid4().hex[:6]}"
    store = Store(admin)
    entity = f"person:{uuid.uuid4().hex[:8]}"
    email, notes = Key(entity, "email"), Key(entity, "notes")
    first = store.facts.record(
        email,
        f"{needle}@example.com",
        source="crm",
        valid_from=datetime(2026, 1, 1, tzinfo=UTC),
        idempotency_key=f"request-{uuid.uuid4().hex}",
    )
    store.facts.record(
        email, f"{needle}@example.org", source="crm", valid_from=datetime(2026, 6, 1, tzinfo=UTC)
    )
    store.evidence.add(first.version_id, f"The customer wrote from {needle}@example.com today.")
    # Long enough to be compressed and stored in the TOAST table; the needle comes first,
    # so the compressed bytes still hold it literally (what the scan can see).
    long_text = needle + " " + " ".join(uuid.uuid4().hex for _ in range(300))
    store.facts.record(notes, long_text, source="crm")
    store.facts.record(
        Key(f"person:{uuid.uuid4().hex[:8]}", "email"), "kept@example.com", source="crm"
    )
    admin.execute("ANALYZE")

    before = found_in(admin, needle)
    print(f"\nfact store, before erasure: {shown(before)}")
    assert any(r.startswith("bitemporal.fact_version") for r in before)
    assert {"bitemporal.evidence", "bitemporal.evidence_search_idx"} <= before.keys()
    assert {"bitemporal.fact_request", "pg_statistic"} <= before.keys()
    assert any(r.startswith("pg_toast.") for r in before)

    erasure = store.facts.erase_entity(entity, reason="request #1234 (right to erasure)")
    assert erasure is not None and len(erasure.version_ids) == 4
    print(f"fact store, erased, no maintenance yet: {shown(found_in(admin, needle))}")

    after, older = maintained(admin, needle)
    print(f"fact store, after the documented maintenance: {shown(after)}")
    assert after == {}, f"older snapshots at the maintenance: {older}"
    assert store.facts.resolve(email).status is Status.ERASED
    assert store.facts.resolve(Key(entity, "notes")).status is Status.ERASED


def test_an_application_tables_erased_values_leave_its_files(
    admin: psycopg.Connection[Any],
) -> None:
    needle = f"ERASE-ME-{uuid.uuid4().hex[:6]}"
    admin.execute(
        "CREATE TABLE public.customer (id int NOT NULL, email text, notes text, tags jsonb)"
    )
    admin.execute("CREATE INDEX customer_email_idx ON public.customer (email)")
    admin.execute("CREATE INDEX customer_tags_idx ON public.customer USING gin (tags)")
    admin.execute("SELECT bitemporal.enable_table('public.customer', ARRAY['id'])")
    # Three versions hold the value (the second write supersedes the first version and
    # re-records its remainder); notes is long enough to be stored in the TOAST table.
    long_notes = needle + " " + "".join(uuid.uuid4().hex for _ in range(200))
    for day in ("2026-01-01", "2026-02-01"):
        admin.execute(
            "SELECT public.customer_record(7, %s, %s, %s::jsonb, valid_from => %s::timestamptz)",
            (f"{needle}@example.com", f"{long_notes} {day}", f'["{needle}"]', day),
        )
    admin.execute(
        "SELECT public.customer_record(8, 'keep@example.com', 'kept', '[\"kept\"]'::jsonb)"
    )
    admin.execute("ANALYZE public.customer")

    before = found_in(admin, needle)
    print(f"\napplication table, before erasure: {shown(before)}")
    assert {"customer", "customer_email_idx", "customer_tags_idx"} <= before.keys()
    assert any(r.startswith("pg_toast.") for r in before)

    erased = admin.execute(
        "SELECT version_ids FROM public.customer_erase(7, 'request #1234 (right to erasure)')"
    ).fetchone()
    assert erased is not None and len(erased[0]) == 3  # both versions and the remainder
    print(f"application table, erased, no maintenance yet: {shown(found_in(admin, needle))}")

    after, older = maintained(admin, needle, "public.customer")
    print(f"application table, after the documented maintenance: {shown(after)}")
    live = admin.execute(
        "SELECT starelid::regclass::text, staattnum FROM pg_statistic s WHERE s::text LIKE %s",
        (f"%{needle}%",),
    ).fetchall()
    activity = admin.execute(
        "SELECT backend_type, datname, state, backend_xmin::text, left(query, 60)"
        " FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()"
    ).fetchall()
    assert after == {}, f"older snapshots: {older}; live statistics: {live}; {activity}"
    # What erasure keeps: keys and periods, the other key's values, the audit record.
    rows = admin.execute(
        "SELECT id, email, notes, tags FROM public.customer ORDER BY version_id"
    ).fetchall()
    assert [r[0] for r in rows] == [7, 7, 7, 8]
    assert rows[:3] == [(7, None, None, None)] * 3
    assert rows[3][1] == "keep@example.com"


def test_plain_vacuum_leaves_erased_bytes_behind(admin: psycopg.Connection[Any]) -> None:
    """Why the documented maintenance rewrites the files. The erased row is the last tuple
    of a full page and its cleared version moves to another page: pruning frees its space
    without overwriting it, and the GIN index keeps the key of the entry."""
    needle = f"ERASE-ME-{uuid.uuid4().hex[:6]}"
    admin.execute("CREATE TABLE public.scratch (id int, v jsonb) WITH (fillfactor = 100)")
    admin.execute("CREATE INDEX scratch_v_idx ON public.scratch USING gin (v)")
    fill = (
        "INSERT INTO public.scratch SELECT g, jsonb_build_object('x', repeat('a', 300), 'tag',"
        " CASE WHEN g = %s THEN %s ELSE 'bbbbbbbbbbbbbbb' END) FROM generate_series(1, 30) g"
    )
    assert len(needle) == len("bbbbbbbbbbbbbbb")  # the same layout with or without it
    admin.execute(fill, (0, needle))
    last = admin.execute(
        "SELECT max(id) FROM public.scratch WHERE (ctid::text::point)[0] = 0"
    ).fetchone()
    assert last is not None
    admin.execute("TRUNCATE public.scratch")
    admin.execute(fill, (last[0], needle))
    admin.execute(
        "UPDATE public.scratch SET v = jsonb_build_object('x', repeat('c', 1000)) WHERE id = %s",
        last,
    )
    moved = admin.execute("SELECT ctid::text FROM public.scratch WHERE id = %s", last).fetchone()
    assert moved is not None and not moved[0].startswith("(0,"), "the new version left the page"
    admin.execute("VACUUM public.scratch")
    after_vacuum = found_in(admin, needle)
    print(f"\nafter plain VACUUM: {shown(after_vacuum)}")
    assert {"scratch", "scratch_v_idx"} <= after_vacuum.keys()
    admin.execute("VACUUM FULL public.scratch")
    after_full = found_in(admin, needle)
    print(f"after VACUUM FULL: {shown(after_full)}")
    assert "scratch" not in after_full and "scratch_v_idx" not in after_full
