"""On Citus: migrating as a role other than the citus extension's owner is refused whole.

Citus writes its metadata on the workers over connections as the extension's owner, which
cannot see the objects a migration's transaction creates there when another role runs it
(citusdata/citus#3398): ``distribute()`` then failed with "function
bitemporal_internal.citus_transaction_id() does not exist", as a superuser too (the
``../shared/citus`` clusters: the extension created by ``postgres``, root migrating).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

import bitemporal
from bitemporal import DistributionError
from tests.helpers import CITUS

pytestmark = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator (the Citus lane)")


@pytest.fixture
def other_superuser(empty_database_url: str) -> Iterator[str]:
    """A superuser that does not own the citus extension (Citus creates it on the
    workers too); dropped afterwards."""
    name = f"bt_admin_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} SUPERUSER LOGIN").format(sql.Identifier(name)))
    yield name
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def test_a_superuser_who_does_not_own_citus_is_told_whom_to_migrate_as(
    empty_database_url: str, other_superuser: str
) -> None:
    with psycopg.connect(empty_database_url) as conn:
        row = conn.execute(
            "SELECT r.rolname FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner"
            " WHERE e.extname = 'citus'"
        ).fetchone()
    assert row is not None
    owner = row[0]
    url = make_url(empty_database_url).set(username=other_superuser)
    with pytest.raises(
        DistributionError, match=f"owner of its citus extension \\({owner}\\)"
    ) as err:
        bitemporal.migrate(url.render_as_string(hide_password=False), citus=True)
    assert err.value.hint == f"connect as {owner}: postgresql://{owner}@host/database"
    with psycopg.connect(empty_database_url) as conn:
        assert conn.execute("SELECT to_regnamespace('bitemporal')").fetchone() == (None,)
    # As the owner, the same migration runs.
    bitemporal.migrate(empty_database_url, citus=True)
    with psycopg.connect(empty_database_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_dist_partition"
            " WHERE logicalrelid = 'bitemporal.fact_version'::regclass"
        ).fetchone() == (1,)
