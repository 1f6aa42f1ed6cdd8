"""What a route needs, as ``Annotated`` dependencies: the services, the caller, the game.

The services are built once by the app's lifespan (:mod:`services.gateway.app`) and held in a
:class:`Gateway`; routes ask for the piece they use. A caller presents a platform key or a
seat token as ``Authorization: Bearer <credential>`` (a token also as ``?access_token=``, for
event streams). Who may read what (docs/api.md, "Who may read and change what"): a game or a
league that is public, its own platform, a game's seats through their tokens, and the holder
of a watch link the platform issued (the game, or the league and its tables, as the public
sees a public one); anyone else is answered exactly as if there were no such game or league.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

import structlog
from fastapi import Depends, Path, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from nats.aio.client import Client
from nats.js import JetStreamContext

from domain.league import LEAGUE_ID, League, table_of
from domain.seating import GAME_ID
from domain.state import Game
from services.gateway.audits import AuditRuns
from services.gateway.auth import (
    PlatformKeys,
    SeatGrant,
    SeatTokens,
    WatchGrant,
    WatchTokens,
    is_watch_token,
)
from services.gateway.commands import Commands, InFlight
from services.gateway.embedding import FrameOrigins
from services.gateway.league_census import LeagueCensus
from services.gateway.limits import DEFAULT_STREAMS, DEFAULT_WAITS, Slots, address_of, parse_caps
from services.gateway.problems import ProblemError
from services.gateway.projection_queries import ReadModels
from services.gateway.telemetry import Metrics
from services.runtime.aggregate_cache import AggregateCache, Loaded
from services.runtime.game_cache import GameCache, LoadedGame
from services.runtime.game_stream import GameStream
from services.runtime.league_cache import LeagueCache
from services.runtime.webhook_addresses import AddressPolicy
from services.store import watch_links
from services.store.database import Store

L = TypeVar("L", bound=Loaded[Any, Any])


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
    watch_tokens: WatchTokens
    platform_keys: PlatformKeys
    secret: bytes
    """The service's signing key: what ids derived from idempotency keys are keyed with."""
    read_models: ReadModels
    store: Store
    metrics: Metrics
    audits: AuditRuns
    caps: Caps
    keep_alive_s: float
    min_version_wait_s: float
    webhook_policy: AddressPolicy = field(default_factory=AddressPolicy)
    """Which addresses a webhook endpoint may have."""
    streams: Slots = field(
        default_factory=lambda: Slots(parse_caps("", DEFAULT_STREAMS, ""), "event streams")
    )
    """The event streams each caller holds open."""
    waits: Slots = field(
        default_factory=lambda: Slots(parse_caps("", DEFAULT_WAITS, ""), "min_version waits")
    )
    """The ``min_version`` reads each caller has waiting."""
    log_origin: str = "spades.localhost/log"
    """The audit log's origin (``SPADES_LOG_ORIGIN``): partition ``p``'s log is
    ``<log_origin>/<p>``."""
    log_witnessed: bool = False
    """The audit log has witnesses (``SPADES_LOG_WITNESSES``): a stream's receipt waits for a
    cosignature."""
    receipt_wait_s: float = 10.0
    """How long a stream waits for a hand's receipt (``SPADES_STREAM_RECEIPT_WAIT_S``)."""
    league_census: LeagueCensus = field(default_factory=LeagueCensus)
    """Each league's platform and end, as far as this gateway has read them (the quota of
    leagues going on counts from it)."""
    frame_origins: FrameOrigins = field(default_factory=dict)
    """The sites that may frame each platform's pages."""
    watch_link_max_ttl_s: int = 30 * 86_400
    """The longest a watch link may be valid for."""


@dataclass(frozen=True, slots=True)
class Caps:
    """How large a league may be, and how many tables one round may seat; a platform's
    quotas: its games and leagues going on at once, and the shortest turn a clock may give."""

    league_players: int
    round_tables: int
    games_going_on: int = 1000
    leagues_going_on: int = 100
    min_turn_s: float = 0.0


async def gateway(request: Request) -> Gateway:
    """The services (async: FastAPI runs a plain ``def`` dependency in a thread, a hop every
    request paid for an attribute read)."""
    held: Gateway = request.app.state.gateway
    return held


Services = Annotated[Gateway, Depends(gateway)]

_bearer = HTTPBearer(
    auto_error=False,
    description="A platform key (its games and leagues), or a seat token (its seat of its game).",
)


def bearer_credential(header: str | None) -> str | None:
    """The credential of an ``Authorization`` header, None when there is no header."""
    if header is None:
        return None
    scheme, _, credential = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise ProblemError("unauthorized", "Authorization takes 'Bearer <token>'")
    return credential.strip()


