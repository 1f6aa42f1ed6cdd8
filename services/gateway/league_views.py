"""What leaves the gateway about a league, as JSON-ready values: the league, a round with its
games' progress, and the standings ranked.

The standings read model holds the players who have played; the league's roster (from its
stream) adds the others at the starting rating, and the byes each had. Players are ranked by
most wins, then most points, then the higher rating ``ordinal``, then by name.
"""

from __future__ import annotations

from typing import Any

from domain.league import League
from services.gateway.read_models import GameSummary, LeagueStandings, PlayerRecord
from services.store.ratings import Standing


def league_json(league: League) -> dict[str, Any]:
    return {
        "league_id": league.league_id,
        "name": league.name,
        "version": league.version,
        "rules": league.rules.to_json(),
        "players": list(league.players),
        "rounds": league.planned,
        "pairing": league.pairing,
        "rounds_scheduled": len(league.rounds),
        "next_round": None if league.over else league.next_round,
    }


def round_json(league: League, number: int, games: dict[str, GameSummary]) -> dict[str, Any]:
    """Round ``number`` (which must exist): its tables, each with its game's status and scores
    as the game list has them."""
    played = league.rounds[number - 1]
    tables = []
    for index, table in enumerate(played.tables, start=1):
        summary = games.get(table.game_id)
        tables.append(
            {
                "table": index,
                "game_id": table.game_id,
                "players": list(table.players),
                "status": summary.status if summary else None,
                "scores": summary.scores if summary else None,
                "winners": summary.winners if summary else None,
            }
        )
    return {
        "league_id": league.league_id,
        "round": number,
        "pairing": league.pairing,
        "tables": tables,
        "byes": list(played.byes),
    }


def standings_json(league: League, standings: LeagueStandings) -> dict[str, Any]:
    played = {record.player: record for record in standings.players}
    byes = dict.fromkeys(league.players, 0)
    for past in league.rounds:
        for player in past.byes:
            byes[player] += 1
    records = [played.get(player) or _not_played(player) for player in league.players]
    records.sort(key=lambda r: (-r.wins, -r.points, -r.ordinal, r.player))
    return {
        "league_id": league.league_id,
        "version": standings.version,
        "players": [
            {
                "rank": rank,
                "player": record.player,
                "points": record.points,
                "wins": record.wins,
                "games": record.games,
                "byes": byes[record.player],
                "rating": {"mu": record.mu, "sigma": record.sigma, "ordinal": record.ordinal},
            }
            for rank, record in enumerate(records, start=1)
        ],
    }


def _not_played(player: str) -> PlayerRecord:
    start = Standing()
    return PlayerRecord(
        player=player,
        points=0,
        wins=0,
        games=0,
        mu=start.mu,
        sigma=start.sigma,
        ordinal=start.ordinal,
    )
