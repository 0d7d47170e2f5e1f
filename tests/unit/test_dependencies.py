"""What the package imports, `pip install bitemporal` installs, and CI tests the lowest
versions of it that the package allows.

The suite runs with the ``test`` extra, which brings packages of its own; a module the
package imports that only an extra installs is therefore found here, not by a failing
import. SQLAlchemy 2.1 made ``greenlet`` optional (its ``asyncio`` extra): ``import
bitemporal`` (``sqlalchemy.ext.asyncio``, for AsyncStore) then failed after a plain
install, while every test passed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]

# Every module of the package but __main__ (which runs the CLI), imported in a fresh
# interpreter that cannot import the top-level modules given as its argument (JSON), as
# if their distributions were not installed: an optional import (Mako's of Pygments, say)
# falls back, a needed one fails.
IMPORT_EVERYTHING = """
import importlib, json, pkgutil, sys

absent = set(json.loads(sys.argv[1]))

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in absent:
            raise ModuleNotFoundError(f"No module named {name!r} (an extra's)", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
import bitemporal
for module in pkgutil.walk_packages(bitemporal.__path__, "bitemporal."):
    if not module.name.endswith(".__main__"):
        importlib.import_module(module.name)
"""


def installed_with(distribution: str) -> set[str]:
    """The distributions a plain install of ``distribution`` brings (itself included):
    its requirements without extras, theirs with the extras they name, and so on, each
    as installed here (markers evaluated for this interpreter)."""
    found: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [(distribution, frozenset[str]())]
    while pending:
        name, extras = pending.pop()
        if (canonicalize_name(name), extras) in seen:
            continue
        seen.add((canonicalize_name(name), extras))
        found.add(canonicalize_name(name))
        for text in metadata.requires(name) or ():
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in extras | {""}):
                pending.append((requirement.name, frozenset(requirement.extras)))
    return found


def test_every_module_of_the_package_imports_after_a_plain_install() -> None:
    installed = installed_with("bitemporal")
    absent = sorted(
        module
        for module, owners in metadata.packages_distributions().items()
        if not {canonicalize_name(d) for d in owners} & installed
    )
    assert "pytest" in absent and "sqlalchemy" not in absent  # what the check hides
    run = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING, json.dumps(absent)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, f"needs a package that only an extra installs:\n{run.stderr}"


def test_the_closure_follows_extras_named_by_requirements() -> None:
    # greenlet comes through SQLAlchemy's asyncio extra, which the package asks for;
    # pytest only through the test extra, which a plain install leaves out.
    installed = installed_with("bitemporal")
    assert {"sqlalchemy", "greenlet", "psycopg", "psycopg-binary", "alembic"} <= installed
    assert "pytest" not in installed and "hypothesis" not in installed


def test_the_lowest_versions_ci_installs_are_the_floors_of_pyproject() -> None:
    # .ci/run runs the PostgreSQL 15 suite on these: a floor raised or lowered in
    # pyproject.toml without that file would no longer be the one tested.
    floors = {}
    for text in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        requirement = Requirement(text)
        [floor] = [s.version for s in requirement.specifier if s.operator == ">="]
        floors[canonicalize_name(requirement.name)] = floor
    pinned = {}
    for line in (ROOT / ".ci" / "lowest-versions.txt").read_text().splitlines():
        if line := line.partition("#")[0].strip():
            name, _, version = line.partition("==")
            pinned[canonicalize_name(name)] = version
    assert pinned == floors
