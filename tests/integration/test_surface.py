"""The public SQL surface (issue 11): schema bitemporal holds the documented API only;
the helpers live in bitemporal_internal, which no role but the owner may use."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

PSQL_PAGE = Path(__file__).resolve().parents[2] / "docs" / "psql.md"
MAX_FUNCTIONS = 56


def sql_api_section() -> str:
    text = PSQL_PAGE.read_text(encoding="utf-8")
    found = re.search(r"^## SQL API\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert found, "docs/psql.md has no '## SQL API' section"
    return found[1]


def test_bitemporal_shows_only_the_documented_api(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        functions = {
            r[0]
            for r in conn.execute(
                "SELECT p.proname FROM pg_proc p WHERE p.pronamespace = 'bitemporal'::regnamespace"
            )
        }
    assert len(functions) <= MAX_FUNCTIONS
    documented = set(re.findall(r"`bitemporal\.(\w+)\(", sql_api_section()))
    assert functions == documented, (
        f"undocumented: {sorted(functions - documented)}; "
        f"documented but absent: {sorted(documented - functions)}"
    )


def test_only_the_owner_may_use_the_internal_schema(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        grantees = conn.execute(
            "SELECT a.grantee = n.nspowner, a.privilege_type FROM pg_namespace n, "
            "aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a "
            "WHERE n.nspname = 'bitemporal_internal'"
        ).fetchall()
        assert grantees and all(owner for owner, _ in grantees)
        for role in ("bitemporal_reader", "bitemporal_writer", "bitemporal_auditor"):
            assert conn.execute(
                "SELECT has_schema_privilege(%s, 'bitemporal_internal', 'USAGE')", (role,)
            ).fetchone() == (False,)
        # Everything in it is a function: tables, views and types stay in bitemporal.
        assert conn.execute(
            "SELECT count(*) FROM pg_class WHERE relnamespace = 'bitemporal_internal'::regnamespace"
        ).fetchone() == (0,)
