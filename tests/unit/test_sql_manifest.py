"""Frozen SQL files: every file in sql/ has its sha256 in sql/MANIFEST.sha256 (issue 11).

A migration loads a file by name; were the file edited after release, a database
migrated later would get other definitions than one migrated before, silently.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bitemporal import migrations
from bitemporal.errors import ConfigurationError

SQL = Path(__file__).resolve().parents[2] / "sql"


def test_every_sql_file_matches_the_manifest() -> None:
    assert migrations.sql_manifest_problems(SQL) == []
    assert set(migrations.sql_manifest(SQL)) == {p.name for p in SQL.glob("*.sql")}


def test_a_changed_added_or_removed_file_is_reported(tmp_path: Path) -> None:
    copy = tmp_path / "sql"
    shutil.copytree(SQL, copy)
    with (copy / "schema.v1.sql").open("a", encoding="utf-8") as f:
        f.write("-- an edit\n")
    (copy / "new.v1.sql").write_text("SELECT 1;\n", encoding="utf-8")
    (copy / "audit.v1.sql").unlink()
    assert migrations.sql_manifest_problems(copy) == [
        "new.v1.sql: not in MANIFEST.sha256",
        "audit.v1.sql: listed in MANIFEST.sha256 but missing",
        "schema.v1.sql: changed since it was frozen (its sha256 is not the one in MANIFEST.sha256)",
    ]


def test_a_migration_refuses_to_load_a_changed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "sql"
    shutil.copytree(SQL, copy)
    assert migrations.sql_text("schema.v1.sql") == (SQL / "schema.v1.sql").read_text(
        encoding="utf-8"
    )
    (copy / "schema.v1.sql").write_text("DROP SCHEMA bitemporal CASCADE;\n", encoding="utf-8")
    monkeypatch.setattr(migrations, "resource_dir", lambda name: copy)
    with pytest.raises(
        ConfigurationError, match="schema.v1.sql is not the file MANIFEST.sha256 lists"
    ):
        migrations.sql_text("schema.v1.sql")
