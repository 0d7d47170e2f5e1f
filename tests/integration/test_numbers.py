"""Numbers round-trip exactly: a value read back and recorded again is a no-op
(issue 11, finding 20).

``jsonb`` keeps every digit of a number; reading through Python floats lost them
(``0.1000000000000000000000000001`` came back as ``0.1``), so recording what was read
wrote a new version.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from bitemporal import Key, Store, cli
from bitemporal.jsonvalues import dumps, loads


def _text(mantissa: int, exponent: int, spelling: str) -> str:
    number = Decimal(mantissa).scaleb(exponent)
    return format(number, "f") if spelling == "fixed" else str(number)


#: JSON number texts of many shapes: long mantissas, tiny and huge exponents, exponent
#: and fixed spellings, negative zero.
number_texts = st.one_of(
    st.builds(
        _text,
        st.integers(-(10**40), 10**40),
        st.integers(-60, 320),
        st.sampled_from(["fixed", "exponent"]),
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-(10**400), 10**400).map(str),
    st.sampled_from(
        [
            "1e308",
            "0.1000000000000000000000000001",
            "-0",
            "-0.0",
            "1.0",
            "0.10",
            "1e-7",
            "123456789012345678901234567890.000000000000000000001",
        ]
    ),
)

#: Values holding those numbers, alone or inside arrays and objects.
value_texts = st.recursive(
    number_texts,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3).map(
            lambda d: "{" + ", ".join(f'"{k}": {v}' for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=6,
)


def _record_sql(conn: psycopg.Connection[Any], key: Key, text: str) -> None:
    """Store ``text`` exactly as written, as a psql user would."""
    conn.execute(
        "SELECT bitemporal.record(%s, %s, 'sql', %s::jsonb)", (key.entity, key.attribute, text)
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=value_texts)
def test_a_value_read_back_and_recorded_again_is_a_no_op(store: Store, text: str) -> None:
    key = Key(f"numbers:{uuid.uuid4().hex}", "n")
    _record_sql(store.connection, key, text)
    [version] = store.facts.history(key)
    again = store.facts.record(key, version.value, source="sql")
    assert not again.created, (text, version.value)
    # Exactly the stored number, not a neighbour: jsonb equality compares numerics exactly.
    row = store.connection.execute(
        "SELECT value = %s::jsonb FROM bitemporal.history(%s, %s)",
        (dumps(version.value), key.entity, key.attribute),
    ).fetchone()
    assert row == (True,)
    assert store.facts.resolve(key).value == version.value


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**30), 10**30)
    )
)
def test_a_number_written_from_python_comes_back_as_it_was(store: Store, value: float) -> None:
    key = Key(f"numbers:{uuid.uuid4().hex}", "n")
    store.facts.record(key, [value], source="py")
    [read] = store.facts.resolve(key).value
    # Exactly the number written: a float jsonb prints with a fraction comes back as that
    # float; one it prints as a whole number (8.0e16: 80000000000000000) comes back as int.
    assert Decimal(repr(read)) == Decimal(repr(value))
    assert type(read) is type(value) or (isinstance(value, float) and isinstance(read, int))


def test_the_cases_of_the_review(store: Store) -> None:
    key = Key(f"numbers:{uuid.uuid4().hex}", "n")
    _record_sql(store.connection, key, "[1e308, 0.1000000000000000000000000001]")
    value = store.facts.resolve(key).value
    assert value == [10**308, Decimal("0.1000000000000000000000000001")]
    assert not store.facts.record(key, value, source="sql").created


def test_loads_and_dumps_are_inverse_on_jsonb_text() -> None:
    for text in (
        "0.1000000000000000000000000001",
        "100000000000000000000.5",
        "-0.00000010000000000000000001",
        '[1, 2.5, {"a": 3.25}]',
        "1" * 5001,
        "-" + "9" * 4301,
    ):
        assert dumps(loads(text)) == text


def test_the_cli_prints_stored_numbers_exactly(
    store: Store, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = Key(f"numbers:{uuid.uuid4().hex}", "n")
    _record_sql(store.connection, key, "0.1000000000000000000000000001")
    for command in (("resolve", "--json"), ("history", "--json"), ("resolve",), ("history",)):
        assert (
            cli.main(["--url", database_url, command[0], key.entity, key.attribute, *command[1:]])
            == 0
        )
        out = capsys.readouterr().out
        assert "0.1000000000000000000000000001" in out, command
        if "--json" in command:
            json.loads(out)


def test_application_table_values_round_trip_exactly(
    store: Store, connect: Callable[..., psycopg.Connection[Any]]
) -> None:
    schema = f"numbers_{uuid.uuid4().hex[:10]}"
    conn = connect()
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    conn.execute(
        sql.SQL("CREATE TABLE {} (k text, amount numeric, doc jsonb NOT NULL)").format(
            sql.Identifier(schema, "t")
        )
    )
    table = f"{schema}.t"
    conn.execute("SELECT bitemporal.enable_table(%s::regclass, ARRAY['k'])", (table,))
    try:
        exact = Decimal("0.1000000000000000000000000001")
        store.app_tables.record(
            table, {"k": "a", "amount": exact, "doc": {"x": exact, "n": [1e308]}}
        )
        [version] = store.app_tables.as_of(table, {"k": "a"})
        assert version.row["amount"] == exact and version.row["doc"] == {"x": exact, "n": [10**308]}
        assert not store.app_tables.record(table, dict(version.row)).created
    finally:
        conn.execute("SELECT bitemporal.drop_table(%s::regclass)", (table,))
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def test_the_cli_and_import_record_input_numbers_exactly(
    store: Store, database_url: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    exact = "0.1000000000000000000000000001"
    by_cli = Key(f"numbers:{uuid.uuid4().hex}", "n")
    assert (
        cli.main(
            [
                "--url",
                database_url,
                "record",
                by_cli.entity,
                by_cli.attribute,
                exact,
                "--source",
                "s",
            ]
        )
        == 0
    )
    by_import = Key(f"numbers:{uuid.uuid4().hex}", "n")
    data = tmp_path / "rows.jsonl"
    data.write_text(
        json.dumps({"entity": by_import.entity, "attribute": by_import.attribute, "source": "s"})[
            :-1
        ]
        + f', "value": {exact}}}\n'
    )
    assert cli.main(["--url", database_url, "import", str(data)]) == 0
    capsys.readouterr()
    for key in (by_cli, by_import):
        assert store.facts.resolve(key).value == Decimal(exact)
