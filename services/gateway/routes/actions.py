"""Actions: one seat's bid, play, pass, draw or look, sent to the engine."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Header
from msgspec.structs import replace

from contracts.wire import EventRecord
from services.gateway.commands import MAX_IDEMPOTENCY_KEY
from services.gateway.deps import GameCaller, GameId, Services
from services.gateway.models import Acted, Action
from services.gateway.openapi import problems
from services.gateway.operations import games as operations
from services.gateway.problems import ProblemError
from services.gateway.views import Answer, event_seen

router = APIRouter(prefix="/v1/games/{game_id}/actions", tags=["actions"])

IDEMPOTENCY_KEY_PATTERN = r"^[\x20-\x7e]+$"

IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=MAX_IDEMPOTENCY_KEY,
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Printable ASCII, at most 255 characters. The same caller with the same key "
        "and body gets the first answer; another body gets 422. Another caller's key is "
        "another request.",
    ),
]


ActionBody = Annotated[Action, Body(discriminator="type")]


@router.post("", response_model=Acted, responses=problems(401, 403, 404, 409, 422, 429, 503))
async def act(
    game_id: GameId,
    asking: GameCaller,
    action: ActionBody,
    services: Services,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Act for the token's seat; the answer is the events it caused, as this seat sees them,
    and who acts next (``next``: the seat and what it must send; null once the game is over).
    A token whose seat has been issued a new one since is revoked: 401, and nothing changes
    (the engine checks the token's issue against the game's history as it decides)."""
    grant = asking.grant
    if grant is None:
        raise ProblemError("unauthorized", "this needs a seat token: Authorization: Bearer ...")
    seat = grant.seat
    if action.seat is not None and action.seat != seat:
        raise ProblemError("forbidden", f"this seat token acts for seat {seat} only")
    body = action.model_dump(exclude={"expected_version", "seat"})
    acted = await operations.act(
        services, game_id, grant, body, action.expected_version, idempotency_key
    )
    seen = [EventRecord(record.version, event_seen(record.event, seat)) for record in acted.events]
    return Answer(replace(acted, events=seen))
