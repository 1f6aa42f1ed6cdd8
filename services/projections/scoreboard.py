"""The ``scoreboard`` read model: docs/api.md's scoreboard of each game, hand by hand.

Every figure is copied from the events (``hand_scored``, ``game_ended``): the engine scored the
hand and the projection never does the arithmetic again, so the scoreboard cannot disagree with
the game.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import sqlalchemy as sa

from contracts.wire import Commit
from domain.events import GameCreated, GameEnded, HandScored
from domain.table import table_for
from services.projections.model import PerGameModel
from services.store.database import Statements, fetch, upsert
from services.store.schema import scoreboards


@dataclass(slots=True)
class Scoreboard:
    game_id: str
    units: list[list[int]]
    hands: list[dict[str, object]] | msgspec.Raw
    """Each scored hand's figures; as stored (JSON, not decoded) until a hand is added."""
    scores: list[int]
    bags: list[int]
    game_over: bool
    winners: list[int]
    version: int

    @classmethod
    def created(cls, event: GameCreated) -> Scoreboard:
        units = table_for(event.rules).units
        return cls(
            game_id=event.game_id,
            units=[list(unit) for unit in units],
            hands=[],
            scores=list(event.scores or (0,) * len(units)),
            bags=list(event.bags or (0,) * len(units)),
            game_over=False,
            winners=[],
            version=0,
        )


COLUMNS = tuple(column.name for column in scoreboards.columns)
"""The table's columns: :class:`Scoreboard`'s fields, in the same order."""

_Hands = list[dict[str, object]]

_LOAD = sa.select(
    *(
        sa.type_coerce(column, sa.Text).label(column.name) if column.name == "hands" else column
        for column in scoreboards.columns
    )
).where(scoreboards.c.game_id.in_(sa.bindparam("values", expanding=True)))
"""The scoreboards of some games, ``hands`` as its JSON text: most commits score no hand, and
decoding every hand so far at each batch cost the model more than the rest of it."""


class ScoreboardModel(PerGameModel[Scoreboard]):
    name = "scoreboard"
    tables = (scoreboards,)

    async def load(self, conn: Statements, game_ids: Sequence[str]) -> dict[str, Scoreboard]:
        rows = await fetch(conn, _LOAD, {"values": list(game_ids)})
        return {
            game_id: Scoreboard(
                game_id, units, msgspec.Raw(hands), scores, bags, game_over, winners, version
            )
            for game_id, units, hands, scores, bags, game_over, winners, version in rows
        }

    def fold(self, state: Scoreboard | None, commit: Commit) -> Scoreboard:
        for event in commit.events:
            if isinstance(event, GameCreated):
                state = Scoreboard.created(event)
            elif state is None:
                raise ValueError(f"game {commit.game_id} has events before game_created")
            elif isinstance(event, HandScored):
                hands = state.hands
                if isinstance(hands, msgspec.Raw):
                    hands = state.hands = msgspec.json.decode(hands, type=_Hands)
                hands.append(
                    {
                        "hand": event.hand,
                        "points": list(event.points),
                        "scores": list(event.scores),
                        "bags": list(event.bags),
                    }
                )
                state.scores, state.bags = list(event.scores), list(event.bags)
            elif isinstance(event, GameEnded):
                state.game_over = True
                state.winners, state.scores = list(event.winners), list(event.scores)
        if state is None:
            raise ValueError(f"game {commit.game_id} has no game_created")
        return state

    async def save(self, conn: Statements, states: dict[str, Scoreboard]) -> None:
        rows = [{name: getattr(state, name) for name in COLUMNS} for state in states.values()]
        await upsert(conn, scoreboards, rows, keys=["game_id"])
