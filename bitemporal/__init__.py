"""bitemporal: a PostgreSQL fact store that knows when a fact applies and when it was learned."""

from .errors import (
    AppendOnlyError,
    BitemporalError,
    ConfigurationError,
    InvalidInputError,
    InvalidKeyError,
    InvalidPeriodError,
    InvalidTimeError,
    InvalidValueError,
    KnowledgeTimeError,
    KnowledgeTimeInFutureError,
    KnowledgeTimeInPastError,
    NaiveDatetimeError,
    SchemaNotMigratedError,
    UnknownKeyError,
)
from .facts import Answer, Facts, Interpretation, Key, Recorded, Status, Version
from .migrations import downgrade, migrate
from .periods import Period
from .store import Store, connect

__all__ = [
    "Answer",
    "AppendOnlyError",
    "BitemporalError",
    "ConfigurationError",
    "Facts",
    "Interpretation",
    "InvalidInputError",
    "InvalidKeyError",
    "InvalidPeriodError",
    "InvalidTimeError",
    "InvalidValueError",
    "Key",
    "KnowledgeTimeError",
    "KnowledgeTimeInFutureError",
    "KnowledgeTimeInPastError",
    "NaiveDatetimeError",
    "Period",
    "Recorded",
    "SchemaNotMigratedError",
    "Status",
    "Store",
    "UnknownKeyError",
    "Version",
    "connect",
    "downgrade",
    "migrate",
]