async def presented_token(
    request: Request,
    _documented: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> str | None:
    """The bearer credential, None when there is no Authorization header."""
    return bearer_credential(request.headers.get("authorization"))


Credential = Annotated[str | None, Depends(presented_token)]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking: a platform (by one of its keys), a seat (by its token, signed and not
    expired; whether it is revoked only the game can tell), a watcher (by a watch link's
    token, likewise), or no one. Without platform keys configured (local development) every
    caller speaks for the one platform there is."""

    platform: str | None = None
    grant: SeatGrant | None = None
    local: bool = False
    watch: WatchGrant | None = None
    """A watch link's grant: it reads, as the public, what the link shows; it never acts."""

    def owns(self, owner: str | None) -> bool:
        """Whether the caller is the platform a game or league belongs to."""
        return self.local or (self.platform is not None and self.platform == owner)

    def may_read(self, owner: str | None, visibility: str) -> bool:
        return visibility == "public" or self.owns(owner)


def held_by(asking: Caller, request: Request) -> tuple[str, str]:
    """Whose slot a stream or a wait takes, as the rate limit names callers: the platform, the
    seat, else the client's address."""
    if asking.platform is not None:
        return "platform", asking.platform
    if asking.grant is not None:
        return "seat", f"{asking.grant.game_id}:{asking.grant.seat}"
    return "anonymous", address_of(request.scope)


@asynccontextmanager
async def slot(slots: Slots, asking: Caller, request: Request) -> AsyncIterator[None]:
    """One of the caller's ``slots`` while the block runs; 429 ``rate_limited`` when it holds
    them all."""
    kind, who = held_by(asking, request)
    if not slots.take(kind, who):
        raise ProblemError("rate_limited", slots.refusal(kind))
    try:
        yield
    finally:
        slots.give_back(kind, who)


def _caller(services: Gateway, credential: str | None) -> Caller:
    keys = services.platform_keys
    local = not keys.required
    if credential is None:
        return Caller(local=local)
    platform = keys.platform_of(credential)
    if platform is not None:
        structlog.contextvars.bind_contextvars(platform=platform)
        return Caller(platform=platform)
    if is_watch_token(credential):
        watch = services.watch_tokens.read(credential)
        if watch is None:
            raise ProblemError("unauthorized", "not a watch link of this service")
        if watch.expired(services.watch_tokens.now()):
            raise ProblemError("unauthorized", "this watch link has expired: ask for a new one")
        return Caller(watch=watch, local=local)
    grant = services.seat_tokens.read(credential)
    if grant is None:
        raise ProblemError("unauthorized", "not a seat token or a platform key of this service")
    if grant.expired(services.seat_tokens.now()):
        raise ProblemError("unauthorized", "this seat token has expired: ask for a new one")
    return Caller(grant=grant, local=local)


async def caller(services: Services, credential: Credential) -> Caller:
    """The caller, for requests that name no game (lists, leagues, creating)."""
    return _caller(services, credential)


CallerOf = Annotated[Caller, Depends(caller)]


Kind = Literal["game", "league"]


def unknown(kind: Kind, key: str) -> ProblemError:
    """What an id answers that the caller may not know of: exactly what no such game or league
    answers."""
    return ProblemError(f"{kind}_not_found", f"no {kind} {key}")


def _id_of(kind: Kind, shape: re.Pattern[str], key: str) -> str:
    """An id from the path: one no game or league could have is unknown, as an absent one."""
    if not shape.fullmatch(key):
        raise unknown(kind, key)
    structlog.contextvars.bind_contextvars(**{f"{kind}_id": key})
    return key


async def _readable(
    cache: AggregateCache[L], kind: Kind, key: str, may_read: Callable[[Any], bool]
) -> L:
    """The game or league as its stream has it now, if it exists and the caller may read it;
    unknown otherwise, after the same work (it is loaded from the stream either way)."""
    loaded = await cache.latest(key)
    if loaded.state is None or not may_read(loaded.state):
        raise unknown(kind, key)
    return loaded


async def valid_game_id(
    game_id: Annotated[str, Path(description="The game's id, as creating it returned.")],
) -> str:
    return _id_of("game", GAME_ID, game_id)


GameId = Annotated[str, Depends(valid_game_id)]


def _game_caller(services: Gateway, game_id: str, credential: str | None) -> Caller:
    """The caller of a request about one game. A seat token of another game is refused
    before the game is looked at, so the answer says nothing of this one."""
    asking = _caller(services, credential)
    if asking.grant is not None:
        if asking.grant.game_id != game_id:
            raise ProblemError("forbidden", "this seat token is for another game")
        structlog.contextvars.bind_contextvars(seat=asking.grant.seat)
    watch = asking.watch
    if watch is not None and watch.kind == "game" and watch.subject != game_id:
        raise ProblemError("forbidden", "this watch link is for another game")
    return asking


async def game_caller(services: Services, game_id: GameId, credential: Credential) -> Caller:
    return _game_caller(services, game_id, credential)


async def stream_caller(
    services: Services,
    game_id: GameId,
    credential: Credential,
    access_token: Annotated[
        str | None,
        Query(
            description="The seat token, for clients that cannot set headers (RFC 6750 2.3).",
        ),
    ] = None,
) -> Caller:
    """As :func:`game_caller`, also taking the token from ``?access_token=``."""
    return _game_caller(services, game_id, credential if credential is not None else access_token)


GameCaller = Annotated[Caller, Depends(game_caller)]
StreamCaller = Annotated[Caller, Depends(stream_caller)]


def unknown_game(game_id: str) -> ProblemError:
    return unknown("game", game_id)


def superseded(grant: SeatGrant, game: Game) -> bool:
    """Whether ``game`` has issued the grant's seat another token (or seats no one there)."""
    sitting = game.players[grant.seat] if grant.seat < len(game.players) else None
    return sitting is None or sitting.issue != grant.issue


def revoked_in_memory(games: GameCache, grant: SeatGrant) -> bool:
    """Whether the game as this gateway holds it (without reading) has revoked the grant;
    False when it does not hold the game."""
    held = games.peek(grant.game_id)
    return held is not None and held.state is not None and superseded(grant, held.state)


def _seat_of(caller: Caller, game: Game) -> int | None:
    """The seat the caller's token grants in ``game``; 401 when it has been revoked."""
    grant = caller.grant
    if grant is None:
        return None
    if superseded(grant, game):
        raise ProblemError("unauthorized", "this seat token has been revoked: ask for a new one")
    return grant.seat


@dataclass(frozen=True, slots=True)
class GameRead:
    """A game the caller may read, as the stream has it now, and who reads it."""

    loaded: LoadedGame
    caller: Caller
    seat: int | None
    """The seat the caller's token grants (its view); None reads as the public."""

    @property
    def game(self) -> Game:
        assert self.loaded.state is not None
        return self.loaded.state

    @property
    def owner(self) -> bool:
        """Whether the caller is the game's platform (which alone sees the game's platform)."""
        return self.caller.owns(self.game.platform)


async def game_read(services: Services, game_id: GameId, asking: GameCaller) -> GameRead:
    """The game, for a caller that may read it: it is public, or the caller is its platform,
    or holds a seat token of it. Anyone else gets exactly what an unknown id gets, after the
    same work (the game is loaded from the stream either way)."""
    return await _read(services, game_id, asking)


async def stream_read(services: Services, game_id: GameId, asking: StreamCaller) -> GameRead:
    return await _read(services, game_id, asking)


async def current_watch(services: Gateway, watch: WatchGrant | None) -> None:
    """401 for a watch link its platform has revoked since it was issued (every gateway
    reads the generation from the database, so a revocation holds at once everywhere)."""
    if watch is None:
        return
    async with services.store.reading() as conn:
        now = await watch_links.generation(conn, watch.kind, watch.subject)
    if watch.generation != now:
        raise ProblemError("unauthorized", "this watch link has been revoked: ask for a new one")


async def _read(services: Gateway, game_id: str, asking: Caller) -> GameRead:
    await current_watch(services, asking.watch)
    watch = asking.watch

    def may_read(game: Game) -> bool:
        if watch is not None and watch.covers(game.game_id, game.league):
            return True
        return _seat_of(asking, game) is not None or asking.may_read(game.platform, game.visibility)

    loaded = await _readable(services.games, "game", game_id, may_read)
    assert loaded.state is not None
    seat = _seat_of(asking, loaded.state)
    if seat is None and not await _boards_shown(services, loaded.state, asking):
        raise unknown_game(game_id)
    return GameRead(loaded, asking, seat)


async def _boards_shown(services: Gateway, game: Game, asking: Caller) -> bool:
    """Whether a game may be shown to a reader who holds no seat of it: always, but for a
    table of a duplicate event while its round is being played. Every table of the round
    plays the same boards, so a table's cards (its plays, its hand records) are kept from
    everyone but its own seats and its platform until every table is over and the round's
    boards are revealed; anyone else gets what an unknown id gets until then."""
    duplicate = game.duplicate
    if duplicate is None or asking.owns(game.platform):
        return True
    place = table_of(game.game_id)
    league = (await services.leagues.latest(duplicate.event)).state
    if place is None or league is None or not 1 <= place.round <= len(league.rounds):
        return False
    return league.rounds[place.round - 1].finished


GameReadOf = Annotated[GameRead, Depends(game_read)]
StreamReadOf = Annotated[GameRead, Depends(stream_read)]


async def seat_read(services: Services, game_id: GameId, asking: GameCaller) -> GameRead:
    """A game read through a seat token of it (its view, its actions); 401 without one,
    before the game is looked at."""
    if asking.grant is None:
        raise ProblemError("unauthorized", "this needs a seat token: Authorization: Bearer ...")
    return await _read(services, game_id, asking)


SeatReadOf = Annotated[GameRead, Depends(seat_read)]


async def platform(services: Services, key: Credential) -> str | None:
    """The caller's platform; a key is needed when ``SPADES_API_KEYS`` names any (without
    keys, None: the one platform of local development)."""
    if not services.platform_keys.required:
        return None
    named = services.platform_keys.platform_of(key) if key is not None else None
    if named is None:
        raise ProblemError("unauthorized", "this needs a platform key: Authorization: Bearer ...")
    structlog.contextvars.bind_contextvars(platform=named)
    return named


Platform = Annotated[str | None, Depends(platform)]


async def min_version(
    services: Services,
    request: Request,
    read: GameReadOf,
    wanted: Annotated[
        int | None,
        Query(
            alias="min_version",
            ge=0,
            le=2**53,
            description="Wait until the read models hold this version of the game (the "
            "version an action answered). One the game has not reached is 409 `conflict`, at "
            "once.",
        ),
    ] = None,
) -> None:
    """Read-your-writes for the read models: wait (bounded) until they hold ``min_version``
    (only once the caller is known to may read the game: an unknown id never waits). A version
    the game itself has not reached is refused at once: waiting for it could not succeed, and
    would only let anyone hold requests open cheaply. A caller has at most its share of waits
    going at once (``SPADES_MAX_WAITS``): past it, 429 ``rate_limited`` at once."""
    if wanted is None:
        return
    if wanted > read.loaded.version:
        raise ProblemError(
            "conflict", f"the game is at version {read.loaded.version}, before {wanted}"
        )
    async with slot(services.waits, read.caller, request):
        visible = await services.read_models.wait_for_version(
            read.game.game_id, wanted, services.min_version_wait_s
        )
    if not visible:
        raise ProblemError("unavailable", f"version {wanted} is not visible yet")


MinVersion = Annotated[None, Depends(min_version)]


# --------------------------------------------------------------------------- leagues


async def valid_league_id(
    league_id: Annotated[str, Path(description="The league's id, as creating it returned.")],
) -> str:
    return _id_of("league", LEAGUE_ID, league_id)


LeagueId = Annotated[str, Depends(valid_league_id)]


def unknown_league(league_id: str) -> ProblemError:
    return unknown("league", league_id)


async def current_league(services: Services, league_id: LeagueId, asking: CallerOf) -> League:
    """The league as its stream has it now, for a caller that may read it (it is public, or
    the caller is its platform); 404 otherwise, as for no league at all."""

    watch = asking.watch
    if watch is not None and not (watch.kind == "league" and watch.subject == league_id):
        raise ProblemError("forbidden", "this watch link is for another game or league")
    await current_watch(services, watch)

    def may_read(league: League) -> bool:
        return watch is not None or asking.may_read(league.platform, league.visibility)

    loaded = await _readable(services.leagues, "league", league_id, may_read)
    assert loaded.state is not None
    return loaded.state


CurrentLeague = Annotated[League, Depends(current_league)]


async def league_min_version(
    services: Services,
    request: Request,
    asking: CallerOf,
    league: CurrentLeague,
    wanted: Annotated[
        int | None,
        Query(
            alias="min_version",
            ge=0,
            le=2**53,
            description="Wait until the standings count this many of the league's games. "
            "More than its rounds have scheduled is 409 `conflict`, at once.",
        ),
    ] = None,
) -> None:
    """Read-your-writes for the standings: wait (bounded) until they count ``min_version``
    games (a client that saw its games end knows how many that is). More games than the
    league's rounds have scheduled is 409 `conflict` at once: no wait could count them."""
    if wanted is None:
        return
    scheduled = sum(len(played.tables) for played in league.rounds)
    if wanted > scheduled:
        raise ProblemError(
            "conflict", f"the league has scheduled {scheduled} games, fewer than {wanted}"
        )
    async with slot(services.waits, asking, request):
        counted = await services.read_models.wait_for_league_version(
            league.league_id, wanted, services.min_version_wait_s
        )
    if not counted:
        raise ProblemError("unavailable", f"{wanted} games are not counted yet")


LeagueMinVersion = Annotated[None, Depends(league_min_version)]


async def no_null_body(request: Request) -> None:
    """An optional body is left out or sent as its object; a JSON ``null`` is refused (400
    ``malformed``), as the document says: it describes the object, which may be left out
    (FastAPI would take ``null`` for a body left out)."""
    if (await request.body()).strip() == b"null":
        raise ProblemError("malformed", "the body is null: leave it out, or send an object")


NO_NULL_BODY = Depends(no_null_body)
"""``dependencies=[NO_NULL_BODY]`` of a route whose body is optional."""
