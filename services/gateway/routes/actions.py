"""Actions: one seat's bid, play, pass, draw or look, sent to the engine."""

from __future__ import annotations

from typing import Annotated, Any

import structlog
from fastapi import APIRouter, Body, Header

from contracts.wire import ActRequest
from services.gateway.commands import MAX_IDEMPOTENCY_KEY, command_id_for
from services.gateway.deps import GameId, SeatOf, Services
from services.gateway.models import Action, Events
from services.gateway.openapi import problems
from services.gateway.problems import ProblemError
from services.gateway.views import event_records

router = APIRouter(prefix="/v1/games/{game_id}/actions", tags=["actions"])

IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=MAX_IDEMPOTENCY_KEY,
        description="The same key and body get the first answer; another body gets 422.",
    ),
]


@router.post("", response_model=Events, responses=problems(401, 403, 404, 409, 422, 503))
async def act(
    game_id: GameId,
    grant: SeatOf,
    action: Annotated[Action, Body(discriminator="type")],
    services: Services,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Act for the token's seat; the answer is the events it caused, as this seat sees them."""
    if action.seat is not None and action.seat != grant.seat:
        raise ProblemError("forbidden", f"this seat token acts for seat {grant.seat} only")
    command_id = command_id_for(game_id, grant.seat, idempotency_key)
    structlog.contextvars.bind_contextvars(command_id=command_id)
    request = ActRequest(
        seat=grant.seat,
        action=action.model_dump(exclude={"expected_version", "seat"}),
        expected_version=action.expected_version,
    )
    with services.in_flight.hold(command_id):
        reply = await services.commands.send(game_id, request, command_id)
    events = ((record.version, record.event) for record in reply.events)
    return {"version": reply.version, "events": event_records(events, grant.seat)}
