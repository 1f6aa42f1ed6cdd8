"""SIGTERM to ``spades up`` stops every process it started, even with a client still following
a game; and nothing secret reached the logs on the way."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import aclosing
from pathlib import Path

import httpx
import pytest

from services.client import SpadesClient
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

PLATFORM_KEY = "shutdown-platform-key"


async def test_sigterm_stops_every_child_of_spades_up(tmp_path: Path) -> None:
    stack = Stack(tmp_path / "data", api_keys=PLATFORM_KEY)
    await asyncio.to_thread(stack.start)
    try:
        async with SpadesClient(stack.base_url, api_key=PLATFORM_KEY) as client:
            game = await client.create_game({"preset": "two-player"})
            seats = [await client.take_seat(game.game_id, name) for name in ("ann", "bob")]
            # A browser's way of following a game: the token in the query string.
            async with (
                httpx.AsyncClient(base_url=stack.base_url) as http,
                http.stream(
                    "GET",
                    f"/v1/games/{game.game_id}/events/stream",
                    params={"access_token": seats[1].token},
                ) as answer,
            ):
                assert answer.status_code == 200
            # A client following the game when the stop comes.
            following = await _open_stream(client, game.game_id, seats[0].token)

            children = stack.children()
            commands = " ".join(child.command for child in children)
            assert "nats-server" in commands
            for service in ("engine", "projections", "gateway"):
                assert f"serve {service}" in commands, commands

            status, left = await asyncio.to_thread(stack.terminate)
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                await following
    finally:
        if stack.process is not None and stack.process.poll() is None:
            stack.process.kill()

    assert status == 0, stack.log_tail()
    assert not left, f"still running after SIGTERM: {left}"
    log = stack.log_path.read_text(errors="replace")
    for secret in (PLATFORM_KEY, seats[0].token, seats[1].token):
        assert secret not in log, "a secret reached the log"


async def _open_stream(client: SpadesClient, game_id: str, token: str) -> asyncio.Task[None]:
    """Follow the game in a task, once its first message has arrived."""
    started = asyncio.Event()

    async def follow() -> None:
        async with aclosing(client.stream(game_id, token)) as stream:
            async for _message in stream:
                started.set()

    task = asyncio.create_task(follow())
    await asyncio.wait_for(started.wait(), timeout=10)
    return task
