"""The ``standings`` read model: each league's players, with points, wins, games and a rating.

It reads the game stream, where each game's ``game_created`` names its league: a league's games
are ordinary games that its rounds created (the league's own stream says who sits where, and
the games say so again). Only a league's own tables count: a game whose id is one of the
league's table ids (:func:`domain.league.is_table_game`). The gateway gives every other game an
id that cannot be one, so a game some client tagged with a league never moves its standings.

Points, wins, forfeits and ratings are those of :mod:`services.store.ratings`; a substitute
(``seat_token_reissued`` naming another player) plays for the seat's original player, whose
record the game counts in: the model follows ``seat_taken`` only; each finished game
(``game_ended``) adds to them.

**Every column depends only on which of the league's games have ended**, never on the order the
model is given them. Points, wins, games and forfeits are sums. Ratings depend on the order
games are rated in, so a league's games are rated in the league's own order: by round, then
table (:func:`place`), whatever order their ends reach the model in. The game stream is split
into partitions (:mod:`contracts.partitions`), each followed on its own, so a live run and a
rebuild interleave the ends of different partitions differently; and a game's end may come
after ends that follow it in the league's order (its partition was behind). Each ended game
keeps its result and the ratings its players came to it with (``standing_games.result``). A
game that comes late is rated from the ratings its players had before its place, and every
later game that one of its players (or, in turn, of theirs) played is rated again: the numbers
are those of rating every ended game in the league's order, to the bit. Live, a round's games
have players of their own and the next round starts once it is over, so a game's end is
rated once and nothing after it changes.

Every game of the stream has a row in ``standing_games`` (only its version, for a game of no
league), so that, as in every model, a commit that does not follow the last one applied for its
game is refused rather than folded in the wrong place. A league's version, for
``?min_version=``, is the number of its games counted. On PostgreSQL, the batches of two
partitions that end games of one league take turns on the league (an advisory lock): each rates
with what the other committed.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import sqlalchemy as sa

from contracts.wire import Commit
from domain.events import GameCreated, GameEnded, SeatTaken
from domain.league import is_table_game, table_of
from domain.table import table_for
from services.projections.model import PerGameModel
from services.store.database import Statements, fetch, upsert, where_in
from services.store.ratings import MODEL, Rating, Standing, rate
from services.store.schema import league_standings, standing_games

STANDING_COLUMNS = ("points", "wins", "games", "forfeits", "mu", "sigma", "ordinal")
LEAGUE_LOCK = 0x5354
"""The first key of the PostgreSQL advisory lock a batch holds on a league it rates (the second
is the league's): ``ST``."""


class Result(msgspec.Struct, kw_only=True):
    """How a league game ended, and the ratings its players came to it with (each unit's
    players', as ``mu, sigma``), in the league's order."""

    scores: list[int]
    winners: list[int]
    forfeited: int | None = None
    before: list[list[Rating]] = []


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
    round: int | None = None
    table: int | None = None
    result: Result | None = None
    """Once a league's game has ended."""


def place(game: StandingGame) -> tuple[int, int]:
    """Where a league's game stands in the league's order: its round, then its table."""
    assert game.round is not None
    assert game.table is not None
    return game.round, game.table


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
            game.result = Result(
                scores=list(event.scores), winners=list(event.winners), forfeited=event.forfeited
            )
    if game is None:
        raise ValueError(f"game {commit.game_id} has no game_created")
    return game


def _created(event: GameCreated) -> StandingGame:
    league = event.league
    table = table_of(event.game_id)
    if league is None or table is None or not is_table_game(league, event.game_id):
        return StandingGame(event.game_id, None, [], [])
    units = [list(unit) for unit in table_for(event.rules).units]
    return StandingGame(
        event.game_id,
        league,
        units,
        [None] * event.rules.players,
        round=table.round,
        table=table.table,
    )


def unit_players(game: StandingGame) -> list[list[str]]:
    """Each unit's players, as the game ended."""
    units: list[list[str]] = []
    for seats in game.units:
        players = [game.players[seat] for seat in seats]
        if None in players:
            raise ValueError(f"game {game.game_id} ended with an empty seat")
        units.append([player for player in players if player is not None])
    return units


class StandingsModel(PerGameModel[StandingGame]):
    name = "standings"
    tables = (standing_games, league_standings)

    async def load(self, conn: Statements, game_ids: Sequence[str]) -> dict[str, StandingGame]:
        rows = await fetch(conn, *where_in(standing_games, "game_id", game_ids))
        return {row[0]: _game(row) for row in rows}

    def fold(self, state: StandingGame | None, commit: Commit) -> StandingGame:
        return fold(state, commit)

    async def save(self, conn: Statements, states: dict[str, StandingGame]) -> None:
        await _save_games(conn, states.values())

    async def saved(self, conn: Statements, applied: Sequence[tuple[StandingGame, Commit]]) -> None:
        """Count the league games the batch ended (see the module's docstring)."""
        ended = {
            game.game_id: game
            for game, commit in applied
            if game.league is not None
            and any(isinstance(event, GameEnded) for event in commit.events)
        }
        leagues: dict[str, list[StandingGame]] = {}
        for game in ended.values():
            assert game.league is not None
            leagues.setdefault(game.league, []).append(game)
        for league in sorted(leagues):
            await _count(conn, league, leagues[league])


def _game(row: Any) -> StandingGame:
    """A ``standing_games`` row (all its columns, in the table's order) as a game."""
    game_id, league, units, players, ended, version, round_, table, result = row
    outcome = None if result is None else msgspec.convert(result, Result)
    return StandingGame(
        game_id, league, units, players, version, bool(ended), round_, table, outcome
    )


async def _save_games(conn: Statements, games: Iterable[StandingGame]) -> None:
    rows = [
        {
            "game_id": game.game_id,
            "league": game.league,
            "units": game.units,
            "players": game.players,
            "ended": game.ended,
            "version": game.version,
            "league_round": game.round,
            "league_table": game.table,
            "result": game.result,
        }
        for game in games
    ]
    await upsert(conn, standing_games, rows, keys=["game_id"])


async def _count(conn: Statements, league: str, ended: Sequence[StandingGame]) -> None:
    """Count ``ended`` (games of ``league`` that ended in this batch) into its standings, rating
    them in the league's order, and again every later game they change."""
    if conn.dialect.name == "postgresql":
        await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(LEAGUE_LOCK, _key(league))))
    new = {game.game_id for game in ended}
    first = min(place(game) for game in ended)
    later = [
        game
        for game in await _ended_since(conn, league, first[0])
        if game.game_id not in new and place(game) > first
    ]
    line = sorted([*ended, *later], key=place)
    players = {player for game in line for unit in unit_players(game) for player in unit}
    standings = await _standings(conn, league, players)
    rerated, ratings = _rate_in_order(line, new, standings)
    counted: set[str] = set(ratings)
    for game in ended:
        result = game.result
        assert result is not None
        for unit, seated in enumerate(unit_players(game)):
            for player in seated:
                standing = standings.setdefault(player, Standing())
                standing.points += result.scores[unit]
                standing.wins += unit in result.winners
                standing.games += 1
                standing.forfeits += unit == result.forfeited
                counted.add(player)
    for player, (mu, sigma) in ratings.items():
        standing = standings[player]
        standing.mu, standing.sigma = mu, sigma
        standing.ordinal = MODEL.rating(mu, sigma).ordinal()
    rows = [
        {"league": league, "player": player, **_columns(standings[player])}
        for player in sorted(counted)
    ]
    await upsert(conn, league_standings, rows, keys=["league", "player"])
    await _save_games(conn, rerated)


