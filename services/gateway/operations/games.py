"""A game's operations: create it, act for a seat, take a seat, issue a seat's token again, and
say a seat is away."""

from __future__ import annotations

from typing import Any

from contracts.answers import Acted
from contracts.wire import (
    ActRequest,
    CreateGameRequest,
    EventRecord,
    MarkAwayRequest,
    ReissueTokenRequest,
    TakeSeatRequest,
)
from domain.events import SeatTokenReissued
from domain.game import fold
from domain.platforms import FIRST_ISSUE
from domain.state import Game
from domain.views import NextTurn, next_turn
from services.gateway.auth import SeatGrant
from services.gateway.commands import command_id_for, keyed_command_id
from services.gateway.deps import Gateway
from services.gateway.operations import Seated, command, create, expected, seated
from services.gateway.problems import ProblemError


async def create_game(
    services: Gateway, request: CreateGameRequest, idempotency_key: str | None
) -> tuple[str, Game]:
    """A new game of ``request.platform`` (the same one for a retry with the same key)."""

    async def send(game_id: str, command_id: str) -> list[Any]:
        reply = await services.commands.send(game_id, request, command_id)
        return [record.event for record in reply.events]

    return await create(services, "game", request.platform, idempotency_key, send, fold)


async def act(
    services: Gateway,
    game_id: str,
    grant: SeatGrant,
    action: dict[str, Any],
    expected_version: int | None,
    idempotency_key: str | None,
) -> Acted:
    """Act for the grant's seat (the answer's events as the engine answered them: the acting
    seat's view), under a command id of its token's issue (a retry with the
    same key gets the first answer)."""
    seat = grant.seat
    command_id = command_id_for(services.secret, game_id, seat, grant.issue, idempotency_key)
    request = ActRequest(
        seat=seat, action=action, expected_version=expected_version, issue=grant.issue
    )
    with command(services, command_id):
        reply = await services.commands.send(game_id, request, command_id)
    next_up = await _next_turn(services, game_id, reply.version)
    return Acted(version=reply.version, events=reply.events, next=next_up)


async def _next_turn(services: Gateway, game_id: str, version: int) -> NextTurn | None:
    """Who acts next in the game at ``version`` (or later): as this gateway holds it, when it
    holds it that far (following the stream, it mostly does), else as the stream has it."""
    held = services.games.peek(game_id)
    if held is None or held.state is None or held.state.version < version:
        held = await services.games.latest(game_id)  # the stream has it: the reply came after
    return next_turn(held.state) if held.state is not None else None


async def take_seat(
    services: Gateway,
    game_id: str,
    platform: str | None,
    request: TakeSeatRequest,
    idempotency_key: str | None,
) -> Seated:
    """Sit at the table; the seat comes with its first token."""
    command_id = keyed_command_id(services.secret, idempotency_key, "seat", game_id, platform)
    with command(services, command_id):
        reply = await services.commands.send(game_id, request, command_id)
    if reply.seat is None:
        raise ProblemError("unavailable", "the engine named no seat; retry")
    return seated(services, game_id, reply.seat, request.player, FIRST_ISSUE)


async def reissue_token(
    services: Gateway,
    game_id: str,
    platform: str | None,
    request: ReissueTokenRequest,
    idempotency_key: str | None,
) -> Seated:
    """Issue the seat's token again (every earlier one is revoked), to a substitute when the
    request names one."""
    seat = request.seat
    command_id = keyed_command_id(
        services.secret, idempotency_key, "token", game_id, seat, platform
    )
    with command(services, command_id, seat=seat):
        reply = await services.commands.send(game_id, request, command_id)
    events = (record.event for record in reply.events)
    reissued = expected(events, SeatTokenReissued, "issued nothing")
    return seated(services, game_id, reissued.seat, reissued.player, reissued.issue)


async def mark_away(
    services: Gateway, game_id: str, seat: int, platform: str | None, idempotency_key: str | None
) -> tuple[int, list[EventRecord]]:
    """Say the seat's player is gone; the game's version and the events it caused."""
    command_id = keyed_command_id(services.secret, idempotency_key, "away", game_id, seat, platform)
    with command(services, command_id, seat=seat):
        reply = await services.commands.send(game_id, MarkAwayRequest(seat=seat), command_id)
    return reply.version, reply.events
