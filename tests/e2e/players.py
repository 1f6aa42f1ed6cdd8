"""Random players that sit at a table and play a game to its end, only through the HTTP API.

Every move is taken from the seat's own ``legal`` list; a pass or a discard due
(``{"type": "pass", "count": n}``) is answered with n cards of the seat's ``hand``. The players
keep what they sent, so a test can hold the hand records up against it.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from services.client import Acted, LegalLook, PublicState, SeatTaken, SeatView, SpadesClient

PRESETS: dict[str, dict[str, Any]] = {
    "partnership": {"preset": "partnership", "target": 150, "max_hands": 2},
    "solo": {"preset": "solo", "target": 150, "max_hands": 2},
    "cutthroat": {"preset": "cutthroat", "target": 150, "max_hands": 2},
    "three-player-house": {"preset": "three-player-house", "target": 150, "max_hands": 2},
    "two-player": {"preset": "two-player", "target": 150, "max_hands": 2},
    "six-player": {"preset": "six-player", "target": 150, "max_hands": 2},
    "jokers-54": {"preset": "jokers-54", "target": 150, "max_hands": 2},
}
VARIATIONS: dict[str, Any] = {
    "preset": "jokers-54",
    "first_hand": "no_bid",
    "blind_bids": 6,
    "boston": True,
    "blind_boston": True,
    "target": 150,
    "max_hands": 2,
}
"""The rest of seed 002's table at once: a first hand without bidding, then blind bids."""
NAMES = ("north", "east", "south", "west", "nadir", "zenith")
MAX_MOVES = 2000
"""No game of a few hands needs more; beyond this the table is stuck."""


@dataclass(frozen=True)
class Move:
    """One accepted action: which hand, which seat, what it sent, the version it led to."""

    hand: int
    seat: int
    action: dict[str, Any]
    version: int


@dataclass
class Style:
    """How a random player leans: how often it looks before it must, and bids blind nil."""

    look_early: float = 0.3
    look_first: float = 0.5
    blind_nil: float = 0.0


@dataclass
class Table:
    """A game and its seated random players."""

    client: SpadesClient
    game_id: str
    seats: list[SeatTaken]
    rng: random.Random
    style: Style = field(default_factory=Style)
    moves: list[Move] = field(default_factory=list)
    on_view: Callable[[SeatView], None] | None = None
    on_result: Callable[[int, Acted], None] | None = None

    @property
    def tokens(self) -> list[str]:
        return [seat.token for seat in self.seats]

    async def views(self) -> list[SeatView]:
        return list(await asyncio.gather(*(self.client.view(self.game_id, t) for t in self.tokens)))

    async def step(self) -> bool:
        """Make one move; False once the game is over."""
        views = await self.views()
        for view in views:
            if self.on_view is not None:
                self.on_view(view)
        if views[0].status == "finished":
            return False
        movers = [view for view in views if _has_move(view)]
        assert movers, f"no seat has a move: {[view.legal for view in views]}"
        idle_lookers = [view for view in views if view.legal == [LegalLook()]]
        if idle_lookers and self.rng.random() < self.style.look_early:
            view, action = self.rng.choice(idle_lookers), {"type": "look"}
        else:
            view = self.rng.choice(movers)
            action = choose(view, self.rng, self.style)
        result = await self.client.act(
            self.game_id, self.tokens[view.seat], action, idempotency_key=uuid.uuid4().hex
        )
        if self.on_result is not None:
            self.on_result(view.seat, result)
        self.moves.append(Move(view.hand_number, view.seat, action, result.version))
        return True

    async def play_out(self) -> PublicState:
        """Play until the game ends; return its final public state."""
        for _ in range(MAX_MOVES):
            if not await self.step():
                return await self.client.state(self.game_id)
        raise AssertionError(f"game {self.game_id} did not end in {MAX_MOVES} moves")

    def bids_of(self, hand: int) -> dict[int, Any]:
        return {
            m.seat: m.action["bid"]
            for m in self.moves
            if m.hand == hand and m.action["type"] == "bid"
        }

    def discards_of(self, hand: int) -> list[tuple[int, list[str]]]:
        return [
            (m.seat, m.action["cards"])
            for m in self.moves
            if m.hand == hand and m.action["type"] == "discard"
        ]

    def plays_of(self, hand: int) -> list[tuple[int, str]]:
        return [
            (m.seat, m.action["card"])
            for m in self.moves
            if m.hand == hand and m.action["type"] == "play"
        ]


def _has_move(view: SeatView) -> bool:
    return any(not isinstance(action, LegalLook) for action in view.legal)


def choose(view: SeatView, rng: random.Random, style: Style) -> dict[str, Any]:
    """A random legal action of the seat: looking first sometimes, blind nil as the style
    leans, a pass or a discard made of random cards of its hand (looking first if it must)."""
    legal: list[dict[str, Any]] = msgspec.to_builtins(view.legal)  # as they are posted
    if {"type": "look"} in legal and rng.random() < style.look_first:
        return {"type": "look"}
    blind = {"type": "bid", "bid": "blind_nil"}
    if blind in legal and rng.random() < style.blind_nil:
        return blind
    action = dict(rng.choice([a for a in legal if a["type"] != "look"]))
    if action["type"] in ("pass", "discard"):
        if view.hand is None:
            assert action["type"] == "discard", "a seat that owes a pass must see its hand"
            return {"type": "look"}
        cards = rng.sample([c.value for c in view.hand], action["count"])
        return {"type": action["type"], "cards": cards}
    return action


async def seat_players(
    client: SpadesClient,
    rules: Mapping[str, Any],
    rng: random.Random,
    *,
    dealer: int | None = None,
    style: Style | None = None,
) -> Table:
    """Create a game and fill every seat, in a random order, with a random player."""
    game = await client.create_game(rules, dealer=dealer, entropy=rng.randbytes(8).hex())
    players = len(game.seats)
    order = rng.sample(range(players), players)
    seats: list[SeatTaken | None] = [None] * players
    for number in order:
        seats[number] = await client.take_seat(
            game.game_id, NAMES[number], seat=number, entropy=rng.randbytes(8).hex()
        )
    taken = [seat for seat in seats if seat is not None]
    assert [seat.seat for seat in taken] == list(range(players))
    return Table(client, game.game_id, taken, rng, style or Style())
