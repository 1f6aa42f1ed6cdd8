"""A table of random players driving one game over NATS, with full knowledge of the cards.

The players see what the engine replies (each reply redacted for the seat that acted); the
deal itself comes from the commit in the event store (the reply names its stream sequence),
as only the house may read it. With that, the table folds the same state as the engine and
picks uniformly among :func:`domain.game.legal_actions`. Used by ``spades bench commands``
and by the engine's integration tests.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from contracts.wire import ActRequest, CommandReply, CreateGameRequest, TakeSeatRequest
from domain.commands import to_api
from domain.events import AnyEvent, HandDealt
from domain.game import DiscardDue, PassDue, evolve, legal_actions, seat_to_act
from domain.state import Game, cards_held
from services.runtime.engine_client import EngineClient, new_command_id
from services.runtime.game_stream import GameStream

UNAVAILABLE_RETRIES = 20


class RefusedError(Exception):
    def __init__(self, reply: CommandReply) -> None:
        super().__init__(f"{reply.code}: {reply.detail}")
        self.reply = reply


class RandomTable:
    """One game, every seat played at random by this object."""

    def __init__(
        self,
        client: EngineClient,
        stream: GameStream,
        game_id: str,
        rng: random.Random,
        *,
        avoid_blind_nil: bool = False,
    ) -> None:
        self.client = client
        self.stream = stream
        self.game_id = game_id
        self.rng = rng
        self.state: Game | None = None
        self.latencies: list[float] = []
        self.commands = 0
        self.unavailable = 0
        """Answers ``unavailable`` that were tried again."""
        self.avoid_blind_nil = avoid_blind_nil

    async def apply(self, reply: CommandReply) -> None:
        """Follow the game by a reply (the deal read from the store)."""
        if not reply.ok:
            raise RefusedError(reply)
        events: list[AnyEvent] = [record.event for record in reply.events]
        if any(isinstance(event, HandDealt) for event in events):
            events = (await self.stream.read_one(self.game_id, reply.sequence)).commit.events
        for event in events:
            self.state = evolve(self.state, event)

    async def _send(self, body: Any, command_id: str | None = None) -> CommandReply:
        """Send a command, again under the same id while the engine answers ``unavailable``
        (its append found no stream leader for a moment, as a client retries a 503)."""
        command_id = command_id or new_command_id()
        start = time.perf_counter()
        for retry in range(UNAVAILABLE_RETRIES):
            reply = await self.client.send(self.game_id, body, command_id)
            if reply.code != "unavailable":
                break
            self.unavailable += 1
            await asyncio.sleep(0.05 * (retry + 1))  # the stream elects a leader meanwhile
        self.latencies.append(time.perf_counter() - start)
        self.commands += 1
        return reply

    async def open(self, rules: dict[str, Any], dealer: int | None = 0) -> None:
        """Create the game and take every seat (the last one deals the first hand)."""
        await self.apply(await self._send(CreateGameRequest(rules=rules, dealer=dealer)))
        assert self.state is not None
        for seat in range(self.state.rules.players):
            body = TakeSeatRequest(
                player=f"player {seat}", seat=seat, entropy=self.rng.randbytes(8).hex()
            )
            await self.apply(await self._send(body))

    def next_action(self) -> tuple[int, dict[str, Any]]:
        """A seat to act and a random legal action of it, in the API's shape."""
        game = self.state
        assert game is not None
        hand = game.hand
        seat = seat_to_act(game)
        assert hand is not None
        assert seat is not None
        choices = legal_actions(game, seat)
        if self.avoid_blind_nil:
            choices = [c for c in choices if getattr(c, "bid", None) != "blind_nil"] or choices
        action = self.rng.choice(choices)
        if isinstance(action, (PassDue, DiscardDue)):
            cards = self.rng.sample(cards_held(hand, seat), action.count)
            return seat, to_api(action.choose(tuple(cards)))
        return seat, to_api(action)

    async def step(self) -> CommandReply:
        seat, action = self.next_action()
        reply = await self._send(ActRequest(seat=seat, action=action))
        await self.apply(reply)
        return reply

    @property
    def finished(self) -> bool:
        return self.state is not None and self.state.status == "finished"

    async def play_out(self, max_commands: int = 100_000) -> None:
        """Play until the game ends."""
        while not self.finished and self.commands < max_commands:
            await self.step()
