"""URL resolution (no database)."""

from __future__ import annotations

import pytest

from bitemporal import ConfigurationError
from bitemporal.database import database_url, psycopg_url, sqlalchemy_url


@pytest.mark.parametrize(
    ("url", "plain"),
    [
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgres://u@h/db", "postgresql://u@h/db"),
        ("postgresql+psycopg://u@h/db", "postgresql://u@h/db"),
        ("postgresql+psycopg2://u@h/db?sslmode=require", "postgresql://u@h/db?sslmode=require"),
    ],
)
def test_driver_suffixes(url: str, plain: str) -> None:
    assert psycopg_url(url) == plain
    assert sqlalchemy_url(url) == plain.replace("postgresql://", "postgresql+psycopg://")


def test_not_postgres() -> None:
    with pytest.raises(ConfigurationError, match="not a PostgreSQL URL"):
        psycopg_url("mysql://h/db")


def test_resolution_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://app")
    monkeypatch.setenv("BITEMPORAL_DATABASE_URL", "postgresql://ours")
    assert database_url("postgresql://given") == "postgresql://given"
    assert database_url() == "postgresql://ours"
    monkeypatch.delenv("BITEMPORAL_DATABASE_URL")
    assert database_url() == "postgresql://app"
