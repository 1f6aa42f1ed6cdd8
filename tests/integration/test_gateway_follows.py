"""The gateway follows the game stream: a game it holds takes each commit as the engine
appends it, before anyone reads the game again (a read then finds it current)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from services.gateway.deps import Gateway
from services.runtime.nats_server import EmbeddedNats
from tests.integration import stack
from tests.integration.support import EngineProcess
from tests.integration.test_gateway import ServedGateway, bearer, gateway_settings, open_table

pytestmark = pytest.mark.integration

engine = stack.engine


async def test_a_held_game_takes_the_engines_commits_without_being_read(
    shared_nats: EmbeddedNats, engine: EngineProcess, tmp_path: Path
) -> None:
    del engine  # running: it decides and appends
    with ServedGateway(gateway_settings(shared_nats.url, tmp_path)) as served:
        app = served.server.config.app
        assert isinstance(app, FastAPI)
        services: Gateway = app.state.gateway
        async with httpx.AsyncClient(base_url=served.url, timeout=10) as client:
            table = await open_table(client, {"preset": "partnership"})
            public = (await client.get(table.url)).json()
            held = services.games.peek(table.game_id)
            assert held is not None
            assert held.version == public["version"]
            seat = public["turn"]
            view = await client.get(f"{table.url}/view", headers=bearer(table.tokens[seat]))
            bid = next(action for action in view.json()["legal"] if action["type"] == "bid")
            acted = await client.post(
                f"{table.url}/actions", json=bid, headers=bearer(table.tokens[seat])
            )
            assert acted.status_code == 200, acted.text
            version = acted.json()["version"]
            # No read of the game since: only the follower can bring the commit in.
            async with asyncio.timeout(10):
                # The follower runs on the server's own loop, in its thread: no event of it can
                # be awaited here.
                while held.version < version:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            assert services.games.peek(table.game_id) is held
            assert held.state is not None
            assert held.state.version == version
