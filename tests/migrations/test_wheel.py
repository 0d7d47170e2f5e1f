"""The built wheel carries everything needed to migrate a database, without a checkout,
and nothing a user does not run (the benchmarks stay in the checkout)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from bitemporal import migrations
from tests.migrations.conftest import WheelEnvironment

pytestmark = pytest.mark.default_layout_only("the wheel migrates an empty database")

ROOT = Path(__file__).resolve().parents[2]


def run_installed(environment: WheelEnvironment, *args: str) -> str:
    return environment.run("python", *args, cwd=environment.root).stdout


def test_wheel_ships_migrations_and_sql(wheel_environment: WheelEnvironment) -> None:
    installed = wheel_environment.site_packages
    where = run_installed(
        wheel_environment, "-c", "import bitemporal.migrations as m; print(m.resource_dir('sql'))"
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


def test_installed_package_migrates_a_database(
    wheel_environment: WheelEnvironment, empty_database_url: str
) -> None:
    script = run_installed(wheel_environment, "-m", "bitemporal", "db", "sql")
    assert "CREATE TABLE bitemporal.fact_version" in script
    run_installed(
        wheel_environment, "-m", "bitemporal", "--url", empty_database_url, "db", "upgrade"
    )
    assert migrations.current(empty_database_url) == migrations.head()


def test_wheel_carries_no_benchmark_code(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert any(name.startswith("bitemporal/") for name in names)
    benchmark = [name for name in names if "bench" in name.lower()]
    assert benchmark == [], "the benchmarks run from a checkout (python -m benchmarks ...)"
