"""Games played through the domain by seeded random choices, for the unit tests."""

from __future__ import annotations

import random
from typing import Any

from domain.commands import AnyCommand
from domain.game import decide, fold
from domain.legal import DiscardDue, PassDue, legal_actions, seat_to_act
from domain.shuffle import DealSource
from domain.state import Game, cards_held


def play_at_random(
    game: Game, deal: DealSource, rng: random.Random, hands: int | None = None
) -> tuple[Game, list[Any]]:
    """``game`` played on by ``rng``'s choice of legal actions (passes and discards
    included) until it ends, or until ``hands`` are scored; and the events that made it."""
    events: list[Any] = []
    while game.status != "finished" and (hands is None or game.hands_played < hands):
        seat = seat_to_act(game)
        assert seat is not None
        action: Any = rng.choice(legal_actions(game, seat))
        if type(action) is PassDue or type(action) is DiscardDue:
            assert game.hand is not None
            action = action.choose(tuple(rng.sample(cards_held(game.hand, seat), action.count)))
        command: AnyCommand = action
        new = decide(game, command, deal=deal)
        events += new
        after = fold(new, game)
        assert after is not None
        game = after
    return game, events
