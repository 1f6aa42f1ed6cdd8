"""The ``games`` read model: one summary per game, for the game list and its filters.

Status follows the aggregate's own rule (:func:`domain.game.evolve`): ``waiting`` until every
seat is taken, ``playing`` from then (or from a deal), ``finished`` when the game ends. The
times are those of the commits (when the engine accepted the commands), not of the projection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.wire import Commit
from domain.events import (
    GameCreated,
    GameEnded,
    HandDealt,
    HandScored,
    SeatTaken,
    SeatTokenReissued,
)
from domain.table import table_for
from services.projections.model import PerGameModel
from services.store.database import Statements, fetch, upsert, where_in
from services.store.schema import game_players, games


@dataclass(slots=True)
class GameSummary:
    game_id: str
    status: str
    preset: str
    league: str | None
    players: list[str | None]
    scores: list[int]
    bags: list[int]
    winners: list[int]
    hands_played: int
    version: int
    created_at: str
    updated_at: str
    platform: str | None = None
    visibility: str = "public"
    seated: list[int] = field(default_factory=list)
    """Seats taken since the summary was loaded (rows of ``game_players`` to write)."""

    @classmethod
    def created(cls, event: GameCreated, time: str) -> GameSummary:
        rules = event.rules
        units = len(table_for(rules).units)
        return cls(
            game_id=event.game_id,
            status="waiting",
            preset=rules.preset,
            league=event.league,
            players=[None] * rules.players,
            scores=list(event.scores or (0,) * units),
            bags=list(event.bags or (0,) * units),
            winners=[],
            hands_played=0,
            version=0,
            created_at=time,
            updated_at=time,
            platform=event.platform,
            visibility=event.visibility,
        )


COLUMNS = tuple(column.name for column in games.columns)
"""The table's columns: :class:`GameSummary`'s first fields, in the same order."""


class GamesModel(PerGameModel[GameSummary]):
    name = "games"
    tables = (games, game_players)

    async def load(self, conn: Statements, game_ids: Sequence[str]) -> dict[str, GameSummary]:
        rows = await fetch(conn, *where_in(games, "game_id", game_ids))
        return {row[0]: GameSummary(*row) for row in rows}  # fields in the columns' order

    def fold(self, state: GameSummary | None, commit: Commit) -> GameSummary:
        for event in commit.events:
            if isinstance(event, GameCreated):
                state = GameSummary.created(event, commit.time)
            elif state is None:
                raise ValueError(f"game {commit.game_id} has events before game_created")
            elif isinstance(event, SeatTaken):
                state.players[event.seat] = event.player
                state.seated.append(event.seat)
                if all(player is not None for player in state.players):
                    state.status = "playing"
            elif isinstance(event, SeatTokenReissued):  # a substitute sits there now
                state.players[event.seat] = event.player
                state.seated.append(event.seat)
            elif isinstance(event, HandDealt):
                state.status = "playing"
            elif isinstance(event, HandScored):
                state.scores, state.bags = list(event.scores), list(event.bags)
                state.hands_played += 1
            elif isinstance(event, GameEnded):
                state.status = "finished"
                state.winners, state.scores = list(event.winners), list(event.scores)
        if state is None:
            raise ValueError(f"game {commit.game_id} has no game_created")
        state.updated_at = commit.time
        return state

    async def save(self, conn: Statements, states: dict[str, GameSummary]) -> None:
        rows: list[dict[str, Any]] = []
        seats: list[dict[str, Any]] = []
        for state in states.values():
            rows.append({name: getattr(state, name) for name in COLUMNS})
            seats.extend(
                {"game_id": state.game_id, "seat": seat, "player": state.players[seat]}
                for seat in state.seated
            )
        await upsert(conn, games, rows, keys=["game_id"])
        await upsert(conn, game_players, seats, keys=["game_id", "seat"])
