"""Values no Python writer could store are read without a crash (issue 11, finding 6).

A writer going through SQL stored a number of 5,001 digits and an array nested 5,000
deep; every read of the key (and ``changes()`` over every key) then raised
``ValueError`` / ``RecursionError`` and the CLI printed tracebacks. The database may
refuse such values at write time; the reading side must not depend on it, so the test
plants them as the owner would, with triggers off (``session_replication_role``).
"""

from __future__ import annotations

import uuid
from decimal import Decimal

import psycopg
import pytest

from bitemporal import Key, Store, cli
from bitemporal.jsonvalues import MAX_DEPTH, RawJSON, dumps, loads

LONG_NUMBER = "9" * 5001
DEEP_ARRAY = "[" * 5000 + "]" * 5000


def _depth(value: object) -> tuple[int, object]:
    """How many lists down the innermost element sits, and that element."""
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth, value


def test_the_loader_reads_what_python_cannot_parse() -> None:
    assert loads(LONG_NUMBER) == Decimal(LONG_NUMBER)
    assert dumps(loads(LONG_NUMBER)) == LONG_NUMBER
    deep = loads(DEEP_ARRAY)
    depth, inner = _depth(deep)
    assert depth == MAX_DEPTH and isinstance(inner, RawJSON)
    assert dumps(deep).replace(", ", ",") == DEEP_ARRAY
    nested_object = '{"a": ' * 3000 + '[1.5, "x", true, null, {"b": []}]' + "}" * 3000
    assert dumps(loads(nested_object)) == nested_object


@pytest.mark.not_on_citus(
    "plants the values past the append-only guard with session_replication_role, which "
    "Citus does not send to the workers, where the guard runs"
)
def test_reads_and_the_cli_survive_hostile_values(
    migrated_database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    long_key = Key(f"hostile:{uuid.uuid4().hex}", "long")
    deep_key = Key(long_key.entity, "deep")
    with psycopg.connect(migrated_database_url) as conn:
        store = Store(conn)
        planted = {long_key: LONG_NUMBER, deep_key: DEEP_ARRAY}
        ids = {k: store.facts.record(k, 1, source="sql").version_id for k in planted}
        conn.execute("SET LOCAL session_replication_role = replica")
        for k, text in planted.items():
            conn.execute(
                "UPDATE bitemporal.fact_version SET value = %s::jsonb WHERE version_id = %s",
                (text, ids[k]),
            )
        conn.commit()

    with psycopg.connect(migrated_database_url, autocommit=True) as conn:
        store = Store(conn)
        [long_version] = store.facts.history(long_key)
        assert long_version.value == Decimal(LONG_NUMBER)
        assert store.facts.resolve(long_key).value == Decimal(LONG_NUMBER)
        [deep_version] = store.facts.as_of(deep_key)
        assert dumps(deep_version.value).replace(", ", ",") == DEEP_ARRAY
        answer = store.facts.resolve(deep_key)
        assert answer.status == "supported" and isinstance(_depth(answer.values[0])[1], RawJSON)
        changes = store.facts.changes()
        assert {c.version.version_id for c in changes} == set(ids.values())
        assert store.facts.explain(long_key).value == Decimal(LONG_NUMBER)
        # What was read writes back as the same jsonb: nothing new.
        assert not store.facts.record(long_key, long_version.value, source="sql").created
        assert not store.facts.record(deep_key, deep_version.value, source="sql").created

    for k in (long_key, deep_key):
        for command in (("resolve", "--json"), ("history", "--json"), ("resolve",), ("history",)):
            code = cli.main(
                ["--url", migrated_database_url, command[0], k.entity, k.attribute, *command[1:]]
            )
            out, err = capsys.readouterr()
            assert code == 0 and "Traceback" not in err, (command, err)
            if "--json" in command:
                assert isinstance(loads(out), dict | list)
