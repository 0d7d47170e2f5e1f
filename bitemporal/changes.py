"""What the store learned, superseded or retracted in a knowledge window.

:meth:`Facts.changes <bitemporal.Facts.changes>` wraps ``bitemporal.changes``
(``sql/changes.v1.sql``). In a window ``[known_from, known_to)``:

* **learned**: a version whose knowledge starts in the window and asserts
  something new. A remainder re-recorded when a write cut an older version
  (``carried_from`` set) repeats what was already known for that part of the
  valid time, so it is not learned;
* **superseded**: a version whose knowledge ends in the window because, at that
  knowledge time, the same source asserted a new value for all or part of its
  valid period (``by`` lists the new versions);
* **retracted**: a version whose knowledge ends in the window with no such new
  value (a sequenced delete).

A version can appear twice (learned, later superseded). Changes are ordered
by knowledge time, then version id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .model import ChangeKind, Key, Version, optional_key_parts
from .operations import Statement, Steps
from .periods import Instant, to_optional_instant


@dataclass(frozen=True, slots=True)
class Change:
    """One change of knowledge."""

    kind: ChangeKind
    #: The knowledge time it happened at.
    at: datetime
    version: Version
    #: For superseded: the versions that superseded it.
    by: tuple[int, ...] = ()


def fetch(
    known_from: Instant | None,
    known_to: Instant | None,
    *,
    key: Key | None = None,
) -> Steps[list[Change]]:
    """``bitemporal.changes`` as :class:`Change` objects: the steps of ``Facts.changes``
    (see :mod:`bitemporal.operations`)."""
    args = (
        to_optional_instant(known_from, name="known_from"),
        to_optional_instant(known_to, name="known_to"),
        *optional_key_parts(key),
    )
    rows = yield Statement(
        "SELECT change::text AS change, changed_at, version_id, entity, attribute, source, "
        "value, valid_period, known_period, recorded_by, carried_from, by_version_ids "
        "FROM bitemporal.changes(%s, %s, %s, %s)",
        args,
        dicts=True,
    )
    return [
        Change(
            ChangeKind(row["change"]),
            row["changed_at"],
            Version.from_row(row),
            tuple(row["by_version_ids"]),
        )
        for row in rows
    ]
