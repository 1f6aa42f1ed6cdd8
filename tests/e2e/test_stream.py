"""The event stream: a ``state`` event first, then every event with its version as ``id``;
``Last-Event-ID`` resumes after it; the service endpoints answer as docs/api.md says."""

from __future__ import annotations

import asyncio
import base64
import random
from contextlib import aclosing
from typing import Any

import httpx
import msgspec
import pytest

from contracts.log_entries import HandEnd, read_entry
from services.client import ServerSentEvent, SpadesClient
from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import leaf_hash, verify_inclusion
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
    assert [m.json() for m in messages] == [msgspec.to_builtins(record.event) for record in public]
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


async def all_messages(
    client: SpadesClient,
    game_id: str,
    last_event_id: str | None = None,
    opened: asyncio.Event | None = None,
) -> list[ServerSentEvent]:
    """Every message of the stream, until the server closes it (it must, within the timeout);
    ``opened`` is set at the first."""
    messages: list[ServerSentEvent] = []

    async def read() -> None:
        async with aclosing(client.stream(game_id, last_event_id=last_event_id)) as stream:
            async for message in stream:
                messages.append(message)
                if opened is not None:
                    opened.set()

    await asyncio.wait_for(read(), READ_TIMEOUT_S)
    return messages


def check_receipt(receipt: dict[str, Any], game_id: str, hand: int) -> None:
    """The receipt is of that hand, and its leaf is in the tree its checkpoint names."""
    assert (receipt["game_id"], receipt["hand"]) == (game_id, hand)
    entry = base64.b64decode(receipt["entry_bytes"])
    assert read_entry(entry) == msgspec.convert(receipt["entry"], HandEnd)
    checkpoint = Checkpoint.parse(receipt["checkpoint"].split("\n\n", 1)[0] + "\n")
    assert checkpoint.size == receipt["tree_size"]
    path = [base64.b64decode(node) for node in receipt["inclusion_proof"]]
    verify_inclusion(
        leaf_hash(entry), receipt["leaf_index"], checkpoint.size, path, checkpoint.root
    )


async def test_a_finished_games_stream_ends_with_an_end_frame_and_is_closed(
    client: SpadesClient,
) -> None:
    table = await seat_players(client, {"preset": "two-player", "max_hands": 1}, random.Random(3))
    opened = asyncio.Event()
    following = asyncio.create_task(all_messages(client, table.game_id, opened=opened))
    await asyncio.wait_for(opened.wait(), READ_TIMEOUT_S)
    final = await table.play_out()
    everything = await following  # opened as the game began: ends once it ends
    receipts = [m for m in everything if m.event == "receipt"]
    live = [m for m in everything if m.event != "receipt"]
    assert [m.event for m in live[-2:]] == ["game_ended", "end"]
    assert live[-1].json() == {"reason": "game_over", "version": final.version}
    assert live[-1].id == str(final.version)
    assert [m.id for m in live[1:-1]] == [
        str(v) for v in range(live[0].json()["version"] + 1, final.version + 1)
    ]
    # The hand's receipt comes after the hand ends, before the end, with the last id sent.
    assert [m.event for m in everything[-3:]] == ["game_ended", "receipt", "end"]
    (receipt,) = receipts
    assert receipt.id == str(final.version)
    check_receipt(receipt.json(), table.game_id, hand=1)

    fresh = await all_messages(client, table.game_id)  # opened after the end: state, then end
    assert [(m.event, m.id) for m in fresh] == [
        ("state", str(final.version)),
        ("end", str(final.version)),
    ]
    behind = await all_messages(client, table.game_id, str(final.version - 2))
    assert [m.event for m in behind][-1] == "end"
    assert [m.id for m in behind] == [
        str(final.version - 1),
        str(final.version),
        str(final.version),
    ]

    url = f"/v1/games/{table.game_id}/events/stream"
    async with httpx.AsyncClient(base_url=client.base_url, timeout=READ_TIMEOUT_S) as http:
        caught_up = await http.get(
            url,
            headers={
                "Authorization": f"Bearer {client.api_key}",
                "Last-Event-ID": str(final.version),
            },
        )
    assert caught_up.status_code == 204  # nothing left: an EventSource stops reconnecting
    assert caught_up.content == b""


async def test_every_frame_of_a_clocked_game_has_an_id_and_a_clock_resumes_exactly(
    client: SpadesClient,
) -> None:
    created = await client.create_game(
        {"preset": "two-player", "max_hands": 1}, clock={"turn_s": 0.02, "on_timeout": "auto"}
    )
    opened = asyncio.Event()
    following = asyncio.create_task(all_messages(client, created.game_id, opened=opened))
    await asyncio.wait_for(opened.wait(), READ_TIMEOUT_S)
    for seat in (0, 1):  # nobody acts: the service plays every move, each a commit and a clock
        await client.take_seat(created.game_id, f"p{seat}", seat=seat)
    messages = await following
    assert all(m.id is not None and m.id.isdigit() for m in messages), messages
    clocks = [at for at, m in enumerate(messages) if m.event == "clock"]
    assert len(clocks) > 10
    for at in clocks:  # a clock carries the id of the event just before it
        assert messages[at - 1].event not in ("clock", "state")
        assert messages[at].id == messages[at - 1].id
    assert messages[-1].event == "end"
    after_clock = messages[clocks[len(clocks) // 2]]
    resumed = await all_messages(client, created.game_id, after_clock.id)
    # a receipt is sent once, live, after its hand ends: a resumed stream goes on from events
    frames = ("state", "clock", "receipt", "end")
    events = [m for m in messages if m.event not in frames]
    expected = [m.id for m in events if int(m.id or 0) > int(after_clock.id or 0)]
    assert [m.id for m in resumed if m.event not in frames] == expected
