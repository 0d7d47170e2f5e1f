"""A small web service on bitemporal's async API (FastAPI).

Run it with ``uvicorn examples.service.app:app`` from the checkout, the database
given by ``BITEMPORAL_DATABASE_URL`` and migrated beforehand (``bitemporal db
upgrade``). Endpoints:

* ``POST /facts/{entity}/{attribute}``: record a value (``Facts.record``);
* ``GET /facts/{entity}/{attribute}``: the answer object (``Facts.explain``) for
  ``valid_at`` / ``known_at``, relative to ``now`` (default: the database's);
* ``GET /facts/{entity}/{attribute}/history``: every version (``Facts.history``);
* ``GET /changes``: what was learned, superseded or retracted in a knowledge
  window (``Facts.changes``), for every key or one.

Instants are ISO 8601 with an offset. Refused input answers 422, an unknown key
404, a knowledge-time conflict 409, each as ``{"error", "message", "hint"}``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import psycopg_pool
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

import bitemporal
from bitemporal.database import database_url, psycopg_url
from bitemporal.formatting import iso_time
from bitemporal.jsonvalues import JSON, dumps


class ExactJSON(JSONResponse):
    """JSON with numbers exactly as stored (a Decimal stays a Decimal, never a float)."""

    def render(self, content: Any) -> bytes:
        return dumps(content).encode()


class Record(BaseModel):
    """The body of ``POST /facts/{entity}/{attribute}``."""

    value: Any
    source: str
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    known_at: datetime | None = None
    recorded_by: str | None = None
    idempotency_key: str | None = None


def version(v: bitemporal.Version) -> dict[str, JSON]:
    return {
        "version_id": v.version_id,
        "source": v.source,
        "value": v.value,
        "valid_from": iso_time(v.valid_period.start),
        "valid_to": iso_time(v.valid_period.end),
        "known_from": iso_time(v.known_period.start),
        "known_to": iso_time(v.known_period.end),
        "recorded_by": v.recorded_by,
        "carried_from": v.carried_from,
    }


def create_app(url: str | None = None) -> FastAPI:
    """The service on the database at ``url`` (default: ``BITEMPORAL_DATABASE_URL``)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        resolved = database_url(url)
        # Fail at start-up, with bitemporal's message, if the schema is missing or behind.
        async with await bitemporal.connect_async(resolved):
            pass
        async with psycopg_pool.AsyncConnectionPool(
            psycopg_url(resolved), kwargs={"autocommit": True}, min_size=1, max_size=8
        ) as pool:
            app.state.store = bitemporal.AsyncStore(pool)
            yield

    app = FastAPI(
        title="bitemporal example service", lifespan=lifespan, default_response_class=ExactJSON
    )

    def store(request: Request) -> bitemporal.AsyncStore:
        found: bitemporal.AsyncStore = request.app.state.store
        return found

    @app.exception_handler(bitemporal.BitemporalError)
    async def refused(request: Request, exc: bitemporal.BitemporalError) -> ExactJSON:
        status = (
            422
            if isinstance(exc, bitemporal.InvalidInputError)
            else 404
            if isinstance(exc, LookupError)
            else 409
            if isinstance(exc, bitemporal.KnowledgeTimeError)
            else 500
        )
        return ExactJSON(
            {"error": type(exc).__name__, "message": str(exc), "hint": exc.hint}, status_code=status
        )

    @app.post("/facts/{entity}/{attribute}", status_code=201)
    async def record(entity: str, attribute: str, body: Record, request: Request) -> Any:
        done = await store(request).facts.record(
            bitemporal.Key(entity, attribute),
            body.value,
            source=body.source,
            valid_from=body.valid_from,
            valid_to=body.valid_to,
            known_at=body.known_at,
            recorded_by=body.recorded_by,
            idempotency_key=body.idempotency_key,
        )
        return {
            "version_id": done.version_id,
            "created": done.created,
            "superseded": list(done.superseded),
            "known_at": iso_time(done.known_at),
        }

    @app.get("/facts/{entity}/{attribute}")
    async def resolve(
        entity: str,
        attribute: str,
        request: Request,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
        now: datetime | None = None,
    ) -> Any:
        answer = await store(request).facts.explain(
            bitemporal.Key(entity, attribute), valid_at=valid_at, known_at=known_at, now=now
        )
        return answer.as_dict()

    @app.get("/facts/{entity}/{attribute}/history")
    async def history(entity: str, attribute: str, request: Request) -> Any:
        return [
            version(v)
            for v in await store(request).facts.history(bitemporal.Key(entity, attribute))
        ]

    @app.get("/changes")
    async def changes(
        request: Request,
        known_from: datetime | None = None,
        known_to: datetime | None = None,
        entity: str | None = None,
        attribute: str | None = None,
    ) -> Any:
        key = None if entity is None or attribute is None else bitemporal.Key(entity, attribute)
        found = await store(request).facts.changes(known_from, known_to, key=key)
        return [
            {
                "kind": c.kind.value,
                "at": iso_time(c.at),
                "version": version(c.version),
                "by": list(c.by),
            }
            for c in found
        ]

    return app


#: The app uvicorn serves (``uvicorn examples.service.app:app``).
app = create_app()
