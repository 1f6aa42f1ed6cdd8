"""Seats: taking one returns the token that acts for it.

The seats of a league's tables are not taken here: starting the round seats every player
(:mod:`services.gateway.routes.leagues`), and no one else may sit in their place, even in the
moment between the game's creation and its seating.
"""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import APIRouter

from contracts.wire import TakeSeatRequest
from domain.league import table_of
from services.gateway.commands import keyed_command_id
from services.gateway.deps import GameId, Services
from services.gateway.models import SeatTaken, TakeSeat
from services.gateway.openapi import problems
from services.gateway.problems import ProblemError
from services.gateway.routes.actions import IdempotencyKey
from services.runtime.logging import get_logger

router = APIRouter(prefix="/v1/games/{game_id}/seats", tags=["seats"])

log = get_logger("spades.gateway")


@router.post(
    "", status_code=201, response_model=SeatTaken, responses=problems(403, 404, 409, 422, 503)
)
async def take_seat(
    game_id: GameId, body: TakeSeat, services: Services, idempotency_key: IdempotencyKey = None
) -> Any:
    """Sit at the table; when the last seat fills, the first hand is dealt. A retry with the
    same ``Idempotency-Key`` gets the same seat (and a token for it)."""
    await _refuse_league_tables(services, game_id)
    command_id = keyed_command_id(idempotency_key, "seat", game_id)
    structlog.contextvars.bind_contextvars(command_id=command_id)
    request = TakeSeatRequest(player=body.player, seat=body.seat, entropy=body.entropy)
    with services.in_flight.hold(command_id):
        reply = await services.commands.send(game_id, request, command_id)
    if reply.seat is None:
        raise ProblemError("unavailable", "the engine named no seat; retry")
    log.info("seat taken", seat=reply.seat)
    token = services.seat_tokens.issue(game_id, reply.seat)
    return {"seat": reply.seat, "player": body.player, "token": token}


async def _refuse_league_tables(services: Services, game_id: str) -> None:
    """403 for a table of a league's round: only the league seats its players."""
    place = table_of(game_id)
    if place is None:
        return
    league = (await services.leagues.latest(place.league_id)).state
    if league is None or place.round > len(league.rounds):
        return
    if any(table.game_id == game_id for table in league.rounds[place.round - 1].tables):
        raise ProblemError("forbidden", "a league's round seats the players of its tables")
