"""Seats: taking one returns the token that acts for it; its platform may issue it again.

With platform keys, a game's platform seats its own users, unless the game was created with
``"seating": "open"`` (anyone may sit); without keys, anyone may. A token expires
(``SPADES_SEAT_TOKEN_TTL``) and is revoked when its seat's token is issued again: the re-issue
is a command the engine records in the game's history, so every gateway, now or after a
restart, refuses the earlier tokens.

The seats of a league's tables are not taken here: starting the round seats every player
(:mod:`services.gateway.routes.leagues`), and no one else may sit in their place, even in the
moment between the game's creation and its seating.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path

from contracts.wire import ReissueTokenRequest, TakeSeatRequest
from domain.league import table_of
from domain.rules import PLAYERS
from domain.state import Game
from services.gateway.commands import anonymous_seat_key
from services.gateway.deps import NO_NULL_BODY, Caller, GameCaller, GameReadOf, Services
from services.gateway.models import Events, ReissueToken, SeatTaken, TakeSeat
from services.gateway.openapi import OPTIONAL_CREDENTIAL, problems
from services.gateway.operations import games as operations
from services.gateway.problems import ProblemError
from services.gateway.routes.actions import IdempotencyKey
from services.gateway.views import as_json, events_answer
from services.runtime.logging import get_logger

router = APIRouter(prefix="/v1/games/{game_id}/seats", tags=["seats"])

SeatOfTable = Annotated[
    int,
    Path(
        ge=0,
        le=max(PLAYERS) - 1,
        description="The seat, 0 for the first; one the table does not have is 404.",
    ),
]

log = get_logger("spades.gateway")


@router.post(
    "",
    status_code=201,
    response_model=SeatTaken,
    responses=problems(401, 403, 404, 409, 422, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def take_seat(
    read: GameReadOf,
    asking: GameCaller,
    body: TakeSeat,
    services: Services,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Sit at the table (the platform seats its user; anyone, at an `open` table); when the
    last seat fills, the first hand is dealt. A retry with the same ``Idempotency-Key`` from
    the same caller gets the same seat (and a token for it); without a platform key the key
    must be at least 32 characters (a UUID), since it is all that makes the retry yours."""
    game = read.game
    _may_sit(asking, game)
    await _refuse_league_tables(services, game.game_id)
    if asking.platform is None:
        anonymous_seat_key(idempotency_key)
    request = TakeSeatRequest(player=body.player, seat=body.seat, entropy=body.entropy)
    taken = await operations.take_seat(
        services, game.game_id, asking.platform, request, idempotency_key
    )
    log.info("seat taken", seat=taken.seat)
    return as_json(taken.answer())


@router.post(
    "/{seat}/token",
    response_model=SeatTaken,
    responses=problems(401, 403, 404, 409, 422, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
    dependencies=[NO_NULL_BODY],
)
async def reissue_token(
    read: GameReadOf,
    asking: GameCaller,
    seat: SeatOfTable,
    services: Services,
    body: Annotated[ReissueToken | None, Body()] = None,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Issue the seat's token again, for its platform only: every earlier token of the seat is
    revoked at once (401 from then on). ``player`` seats a substitute in its place. A retry
    with the same ``Idempotency-Key`` gets the same issue (and a token of it)."""
    game = read.game
    _platforms_seat(asking, game, seat, "only the game's platform issues its seats' tokens")
    request = ReissueTokenRequest(seat=seat, player=body.player if body is not None else None)
    reissued = await operations.reissue_token(
        services, game.game_id, asking.platform, request, idempotency_key
    )
    log.info("seat token issued again", issue=reissued.issue)
    return as_json(reissued.answer())


@router.post(
    "/{seat}/away",
    response_model=Events,
    responses=problems(401, 403, 404, 409, 422, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def mark_away(
    read: GameReadOf,
    asking: GameCaller,
    seat: SeatOfTable,
    services: Services,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Say the seat's player is gone, for the game's platform only (a withdrawal): in a game
    with a clock the seat is `away` from now on, played for by the service at once on each of
    its turns until its token acts again (`{"type": "back"}`, or any action). A game without a
    clock refuses it (409 `wrong_phase`); a seat away already changes nothing."""
    game = read.game
    _platforms_seat(asking, game, seat, "only the game's platform says a seat is away")
    version, events = await operations.mark_away(
        services, game.game_id, seat, asking.platform, idempotency_key
    )
    log.info("seat marked away", changed=bool(events))
    return events_answer(version, ((record.version, record.event) for record in events), None)


def _platforms_seat(asking: Caller, game: Game, seat: int, forbidden: str) -> None:
    """403 (saying ``forbidden``) for anyone but the game's platform; 404 for a seat the
    table does not have."""
    if not asking.owns(game.platform):
        raise ProblemError("forbidden", forbidden)
    if seat >= game.rules.players:
        raise ProblemError("not_found", f"the table has no seat {seat}")


def _may_sit(asking: Caller, game: Game) -> None:
    """403 for a caller who may read the game but not sit at it."""
    if asking.watch is not None:
        raise ProblemError("forbidden", "a watch link watches; it takes no seat")
    if game.seating == "open" or game.platform is None or asking.owns(game.platform):
        return
    raise ProblemError("forbidden", "the game's platform seats its players (seating: platform)")


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
