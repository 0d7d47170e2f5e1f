"""The built wheel, once per run, and a virtual environment with it installed.

The wheel is built from this checkout (``pip wheel``, isolated build of hatchling) and
installed, without its dependencies and without the network, into a fresh virtual
environment. The dependencies (psycopg, SQLAlchemy, Alembic) come from the environment
running the tests: a ``.pth`` line appends its site-packages to the new environment's
``sys.path``, after the wheel. That directory is appended, not added as a site directory,
so its ``.pth`` files (the editable install's, which points at this checkout) are not
processed: ``import bitemporal`` in the new environment finds the wheel's copy only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class WheelEnvironment:
    """A virtual environment holding the installed wheel."""

    root: Path
    site_packages: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def environ(self) -> dict[str, str]:
        """The environment for its subprocesses: its ``bin`` first on ``PATH``, and nothing
        that could put this checkout on ``sys.path``."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"}
        }
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.root)
        env["PYTHONNOUSERSITE"] = "1"
        return env

    def run(
        self,
        *args: str | Path,
        cwd: Path,
        check: bool = True,
        timeout: float = 180,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``args`` run in the environment (``args[0]`` a program of its ``bin``, or any
        path), from ``cwd``, with ``env`` added to its environment variables."""
        program = self.bin / str(args[0])
        command = [str(program if program.exists() else args[0]), *map(str, args[1:])]
        return subprocess.run(
            command,
            cwd=cwd,
            env={**self.environ(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )


@pytest.fixture(scope="session")
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


@pytest.fixture(scope="session")
def wheel_environment(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> WheelEnvironment:
    """A fresh virtual environment with the wheel installed (see the module's docstring)."""
    root = tmp_path_factory.mktemp("wheel-venv")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120
    )
    python = root / "bin" / "python"
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    dependencies = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site_packages / "zz_test_dependencies.pth").write_text(
        "".join(f"{path}\n" for path in sorted(dependencies))
    )
    return WheelEnvironment(root, site_packages)
