"""Games: create one, list them, read one's public state or a seat's view of it."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Query, Response

from contracts.answers import GameList as GameListAnswer
from contracts.wire import CreateGameRequest
from domain.clock import Clock
from domain.league import League, table_of
from domain.state import Status
from services.gateway.commands import default_visibility
from services.gateway.deps import (
    CallerOf,
    GameReadOf,
    Gateway,
    Platform,
    SeatReadOf,
    Services,
)
from services.gateway.models import CreateGame, GameList, PublicState, SeatView
from services.gateway.openapi import OPTIONAL_CREDENTIAL, problems
from services.gateway.operations import games as operations
from services.gateway.problems import ProblemError
from services.gateway.projection_queries import GAME_CURSOR_PATTERN, GameQuery, InvalidCursor
from services.gateway.quotas import check_games_quota, check_turn
from services.gateway.routes.actions import IdempotencyKey
from services.gateway.views import as_json, state_answer, state_for
from services.runtime.logging import get_logger

router = APIRouter(prefix="/v1/games", tags=["games"])

log = get_logger("spades.gateway")

_LOCATION = {"description": "The game's URL.", "schema": {"type": "string"}}


@router.post(
    "",
    status_code=201,
    response_model=PublicState,
    responses={**problems(401, 409, 422, 429, 503), 201: {"headers": {"Location": _LOCATION}}},
    openapi_extra=OPTIONAL_CREDENTIAL,  # needed only when SPADES_API_KEYS is set
)
async def create_game(
    body: CreateGame,
    services: Services,
    platform: Platform,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Create a game of the caller's platform; the response is its public state (as created: a
    retry with the same ``Idempotency-Key`` gets the same game). ``visibility`` defaults to
    `private` when the server has platform keys (`public` without); ``seating`` to `platform`:
    only the platform seats players, unless it is `open`. A game joins a league only through
    the league's rounds: naming one here is 422 `invalid_rules`."""
    if body.league is not None:
        raise ProblemError(
            "invalid_rules", "a game joins a league only when the league's round creates it"
        )
    clock = Clock(**body.clock.model_dump()) if body.clock is not None else None
    check_turn(services, clock)
    await check_games_quota(services, platform)
    request = CreateGameRequest(
        rules=body.rules,
        dealer=body.dealer,
        entropy=body.entropy,
        platform=platform,
        visibility=body.visibility or default_visibility(services),
        seating=body.seating,
        clock=clock,
    )
    game_id, game = await operations.create_game(services, request, idempotency_key)
    log.info("game created", preset=game.rules.preset, visibility=game.visibility)
    response.headers["Location"] = f"{router.prefix}/{game_id}"
    return as_json(state_for(game, None))


@router.get(
    "",
    response_model=GameList,
    responses=problems(401, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def list_games(
    services: Services,
    asking: CallerOf,
    status: Status | None = None,
    player: Annotated[str | None, Query(max_length=64)] = None,
    league: Annotated[str | None, Query(max_length=64)] = None,
    cursor: Annotated[
        str | None,
        Query(
            pattern=GAME_CURSOR_PATTERN,
            description="`next_cursor` of the page before: the time and id of its last game.",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Any:
    """Games, a page at a time, filtered by status, a player's name or a league: a platform's
    own games to the platform, public games to anyone else."""
    mine = asking.platform if not asking.local else None
    public = "public" if not asking.local and asking.platform is None else None
    query = GameQuery(
        status=status,
        player=player,
        league=league,
        cursor=cursor,
        limit=limit,
        platform=mine,
        visibility=public,
    )
    try:
        listed = await services.read_models.list_games(query)
    except InvalidCursor as error:
        raise ProblemError("malformed", str(error)) from None
    if public is not None:
        listed = await _boards_held_back(services, listed)
    return as_json(listed)


async def _boards_held_back(services: Gateway, listed: GameListAnswer) -> GameListAnswer:
    """The list as the public sees it: a duplicate table's scores, bags and winners held back
    while its round is being played (they say how the round's boards went, and the other
    tables are playing them)."""
    rounds: dict[str, League | None] = {}
    shown = []
    for summary in listed.games:
        place = table_of(summary.game_id) if summary.league is not None else None
        if place is not None and place.league_id == summary.league:
            if place.league_id not in rounds:
                rounds[place.league_id] = (await services.leagues.latest(place.league_id)).state
            league = rounds[place.league_id]
            if (
                league is not None
                and league.format == "duplicate"
                and 1 <= place.round <= len(league.rounds)
                and not league.rounds[place.round - 1].finished
            ):
                summary = msgspec.structs.replace(summary, scores=[], bags=[], winners=[])
        shown.append(summary)
    return msgspec.structs.replace(listed, games=shown)


@router.get(
    "/{game_id}",
    response_model=PublicState,
    responses=problems(401, 403, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def public_state(read: GameReadOf) -> Any:
    """The game as anyone watching the table sees it (a private game: its platform and its
    seats)."""
    return state_answer(read.game, None)


@router.get("/{game_id}/view", response_model=SeatView, responses=problems(401, 403, 404, 429, 503))
async def seat_view(read: SeatReadOf) -> Any:
    """The game as the token's seat sees it: its cards once looked at, and every legal action."""
    return state_answer(read.game, read.seat)
