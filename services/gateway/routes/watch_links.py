"""Watch links: a platform hands its users a link that shows one of its private games, or a
league and its tables, and takes every such link back at once.

A link is ``/watch/<game>#token=<token>`` (``/leagues/<league>#token=<token>``): the token
rides in the URL's fragment, which a browser never sends, so it reaches no server's log; the
page sends it as ``Authorization: Bearer``. It reads what the public reads of a public game,
never a hidden card, and does nothing else. It expires when the platform chose (at most
``SPADES_WATCH_LINK_MAX_TTL``); revoking refuses every link of the game or league issued so
far (401 ``unauthorized`` from then on; an event stream open already runs on until it ends).
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from contracts.answers import WatchLink
from services.gateway.auth import WatchKind
from services.gateway.deps import NO_NULL_BODY, GameId, LeagueId, Platform, Services, unknown
from services.gateway.models import DOMAIN_SCHEMA
from services.gateway.openapi import OPTIONAL_CREDENTIAL, problems
from services.gateway.problems import ProblemError
from services.gateway.views import as_json
from services.runtime.logging import get_logger
from services.store import watch_links

router = APIRouter(tags=["watch links"])

log = get_logger("spades.gateway")

DEFAULT_TTL_S = 86_400
LONGEST_TTL_S = 30 * 86_400
"""The longest a link may ever live (the schema's maximum): ``SPADES_WATCH_LINK_MAX_TTL`` may
only shorten it, so that a request the published schema allows is one a default server takes."""


class CreateWatchLink(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expires_in_s: int = Field(
        default=DEFAULT_TTL_S,
        ge=60,
        le=LONGEST_TTL_S,
        description="Seconds the link is valid for: at most 30 days, or the server's shorter "
        "`SPADES_WATCH_LINK_MAX_TTL` if it sets one.",
    )


WatchLinkShown = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "WatchLink"})]
"""A link and its token: :class:`contracts.answers.WatchLink`."""


async def _owned(services: Services, kind: WatchKind, key: str, platform: str | None) -> None:
    """404, as for no such game or league, unless it is the caller's platform's."""
    cache = services.games if kind == "game" else services.leagues
    state = (await cache.latest(key)).state
    if state is None or (services.platform_keys.required and state.platform != platform):
        raise unknown(kind, key)


async def _issue(
    services: Services, request: Request, kind: WatchKind, key: str, ttl_s: int, page: str
) -> WatchLink:
    if ttl_s > services.watch_link_max_ttl_s:
        raise ProblemError(
            "malformed", f"expires_in_s: at most {services.watch_link_max_ttl_s} on this server"
        )
    async with services.store.reading() as conn:
        generation = await watch_links.generation(conn, kind, key)
    issued = services.watch_tokens.issue(kind, key, generation, ttl_s)
    log.info("watch link issued", kind=kind, generation=generation)
    url = f"{str(request.base_url).rstrip('/')}/{page}/{key}#token={issued.token}"
    return WatchLink(url=url, token=issued.token, expires_at=issued.expires_at)


async def _revoke(services: Services, kind: WatchKind, key: str) -> None:
    async with services.store.writing() as conn:
        generation = await watch_links.revoke(conn, kind, key, time.time())
    log.info("watch links revoked", kind=kind, generation=generation)


Options = Annotated[CreateWatchLink | None, Body()]


@router.post(
    "/v1/games/{game_id}/watch-links",
    status_code=201,
    response_model=WatchLinkShown,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,  # needed only when SPADES_API_KEYS is set
    dependencies=[NO_NULL_BODY],
)
async def create_game_watch_link(
    game_id: GameId, services: Services, platform: Platform, request: Request, body: Options = None
) -> Any:
    """A link that shows the game (the table as a watcher sees it, and its replays) to whoever
    holds it, until it expires or the platform revokes the game's links; the platform's only."""
    await _owned(services, "game", game_id, platform)
    ttl_s = (body or CreateWatchLink()).expires_in_s
    return as_json(await _issue(services, request, "game", game_id, ttl_s, "watch"))


@router.delete(
    "/v1/games/{game_id}/watch-links",
    status_code=204,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def revoke_game_watch_links(
    game_id: GameId, services: Services, platform: Platform
) -> Response:
    """Refuse every watch link of the game issued so far; links issued after work."""
    await _owned(services, "game", game_id, platform)
    await _revoke(services, "game", game_id)
    return Response(status_code=204)


@router.post(
    "/v1/leagues/{league_id}/watch-links",
    status_code=201,
    response_model=WatchLinkShown,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
    dependencies=[NO_NULL_BODY],
)
async def create_league_watch_link(
    league_id: LeagueId,
    services: Services,
    platform: Platform,
    request: Request,
    body: Options = None,
) -> Any:
    """A link that shows the league (its rounds and standings) and every table of its rounds,
    as a watcher sees them, until it expires or the platform revokes the league's links."""
    await _owned(services, "league", league_id, platform)
    ttl_s = (body or CreateWatchLink()).expires_in_s
    return as_json(await _issue(services, request, "league", league_id, ttl_s, "leagues"))


@router.delete(
    "/v1/leagues/{league_id}/watch-links",
    status_code=204,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def revoke_league_watch_links(
    league_id: LeagueId, services: Services, platform: Platform
) -> Response:
    """Refuse every watch link of the league issued so far; links issued after work."""
    await _owned(services, "league", league_id, platform)
    await _revoke(services, "league", league_id)
    return Response(status_code=204)
