"""The bot runner over HTTP, against an in-process table that answers like the gateway.

The table is the domain behind a mock transport: views, actions with idempotency keys and
problem+json refusals, and a live server-sent event stream. The runner's behaviour against the
real stack is the end-to-end test's business.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest

from domain.commands import CreateGame, TakeSeat, from_api
from domain.errors import RuleViolation
from domain.game import decide, evolve
from domain.shuffle import SeededDeal
from domain.state import Game
from domain.views import event_for, public_view, seat_view
from services.bots.runner import play_game, play_games
from services.bots.strategy import Bot
from services.client import ApiError, SpadesClient

CONFLICTS = {"not_your_turn", "wrong_phase", "game_over", "seat_taken", "conflict"}


def problem(code: str, detail: str = "") -> httpx.Response:
    status = 503 if code == "unavailable" else 409 if code in CONFLICTS else 422
    body = {"type": "about:blank", "title": code, "status": status, "detail": detail, "code": code}
    headers = {"Content-Type": "application/problem+json", "Retry-After": "0"}
    return httpx.Response(status, json=body, headers=headers)


class FakeTable:
    """Games kept in memory and served as the gateway serves them."""

    def __init__(
        self, *, refuse_first: int = 0, lose_first: int = 0, unavailable_views: int = 0
    ) -> None:
        self.games: dict[str, Game] = {}
        self.history: dict[str, list[Any]] = {}
        self.answers: dict[tuple[str, int, str], httpx.Response] = {}
        self.keys: list[str] = []
        self.changed = asyncio.Condition()
        self.rng = random.Random(7)
        self.refuse_first = refuse_first
        """Answer this many first actions with a 409 not_your_turn, as if the table moved on."""
        self.lose_first = lose_first
        """Apply this many first actions but lose their answer on the way back."""
        self.unavailable_views = unavailable_views
        """Answer this many first view reads with a 503, as when NATS does not answer."""
        self.streams = 0

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    async def handle(self, request: httpx.Request) -> httpx.Response:
        parts = request.url.path.strip("/").split("/")[2:]  # after v1/games
        if request.method == "POST" and not parts:
            return await self._create(msgspec.json.decode(request.content))
        game_id, rest = parts[0], parts[1:]
        seat = self._seat_of(request)
        if request.method == "POST" and rest == ["seats"]:
            return await self._take_seat(game_id, msgspec.json.decode(request.content))
        if request.method == "POST" and rest == ["actions"]:
            assert seat is not None
            return await self._act(game_id, seat, request)
        if rest == ["view"]:
            assert seat is not None
            if self.unavailable_views > 0:
                self.unavailable_views -= 1
                return problem("unavailable", "the event store did not answer in time")
            return httpx.Response(
                200, json=msgspec.to_builtins(seat_view(self.games[game_id], seat))
            )
        if rest == ["events", "stream"]:
            last = request.headers.get("Last-Event-ID")
            return httpx.Response(
                200,
                headers={"Content-Type": "text/event-stream"},
                content=self._stream(game_id, seat, None if last is None else int(last)),
            )
        return httpx.Response(200, json=msgspec.to_builtins(public_view(self.games[game_id])))

    @staticmethod
    def _seat_of(request: httpx.Request) -> int | None:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        return int(token.removeprefix("tok-")) if token.startswith("tok-") else None

    async def _apply(self, game_id: str, command: Any) -> list[tuple[int, Any]]:
        game = self.games.get(game_id)
        events = decide(game, command, deal=SeededDeal(self.rng.randbytes(32)))
        start = len(self.history.setdefault(game_id, []))
        for event in events:
            game = evolve(game, event)
            self.history[game_id].append(event)
        assert game is not None
        self.games[game_id] = game
        async with self.changed:
            self.changed.notify_all()
        return [(start + k + 1, event) for k, event in enumerate(events)]

    async def _create(self, body: dict[str, Any]) -> httpx.Response:
        game_id = f"g{len(self.games) + 1}"
        await self._apply(game_id, CreateGame(game_id, body["rules"]))
        return httpx.Response(201, json=msgspec.to_builtins(public_view(self.games[game_id])))

    async def _take_seat(self, game_id: str, body: dict[str, Any]) -> httpx.Response:
        seat = body["seat"]
        await self._apply(game_id, TakeSeat(body["player"], seat))
        return httpx.Response(
            201,
            json={
                "seat": seat,
                "player": body["player"],
                "token": f"tok-{seat}",
                "expires_at": "2099-01-01T00:00:00Z",
            },
        )

    async def _act(self, game_id: str, seat: int, request: httpx.Request) -> httpx.Response:
        key = request.headers.get("Idempotency-Key", "")
        self.keys.append(key)
        if (game_id, seat, key) in self.answers:
            return self.answers[(game_id, seat, key)]
        if self.refuse_first > 0:
            self.refuse_first -= 1
            return problem("not_your_turn", "the table moved on")
        try:
            applied = await self._apply(
                game_id, from_api(seat, msgspec.json.decode(request.content))
            )
        except RuleViolation as refusal:
            return problem(refusal.code, refusal.detail)
        records = [
            {"version": v, "event": msgspec.to_builtins(event_for(e, seat))} for v, e in applied
        ]
        answer = httpx.Response(200, json={"version": applied[-1][0], "events": records})
        self.answers[(game_id, seat, key)] = answer
        if self.lose_first > 0:
            self.lose_first -= 1
            raise httpx.ReadError("the answer was lost", request=request)
        return answer

    async def _stream(
        self, game_id: str, seat: int | None, after: int | None
    ) -> AsyncIterator[bytes]:
        """A state event (unless resuming), then every event as it happens; every other stream
        ends after a few events, to make the client resume with ``Last-Event-ID``."""
        self.streams += 1
        ends = self.streams % 2 == 0
        history = self.history[game_id]
        if after is None:
            view = msgspec.to_builtins(seat_view(self.games[game_id], seat or 0))
            yield frame("state", len(history), view)
            after = len(history)
        sent = 0
        while True:
            while after < len(history):
                event = event_for(history[after], seat)
                after += 1
                yield frame(event.__struct_config__.tag, after, event)
                sent += 1
                if ends and sent >= 5:
                    return
            await self._grown_past(history, after)

    async def _grown_past(self, history: list[Any], length: int) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: len(history) > length)


def frame(kind: Any, position: int, data: Any) -> bytes:
    return f"event: {kind}\nid: {position}\ndata: {msgspec.json.encode(data).decode()}\n\n".encode()


async def seated(client: SpadesClient, rules: dict[str, Any]) -> tuple[str, dict[int, str]]:
    game = await client.create_game(rules)
    seats = {}
    for seat in range(len(game.seats)):
        seats[seat] = (await client.take_seat(game.game_id, f"bot {seat}", seat=seat)).token
    return game.game_id, seats


@pytest.mark.parametrize(
    "preset", ["partnership", "solo", "cutthroat", "three-player-house", "two-player"]
)
async def test_bots_play_a_game_to_its_end_over_http(preset: str) -> None:
    table = FakeTable()
    async with SpadesClient("http://spades.test", transport=table.transport()) as client:
        game_id, seats = await seated(client, {"preset": preset, "max_hands": 1})
        # A long quiet wait: the game must be driven by the stream's wake-ups, not by polling.
        outcome = await asyncio.wait_for(
            play_game(client, game_id, seats, Bot, quiet_s=60), timeout=30
        )
    assert table.games[game_id].status == "finished"
    assert outcome.winners == list(table.games[game_id].winners)
    assert outcome.actions == sum(seat.actions for seat in outcome.seats) > 0
    assert table.streams > len(seats)  # streams ended and were resumed


async def test_a_refused_action_is_chosen_again_from_a_fresh_view() -> None:
    table = FakeTable(refuse_first=3)
    async with SpadesClient("http://spades.test", transport=table.transport()) as client:
        game_id, seats = await seated(client, {"preset": "two-player", "max_hands": 1})
        outcome = await asyncio.wait_for(
            play_game(client, game_id, seats, Bot, quiet_s=0.2), timeout=30
        )
    assert sum(seat.stale for seat in outcome.seats) == 3
    assert table.games[game_id].status == "finished"


async def test_an_action_whose_answer_was_lost_is_sent_again_with_the_same_key() -> None:
    table = FakeTable(lose_first=2)
    async with SpadesClient("http://spades.test", transport=table.transport()) as client:
        game_id, seats = await seated(client, {"preset": "cutthroat", "max_hands": 1})
        await asyncio.wait_for(play_game(client, game_id, seats, Bot), timeout=30)
    assert table.keys[0] == table.keys[1]  # the retry
    assert len(table.keys) == len(set(table.keys)) + 2  # only the lost ones were sent twice
    assert table.games[game_id].status == "finished"


async def test_several_games_are_created_and_played() -> None:
    table = FakeTable()
    finished: list[str] = []
    async with SpadesClient("http://spades.test", transport=table.transport()) as client:
        outcomes = await asyncio.wait_for(
            play_games(
                client,
                {"preset": "cutthroat", "max_hands": 1},
                3,
                Bot,
                concurrency=2,
                on_game=lambda outcome: finished.append(outcome.game_id),
            ),
            timeout=60,
        )
    assert sorted(finished) == sorted(o.game_id for o in outcomes) == ["g1", "g2", "g3"]
    assert all(game.status == "finished" for game in table.games.values())


async def test_a_seat_waits_out_an_unavailable_service() -> None:
    table = FakeTable(unavailable_views=12)  # more than the client's own retries
    async with SpadesClient("http://spades.test", transport=table.transport()) as client:
        game_id, seats = await seated(client, {"preset": "two-player", "max_hands": 1})
        await asyncio.wait_for(play_game(client, game_id, seats, Bot), timeout=30)
    assert table.unavailable_views == 0
    assert table.games[game_id].status == "finished"


async def test_a_service_down_for_longer_than_the_patience_stops_the_game() -> None:
    table = FakeTable(unavailable_views=10**6)
    async with SpadesClient("http://spades.test", transport=table.transport()) as client:
        game_id, seats = await seated(client, {"preset": "two-player", "max_hands": 1})
        with pytest.raises(ApiError) as stopped:
            await asyncio.wait_for(
                play_game(client, game_id, seats, Bot, patience_s=0.5), timeout=30
            )
    assert stopped.value.status == 503
