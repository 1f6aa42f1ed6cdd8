"""The event stream: a ``state`` event first, then every event with its version as ``id``;
``Last-Event-ID`` resumes after it; the service endpoints answer as docs/api.md says."""

from __future__ import annotations

import asyncio
import random
from contextlib import aclosing

import httpx
import pytest

from services.client import ServerSentEvent, SpadesClient
from tests.e2e.players import PRESETS, Table, seat_players
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

READ_TIMEOUT_S = 10.0


async def a_game_under_way(client: SpadesClient, moves: int) -> Table:
    table = await seat_players(client, PRESETS["two-player"], random.Random("stream"))
    for _ in range(moves):
        assert await table.step()
    return table


async def first_messages(
    client: SpadesClient, game_id: str, last_event_id: str | None, until: int
) -> list[ServerSentEvent]:
    """The stream's messages up to the one whose id is ``until`` (or its first ``state``)."""
    messages: list[ServerSentEvent] = []

    async def read() -> None:
        async with aclosing(client.stream(game_id, last_event_id=last_event_id)) as stream:
            async for message in stream:
                messages.append(message)
                if message.event == "state" or message.id == str(until):
                    return

    await asyncio.wait_for(read(), READ_TIMEOUT_S)
    return messages


async def test_a_stream_starts_with_the_state(client: SpadesClient) -> None:
    table = await a_game_under_way(client, moves=6)
    state = await client.state(table.game_id)
    messages = await first_messages(client, table.game_id, None, until=state.version)
    assert [m.event for m in messages] == ["state"]
    assert messages[0].id == str(state.version)
    assert messages[0].json()["version"] == state.version


async def test_last_event_id_resumes_after_it(client: SpadesClient) -> None:
    table = await a_game_under_way(client, moves=8)
    version = (await client.state(table.game_id)).version
    resume_after = version - 5
    messages = await first_messages(client, table.game_id, str(resume_after), until=version)
    assert [m.id for m in messages] == [str(v) for v in range(resume_after + 1, version + 1)]
    public = await client.events(table.game_id, after=resume_after)
    assert [m.json() for m in messages] == [record.event for record in public]
    assert [m.event for m in messages] == [record.type for record in public]


@pytest.mark.parametrize("last_event_id", ["1000000", "not-a-position"])
async def test_a_position_it_cannot_resume_from_gets_a_fresh_state(
    client: SpadesClient, last_event_id: str
) -> None:
    table = await a_game_under_way(client, moves=2)
    version = (await client.state(table.game_id)).version
    messages = await first_messages(client, table.game_id, last_event_id, until=version)
    assert [m.event for m in messages] == ["state"]


async def test_the_service_endpoints(stack: Stack) -> None:
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=READ_TIMEOUT_S) as http:
        health = await http.get("/healthz")
        ready = await http.get("/readyz")
        metrics = await http.get("/metrics")
        document = await http.get("/openapi.json")
    assert health.status_code == 200
    assert ready.status_code == 200
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    assert "# TYPE" in metrics.text
    paths = document.json()["paths"]
    for path in (
        "/v1/games",
        "/v1/games/{game_id}",
        "/v1/games/{game_id}/seats",
        "/v1/games/{game_id}/view",
        "/v1/games/{game_id}/actions",
        "/v1/games/{game_id}/events",
        "/v1/games/{game_id}/events/stream",
        "/v1/games/{game_id}/hands",
        "/v1/games/{game_id}/hands/{hand}",
        "/v1/games/{game_id}/scoreboard",
        "/v1/games/{game_id}/audit",
    ):
        assert path in paths, path
