"""The worked example, replayed into a scratch database and asked every kind of question.

An attachment limit is 50 MB from 2026-01-01. It changes to 80 MB on
2026-09-01, but the change is ingested only on 2026-09-03. On 2026-09-20 an
announcement is ingested: 100 MB from 2026-10-01. On 2026-09-30 a second
source claims 90 MB for September.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TextIO

import psycopg

from .database import database_url, scratch_database
from .facts import Answer, Key
from .migrations import migrate
from .report import format_table, stamp
from .store import Store

KEY = Key("mailer:prod", "attachment_limit_mb")


def _at(day: str, hour: int = 12) -> datetime:
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC)


@dataclass(frozen=True)
class Write:
    value: int
    source: str
    valid_from: date
    valid_to: date | None
    known_at: datetime
    note: str


WRITES = (
    Write(50, "policy", date(2026, 1, 1), None, _at("2025-12-15"), "the rule as first published"),
    Write(80, "policy", date(2026, 9, 1), None, _at("2026-09-03", 9), "the change, ingested two days late"),
    Write(100, "policy", date(2026, 10, 1), None, _at("2026-09-20"), "an announcement"),
    Write(90, "forum", date(2026, 9, 1), date(2026, 10, 1), _at("2026-09-30"), "a second source disagreeing"),
)


@dataclass(frozen=True)
class Question:
    kind: str
    valid_at: datetime
    known_at: datetime
    now: datetime


_NOW = _at("2026-09-29")

QUESTIONS = (
    Question("current", _NOW, _NOW, _NOW),
    Question("historical", _at("2026-06-15"), _NOW, _NOW),
    Question("retrospective", _at("2026-09-02"), _NOW, _NOW),
    Question("known then", _at("2026-09-02"), _at("2026-09-02"), _NOW),
    Question("announced future", _at("2026-10-15"), _NOW, _NOW),
    Question("missing", _at("2025-06-01"), _NOW, _NOW),
    Question("conflict", _at("2026-09-15"), _at("2026-10-05"), _at("2026-10-05")),
    Question("boundary: 31 August", _at("2026-08-31", 23).replace(minute=59, second=59, microsecond=999999),
             _at("2026-09-03"), _NOW),
    Question("boundary: 1 September", _at("2026-09-01", 0), _at("2026-09-03"), _NOW),
)


def _answer_text(answer: Answer) -> str:
    if not answer.values:
        return "-"
    return " | ".join(f"{v} MB" for v in answer.values)


def run(out: TextIO, url: str | None = None) -> list[tuple[Question, Answer]]:
    """Replay the example into a scratch database, print every answer, return them."""
    with scratch_database(database_url(url), "bitemporal_demo") as scratch:
        migrate(scratch)
        with psycopg.connect(scratch, autocommit=True) as conn:
            store = Store(conn)
            version = conn.info.server_version // 10000
            out.write(f"bitemporal demo on PostgreSQL {version}: {KEY}\n\nWhat the store was told:\n")
            for w in WRITES:
                store.facts.record(
                    KEY, w.value, source=w.source, valid_from=w.valid_from,
                    valid_to=w.valid_to, known_at=w.known_at,
                )
                until = f" until {w.valid_to}" if w.valid_to else ""
                out.write(
                    f"  on {stamp(w.known_at)}  {w.source:<6}  {w.value} MB from {w.valid_from}"
                    f"{until}  ({w.note})\n"
                )
            answers = [
                (q, store.facts.resolve(KEY, valid_at=q.valid_at, known_at=q.known_at, now=q.now))
                for q in QUESTIONS
            ]
    header = ("question", "asked on", "valid at", "known at", "answer", "status",
              "interpretation", "sources")
    rows = [
        (q.kind, stamp(a.now), stamp(a.valid_at), stamp(a.known_at), _answer_text(a), a.status.value,
         a.interpretation.value, ", ".join(a.sources) or "-")
        for q, a in answers
    ]
    out.write("\nWhat it answers (times in UTC):\n")
    out.write(format_table(header, rows))
    return answers
