"""A read given a NULL entity, in SQL, answers as for a key never recorded and takes no
server down.

On Citus, the reads are delegated to the worker holding their entity; Citus 13.2.2 looked up
the shard of a NULL entity and crashed the coordinator, ending every session on it. The
Citus lane runs with our fix (`.ci/citus-null-distribution-argument.patch`, docs/citus.md,
Known bugs); these tests are the attack, made by a role that may only read, with a
bystander's session watching.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.helpers import login_roles

# Each read, and what it gives for a NULL entity: no rows (as for a key never recorded),
# or the key check's error (BT005, "entity must be a non-empty string").
READS = {
    "as_of": ("SELECT * FROM bitemporal.as_of({entity}, 'a')", None),
    "as_of_planned": ("SELECT * FROM bitemporal.as_of_planned({entity}, 'a')", None),
    "history": ("SELECT * FROM bitemporal.history({entity}, 'a')", "BT005"),
    "resolve": ("SELECT * FROM bitemporal.resolve({entity}, 'a')", "BT005"),
    "resolve_versions": ("SELECT * FROM bitemporal.resolve_versions({entity}, 'a')", "BT005"),
}

# How the NULL reaches the server: a literal (a constant when the call is planned), a bound
# parameter, and a prepared statement's parameter (planned again with its value).
WAYS = {
    "literal": ("NULL", (), False),
    "bound": ("%s::text", (None,), False),
    "prepared": ("%s::text", (None,), True),
}


@pytest.fixture
def reader(migrated_database_url: str) -> Iterator[str]:
    """A LOGIN role granted only the reader role, with one key recorded."""
    with login_roles(migrated_database_url, "bt", "reader") as names:
        with psycopg.connect(migrated_database_url, autocommit=True) as admin:
            admin.execute(
                "SELECT bitemporal.grant_roles(reader => %s, writer => NULL, auditor => NULL)",
                (names["reader"],),
            )
            admin.execute("SELECT bitemporal.record('e1', 'a', 's', '1'::jsonb)")
        yield names["reader"]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("read", READS)
def test_a_null_entity_answers_like_an_unknown_key(
    migrated_database_url: str, reader: str, read: str, way: str
) -> None:
    query, sqlstate = READS[read]
    entity, params, prepare = WAYS[way]
    with (
        psycopg.connect(migrated_database_url, autocommit=True) as bystander,
        psycopg.connect(migrated_database_url, autocommit=True, user=reader) as attacker,
    ):
        pid = bystander.info.backend_pid
        statement = query.format(entity=entity)
        # Prepared statements are planned generically after five runs: run it past that.
        for _ in range(7 if prepare else 1):
            if sqlstate is None:
                assert attacker.execute(statement, params, prepare=prepare).fetchall() == []
            else:
                with pytest.raises(psycopg.Error) as refused:
                    attacker.execute(statement, params, prepare=prepare)
                assert refused.value.sqlstate == sqlstate
                assert "entity must be a non-empty string" in str(refused.value)
        # Both sessions live on: the server did not restart.
        assert attacker.execute("SELECT count(*) FROM bitemporal.as_of('e1', 'a')").fetchone() == (
            1,
        )
        assert bystander.execute("SELECT pg_backend_pid()").fetchone() == (pid,)
