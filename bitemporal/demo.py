"""The worked example, replayed into a scratch database and asked every kind of question.

An attachment limit is 50 MB from 2026-01-01. It changes to 80 MB on
2026-09-01, but the change is ingested only on 2026-09-03. On 2026-09-20 an
announcement is ingested: 100 MB from 2026-10-01. On 2026-09-30 a second
source claims 90 MB for September.

Then, for agents: retrieval ranked alone, nearest-then-filter and filter-then-rank
on three passages (relevance 0.97, 0.93, 0.99), the answer object as one sentence
and checks of two replies, a summary found stale after the update, and what
changed in September.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TextIO

import psycopg

from .database import database_url, scratch_database
from .formatting import format_table, stamp
from .migrations import migrate
from .model import Answer, Key
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
    Write(
        80,
        "policy",
        date(2026, 9, 1),
        None,
        _at("2026-09-03", 9),
        "the change, ingested two days late",
    ),
    Write(100, "policy", date(2026, 10, 1), None, _at("2026-09-20"), "an announcement"),
    Write(
        90,
        "forum",
        date(2026, 9, 1),
        date(2026, 10, 1),
        _at("2026-09-30"),
        "a second source disagreeing",
    ),
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
    Question(
        "boundary: 31 August",
        _at("2026-08-31", 23).replace(minute=59, second=59, microsecond=999999),
        _at("2026-09-03"),
        _NOW,
    ),
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
            out.write(
                f"bitemporal demo on PostgreSQL {version}: {KEY} (times in UTC)\n\n"
                "What the store was told:\n"
            )
            versions: list[int] = []
            for w in WRITES:
                versions.append(
                    store.facts.record(
                        KEY,
                        w.value,
                        source=w.source,
                        valid_from=w.valid_from,
                        valid_to=w.valid_to,
                        known_at=w.known_at,
                    ).version_id
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
            agents = _for_agents(store, versions)
    header = (
        "question",
        "asked on",
        "valid at",
        "known at",
        "answer",
        "status",
        "interpretation",
        "sources",
    )
    rows = [
        (
            q.kind,
            stamp(a.now),
            stamp(a.valid_at),
            stamp(a.known_at),
            _answer_text(a),
            a.status.value,
            a.interpretation.value,
            ", ".join(a.sources) or "-",
        )
        for q, a in answers
    ]
    out.write("\nWhat it answers:\n")
    out.write(format_table(header, rows))
    out.write(agents)
    return answers


# For agents: retrieval that filters before it ranks, the answer object and a check of a
# reply, a stale summary found after an update, and what changed.

#: The passage each write came from, and its relevance to "attachment limit" according to
#: some external engine: the announcement is the most similar text, the rule in force the least.
PASSAGES = (
    ("Attachments are limited to 50 MB per message.", "policy-2026.pdf#limits", 0.97),
    ("From 1 September the attachment limit is 80 MB.", "policy-2026-09.pdf#limits", 0.93),
    ("Announcement: the attachment limit rises to 100 MB on 1 October.", "news/2026-09-20", 0.99),
)

REPLIES = (
    "The attachment limit is 100 MB.",
    "Per the policy, the limit will be 100 MB from 1 October 2026.",
)


def _unit(similarity: float) -> list[float]:
    """A 2-d unit vector whose cosine similarity to (1, 0) is ``similarity``."""
    return [similarity, (1 - similarity * similarity) ** 0.5]


def _for_agents(store: Store, versions: list[int]) -> str:
    lines: list[str] = []
    vectors = store.evidence.vector_available()
    if vectors:
        store.evidence.enable_vector(2)
    scores: dict[int, float] = {}
    for version_id, (passage, document, relevance) in zip(versions, PASSAGES, strict=False):
        store.evidence.add(
            version_id, passage, document=document, embedding=_unit(relevance) if vectors else None
        )
        scores[version_id] = relevance
    by_id = {v.version_id: v for v in store.facts.history(KEY)}

    asked = _NOW
    lines.append(
        f"\nFor agents: retrieval, asked on {stamp(asked)} what applies then "
        "(relevance from an external engine):\n"
    )
    table = [
        (f'"{passage}"', f"from {by_id[v].valid_period.start:%Y-%m-%d}", f"{relevance:.2f}")
        for v, (passage, _, relevance) in zip(versions, PASSAGES, strict=False)
    ]
    lines.extend(
        "  " + line
        for line in format_table(("passage", "valid", "relevance"), table).splitlines(True)
    )
    nearest = max(scores, key=scores.__getitem__)
    eligible = {
        v.carried_from or v.version_id
        for v in store.facts.as_of(KEY, valid_at=asked, known_at=asked)
    }
    kept = [v for v in [nearest] if v in eligible]
    [ranked] = store.evidence.rank(scores, valid_at=asked, known_at=asked, limit=1)
    [searched] = store.evidence.search("attachment limit", valid_at=asked, known_at=asked, limit=1)
    start = by_id[nearest].valid_period.start

    def mb(value: object) -> str:
        return f"{value} MB".ljust(7)

    lines.append(
        f"  ranking alone:         {mb(by_id[nearest].value)} (an announcement, in force only "
        f"from {start:%Y-%m-%d}: wrong for {stamp(asked)})\n"
    )
    shown = mb(by_id[kept[0]].value) if kept else "-".ljust(7)
    lines.append(
        f"  nearest, then filter:  {shown} (missing, although the rule in force is in the store)\n"
    )
    lines.append(
        f"  filter, then rank:     {mb(ranked.value)} (store.evidence.rank: only passages valid "
        f"then are ranked; full-text search gives {searched.value} MB too)\n"
    )
    if vectors:
        [near] = store.evidence.nearest([1.0, 0.0], valid_at=asked, known_at=asked, limit=1)
        lines.append(
            f"  vector similarity:     {mb(near.value)} (store.evidence.nearest: pgvector, "
            "filtered before ranking)\n"
        )
    else:
        lines.append(
            "  vector similarity:     unavailable on this server (no pgvector: SQLSTATE BT201); "
            "full-text search and caller scores work everywhere\n"
        )

    lines.append(
        "\nWhat an agent is handed (store.facts.explain(...).sentence()), and checks of replies:\n"
    )
    announced = store.facts.explain(KEY, valid_at=_at("2026-10-15"), known_at=asked, now=asked)
    then = store.facts.explain(
        KEY, valid_at=_at("2026-09-02"), known_at=_at("2026-09-02"), now=asked
    )
    lines.append(f"  {announced.sentence()}\n")
    lines.append(f"  {then.sentence()}\n")
    for reply in REPLIES:
        report = announced.check(reply)
        verdicts = ", ".join(f"{f.fact} {f.verdict.value}" for f in report.findings)
        lines.append(f'  reply "{reply}": {verdicts}\n')

    chunk = store.provenance.record(
        "chunk", "policy-2026.pdf#limits", versions=[versions[0]], derived_at=_at("2026-09-02", 10)
    )
    summary = store.provenance.record(
        "summary", "mailer limits", artifacts=[chunk], derived_at=_at("2026-09-02", 11)
    )
    lines.append(
        f"\nProvenance: on {stamp(summary.derived_at)} a summary was derived from a chunk of "
        f"the policy, itself derived from version {versions[0]} (50 MB):\n"
    )
    for when in (_at("2026-09-02"), asked):
        stale = store.provenance.stale(when)
        lines.append(f"  stale as known on {stamp(when)}:{' none' if not stale else ''}\n")
        for artifact in stale:
            for reason in artifact.reasons:
                lines.append(f"    {artifact.kind} {artifact.ref!r}: {reason.text}\n")

    lines.append("\nWhat changed in September (store.facts.changes(2026-09-01, 2026-10-01)):\n")
    changes = [
        (
            stamp(c.at),
            c.kind.value,
            c.version.source,
            f"{c.version.value} MB",
            f"version {c.version.version_id}"
            + (f", by {', '.join(map(str, c.by))}" if c.by else ""),
        )
        for c in store.facts.changes(_at("2026-09-01", 0), _at("2026-10-01", 0), key=KEY)
    ]
    lines.extend(
        "  " + line
        for line in format_table(
            ("known at", "change", "source", "value", "version"), changes
        ).splitlines(True)
    )
    return "".join(lines)
