"""Leagues: create one, schedule and start its rounds, read a round and the standings.

Starting a round is two steps, both safe to repeat: the engine schedules the round (a league
command), then the gateway creates each table's game and seats its players with the ordinary
game commands, under command ids fixed by the table (``league-create``, ``league-seat-<n>``).
If anything fails half-way (a 503), the same request with the same ``Idempotency-Key`` gets the
same round from the engine and finishes starting it: each game command already answered gets
its first answer, and nothing is created or seated twice.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import structlog
from fastapi import APIRouter, Body, Path, Response

from contracts.wire import (
    CreateGameRequest,
    CreateLeagueRequest,
    ScheduleRoundRequest,
    TakeSeatRequest,
)
from domain.errors import RuleViolation
from domain.league import League, LeagueTable, RoundScheduled, fold
from domain.platforms import FIRST_ISSUE
from domain.rules import resolve_rules
from services.gateway.commands import create, default_visibility, league_command_id
from services.gateway.deps import (
    CurrentLeague,
    LeagueId,
    LeagueMinVersion,
    Platform,
    Services,
    unknown_league,
)
from services.gateway.league_views import league_json, round_json, standings_json
from services.gateway.models import CreateLeague, LeagueRound, RoundStarted, ScheduleRound
from services.gateway.models import League as LeagueModel
from services.gateway.models import Standings as StandingsModel
from services.gateway.openapi import OPTIONAL_CREDENTIAL, problems
from services.gateway.problems import ProblemError
from services.gateway.routes.actions import IdempotencyKey
from services.runtime.logging import get_logger

router = APIRouter(prefix="/v1/leagues", tags=["leagues"])

log = get_logger("spades.gateway")

TABLES_AT_ONCE = 32
"""Tables started concurrently when a round starts."""
CREATE_COMMAND = "league-create"

_LOCATION = {"description": "The URL of what was created.", "schema": {"type": "string"}}


@router.post(
    "",
    status_code=201,
    response_model=LeagueModel,
    responses={**problems(401, 409, 422, 429, 503), 201: {"headers": {"Location": _LOCATION}}},
    openapi_extra=OPTIONAL_CREDENTIAL,  # needed only when SPADES_API_KEYS is set
)
async def create_league(
    body: CreateLeague,
    services: Services,
    platform: Platform,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Create a league of the caller's platform, of these players, whose games are all played
    by these rules (a retry with the same ``Idempotency-Key`` gets the same league). Its
    ``visibility`` (`private` by default when the server has platform keys) is its games' too.
    A league may have at most so many players, and a round seat so many tables (422 naming
    the cap: `SPADES_MAX_LEAGUE_PLAYERS`, `SPADES_MAX_ROUND_TABLES`)."""
    _check_caps(services, body.rules, len(body.players))
    request = CreateLeagueRequest(
        name=body.name,
        rules=body.rules,
        players=body.players,
        rounds=body.rounds,
        pairing=body.pairing,
        platform=platform,
        visibility=body.visibility or default_visibility(services),
    )

    async def send(league_id: str, command_id: str) -> list[Any]:
        return (await services.commands.send_league(league_id, request, command_id)).events

    league_id, league = await create(services, "league", platform, idempotency_key, send, fold)
    log.info("league created", players=len(league.players), pairing=league.pairing)
    response.headers["Location"] = f"{router.prefix}/{league_id}"
    return league_json(league)


