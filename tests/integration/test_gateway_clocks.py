"""Clocks through the HTTP API: the create body, the public state's ``clock``, the event
stream's ``clock`` frames and timed-out events, an away seat's ``back``; a real uvicorn, a real
nats-server, an engine and a timer worker as their own processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.runtime.nats_server import EmbeddedNats
from tests.integration import stack
from tests.integration.support import EngineProcess, ProjectionsProcess, ServiceProcess
from tests.integration.test_gateway import (
    ServedGateway,
    Table,
    bearer,
    frames_of,
    gateway_settings,
    next_event,
)

pytestmark = pytest.mark.integration

engine = stack.engine
data_dir = stack.data_dir
projections = stack.projections


class TimersProcess(ServiceProcess):
    service = "timers"


@pytest.fixture(scope="module")
def timers(
    shared_nats: EmbeddedNats, engine: EngineProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TimersProcess]:
    process = TimersProcess(shared_nats.url, tmp_path_factory.mktemp("timers"))
    process.start()
    process.wait_ready("timers ready")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def gateway(
    shared_nats: EmbeddedNats,
    engine: EngineProcess,
    timers: TimersProcess,
    projections: ProjectionsProcess,
    data_dir: Path,
) -> Iterator[str]:
    settings = gateway_settings(shared_nats.url, data_dir, min_turn_s=0)  # turns of 20 ms
    with ServedGateway(settings, keep_alive_s=0.3, min_version_wait_s=1.0) as served:
        yield served.url


@pytest.fixture
async def client(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=10) as http:
        yield http


async def clocked_table(client: httpx.AsyncClient, clock: dict[str, Any]) -> Table:
    body = {"rules": {"preset": "partnership", "max_hands": 1}, "dealer": 3, "clock": clock}
    created = await client.post("/v1/games", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["clock"]["turn_s"] == clock["turn_s"]
    table = Table(client, created.json()["game_id"])
    for seat in range(4):
        taken = await client.post(f"{table.url}/seats", json={"player": f"p{seat}", "seat": seat})
        assert taken.status_code == 201, taken.text
        table.tokens[seat] = taken.json()["token"]
    return table


def seconds(rfc3339: str) -> float:
    return datetime.fromisoformat(rfc3339).timestamp()


async def test_the_public_state_shows_each_seats_bank_and_the_deadline_of_the_seat_on_turn(
    client: httpx.AsyncClient,
) -> None:
    clock = {"turn_s": 600, "bank_s": 60, "on_timeout": "auto", "away_after": 2}
    table = await clocked_table(client, clock)
    state = await table.public()
    shown = state["clock"]
    assert {key: shown[key] for key in clock} == clock
    assert [seat["bank_s"] for seat in shown["seats"]] == [60] * 4
    assert not any(seat["away"] for seat in shown["seats"])
    turn = state["turn"]
    assert turn == 0
    events = await table.events()
    seated = events[-1]["version"]
    assert state["version"] == seated
    deadline = seconds(shown["deadline"])
    assert shown["seats"][turn]["deadline"] == shown["deadline"]
    assert all(seat["deadline"] is None for seat in shown["seats"] if seat["seat"] != turn)
    assert 600 + 60 - 30 < deadline - datetime.now().timestamp() <= 660
    view = await table.view(1)
    assert view["clock"] == shown  # everyone sees the same clock, no card in it
    assert {"type": "back"} not in view["legal"]


@pytest.mark.parametrize(
    "clock",
    [
        {"turn_s": 0},
        {"turn_s": -5},
        {"turn_s": 10, "bank_s": -1},
        {"turn_s": 10, "on_timeout": "explode"},
        {"turn_s": 10, "away_after": -1},
        {"turn_s": 10, "extra": 1},
        {"bank_s": 10},
        {"turn_s": "ten"},
        "fast",
        [],
    ],
)
async def test_a_clock_that_cannot_run_is_refused_never_a_500(
    client: httpx.AsyncClient, clock: Any
) -> None:
    body = {"rules": {"preset": "partnership"}, "clock": clock}
    response = await client.post("/v1/games", json=body)
    assert 400 <= response.status_code < 500, response.text
    assert response.headers["content-type"] == "application/problem+json"


async def test_the_stream_announces_timeouts_and_the_clock_without_a_card(
    client: httpx.AsyncClient,
) -> None:
    table = await clocked_table(client, {"turn_s": 0.2, "on_timeout": "auto", "away_after": 1})
    stream = f"{table.url}/events/stream"
    async with (
        client.stream("GET", stream) as public,
        client.stream("GET", stream, params={"access_token": table.tokens[1]}) as seat_1,
    ):
        watched, other = frames_of(public), frames_of(seat_1)
        state = await next_event(watched)
        assert state.event == "state"
        assert state.json["clock"]["deadline"] is not None
        seen: list[Any] = []
        while not any(frame.event == "bid_placed" for frame in seen):
            seen.append(await next_event(watched))
        seen.append(await next_event(watched))  # the clock after the commit
        kinds = [frame.event for frame in seen]
        assert kinds[:4] == ["timed_out", "seat_away", "hand_looked", "bid_placed"]
        assert seen[0].json == {"type": "timed_out", "seat": 0}
        looked = next(frame for frame in seen if frame.event == "hand_looked")
        assert looked.json["cards"] is None  # the service looked for seat 0: still hidden
        assert seen[4].event == "clock"
        assert seen[4].json["seats"][0] == {
            "seat": 0,
            "bank_s": 0,
            "away": True,
            "timeouts": 1,
            "deadline": None,
        }
        assert seen[4].json["seats"][1]["deadline"] == seen[4].json["deadline"]
        # Seat 1's own stream: seat 0's cards stay hidden from it too.
        while (frame := await next_event(other)).event != "hand_looked":
            pass
        assert frame.json["seat"] == 0
        assert frame.json["cards"] is None
    events = await table.events()  # the page of events shows timeouts as they are
    assert {"type": "timed_out", "seat": 0} in [record["event"] for record in events]


async def test_an_away_seat_is_offered_back_and_comes_back(client: httpx.AsyncClient) -> None:
    table = await clocked_table(client, {"turn_s": 0.1, "on_timeout": "auto", "away_after": 1})
    async with client.stream("GET", f"{table.url}/events/stream") as public:
        frames = frames_of(public)
        while (await next_event(frames)).event != "seat_away":
            pass
    view = await table.view(0)
    if view["status"] == "playing":
        assert {"type": "back"} in view["legal"]
        back = await client.post(
            f"{table.url}/actions", json={"type": "back"}, headers=bearer(table.tokens[0])
        )
        assert back.status_code == 200, back.text
        assert back.json()["events"][0]["event"] == {"type": "seat_returned", "seat": 0}
        again = await client.post(
            f"{table.url}/actions", json={"type": "back"}, headers=bearer(table.tokens[0])
        )
        assert again.status_code == 409, again.text
        assert again.json()["code"] == "wrong_phase"


async def test_the_platform_marks_a_seat_away_and_it_is_played_for_at_once(
    client: httpx.AsyncClient,
) -> None:
    table = await clocked_table(client, {"turn_s": 600, "on_timeout": "auto"})
    marked = await client.post(f"{table.url}/seats/2/away")
    assert marked.status_code == 200, marked.text
    assert [record["event"] for record in marked.json()["events"]] == [
        {"type": "seat_away", "seat": 2, "reason": "marked"}
    ]
    again = await client.post(f"{table.url}/seats/2/away")
    assert again.status_code == 200, again.text
    assert again.json()["events"] == []
    async with client.stream("GET", f"{table.url}/events/stream") as public:
        frames = frames_of(public)
        for seat in (0, 1):  # the seats before it bid for themselves
            view = await table.view(seat)
            bid = next(action for action in view["legal"] if action["type"] == "bid")
            acted = await table.act(seat, {"type": "bid", "bid": bid["bid"]})
            assert acted.status_code == 200, acted.text
        bids: list[int] = []
        while len(bids) < 3:
            frame = await next_event(frames)
            if frame.event == "bid_placed":
                bids.append(frame.json["seat"])
        assert bids == [0, 1, 2]  # seat 2's at once, not after 600 s
    events = [record["event"] for record in await table.events()]
    assert {"type": "timed_out", "seat": 2} in events


async def test_marking_a_seat_away_in_a_game_without_a_clock_is_refused(
    client: httpx.AsyncClient,
) -> None:
    created = await client.post("/v1/games", json={"rules": {"preset": "partnership"}})
    assert created.status_code == 201
    response = await client.post(f"/v1/games/{created.json()['game_id']}/seats/0/away")
    assert response.status_code == 409, response.text
    assert response.json()["code"] == "wrong_phase"
    missing = await client.post("/v1/games/no-such-game/seats/0/away")
    assert missing.status_code == 404


async def test_the_hand_record_names_the_moves_the_service_made(
    client: httpx.AsyncClient,
) -> None:
    table = await clocked_table(client, {"turn_s": 0.02, "on_timeout": "auto"})
    async with client.stream("GET", f"{table.url}/events/stream") as public:
        frames = frames_of(public)
        while (frame := await next_event(frames)).event != "game_ended":
            pass
        assert frame.id is not None
        ended = int(frame.id)
    for _ in range(30):  # the read model catches up (each try waits up to 1 s for it)
        response = await client.get(f"{table.url}/hands", params={"min_version": ended})
        if response.status_code != 503:
            break
    assert response.status_code == 200, response.text
    # one hand, or more when the sides were level after it (a tie on top plays on)
    record = response.json()["hands"][0]
    moves = record["timed_out"]
    assert len(moves) == 4 + 52
    assert sum(move["move"] == "bid" for move in moves) == 4
    plays = [(move["trick"], move["seat"]) for move in moves if move["move"] == "play"]
    played = [
        (number, card["seat"])
        for number, trick in enumerate(record["tricks"], start=1)
        for card in trick["cards"]
    ]
    assert plays == played  # every card of every trick, each in its trick, by its seat


async def test_the_python_client_reads_the_clock(gateway: str) -> None:
    from services.client import SpadesClient

    async with SpadesClient(gateway) as api:
        created = await api.create_game(
            {"preset": "partnership"}, clock={"turn_s": 300, "bank_s": 30}
        )
        assert created.clock is not None
        assert created.clock.on_timeout == "auto"
        for seat in range(4):
            await api.take_seat(created.game_id, f"p{seat}")
        state = await api.state(created.game_id)
    assert state.clock is not None
    assert state.clock.deadline is not None
    assert state.clock.seats[state.turn or 0].deadline == state.clock.deadline
    assert [seat.bank_s for seat in state.clock.seats] == [30] * 4
