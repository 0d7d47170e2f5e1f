"""bitemporal.database.scratch_database: an empty database or a copy of another, dropped
afterwards (the demo's and the benchmarks' scratch space)."""

from __future__ import annotations

import psycopg

from bitemporal.database import psycopg_url, scratch_database


def databases(server_url: str) -> set[str]:
    with psycopg.connect(psycopg_url(server_url)) as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database")}


def test_a_scratch_database_copies_its_template_and_is_dropped(server_url: str) -> None:
    with scratch_database(server_url, "bitemporal_template_test") as original:
        with psycopg.connect(psycopg_url(original), autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (n integer)")
            conn.execute("INSERT INTO kept VALUES (1), (2)")
            names = [conn.info.dbname]
        with (
            scratch_database(server_url, "bitemporal_copy_test", template=names[0]) as copy,
            psycopg.connect(psycopg_url(copy)) as conn,
        ):
            names.append(conn.info.dbname)
            assert conn.execute("SELECT n FROM kept ORDER BY n").fetchall() == [(1,), (2,)]
        with (
            scratch_database(server_url, "bitemporal_empty_test") as empty,
            psycopg.connect(psycopg_url(empty)) as conn,
        ):
            names.append(conn.info.dbname)
            assert conn.execute("SELECT to_regclass('kept')").fetchone() == (None,)
    assert names[1].startswith("bitemporal_copy_test_")
    # Other lanes may share the server: only these three must be gone.
    assert not set(names) & databases(server_url)
