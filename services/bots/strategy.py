"""Bots that choose an action from a seat view, exactly as the HTTP API serves it.

:class:`Bot` plays like a decent player; :class:`RandomPlayer` picks uniformly among the legal
actions (the benchmark's opponent). Both are pure: no I/O, and no randomness but a
``random.Random`` they are given. Each returns one of the view's ``legal`` actions, in the shape
it is posted (a pass with its cards chosen), or None when the seat has nothing to do yet.

    >>> from domain.commands import CreateGame, TakeSeat
    >>> from domain.shuffle import SeededDeal
    >>> from domain.game import decide, fold
    >>> from domain.views import seat_view
    >>> game = fold(decide(None, CreateGame("g", {"preset": "partnership"}, dealer=3)))
    >>> for seat in range(4):
    ...     game = fold(decide(game, TakeSeat(f"p{seat}"), deal=SeededDeal(b"s" * 32)), game)
    >>> Bot().act(seat_view(game, 0))  # seat 0 bids first: it looks at its cards
    {'type': 'look'}
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

from domain.bids import BLIND_NIL
from domain.cards import CARDS
from domain.rules import Rules, resolve_rules
from services.bots.bidding import choose_bid, wants_blind_bid, wants_blind_nil
from services.bots.discard import choose_discard
from services.bots.draw import keeps
from services.bots.memory import Event, HandMemory
from services.bots.passing import choose_pass
from services.bots.play import choose_card
from services.bots.situation import Situation, read_situation

View = Mapping[str, Any] | msgspec.Struct
"""A seat view: the API's JSON object, or the domain's ``SeatView`` struct."""


class Player(Protocol):
    """Anything that can hold a seat: it is shown the seat's events and asked for actions."""

    def observe(self, event: Event, position: int | None = None) -> None:
        """Take in an event the seat was sent."""

    def act(self, view: View) -> dict[str, Any] | None:
        """One of the view's legal actions, or None when the seat should wait."""


def as_json(view: View) -> Mapping[str, Any]:
    """The view as the API's JSON object."""
    if isinstance(view, Mapping):
        return view
    data: dict[str, Any] = msgspec.to_builtins(view)
    return data


class Bot:
    """A decent player for one seat of one game.

    ``act`` works from the view alone; what it remembers of earlier tricks (fed to ``observe``)
    only sharpens its card counting.
    """

    def __init__(self, memory: HandMemory | None = None) -> None:
        self.memory = memory or HandMemory()
        self._rules: tuple[Mapping[str, Any], Rules] | None = None

    def observe(self, event: Event, position: int | None = None) -> None:
        self.memory.observe(event, position)

    def act(self, view: View) -> dict[str, Any] | None:
        data = as_json(view)
        # "back" (an away seat's return) is the player's to send, never a move to choose.
        legal: list[dict[str, Any]] = [a for a in data["legal"] if a["type"] != "back"]
        kinds = {action["type"] for action in legal}
        if not kinds or kinds == {"look"}:
            return None  # not this seat's turn; looking early would forfeit a blind nil
        sit = read_situation(data, self.memory, self._rules_of(data["rules"]))
        if "draw" in kinds:
            return {"type": "draw", "keep": keeps(sit)}
        if "discard" in kinds:
            if not sit.looked:
                return {"type": "look"}  # the dealer sees what it discards
            count = next(action["count"] for action in legal if action["type"] == "discard")
            return {
                "type": "discard",
                "cards": [CARDS[card].value for card in choose_discard(sit, count)],
            }
        if "pass" in kinds:
            count = next(action["count"] for action in legal if action["type"] == "pass")
            return {
                "type": "pass",
                "cards": [CARDS[card].value for card in choose_pass(sit, count)],
            }
        if "play" in kinds:
            return {"type": "play", "card": CARDS[choose_card(sit)].value}
        return self._bid(sit, legal)

    def _bid(self, sit: Situation, legal: list[dict[str, Any]]) -> dict[str, Any]:
        bids = [action["bid"] for action in legal if action["type"] == "bid"]
        if not sit.looked:
            if BLIND_NIL in bids and wants_blind_nil(sit):
                return {"type": "bid", "bid": BLIND_NIL}
            blind = wants_blind_bid(sit, bids)
            if blind is not None:
                return {"type": "bid", "bid": blind}
            return {"type": "look"}
        return {"type": "bid", "bid": choose_bid(sit, bids)}

    def _rules_of(self, raw: Mapping[str, Any]) -> Rules:
        """The view's rules, resolved once per game rather than on every turn."""
        if self._rules is None or self._rules[0] != raw:
            self._rules = (raw, resolve_rules(raw))
        return self._rules[1]


class RandomPlayer:
    """Picks uniformly among the legal actions (a pass: random cards), like the engine bench."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def observe(self, event: Event, position: int | None = None) -> None:
        """A random player remembers nothing."""

    def act(self, view: View) -> dict[str, Any] | None:
        data = as_json(view)
        legal = [action for action in data["legal"] if action["type"] != "look"]
        if not legal:
            return None
        action = dict(self.rng.choice(legal))
        if action["type"] in ("pass", "discard"):
            if data["hand"] is None:
                return {"type": "look"}  # its cards are chosen from the hand: look first
            count = action.pop("count")
            action["cards"] = self.rng.sample(data["hand"], count)
        return action
