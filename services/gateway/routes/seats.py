"""Seats: taking one returns the token that acts for it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from contracts.wire import TakeSeatRequest
from services.gateway.deps import GameId, Services
from services.gateway.models import SeatTaken, TakeSeat
from services.gateway.openapi import problems
from services.gateway.problems import ProblemError
from services.runtime.logging import get_logger

router = APIRouter(prefix="/v1/games/{game_id}/seats", tags=["seats"])

log = get_logger("spades.gateway")


@router.post("", status_code=201, response_model=SeatTaken, responses=problems(404, 409, 503))
async def take_seat(game_id: GameId, body: TakeSeat, services: Services) -> Any:
    """Sit at the table; when the last seat fills, the first hand is dealt."""
    request = TakeSeatRequest(player=body.player, seat=body.seat, entropy=body.entropy)
    reply = await services.commands.send(game_id, request)
    if reply.seat is None:
        raise ProblemError("unavailable", "the engine named no seat; retry")
    log.info("seat taken", seat=reply.seat)
    token = services.seat_tokens.issue(game_id, reply.seat)
    return {"seat": reply.seat, "player": body.player, "token": token}
