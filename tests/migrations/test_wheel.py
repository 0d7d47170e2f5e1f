"""The built wheel carries everything needed to migrate a database, without a checkout,
and nothing a user does not run (the benchmarks stay in the checkout)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bitemporal import migrations

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from this checkout."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        timeout=300,
    )
    [built] = out.glob("bitemporal-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path) -> Path:
    """The wheel installed (without dependencies) into a folder."""
    site = wheel.parent / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    return site


def run_installed(site: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, *args],
        cwd=site.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return result.stdout


def test_wheel_ships_migrations_and_sql(installed: Path) -> None:
    where = run_installed(
        installed, "-c", "import bitemporal.migrations as m; print(m.resource_dir('sql'))"
    )
    assert Path(where.strip()).is_relative_to(installed)
    shipped = sorted(
        p.name for p in (installed / "bitemporal" / "_resources" / "sql").glob("*.sql")
    )
    assert shipped == sorted(p.name for p in (ROOT / "sql").glob("*.sql"))
    assert (installed / "bitemporal" / "_resources" / "sql" / "MANIFEST.sha256").read_bytes() == (
        ROOT / "sql" / "MANIFEST.sha256"
    ).read_bytes()
    assert (installed / "bitemporal" / "py.typed").exists()


def test_installed_package_migrates_a_database(installed: Path, empty_database_url: str) -> None:
    script = run_installed(installed, "-m", "bitemporal", "db", "sql")
    assert "CREATE TABLE bitemporal.fact_version" in script
    run_installed(installed, "-m", "bitemporal", "--url", empty_database_url, "db", "upgrade")
    assert migrations.current(empty_database_url) == migrations.head()


def test_wheel_carries_no_benchmark_code(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert any(name.startswith("bitemporal/") for name in names)
    benchmark = [name for name in names if "bench" in name.lower()]
    assert benchmark == [], "the benchmarks run from a checkout (python -m benchmarks ...)"
