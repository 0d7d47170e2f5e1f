"""The shop, end to end: migrate with Alembic, write through bitemporal, ask with SQLAlchemy.

    python -m examples.shop.demo [DATABASE_URL]

The story: product A1 sells at 10.00 EUR from 1 January. A price of 12.00 from
1 March is decided, but the shop only learns it on 10 March. On 2 April it
turns out that March was billed at 11.50: a correction of a past period.
Every question below is a pair (valid_at, known_at).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import and_, create_engine, select
from sqlalchemy.orm import Session

from bitemporal.database import database_url, sqlalchemy_url
from bitemporal.orm import as_of, eligible, record

from .models import Price, Product


def day(month: int, d: int) -> datetime:
    return datetime(2026, month, d, tzinfo=UTC)


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return cfg


def write_history(session: Session) -> None:
    record(session, Product(sku="A1", name="Anvil"), valid_from=day(1, 1), known_at=day(1, 5))
    record(
        session,
        Price(sku="A1", currency="EUR", amount=Decimal("10.00")),
        valid_from=day(1, 1),
        known_at=day(1, 5),
    )
    # Decided for 1 March, learned on 10 March.
    record(
        session,
        Price(sku="A1", currency="EUR", amount=Decimal("12.00")),
        valid_from=day(3, 1),
        known_at=day(3, 10),
    )
    # Corrected on 2 April: March was 11.50.
    record(
        session,
        Price(sku="A1", currency="EUR", amount=Decimal("11.50")),
        valid_from=day(3, 1),
        valid_to=day(4, 1),
        known_at=day(4, 2),
    )


def price(session: Session, valid_at: datetime, known_at: datetime | None = None) -> Decimal | None:
    return session.scalar(
        select(Price.amount).where(
            eligible(Price, valid_at, known_at), Price.sku == "A1", Price.currency == "EUR"
        )
    )


def main(url: str) -> list[str]:
    command.upgrade(alembic_config(url), "head")
    engine = create_engine(sqlalchemy_url(url))
    lines: list[str] = []
    with Session(engine) as session:
        write_history(session)
        session.commit()
        questions = [
            ("price on 2 March, as known on 5 March", day(3, 2), day(3, 5)),
            ("price on 2 March, as known on 15 March", day(3, 2), day(3, 15)),
            ("price on 2 March, as known now", day(3, 2), None),
            ("price on 2 April, as known now", day(4, 2), None),
            ("price on 15 December 2025, as known now", datetime(2025, 12, 15, tzinfo=UTC), None),
        ]
        for label, valid_at, known_at in questions:
            amount = price(session, valid_at, known_at)
            lines.append(f"{label}: {'missing' if amount is None else amount}")
        # A join of two bitemporal tables at one question.
        row = session.execute(
            as_of(Product, day(3, 2))
            .add_columns(Price.amount)
            .join(Price, and_(Price.sku == Product.sku, eligible(Price, day(3, 2))))
        ).one()
        lines.append(f"on 2 March, as known now: {row[0].name} at {row[1]} EUR")
    engine.dispose()
    return lines


if __name__ == "__main__":
    for line in main(sys.argv[1] if len(sys.argv) > 1 else database_url()):
        print(line)