def _rate_in_order(
    line: Sequence[StandingGame], new: set[str], standings: dict[str, Standing]
) -> tuple[list[StandingGame], dict[str, Rating]]:
    """Rate the games of ``line`` (the league's ended games from the first new one on, in the
    league's order) that the new ones change: the new ones, and every game a player rated
    again plays later. Returns those games (their ``before`` set again) and each rated
    player's rating after their last game."""
    upcoming: dict[str, list[int]] = {}
    """Per player, where their games counted before this batch stand in ``line``."""
    for index, game in enumerate(line):
        if game.game_id not in new:
            for unit in unit_players(game):
                for player in unit:
                    upcoming.setdefault(player, []).append(index)

    def entering(player: str, index: int) -> Rating:
        """A player's rating before ``line[index]``, a new game: what their next game counted
        before came with, else what the standings hold (no game of theirs comes later)."""
        later = upcoming.get(player, [])
        at = bisect.bisect_right(later, index)
        if at < len(later):
            game = line[later[at]]
            assert game.result is not None
            unit, seat = _seat_of(game, player)
            return game.result.before[unit][seat]
        standing = standings.get(player, Standing())
        return standing.mu, standing.sigma

    ratings: dict[str, Rating] = {}
    rerated = []
    for index, game in enumerate(line):
        result = game.result
        assert result is not None
        units = unit_players(game)
        fresh = game.game_id in new
        if not fresh and ratings.keys().isdisjoint(p for unit in units for p in unit):
            continue  # none of its players' earlier games changed: nor does it
        before = [
            [
                ratings[player]
                if player in ratings
                else entering(player, index)
                if fresh
                else result.before[unit][seat]
                for seat, player in enumerate(players)
            ]
            for unit, players in enumerate(units)
        ]
        result.before = before
        after = rate(before, result.scores, result.winners)
        for players, rated in zip(units, after, strict=True):
            ratings.update(zip(players, rated, strict=True))
        rerated.append(game)
    return rerated, ratings


def _seat_of(game: StandingGame, player: str) -> tuple[int, int]:
    for unit, players in enumerate(unit_players(game)):
        if player in players:
            return unit, players.index(player)
    raise ValueError(f"{player} did not play game {game.game_id}")


async def _ended_since(conn: Statements, league: str, round_: int) -> list[StandingGame]:
    """The league's ended games from round ``round_`` on."""
    result = await conn.execute(
        sa.select(standing_games).where(
            (standing_games.c.league == league)
            & standing_games.c.ended
            & (standing_games.c.league_round >= round_)
        )
    )
    return [_game(tuple(row)) for row in result]


async def _standings(conn: Statements, league: str, players: set[str]) -> dict[str, Standing]:
    result = await conn.execute(
        sa.select(league_standings).where(
            (league_standings.c.league == league) & league_standings.c.player.in_(sorted(players))
        )
    )
    return {
        row.player: Standing(**{column: getattr(row, column) for column in STANDING_COLUMNS})
        for row in result
    }


def _key(league: str) -> int:
    """The league's half of its advisory lock's key: 32 bits of its SHA-256, signed."""
    return int.from_bytes(hashlib.sha256(league.encode()).digest()[:4], "big", signed=True)


def _columns(standing: Standing) -> dict[str, int | float]:
    return {column: getattr(standing, column) for column in STANDING_COLUMNS}
