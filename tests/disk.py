"""The on-disk check of erasure: which of a database's files still hold a value's bytes.

Superuser only (``pg_read_binary_file`` reads the server's files). After a ``CHECKPOINT``,
which writes every dirty page to its file, :func:`found_in` reads every page of every
relation of the connected database that has storage (tables, their TOAST tables, indexes,
materialized views; the catalogs, ``pg_statistic`` included, and the shared catalogs) straight
from the files, segment by segment, and counts the pages whose bytes contain the value. It
finds the literal bytes: what the pages hold in the clear (a compressed TOAST value may hold
them in another form), which is what the erasure test makes sure it can see before the
erasure. docs/erasure.md shows the same query for psql.

``python -m tests.disk URL NEEDLE`` prints the result for another database.
"""

from __future__ import annotations

import sys
from typing import Any

import psycopg

#: Pages holding the UTF-8 bytes of %(needle)s, per relation (schema-qualified name).
SCAN = """
WITH rel AS (
    SELECT c.oid::regclass::text AS relation, pg_relation_filepath(c.oid) AS path,
           pg_relation_size(c.oid) / current_setting('block_size')::int AS blocks
      FROM pg_class c
     WHERE c.relkind IN ('r', 't', 'i', 'm') AND pg_relation_filepath(c.oid) IS NOT NULL
), size AS (
    SELECT current_setting('block_size')::int AS block,
           pg_size_bytes(current_setting('segment_size'))
             / current_setting('block_size')::int AS per_segment
)
SELECT r.relation, count(*) AS pages
  FROM rel r, size s, generate_series(0, r.blocks - 1) AS b
 WHERE position(convert_to(%(needle)s, 'UTF8') IN pg_read_binary_file(
           r.path || CASE WHEN b >= s.per_segment THEN '.' || b / s.per_segment ELSE '' END,
           b %% s.per_segment * s.block, s.block)) > 0
 GROUP BY r.relation
 ORDER BY r.relation
"""


def found_in(conn: psycopg.Connection[Any], needle: str) -> dict[str, int]:
    """``{relation: pages}`` of the database's files holding ``needle`` (checkpoint first)."""
    conn.execute("CHECKPOINT")
    return {row[0]: row[1] for row in conn.execute(SCAN, {"needle": needle})}


def shown(found: dict[str, int]) -> str:
    """A result as one quotable line."""
    if not found:
        return "found nowhere"
    return "found in: " + ", ".join(f"{r} ({n} page{'s' * (n > 1)})" for r, n in found.items())


if __name__ == "__main__":
    with psycopg.connect(sys.argv[1], autocommit=True) as connection:
        print(shown(found_in(connection, sys.argv[2])))
