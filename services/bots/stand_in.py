"""The service's own player for a seat whose clock ran out: the strongest bot, shown only what
the seat sees (its seat view), chooses what the seat does.

The domain cannot ask a bot (it is pure and knows nothing of services), so the engine asks
here and sends the choice inside the :class:`~domain.commands.TimeOut`, where the domain checks
it is legal like any action of the seat.
"""

from __future__ import annotations

from typing import Any

from domain.commands import LookAtHand, PlayerAction, from_api
from domain.game import decide, evolve
from domain.state import Game
from domain.views import seat_view
from services.bots.strategy import Bot, as_json

MAX_STEPS = 3
"""A look, then the move: never more."""


def stand_in_actions(game: Game, seat: int) -> tuple[PlayerAction, ...]:
    """What the service does for ``seat`` on its turn: a look first if the bot wants its cards,
    then the move that ends the turn; empty when the seat has nothing to do."""
    actions: list[PlayerAction] = []
    for _ in range(MAX_STEPS):
        view = as_json(seat_view(game, seat))
        choice = Bot().act(view) or _fallback(view["legal"], view["hand"])
        if choice is None:
            break
        action = from_api(seat, choice)
        actions.append(action)
        if not isinstance(action, LookAtHand):
            break
        for event in decide(game, action):
            game = evolve(game, event)
    return tuple(actions)


def _fallback(legal: list[dict[str, Any]], hand: list[Any] | None) -> dict[str, Any] | None:
    """The first move listed when the bot has none (it waits on a look alone): a look when
    that is all there is, a pass or discard of the first cards held."""
    moves = [action for action in legal if action["type"] not in ("look", "back")]
    if not moves:
        return {"type": "look"} if legal else None
    move = moves[0]
    if move["type"] in ("pass", "discard"):
        cards = list((hand or [])[: move["count"]])
        return {"type": move["type"], "cards": cards}
    return move
