"""The bare peer of ``spades bench http``: the least a FastAPI service that stores actions can do.

The same FastAPI, uvicorn (run with the gateway's options) and nats-py as the gateway. Its
action appends one message to a JetStream file stream (with a ``Nats-Msg-Id``, as the engine's
appends have) and waits for the acknowledgement; its view answers a small JSON. It keeps no
rules: whoever is on turn is the version modulo four, and the one legal action is a play. Its
paths are the gateway's, so one client drives both.

Run as ``python -m benchmarks.http_peer --port P --nats-url URL [--creds PATH]``.
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import nats
import uvicorn
from fastapi import Body, FastAPI, Header
from nats.js import api

from services.gateway.server import UVICORN_OPTIONS
from services.runtime.credentials import connect_options

PEER_STREAM = "SPADES_BENCH_PEER"
PEER_SUBJECTS = "bench.peer.>"


def create_peer(nats_url: str, credentials: Path | None) -> FastAPI:
    """The bare app; it connects to NATS and makes its stream when it starts."""
    held: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        connection = await nats.connect(nats_url, **connect_options(credentials))
        js = connection.jetstream()
        with contextlib.suppress(Exception):
            await js.delete_stream(PEER_STREAM)
        await js.add_stream(
            api.StreamConfig(
                name=PEER_STREAM,
                subjects=[PEER_SUBJECTS],
                storage=api.StorageType.FILE,
                duplicate_window=120,
            )
        )
        held["js"] = js
        held["versions"] = {}
        try:
            yield
        finally:
            await connection.close()

    app = FastAPI(lifespan=lifespan)

    @app.post("/v1/games", status_code=201)
    async def create() -> dict[str, Any]:
        game_id = secrets.token_hex(8)
        held["versions"][game_id] = 0
        return {"game_id": game_id, "version": 0, "status": "waiting"}

    @app.post("/v1/games/{game_id}/seats", status_code=201)
    async def sit(game_id: str, body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
        return {"seat": body.get("seat", 0), "token": f"{game_id}.{body.get('seat', 0)}"}

    @app.get("/v1/games/{game_id}/view")
    async def view(game_id: str, authorization: Annotated[str, Header()]) -> dict[str, Any]:
        version = held["versions"].get(game_id, 0)
        seat = int(authorization.rpartition(".")[2])
        turn = version % 4
        legal = [{"type": "play", "card": "AS"}] if seat == turn else []
        return {
            "game_id": game_id,
            "version": version,
            "status": "playing",
            "turn": turn,
            "seat": seat,
            "legal": legal,
        }

    @app.post("/v1/games/{game_id}/actions")
    async def act(
        game_id: str,
        action: Annotated[dict[str, Any], Body()],
        authorization: Annotated[str, Header()],
    ) -> dict[str, Any]:
        data = f'{{"game":"{game_id}","by":"{authorization[-1]}","action":"{action.get("type")}"}}'
        ack = await held["js"].publish(
            f"bench.peer.{game_id}", data.encode(), headers={"Nats-Msg-Id": secrets.token_hex(16)}
        )
        version = held["versions"].get(game_id, 0) + 1
        held["versions"][game_id] = version
        return {"version": version, "events": [{"version": version, "sequence": ack.seq}]}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--nats-url", required=True)
    parser.add_argument("--creds", type=Path, default=None)
    options = parser.parse_args()
    uvicorn.run(
        create_peer(options.nats_url, options.creds),
        host="127.0.0.1",
        port=options.port,
        **UVICORN_OPTIONS,  # the gateway's own (services/gateway/server.py)
    )


if __name__ == "__main__":
    main()
