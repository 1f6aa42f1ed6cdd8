"""The witness over HTTP: ``POST /add-checkpoint`` as C2SP ``tlog-witness`` defines it, and
``GET /`` naming the witness's key and the logs it witnesses."""

from __future__ import annotations

import asyncio
import time

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, Response

from services.transparency.note import Signer, Verifier
from services.witness.state import WitnessState
from services.witness.witnessing import add_checkpoint

MAX_REQUEST_BYTES = 64 * 1024
"""A checkpoint with its signatures and a proof of 64 hashes fits many times over."""


def witness_app(witness: Signer, logs: list[Verifier], state: WitnessState) -> FastAPI:
    app = FastAPI(title="Spades audit log witness", openapi_url=None, docs_url=None)
    known = {log.name: log for log in logs}
    latest = state.load()
    lock = asyncio.Lock()

    @app.get("/")
    async def about() -> PlainTextResponse:
        lines = [f"witness {witness.verifier.text()}", *(f"log {log.text()}" for log in logs)]
        return PlainTextResponse("\n".join(lines) + "\n")

    @app.post("/add-checkpoint")
    async def add(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_REQUEST_BYTES:
            return PlainTextResponse("the request is too large\n", status_code=413)
        try:
            text = body.decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            return PlainTextResponse("the request is not UTF-8\n", status_code=400)
        async with lock:  # one decision at a time: each sees the last one's state
            outcome = add_checkpoint(text, known, latest, witness, int(time.time()))
            if outcome.cosigned is not None:
                updated = {**latest, outcome.cosigned.origin: outcome.cosigned}
                state.save(updated)  # kept before the cosignature leaves
                latest.update(updated)
            elif outcome.status == 422:
                state.keep_evidence(text, outcome.body)
        media = "text/x.tlog.size" if outcome.status == 409 else "text/plain; charset=utf-8"
        return Response(outcome.body, status_code=outcome.status, media_type=media)

    return app
