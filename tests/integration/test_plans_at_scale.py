"""Plans at a million versions: what the store reads is index scans, never a sequential scan.

One scratch database per module holds about a million fact versions (5,000
keys that each changed 100 times, as record() leaves them: every change
closes the open version and re-records its remainder), a million
working-memory items in one namespace and a million log rows. The tests ask
the planner, with EXPLAIN, for the plan of every read: as-of lookups (current
and earlier knowledge, and the query ``store.facts.resolve`` sends), resolve,
history, the audit views and functions, and the decay step; they fail if any
of them turns into a sequential scan of a big table, and check that each uses
the index that exists for it (see "Indexes and performance" in README.md).

PL/pgSQL functions (resolve, history, changes, the decay step) are observed
through ``auto_explain`` with ``log_nested_statements``, which reports the plan
of every statement they run, with their real parameters; the tests run each
twice, the second time with ``plan_cache_mode = force_generic_plan``, the plan
a PL/pgSQL statement settles on after a few calls.

Views over all keys are asked the questions an auditor asks of them: the facts
and conflicts of one entity (``facts_now``, ``conflicts_now``), what changed
in a knowledge window of a minute and for one key (``changes``), one item's
evictions (``memory_evictions``).

The fill is set-based and takes most of the module's time. The exclusion
constraint ``fact_version_no_overlap`` is re-created as a plain GiST index of
the same definition and name: validating the constraint row by row would take
minutes, and a plan depends on the index, not on the constraint.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

from tests.helpers import DatabaseFactory

pytestmark = [
    pytest.mark.not_on_citus(
        "single-node plans; on Citus a key's question is a router plan on one worker, which "
        "tests/citus/test_routing.py checks"
    ),
    pytest.mark.default_layout_only(
        "its database is on the default layout (its fill drops and rebuilds that layout's "
        "indexes): four minutes of fill for the same plans"
    ),
]

KEYS, CHANGES = 5_000, 100
#: Keys with a second source that disagrees now (open conflicts).
CONFLICTED = 50
ITEMS = 1_000_000
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
BIG = {"fact_version", "fact_key", "memory_item", "memory_log"}

# Change i of key k: value i valid from day i, known from hour i plus k
# seconds (so that a minute of knowledge holds a few dozen keys' changes); it
# closes the previous open version and re-records its remainder [day i-1, day i).
FILL_FACTS = (
    """INSERT INTO bitemporal.fact_key
              (entity, attribute, first_known_at, last_known_at, last_txid, key_id)
       SELECT 'e' || k, 'a', %(epoch)s + k * interval '1 second',
              %(epoch)s + (%(changes)s - 1) * interval '1 hour' + k * interval '1 second',
              pg_current_xact_id(), k
         FROM generate_series(1, %(keys)s) k""",
    """INSERT INTO bitemporal.fact_version
              (entity, attribute, source, value, valid_period, known_period, key_id)
       SELECT 'e' || k, 'a', 's', to_jsonb(i),
              tstzrange(%(epoch)s + i * interval '1 day', NULL, '[)'),
              tstzrange(%(epoch)s + i * interval '1 hour' + k * interval '1 second',
                        CASE WHEN i < %(changes)s - 1
                             THEN %(epoch)s + (i + 1) * interval '1 hour'
                                  + k * interval '1 second' END,
                        '[)'), k
         FROM generate_series(1, %(keys)s) k, generate_series(0, %(changes)s - 1) i
       UNION ALL
       SELECT 'e' || k, 'a', 's', to_jsonb(i),
              tstzrange(%(epoch)s + i * interval '1 day',
                        %(epoch)s + (i + 1) * interval '1 day', '[)'),
              tstzrange(%(epoch)s + (i + 1) * interval '1 hour' + k * interval '1 second',
                        NULL, '[)'), k
         FROM generate_series(1, %(keys)s) k, generate_series(0, %(changes)s - 2) i
       UNION ALL
       SELECT 'e' || k, 'a', 'forum', to_jsonb(-1),
              tstzrange(%(epoch)s, NULL, '[)'),
              tstzrange(%(epoch)s + k * interval '1 second', NULL, '[)'), k
         FROM generate_series(1, %(conflicted)s) k
        ORDER BY 1, 5""",
)

# A window namespace at turn 100: present items are due after turns 100-109,
# except a hundred already due (step() evicts them) and a few pinned ones.
FILL_MEMORY = (
    "SELECT bitemporal.memory_ensure_namespace('big', 'window', window_turns => 10)",
    "SELECT bitemporal.memory_ensure_namespace('small', 'window', window_turns => 10)",
    "UPDATE bitemporal.memory_namespace SET turn = 100 WHERE name = 'big'",
    """INSERT INTO bitemporal.memory_item
              (namespace, item_id, pinned, state, recall_count, registered_turn, last_touched_turn,
               crossing_turn, registration_seq)
       SELECT 'big', 'i' || g, g %% 1000 = 0, 'present', 1, 1, t,
              CASE WHEN g %% 1000 <> 0 THEN t + 10 END, g
         FROM generate_series(1, %(items)s) g,
              LATERAL (SELECT CASE WHEN g %% 10000 = 1 THEN 85 ELSE 90 + g %% 10 END AS t) l""",
    """INSERT INTO bitemporal.memory_log
              (namespace, item_id, turn, event, pinned, recall_count, crossing_turn)
       SELECT 'big', 'i' || g, 1, 'register', g %% 1000 = 0, 1, 11
         FROM generate_series(1, %(items)s) g""",
)
PARAMS = {
    "keys": KEYS,
    "changes": CHANGES,
    "conflicted": CONFLICTED,
    "epoch": EPOCH,
    "items": ITEMS,
}


def secondary_indexes(
    conn: psycopg.Connection[Any], table: str
) -> list[tuple[str, str, str, str | None]]:
    """(name, definition, constraint or '', comment) of a table's indexes other than its primary
    key."""
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT i.indexrelid::regclass::text, "
            "pg_get_indexdef(i.indexrelid), coalesce(c.conname, ''), "
            "obj_description(i.indexrelid, 'pg_class') "
            "FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid "
            "WHERE i.indrelid = %s::regclass AND NOT i.indisprimary ORDER BY 1",
            (table,),
        ).fetchall()
    ]


def drop(
    conn: psycopg.Connection[Any], table: str, indexes: list[tuple[str, str, str, str | None]]
) -> None:
    for name, _, constraint, _ in indexes:
        if constraint:
            conn.execute(
                sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
                    sql.SQL(table), sql.Identifier(constraint)
                )
            )
        else:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.SQL(name)))


def build(url: str, index: tuple[str, str, str, str | None]) -> None:
    name, definition, _, comment = index
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '256MB'")
        conn.execute(definition)
        conn.execute(
            sql.SQL("COMMENT ON INDEX {} IS {}").format(sql.SQL(name), sql.Literal(comment))
        )


def fill(url: str) -> None:
    """About a million versions, items and log rows, set-based. Secondary indexes and
    the foreign key of the big tables are dropped during the load and re-created from
    their own definitions afterwards, two at a time on two connections (building an
    index once is much faster than growing it row by row; the GiST builds dominate,
    PostgreSQL 15 builds them without sorting)."""
    with psycopg.connect(url, autocommit=True) as conn:
        fkey = conn.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conname = 'fact_version_key_fkey'"
        ).fetchone()
        assert fkey is not None
        indexes = [
            *secondary_indexes(conn, "bitemporal.fact_version"),
            *secondary_indexes(conn, "bitemporal.memory_item"),
            *secondary_indexes(conn, "bitemporal.memory_log"),
        ]
        with conn.transaction():
            conn.execute(
                "ALTER TABLE bitemporal.fact_version DROP CONSTRAINT fact_version_key_fkey"
            )
            for table in (
                "bitemporal.fact_version",
                "bitemporal.memory_item",
                "bitemporal.memory_log",
            ):
                drop(
                    conn,
                    table,
                    [i for i in indexes if i[1].split(" ON ")[1].startswith(table + " ")],
                )
            # The stamp trigger sets what the column default already holds.
            conn.execute("ALTER TABLE bitemporal.fact_version DISABLE TRIGGER USER")
            for statement in FILL_FACTS:
                conn.execute(statement, PARAMS)
            conn.execute("ALTER TABLE bitemporal.fact_version ENABLE TRIGGER USER")
            for statement in FILL_MEMORY:
                conn.execute(statement, PARAMS)
        # The slowest build first, so that the other connection does the rest meanwhile.
        indexes.sort(key=lambda i: (" USING gist " not in i[1], "periods_idx" not in i[0]))
        with ThreadPoolExecutor(max_workers=2) as pool:
            for done in [pool.submit(build, url, index) for index in indexes]:
                done.result()
        conn.execute(
            sql.SQL(
                "ALTER TABLE bitemporal.fact_version ADD CONSTRAINT fact_version_key_fkey {}"
            ).format(sql.SQL(fkey[0]))
        )
        for table in ("fact_version", "fact_key", "memory_item", "memory_log", "memory_namespace"):
            conn.execute(sql.SQL("VACUUM ANALYZE bitemporal.{}").format(sql.Identifier(table)))


@pytest.fixture(scope="module")
def conn(make_database: DatabaseFactory) -> Iterator[psycopg.Connection[Any]]:
    url = make_database(migrated=True, default_layout=True)
    fill(url)
    with psycopg.connect(url, autocommit=True) as c:
        yield c


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def scans(plan: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """(node type, relation, index) of every scan in a plan."""
    return [
        (n["Node Type"], n.get("Relation Name", ""), n.get("Index Name"))
        for n in nodes(plan)
        if "Relation Name" in n or "Index Name" in n
    ]


def assert_no_seq_scan(plan: dict[str, Any], what: str) -> None:
    for node_type, relation, _ in scans(plan):
        assert not (node_type == "Seq Scan" and relation in BIG), (
            f"{what}: sequential scan of {relation}\n{plan}"
        )


def explain(conn: psycopg.Connection[Any], query: str, *, analyze: bool = False) -> dict[str, Any]:
    options = "ANALYZE, BUFFERS, " if analyze else ""
    row = conn.execute(f"EXPLAIN ({options}FORMAT JSON) {query}").fetchone()
    assert row is not None
    return dict(row[0][0]["Plan"])


def nested_plans(
    conn: psycopg.Connection[Any], call: str, *, generic: bool
) -> list[tuple[str, dict[str, Any]]]:
    """(query text, plan) of every statement ``call`` runs, through auto_explain."""
    messages: list[str] = []

    def keep(diagnostic: psycopg.errors.Diagnostic) -> None:
        if diagnostic.message_primary:
            messages.append(diagnostic.message_primary)

    conn.add_notice_handler(keep)
    try:
        with conn.transaction(force_rollback=True):
            conn.execute("LOAD 'auto_explain'")
            for setting, value in (
                ("auto_explain.log_min_duration", "0"),
                ("auto_explain.log_nested_statements", "on"),
                ("auto_explain.log_format", "json"),
                ("plan_cache_mode", "force_generic_plan" if generic else "auto"),
                ("client_min_messages", "log"),
            ):
                conn.execute("SELECT set_config(%s, %s, true)", (setting, value))
            conn.execute(call).fetchall()
            conn.execute("SET LOCAL client_min_messages = notice")
    finally:
        conn.remove_notice_handler(keep)
    found = []
    for message in messages:
        if (start := message.find("{")) >= 0:
            logged = json.loads(message[start:])
            found.append((logged["Query Text"], logged["Plan"]))
    assert found, f"auto_explain reported nothing for {call}"
    return found


@pytest.fixture(scope="module")
def auto_explain(conn: psycopg.Connection[Any]) -> None:
    try:
        with conn.transaction(force_rollback=True):
            conn.execute("LOAD 'auto_explain'")
    except psycopg.Error as e:  # not a superuser, or not installed
        pytest.skip(f"auto_explain is not available: {e}")


# An index search of one key reads far fewer pages than this; a scan of the version
# table reads over a hundred times more (test_the_tables_are_big checks it).
FEW_PAGES = 100


def test_the_tables_are_big(conn: psycopg.Connection[Any]) -> None:
    counts = conn.execute(
        "SELECT (SELECT count(*) FROM bitemporal.fact_version), "
        "(SELECT count(*) FROM bitemporal.fact_key), "
        "(SELECT count(*) FROM bitemporal.memory_item), "
        "(SELECT count(*) FROM bitemporal.memory_log)"
    ).fetchone()
    assert counts == (KEYS * (2 * CHANGES - 1) + CONFLICTED, KEYS, ITEMS, ITEMS)
    reltuples = conn.execute(
        "SELECT reltuples FROM pg_class WHERE oid = 'bitemporal.fact_version'::regclass"
    ).fetchone()
    assert reltuples is not None and reltuples[0] > 900_000  # the planner knows
    pages = conn.execute(
        "SELECT sum(pg_relation_size(t)) / current_setting('block_size')::int FROM ("
        " SELECT 'bitemporal.fact_version'::regclass"  # a plain table has no partition tree
        " UNION SELECT relid FROM pg_partition_tree('bitemporal.fact_version')) tree(t)"
    ).fetchone()
    assert pages is not None and pages[0] > 100 * FEW_PAGES  # what a scan would read


# -- As-of lookups ---------------------------------------------------------------------

MID = EPOCH + timedelta(days=40, hours=12)


@pytest.mark.parametrize(
    ("known_at", "index"),
    [
        ("NULL", "fact_version_current_valid_idx"),  # now
        ("'2030-01-01'", "fact_version_current_valid_idx"),  # after every change
        (f"'{EPOCH + timedelta(hours=20, minutes=90)}'", "fact_version_periods_idx"),  # earlier
    ],
)
@pytest.mark.parametrize("valid_at", [f"'{MID}'", "NULL", f"'{EPOCH}'", "'-infinity'"])
def test_as_of_reads_one_index(
    conn: psycopg.Connection[Any], valid_at: str, known_at: str, index: str
) -> None:
    plan = explain(
        conn, f"SELECT * FROM bitemporal.as_of('e2500', 'a', {valid_at}, {known_at})", analyze=True
    )
    assert_no_seq_scan(plan, "as_of")
    ran = [
        (n["Node Type"], n.get("Index Name"))
        for n in nodes(plan)
        if n.get("Actual Loops", 0) > 0 and "Relation Name" in n
    ]
    assert ran == [("Index Scan", "fact_key_pkey"), ("Index Scan", index)] or (
        index == "fact_version_periods_idx"
        and ran == [("Index Scan", "fact_key_pkey"), ("Bitmap Heap Scan", None)]
    ), plan
    # The btree path is a handful of pages: the key, a descent and the heap. A GiST
    # search visits more, and how many depends on how the index was built: PostgreSQL
    # 15 builds it by insertion, in an order of equal rows the fill leaves open (one CI
    # run saw 43 pages). So it is held to FEW_PAGES, under a hundredth of a scan.
    limit = 12 if index == "fact_version_current_valid_idx" else FEW_PAGES
    assert plan["Shared Hit Blocks"] + plan["Shared Read Blocks"] < limit, plan


def test_as_of_of_a_key_with_two_sources(conn: psycopg.Connection[Any]) -> None:
    plan = explain(conn, f"SELECT * FROM bitemporal.as_of('e7', 'a', '{MID}')", analyze=True)
    assert plan["Actual Rows"] == 2
    assert "fact_version_current_valid_idx" in {s[2] for s in scans(plan)}


def test_the_query_store_resolve_sends(conn: psycopg.Connection[Any]) -> None:
    plan = explain(
        conn,
        "SELECT a.status, v.* FROM bitemporal.resolve('e2500', 'a', NULL, NULL, NULL) a "
        "LEFT JOIN bitemporal.versions v ON v.entity = 'e2500' AND v.attribute = 'a' "
        "AND v.version_id = ANY (a.version_ids) ORDER BY v.version_id",
    )
    assert_no_seq_scan(plan, "store.facts.resolve")
    assert any(s[2] and s[2].endswith("pkey") for s in scans(plan)), scans(plan)


def test_versions_of_one_key(conn: psycopg.Connection[Any]) -> None:
    plan = explain(
        conn, "SELECT * FROM bitemporal.versions WHERE entity = 'e2500' AND attribute = 'a'"
    )
    assert_no_seq_scan(plan, "versions")


# -- PL/pgSQL reads, through auto_explain ------------------------------------------------

PAST = EPOCH + timedelta(hours=20, minutes=90)
WINDOW = EPOCH + timedelta(hours=30)


@pytest.mark.usefixtures("auto_explain")
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
@pytest.mark.parametrize(
    ("call", "expected"),
    [
        # current; a valid time after the key's last knowledge (historical without a
        # second as-of); one before it (historical or retrospective: a second as-of at
        # valid_at); announced_future/known_then
        (
            "SELECT * FROM bitemporal.resolve('e2500', 'a')",
            {"fact_key_pkey", "fact_version_current_valid_idx"},
        ),
        (
            f"SELECT * FROM bitemporal.resolve('e2500', 'a', '{MID}')",
            {"fact_key_pkey", "fact_version_current_valid_idx"},
        ),
        (
            f"SELECT * FROM bitemporal.resolve('e2500', 'a', '{PAST}')",
            {"fact_version_current_valid_idx", "fact_version_periods_idx"},
        ),
        (
            f"SELECT * FROM bitemporal.resolve('e2500', 'a', '{MID}', '{PAST}')",
            {"fact_version_periods_idx"},
        ),
        ("SELECT * FROM bitemporal.history('e2500', 'a')", {"fact_key_pkey"}),
        (
            f"SELECT * FROM bitemporal.retrospective_diff('e2500', 'a', '{MID}', '{PAST}')",
            {"fact_version_current_valid_idx", "fact_version_periods_idx"},
        ),
        # what changed in a minute of knowledge, and for one key over a day
        (
            f"SELECT * FROM bitemporal.changes('{WINDOW}', '{WINDOW + timedelta(minutes=1)}')",
            {"fact_version_known_from_idx", "fact_version_known_to_idx"},
        ),
        (
            (
                f"SELECT * FROM bitemporal.changes('{EPOCH}', "
                f"'{EPOCH + timedelta(days=1)}', 'e2500', 'a')"
            ),
            set(),
        ),
        # a write (rolled back): the versions it may cut, through one of the key's two
        # GiST indexes. The planner's estimates for the constraint's index of current
        # versions (migration 0034) and the index of every version tie here (they
        # differ by the logarithm of the index sizes, equal when half the versions are
        # current), so either may win; the performance page has both measured.
        (
            f"SELECT * FROM bitemporal.record('e2500', 'a', 's', '1', '{MID}')",
            {"fact_key_pkey", ("fact_version_no_overlap", "fact_version_periods_idx")},
        ),
        # the decay step: evicts the hundred due items of a million
        ("SELECT bitemporal.memory_step('big')", {"memory_item_crossing_idx"}),
    ],
)
def test_functions_use_their_indexes(
    conn: psycopg.Connection[Any],
    call: str,
    expected: set[str | tuple[str, ...]],
    generic: bool,
) -> None:
    """Each expected index is used; a tuple is a choice, any one of its indexes."""
    plans = nested_plans(conn, call, generic=generic)
    used: set[str] = set()
    for text, plan in plans:
        assert_no_seq_scan(plan, f"{call}: {text}")
        used |= {s[2] for s in scans(plan) if s[2]}
    for index in expected:
        choice = {index} if isinstance(index, str) else set(index)
        assert choice & used, (index, used, [t for t, _ in plans])


def test_the_decay_step_evicts_from_a_million(conn: psycopg.Connection[Any]) -> None:
    with conn.transaction(force_rollback=True):
        row = conn.execute("SELECT cardinality(bitemporal.memory_step('big'))").fetchone()
    assert row == (ITEMS // 10_000,)


# -- Audit views, as an auditor asks them -----------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM bitemporal.facts_now WHERE entity = 'e2500'",
        "SELECT * FROM bitemporal.facts_now WHERE entity = 'e7' AND attribute = 'a'",
        "SELECT * FROM bitemporal.conflicts_now WHERE entity = 'e7'",
        "SELECT * FROM bitemporal.memory_evictions WHERE namespace = 'big' AND item_id = 'i1'",
    ],
)
def test_audit_views_of_one_entity_or_item(conn: psycopg.Connection[Any], query: str) -> None:
    plan = explain(conn, query, analyze=True)
    assert_no_seq_scan(plan, query)
    assert plan["Shared Hit Blocks"] + plan["Shared Read Blocks"] < FEW_PAGES, plan


def test_conflicts_now_finds_the_disagreement(conn: psycopg.Connection[Any]) -> None:
    rows = conn.execute(
        "SELECT entity, \"values\" FROM bitemporal.conflicts_now WHERE entity = 'e7'"
    ).fetchall()
    assert rows == [("e7", [-1, CHANGES - 1])]


def test_every_fact_store_index_is_documented(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        undocumented = conn.execute(
            "SELECT indexrelid::regclass::text FROM pg_index "
            "WHERE indrelid IN ('bitemporal.fact_version'::regclass, "
            "'bitemporal.fact_key'::regclass) "
            "AND obj_description(indexrelid, 'pg_class') IS NULL"
        ).fetchall()
    assert undocumented == []
