"""Issue 13's adoption, from the BUILT WHEEL: a scratch application (its own models, its own
Alembic history, an env.py with the library's one-line autogenerate opt-in, as
docs/existing-application.md says) in a temporary directory, run in a virtual environment
holding the installed wheel (tests/migrations/conftest.py). Every library call of the
application (alembic, its env.py and migrations, the ORM, the sync and async APIs, the CLI)
runs in subprocesses of that environment, from the temporary directory, with no
``PYTHONPATH``: the source tree cannot be imported, and the test checks that
``bitemporal`` is the wheel's copy. The test process itself only inspects the database.

tests/migrations/test_alembic_autogenerate.py covers the same ground (and conversions,
downgrades, type changes) in-process, against the checkout."""

from __future__ import annotations

import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from bitemporal.database import sqlalchemy_url
from tests.migrations.conftest import ROOT, WheelEnvironment
from tests.migrations.test_alembic_autogenerate import ENV

pytestmark = [
    pytest.mark.not_on_citus(
        "adopting the built wheel in a scratch application is the same on every server; it "
        "runs on the plain lanes (its Alembic autogenerate also sees the citus extension's "
        "objects)"
    ),
    pytest.mark.default_layout_only("a scratch application migrates an empty database"),
]

MODELS = """
import uuid
from decimal import Decimal

from sqlalchemy import ForeignKey, Numeric, Text, Uuid
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from bitemporal.orm import Bitemporal


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "customer"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(Text)


class Price(Base, Bitemporal):
    __tablename__ = "price"
    __bitemporal_key__ = ("sku",)
    sku: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Numeric(10, 2))
"""

# The new model of the second revision: a bitemporal table whose rows refer to a plain one.
CONTRACT = """

class Contract(Base, Bitemporal):
    __tablename__ = "contract"
    __bitemporal_key__ = ("id",)
    id: Mapped[uuid.UUID] = mapped_column(Uuid, default=uuid.uuid4)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customer.id"))
    terms: Mapped[str] = mapped_column(Text)
"""

# Run by the wheel's interpreter from the scratch directory: the ORM with a pending parent,
# and the worked example (docs/model.md, tests/integration/test_worked_example.py) asked of
# the sync and of the async API. Prints one JSON document.
CHECKS = """
import asyncio
import importlib.util
import json
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import psycopg
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

import bitemporal
from bitemporal.database import sqlalchemy_url
from bitemporal.orm import as_of, record

url = sys.argv[1]
spec = importlib.util.spec_from_file_location("models", Path("app_migrations/models.py"))
models = importlib.util.module_from_spec(spec)
spec.loader.exec_module(models)
out = {"bitemporal": bitemporal.__file__, "path": sys.path}

engine = create_engine(sqlalchemy_url(url))
with Session(engine) as session:
    session.add(models.Customer(id=2, name="Globex"))  # pending: not in the database yet
    contract = models.Contract(customer_id=2, terms="net 60")
    recorded = record(session, contract, valid_from=datetime(2026, 1, 1, tzinfo=UTC))
    session.commit()
with Session(engine) as session:
    rows = session.scalars(
        as_of(models.Contract, valid_at=datetime(2026, 2, 1, tzinfo=UTC)).where(
            models.Contract.customer_id == 2
        )
    ).all()
    out["orm"] = {
        "created": recorded.created,
        "rows": [[str(r.id), r.customer_id, r.terms, r.version_id] for r in rows],
        "key": str(contract.id),
        "version_id": recorded.version_id,
    }
engine.dispose()


def at(day, hour=12):
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC)


key = bitemporal.Key("mail", "attachment_limit_mb")
QUESTIONS = [
    (None, None, at("2026-09-29")),
    (at("2026-10-15"), None, at("2026-09-29")),
    (at("2026-09-02"), at("2026-09-02"), at("2026-09-29")),
    (at("2026-09-02"), None, at("2026-09-29")),
    (at("2026-06-15"), None, at("2026-09-29")),
    (at("2025-06-01"), None, at("2026-09-29")),
    (at("2026-09-15"), None, at("2026-10-05")),
    (at("2026-08-31", 23), at("2026-09-03", 12), at("2026-09-29")),
    (at("2026-09-01", 0), at("2026-09-03", 12), at("2026-09-29")),
]


def describe(answer):
    return [answer.status.value, list(answer.values), answer.interpretation.value, repr(answer)]


with psycopg.connect(url, autocommit=True) as conn:
    facts = bitemporal.Store(conn).facts
    facts.record(key, 50, source="policy", valid_from=date(2026, 1, 1), known_at=at("2025-12-15"))
    facts.record(
        key, 80, source="policy", valid_from=date(2026, 9, 1), known_at=at("2026-09-03", 9)
    )
    facts.record(
        key, 100, source="policy", valid_from=date(2026, 10, 1), known_at=at("2026-09-20")
    )
    facts.record(
        key, 90, source="forum", valid_from=date(2026, 9, 1), valid_to=date(2026, 10, 1),
        known_at=at("2026-09-30"),
    )
    out["sync"] = [
        describe(facts.resolve(key, valid_at=v, known_at=k, now=n)) for v, k, n in QUESTIONS
    ]
    out["sync_explain"] = facts.explain(
        key, valid_at=at("2026-09-15"), now=at("2026-10-05")
    ).as_dict()
    out["sync_history"] = repr(facts.history(key))


async def ask_async():
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        store = bitemporal.AsyncStore(conn)
        facts = store.facts
        answers = [
            describe(await facts.resolve(key, valid_at=v, known_at=k, now=n))
            for v, k, n in QUESTIONS
        ]
        explained = await facts.explain(key, valid_at=at("2026-09-15"), now=at("2026-10-05"))
        return answers, explained.as_dict(), repr(await facts.history(key)), type(store).__name__


out["async"], out["async_explain"], out["async_history"], out["async_store"] = asyncio.run(
    ask_async()
)
print(json.dumps(out, default=str))
"""

