"""The shop's SQLAlchemy models: each object is one version of a row."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import MetaData, Numeric, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from bitemporal.orm import Bitemporal


class Base(DeclarativeBase):
    metadata = MetaData(schema="shop")


class Product(Base, Bitemporal):
    __tablename__ = "product"
    __bitemporal_key__ = ("sku",)

    sku: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text)


class Price(Base, Bitemporal):
    __tablename__ = "price"
    __bitemporal_key__ = ("sku", "currency")

    sku: Mapped[str] = mapped_column(Text)
    currency: Mapped[str] = mapped_column(Text)
    amount: Mapped[Decimal] = mapped_column(Numeric(10, 2))


class Supplier(Base, Bitemporal):
    """A table that existed before and was converted (migration shop0002)."""

    __tablename__ = "supplier"
    __bitemporal_key__ = ("id",)

    id: Mapped[int] = mapped_column()
    name: Mapped[str] = mapped_column(Text)
