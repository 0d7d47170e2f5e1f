"""Migration 0013 on a database that holds an application table made bitemporal before it:
the table gets <table>_erase (no EXECUTE for anyone), keeps its other functions' grants, and
the downgrade takes the erase function away and leaves the table working."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql

from bitemporal import migrations

pytestmark = pytest.mark.not_on_citus(
    "migration paths (step by step, downgrades, offline scripts, layouts) are single-node: "
    "on Citus every test database is migrated with citus=True, and a distributed store "
    "is not downgraded (docs/citus.md)"
)


def erase_functions(conn: psycopg.Connection[Any]) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p"
            " WHERE p.proname = 'person_erase' ORDER BY 1"
        )
    ]


def test_a_table_enabled_before_gets_its_erase_function_and_loses_it_on_downgrade(
    empty_database_url: str,
) -> None:
    url = empty_database_url
    role = f"bt_mig_{uuid.uuid4().hex[:8]}"
    migrations.migrate(url, "0012")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
        conn.execute("CREATE TABLE public.person (id int NOT NULL, email text)")
        conn.execute("SELECT bitemporal.enable_table('public.person', ARRAY['id'])")
        conn.execute(
            sql.SQL(
                "GRANT EXECUTE ON FUNCTION public.person_record(int, text, timestamptz,"
                " timestamptz, timestamptz) TO {}"
            ).format(sql.Identifier(role))
        )
        conn.execute("SELECT public.person_record(1, 'a@example.com')")
        assert erase_functions(conn) == []
    try:
        migrations.migrate(url)
        with psycopg.connect(url, autocommit=True) as conn:
            assert erase_functions(conn) == ["person_erase(integer,text)"]
            may = conn.execute(
                "SELECT has_function_privilege(%s, 'public.person_erase(int, text)', 'EXECUTE'),"
                " has_function_privilege(%s, 'public.person_record(int, text, timestamptz,"
                " timestamptz, timestamptz)', 'EXECUTE')",
                (role, role),
            ).fetchone()
            assert may == (False, True)
            erased = conn.execute(
                "SELECT version_ids FROM public.person_erase(1, 'ticket 7')"
            ).fetchone()
            assert erased is not None and len(erased[0]) == 1
        # Down to 0012: the erase function goes, the table and its grants stay usable.
        migrations.downgrade(url, "0012")
        with psycopg.connect(url, autocommit=True) as conn:
            assert erase_functions(conn) == []
            conn.execute("SELECT public.person_record(2, 'b@example.com')")
            assert conn.execute(
                "SELECT has_function_privilege(%s, 'public.person_record(int, text, timestamptz,"
                " timestamptz, timestamptz)', 'EXECUTE')",
                (role,),
            ).fetchone() == (True,)
            # The erased values stay erased; the append-only rule is back to 0012's.
            assert conn.execute("SELECT email FROM public.person WHERE id = 1").fetchone() == (
                None,
            )
            with pytest.raises(psycopg.Error) as failure:
                conn.execute("UPDATE public.person SET email = NULL WHERE id = 2")
            assert failure.value.sqlstate == "BT006"
        migrations.migrate(url)
        with psycopg.connect(url, autocommit=True) as conn:
            assert erase_functions(conn) == ["person_erase(integer,text)"]
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