# The worked example's answers (tests/integration/test_worked_example.py), question by question.
EXPECTED = [
    ("supported", [80], "current"),
    ("supported", [100], "announced_future"),
    ("supported", [50], "known_then"),
    ("supported", [80], "retrospective"),
    ("supported", [50], "historical"),
    ("missing", [], "missing"),
    ("conflict", [80, 90], "retrospective"),
    ("supported", [50], "historical"),
    ("supported", [80], "retrospective"),
]


class App:
    """The scratch application: its directory, and its commands run in the wheel's
    environment."""

    def __init__(self, environment: WheelEnvironment, directory: Path, url: str) -> None:
        self.environment = environment
        self.directory = directory
        self.url = url

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.environment.run(*args, cwd=self.directory, check=check)

    def alembic(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = self.run("python", "-m", "alembic", *args, check=False)
        if check and result.returncode != 0:
            pytest.fail(f"alembic {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    @property
    def versions(self) -> Path:
        return self.directory / "app_migrations" / "versions"

    def revision(self, message: str, *, autogenerate: bool = True) -> Path:
        before = set(self.versions.glob("*.py"))
        self.alembic("revision", "-m", message, *(["--autogenerate"] if autogenerate else []))
        [script] = set(self.versions.glob("*.py")) - before
        return script


@pytest.fixture
def app(wheel_environment: WheelEnvironment, tmp_path: Path, empty_database_url: str) -> App:
    """A new scratch application: ``alembic init``, then the one-line opt-in in env.py."""
    app = App(wheel_environment, tmp_path, empty_database_url)
    app.alembic("init", "app_migrations")
    ini = tmp_path / "alembic.ini"
    url = sqlalchemy_url(empty_database_url).replace("%", "%%")
    ini.write_text(
        "\n".join(
            f"sqlalchemy.url = {url}" if line.startswith("sqlalchemy.url") else line
            for line in ini.read_text().splitlines()
        )
    )
    (tmp_path / "app_migrations" / "env.py").write_text(ENV)
    (tmp_path / "app_migrations" / "models.py").write_text(MODELS)
    return app


def test_the_library_is_imported_from_the_wheel(app: App) -> None:
    where = app.run("python", "-c", "import bitemporal, sys; print(bitemporal.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(app.environment.site_packages)
    assert not Path(where.stdout.strip()).is_relative_to(ROOT)
    # Nor could another copy be: the wheel's is the only package named bitemporal on the path
    # (the checkout's .venv, holding the dependencies, only has the editable install's .pth).
    path = app.run("python", "-c", "import sys; print('\\n'.join(sys.path))").stdout.splitlines()
    packages = [p for p in path if p and (Path(p) / "bitemporal" / "__init__.py").exists()]
    assert packages == [str(app.environment.site_packages)]
    assert str(ROOT) not in path and "" not in path[1:]


def test_a_scratch_application_adopts_the_wheel(app: App) -> None:
    url = app.url
    first = app.revision("first").read_text()
    assert "op.create_table('customer'" in first
    assert "op.create_bitemporal_table('price'" in first and "key=['sku']" in first
    app.alembic("upgrade", "head")
    app.alembic("check")

    # A new model with the Bitemporal mixin: autogenerate writes create_bitemporal_table.
    models = app.directory / "app_migrations" / "models.py"
    models.write_text(MODELS + CONTRACT)
    drift = app.alembic("check", check=False)
    assert drift.returncode != 0
    assert "New upgrade operations detected: [('add_bitemporal_table', None, 'contract'" in (
        drift.stdout + drift.stderr
    )
    second = app.revision("contract").read_text()
    upgrade, downgrade = second.split("def downgrade")
    assert "op.create_bitemporal_table('contract'" in upgrade and "key=['id']" in upgrade
    assert "op.create_table('contract'" not in upgrade and "version_id" not in upgrade
    assert "op.drop_bitemporal_table('contract')" in downgrade
    app.alembic("upgrade", "head")

    # Its generated write function works after `alembic upgrade head`, and reads back.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO customer VALUES (1, 'Acme')")
        row = conn.execute(
            "SELECT (public.contract_record(gen_random_uuid(), 1, 'net 30', "
            "'2026-01-01', NULL, NULL)).version_id"
        ).fetchone()
        assert row is not None and isinstance(row[0], int)
        assert conn.execute(
            "SELECT customer_id, terms, version_id FROM public.contract_as_of('2026-02-01')"
        ).fetchall() == [(1, "net 30", row[0])]
        conn.execute("SELECT public.price_record('A1', 9.50, '2026-01-01', NULL, NULL)")

    # Clean, with include_schemas=True (ENV): nothing of the library's schemas, the key
    # tables, the version columns, indexes or constraints is proposed.
    clean = app.alembic("check")
    assert "No new upgrade operations detected" in clean.stdout + clean.stderr

    # The ORM with a pending parent, and the worked example asked of both APIs.
    (app.directory / "app_checks.py").write_text(CHECKS)
    checks = json.loads(app.run("python", "app_checks.py", url).stdout)
    assert Path(checks["bitemporal"]).is_relative_to(app.environment.site_packages)
    orm = checks["orm"]
    assert orm["created"] is True
    assert orm["rows"] == [[orm["key"], 2, "net 60", orm["version_id"]]]
    assert [tuple(answer[:3]) for answer in checks["sync"]] == EXPECTED
    assert checks["async_store"] == "AsyncStore"
    assert checks["async"] == checks["sync"]  # repr of every Answer included
    assert checks["async_explain"] == checks["sync_explain"]
    assert checks["async_history"] == checks["sync_history"]

    # A migration dropping a column that holds history is refused, and changes nothing...
    drop = app.revision("drop amount", autogenerate=False)
    upgrade, downgrade = drop.read_text().split("def downgrade")
    drop.write_text(
        upgrade.replace("    pass", "    op.drop_column('price', 'amount')")
        + "def downgrade"
        + downgrade
    )
    assert "op.drop_column('price', 'amount')" in drop.read_text()
    refused = app.alembic("upgrade", "head", check=False)
    assert refused.returncode != 0
    assert "TableDefinitionError" in refused.stderr
    assert "op.drop_column on public.price refused: 1 versions" in refused.stderr
    with psycopg.connect(url) as conn:
        assert conn.execute(
            "SELECT sku, amount FROM public.price_as_of('2026-02-01')"
        ).fetchall() == [("A1", Decimal("9.50"))]
        [(head,)] = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        assert head in second
    # ...unless the migration says that it drops the history.
    drop.write_text(
        drop.read_text().replace(
            "op.drop_column('price', 'amount')",
            "op.drop_column('price', 'amount', bitemporal_drop_history=True)",
        )
    )
    app.alembic("upgrade", "head")
    with psycopg.connect(url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM information_schema.columns "
            "WHERE table_name = 'price' AND column_name = 'amount'"
        ).fetchone() == (0,)


def test_the_wheels_cli_fails_in_one_line(app: App) -> None:
    result = app.run(
        "bitemporal", "--url", "postgresql://127.0.0.1:1/x", "resolve", "E", "A", check=False
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


# The checkout's pytest settings that matter here; `pythonpath = .` is the scratch directory.
PYTEST_INI = """[pytest]
pythonpath = .
addopts = -p no:cacheprovider --strict-markers
markers =
    vector: needs the pgvector extension
    slow: takes more than a few seconds
filterwarnings =
    error
    ignore::DeprecationWarning
    ignore::PendingDeprecationWarning
    error::DeprecationWarning:bitemporal
    ignore:XDG_RUNTIME_DIR is not set
"""


def test_the_example_services_tests_pass_from_the_wheel(
    wheel_environment: WheelEnvironment, tmp_path: Path, server_url: str
) -> None:
    """tests/integration/test_example_service.py, with the test fixtures it needs and the
    example service, copied to a scratch directory and run by the wheel's interpreter
    against this session's server (its fixtures migrate their template database with the
    wheel's migrations)."""
    for name in (
        "tests/conftest.py",
        "tests/helpers.py",
        "tests/integration/test_example_service.py",
        "examples/service/__init__.py",
        "examples/service/app.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "pytest.ini").write_text(PYTEST_INI)
    result = wheel_environment.run(
        "python",
        "-m",
        "pytest",
        "-q",
        "tests/integration/test_example_service.py",
        cwd=tmp_path,
        check=False,
        env={"BITEMPORAL_TEST_DATABASE_URL": server_url},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout and "failed" not in result.stdout, result.stdout
    # And the service ran the wheel's library.
    where = wheel_environment.run(
        "python",
        "-c",
        "import examples.service.app as app; print(app.bitemporal.__file__)",
        cwd=tmp_path,
    )
    assert Path(where.stdout.strip()).is_relative_to(wheel_environment.site_packages)