@router.get(
    "/{league_id}",
    response_model=LeagueModel,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def league(league: CurrentLeague) -> Any:
    """The league: its rules, players, pairing and how many rounds are scheduled."""
    return league_json(league)


@router.post(
    "/{league_id}/rounds",
    status_code=201,
    response_model=RoundStarted,
    responses={
        **problems(401, 404, 409, 422, 429, 503),
        201: {"headers": {"Location": _LOCATION}},
    },
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def start_round(
    league_id: LeagueId,
    services: Services,
    platform: Platform,
    response: Response,
    body: Annotated[ScheduleRound | None, Body()] = None,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Schedule the next round and start its games: every table's game is created and every
    player seated; the answer holds each seat's token (only the league's platform ever sees
    them: anyone else gets 404 `league_not_found`, whatever key it replays). Refused with 409
    `wrong_phase` while a game of the round before is still being played, and once every
    round of the league is scheduled."""
    owned = (await services.leagues.latest(league_id)).state
    # ``platform`` is None only without platform keys, where anyone speaks for the platform.
    if owned is None or (platform is not None and owned.platform != platform):
        raise unknown_league(league_id)
    _check_caps(services, owned.rules.to_json(), len(owned.players))
    command_id = league_command_id(services.secret, league_id, platform, idempotency_key)
    structlog.contextvars.bind_contextvars(command_id=command_id)
    request = ScheduleRoundRequest(round=body.round if body is not None else None)
    with services.in_flight.hold(command_id):
        reply = await services.commands.send_league(league_id, request, command_id)
        scheduled = next((e for e in reply.events if isinstance(e, RoundScheduled)), None)
        league = (await services.leagues.latest(league_id)).state
        if scheduled is None or league is None:
            raise ProblemError("unavailable", "the engine scheduled nothing; retry")
        tables = await _start_tables(services, league, scheduled.tables)
    log.info("round started", round=scheduled.round, tables=len(tables))
    response.headers["Location"] = f"{router.prefix}/{league_id}/rounds/{scheduled.round}"
    return {
        "league_id": league_id,
        "round": scheduled.round,
        "pairing": league.pairing,
        "tables": tables,
        "byes": list(scheduled.byes),
    }


def _check_caps(services: Services, rules: dict[str, Any], players: int) -> None:
    """422 for a league over the server's caps: its size, and the tables of one round."""
    caps = services.caps
    if players > caps.league_players:
        raise ProblemError(
            "invalid_rules",
            f"a league has at most {caps.league_players} players here "
            f"(SPADES_MAX_LEAGUE_PLAYERS), not {players}",
        )
    try:
        table_size = resolve_rules(rules).players
    except RuleViolation:
        return  # the engine refuses the rules themselves, with their own reason
    if players // table_size > caps.round_tables:
        raise ProblemError(
            "invalid_rules",
            f"a round seats at most {caps.round_tables} tables here (SPADES_MAX_ROUND_TABLES); "
            f"{players} players at tables of {table_size} need {players // table_size}",
        )


async def _start_tables(
    services: Services, league: League, tables: tuple[LeagueTable, ...]
) -> list[dict[str, Any]]:
    gate = asyncio.Semaphore(TABLES_AT_ONCE)

    async def start(number: int, table: LeagueTable) -> dict[str, Any]:
        async with gate:
            return await _start_table(services, league, number, table)

    return list(await asyncio.gather(*(start(n, table) for n, table in enumerate(tables, start=1))))


async def _start_table(
    services: Services, league: League, number: int, table: LeagueTable
) -> dict[str, Any]:
    """Create the table's game in the league and seat its players, each seat's command id fixed
    so that starting the table again changes nothing."""
    create = CreateGameRequest(
        rules=league.rules.to_json(),
        league=league.league_id,
        platform=league.platform,
        visibility=league.visibility,
        seating="platform",
    )
    await services.commands.send(table.game_id, create, CREATE_COMMAND)
    seats = []
    for seat, player in enumerate(table.players):
        sit = TakeSeatRequest(player=player, seat=seat)
        await services.commands.send(table.game_id, sit, f"league-seat-{seat}")
        issued = services.seat_tokens.issue(table.game_id, seat, FIRST_ISSUE)
        seats.append(
            {"seat": seat, "player": player, "token": issued.token, "expires_at": issued.expires_at}
        )
    return {"table": number, "game_id": table.game_id, "seats": seats}


@router.get(
    "/{league_id}/rounds/{round_number}",
    response_model=LeagueRound,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def league_round(
    league: CurrentLeague,
    round_number: Annotated[int, Path(ge=1, le=1_000_000, description="1 for the first.")],
    services: Services,
) -> Any:
    """A scheduled round: its tables, each with its game's status and scores (from the game
    list, a moment behind the games), and its byes."""
    if round_number > len(league.rounds):
        detail = f"league {league.league_id} has no round {round_number}"
        raise ProblemError("round_not_found", detail)
    game_ids = [table.game_id for table in league.rounds[round_number - 1].tables]
    return round_json(league, round_number, await services.read_models.game_summaries(game_ids))


@router.get(
    "/{league_id}/standings",
    response_model=StandingsModel,
    responses=problems(401, 404, 409, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def standings(league: CurrentLeague, _visible: LeagueMinVersion, services: Services) -> Any:
    """Every player's points, wins, games, byes and rating, ranked. The standings follow the
    games a moment behind: ``min_version`` waits until they count that many finished games."""
    return standings_json(league, await services.read_models.league_standings(league.league_id))
