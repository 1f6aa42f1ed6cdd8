"""What a route needs, as ``Annotated`` dependencies: the services, the game, the reader.

The services are built once by the app's lifespan (:mod:`services.gateway.app`) and held in a
:class:`Gateway`; routes ask for the piece they use. Seat tokens come as
``Authorization: Bearer <token>`` (or, for event streams, as ``?access_token=``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import structlog
from fastapi import Depends, Path, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from nats.aio.client import Client
from nats.js import JetStreamContext

from contracts.wire import GAME_ID
from domain.league import LEAGUE_ID, League
from domain.state import Game
from services.engine.league_cache import LeagueCache
from services.gateway.auth import PlatformKeys, SeatGrant, SeatTokens
from services.gateway.commands import Commands, InFlight
from services.gateway.problems import ProblemError
from services.gateway.read_models import ReadModels
from services.gateway.telemetry import Metrics
from services.gateway.views import Reader
from services.projections.store import Store
from services.runtime.game_cache import GameCache
from services.runtime.game_stream import GameStream


@dataclass(frozen=True, kw_only=True)
class Gateway:
    """The gateway's services, made once per process by the lifespan."""

    connection: Client
    js: JetStreamContext
    stream: GameStream
    games: GameCache
    leagues: LeagueCache
    commands: Commands
    in_flight: InFlight
    seat_tokens: SeatTokens
    platform_keys: PlatformKeys
    secret: bytes
    """The service's signing key: what ids derived from idempotency keys are keyed with."""
    read_models: ReadModels
    store: Store
    metrics: Metrics
    keep_alive_s: float
    min_version_wait_s: float


def gateway(request: Request) -> Gateway:
    held: Gateway = request.app.state.gateway
    return held


Services = Annotated[Gateway, Depends(gateway)]

_bearer = HTTPBearer(
    auto_error=False,
    description="A seat token (from taking a seat), or a platform key for creating games.",
)


async def presented_token(
    request: Request,
    _documented: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> str | None:
    """The bearer credential, None when there is no Authorization header."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, credential = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise ProblemError("unauthorized", "Authorization takes 'Bearer <token>'")
    return credential.strip()


Credential = Annotated[str | None, Depends(presented_token)]


async def valid_game_id(
    game_id: Annotated[str, Path(description="The game's id, as creating it returned.")],
) -> str:
    if not GAME_ID.match(game_id):
        raise ProblemError("game_not_found", "no game has that id")
    structlog.contextvars.bind_contextvars(game_id=game_id)
    return game_id


GameId = Annotated[str, Depends(valid_game_id)]


def _grant_for(services: Gateway, game_id: str, token: str) -> SeatGrant:
    grant = services.seat_tokens.read(token)
    if grant is None:
        raise ProblemError("unauthorized", "not a seat token of this service")
    if grant.game_id != game_id:
        raise ProblemError("forbidden", "this seat token is for another game")
    structlog.contextvars.bind_contextvars(seat=grant.seat)
    return grant


async def seat_grant(services: Services, game_id: GameId, token: Credential) -> SeatGrant:
    """The seat the request acts for; 401 without a valid token, 403 for another game's."""
    if token is None:
        raise ProblemError("unauthorized", "this needs a seat token: Authorization: Bearer ...")
    return _grant_for(services, game_id, token)


SeatOf = Annotated[SeatGrant, Depends(seat_grant)]


async def reader(services: Services, game_id: GameId, token: Credential) -> Reader:
    """The seat reading, or None for the public (no token)."""
    return None if token is None else _grant_for(services, game_id, token).seat


ReaderOf = Annotated[Reader, Depends(reader)]


async def stream_reader(
    services: Services,
    game_id: GameId,
    token: Credential,
    access_token: Annotated[
        str | None,
        Query(
            description="The seat token, for clients that cannot set headers (RFC 6750 2.3).",
        ),
    ] = None,
) -> Reader:
    """As :func:`reader`, also taking the token from ``?access_token=``."""
    presented = token if token is not None else access_token
    return None if presented is None else _grant_for(services, game_id, presented).seat


StreamReaderOf = Annotated[Reader, Depends(stream_reader)]


async def platform(services: Services, key: Credential) -> str | None:
    """The caller's platform key, when ``SPADES_API_KEYS`` names any (else None: one platform)."""
    if not services.platform_keys.required:
        return None
    if key is None or not services.platform_keys.accepts(key):
        raise ProblemError("unauthorized", "creating games needs a platform key")
    return key


Platform = Annotated[str | None, Depends(platform)]


async def current_game(services: Services, game_id: GameId) -> Game:
    """The game as the stream has it now; 404 when there is none."""
    state = (await services.games.latest(game_id)).state
    if state is None:
        raise ProblemError("game_not_found", f"no game {game_id}")
    return state


CurrentGame = Annotated[Game, Depends(current_game)]


async def min_version(
    services: Services,
    game_id: GameId,
    wanted: Annotated[
        int | None,
        Query(
            alias="min_version",
            ge=0,
            le=2**53,
            description="Wait until this version is visible.",
        ),
    ] = None,
) -> None:
    """Read-your-writes for the read models: wait (bounded) until they hold ``min_version``."""
    if wanted is None:
        return
    if not await services.read_models.wait_for_version(
        game_id, wanted, services.min_version_wait_s
    ):
        raise ProblemError("unavailable", f"version {wanted} is not visible yet")


MinVersion = Annotated[None, Depends(min_version)]


# --------------------------------------------------------------------------- leagues


async def valid_league_id(
    league_id: Annotated[str, Path(description="The league's id, as creating it returned.")],
) -> str:
    if not LEAGUE_ID.match(league_id):
        raise ProblemError("league_not_found", "no league has that id")
    structlog.contextvars.bind_contextvars(league_id=league_id)
    return league_id


LeagueId = Annotated[str, Depends(valid_league_id)]


async def current_league(services: Services, league_id: LeagueId) -> League:
    """The league as its stream has it now; 404 when there is none."""
    state = (await services.leagues.latest(league_id)).state
    if state is None:
        raise ProblemError("league_not_found", f"no league {league_id}")
    return state


CurrentLeague = Annotated[League, Depends(current_league)]


async def league_min_version(
    services: Services,
    league_id: LeagueId,
    wanted: Annotated[
        int | None,
        Query(
            alias="min_version",
            ge=0,
            le=2**53,
            description="Wait until the standings count this many of the league's games.",
        ),
    ] = None,
) -> None:
    """Read-your-writes for the standings: wait (bounded) until they count ``min_version``
    games (a client that saw its games end knows how many that is)."""
    if wanted is None:
        return
    if not await services.read_models.wait_for_league_version(
        league_id, wanted, services.min_version_wait_s
    ):
        raise ProblemError("unavailable", f"{wanted} games are not counted yet")


LeagueMinVersion = Annotated[None, Depends(league_min_version)]
