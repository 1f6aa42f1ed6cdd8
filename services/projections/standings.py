"""The ``standings`` read model: each league's players, with points, wins, games and a rating.

It reads the game stream, where each game's ``game_created`` names its league: a league's games
are ordinary games that its rounds created (the league's own stream says who sits where, and
the games say so again). Only a league's own tables count: a game whose id is one of the
league's table ids (:func:`domain.league.is_table_game`). The gateway gives every other game an
id that cannot be one, so a game some client tagged with a league never moves its standings.

Points, wins, forfeits and ratings are those of :mod:`services.store.ratings`; a substitute
(``seat_token_reissued`` naming another player) plays for the seat's original player, whose
record the game counts in: the model follows ``seat_taken`` only; each finished game
(``game_ended``) adds to them. Ratings depend on the order games are rated in, so they are
rated in the order the games ended in the stream, within a batch and across batches alike: a
rebuild from the stream gives the same numbers however the stream is cut into batches.

Every game of the stream has a row in ``standing_games`` (only its version, for a game of no
league), so that, as in every model, a commit that does not follow the last one applied for its
game is refused rather than folded in the wrong place. A league's version, for
``?min_version=``, is the number of its games counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from contracts.wire import Commit
from domain.events import GameCreated, GameEnded, SeatTaken
from domain.league import is_table_game
from domain.table import table_for
from services.projections.model import PerGameModel
from services.store.database import Statements, fetch, upsert, where_in
from services.store.ratings import Standing, record_game
from services.store.schema import league_standings, standing_games

STANDING_COLUMNS = ("points", "wins", "games", "forfeits", "mu", "sigma", "ordinal")


@dataclass(slots=True)
class StandingGame:
    """What the model keeps of one game."""

    game_id: str
    league: str | None
    """The league whose table the game is; None for any other game."""
    units: list[list[int]]
    players: list[str | None]
    version: int = 0
    ended: bool = False


@dataclass(frozen=True, slots=True)
class FinishedGame:
    """A league game's end, as the standings count it."""

    league: str
    units: list[list[str]]
    """Each unit's players."""
    scores: list[int]
    winners: list[int]
    forfeited: int | None = None


def fold(game: StandingGame | None, commit: Commit) -> StandingGame:
    """The game after ``commit``."""
    for event in commit.events:
        if isinstance(event, GameCreated):
            game = _created(event)
        elif game is None:
            raise ValueError(f"game {commit.game_id} has events before game_created")
        elif game.league is None:
            continue
        elif isinstance(event, SeatTaken):
            game.players[event.seat] = event.player
        elif isinstance(event, GameEnded):
            game.ended = True
    if game is None:
        raise ValueError(f"game {commit.game_id} has no game_created")
    return game


def _created(event: GameCreated) -> StandingGame:
    league = event.league
    if league is None or not is_table_game(league, event.game_id):
        return StandingGame(event.game_id, None, [], [])
    units = [list(unit) for unit in table_for(event.rules).units]
    return StandingGame(event.game_id, league, units, [None] * event.rules.players)


def _finished(game: StandingGame, event: GameEnded) -> FinishedGame:
    assert game.league is not None
    units: list[list[str]] = []
    for seats in game.units:
        players = [game.players[seat] for seat in seats]
        if None in players:
            raise ValueError(f"game {game.game_id} ended with an empty seat")
        units.append([player for player in players if player is not None])
    return FinishedGame(
        game.league, units, list(event.scores), list(event.winners), event.forfeited
    )


class StandingsModel(PerGameModel[StandingGame]):
    name = "standings"
    tables = (standing_games, league_standings)

    async def load(self, conn: Statements, game_ids: Sequence[str]) -> dict[str, StandingGame]:
        return await _load_games(conn, game_ids)

    def fold(self, state: StandingGame | None, commit: Commit) -> StandingGame:
        return fold(state, commit)

    async def save(self, conn: Statements, states: dict[str, StandingGame]) -> None:
        await _save_games(conn, states)

    async def saved(self, conn: Statements, applied: Sequence[tuple[StandingGame, Commit]]) -> None:
        """Rate the league games the batch ended, in the order they ended."""
        finished = [
            _finished(game, event)
            for game, commit in applied
            if game.league is not None
            for event in commit.events
            if isinstance(event, GameEnded)
        ]
        await _rate(conn, finished)


async def _load_games(conn: Statements, game_ids: Sequence[str]) -> dict[str, StandingGame]:
    rows = await fetch(conn, *where_in(standing_games, "game_id", game_ids))
    return {
        game_id: StandingGame(game_id, league, units, players, version, ended)
        for game_id, league, units, players, ended, version in rows
    }


async def _save_games(conn: Statements, games: dict[str, StandingGame]) -> None:
    rows = [
        {
            "game_id": game.game_id,
            "league": game.league,
            "units": game.units,
            "players": game.players,
            "ended": game.ended,
            "version": game.version,
        }
        for game in games.values()
    ]
    await upsert(conn, standing_games, rows, keys=["game_id"])


async def _rate(conn: Statements, finished: Sequence[FinishedGame]) -> None:
    """Count the finished games, in the order they ended, into their leagues' standings."""
    if not finished:
        return
    leagues = sorted({game.league for game in finished})
    result = await conn.execute(
        sa.select(league_standings).where(league_standings.c.league.in_(leagues))
    )
    standings: dict[tuple[str, str], Standing] = {
        (row.league, row.player): Standing(**{c: getattr(row, c) for c in STANDING_COLUMNS})
        for row in result
    }
    touched: set[tuple[str, str]] = set()
    for game in finished:
        players = {
            player: standings.setdefault((game.league, player), Standing())
            for unit in game.units
            for player in unit
        }
        record_game(players, game.units, game.scores, game.winners, game.forfeited)
        touched.update((game.league, player) for player in players)
    rows = [
        {"league": league, "player": player, **_columns(standings[league, player])}
        for league, player in sorted(touched)
    ]
    await upsert(conn, league_standings, rows, keys=["league", "player"])


def _columns(standing: Standing) -> dict[str, int | float]:
    return {column: getattr(standing, column) for column in STANDING_COLUMNS}
