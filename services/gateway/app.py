"""The HTTP gateway's composition root: :func:`create_app` builds the whole application.

Nothing connects at import or at :func:`create_app`; the lifespan connects to NATS and builds
the services every route shares (:class:`services.gateway.deps.Gateway`), and closes them.
``spades serve gateway`` runs it under uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import nats.errors
import nats.js.errors
from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig
from nats.aio.client import Client

from services.gateway.audits import AuditRuns
from services.gateway.auth import PlatformKeys, SeatGrant, SeatTokens, WatchTokens
from services.gateway.body_limit import BodyLimit
from services.gateway.commands import Commands, InFlight
from services.gateway.deps import Caps, Gateway, revoked_in_memory
from services.gateway.embedding import parse_frame_origins
from services.gateway.fast_path import FastPath
from services.gateway.json_text import JsonText
from services.gateway.limits import (
    DEFAULT_STREAMS,
    DEFAULT_WAITS,
    Identify,
    Progress,
    RateLimit,
    Slots,
    caller_of,
    parse_caps,
    parse_rate_limits,
)
from services.gateway.openapi import install_openapi
from services.gateway.problems import install_problem_handlers
from services.gateway.projection_queries import ProjectionReadModels
from services.gateway.routes import (
    actions,
    audit,
    audit_log,
    events,
    games,
    hands,
    leagues,
    seats,
    service,
    watch_links,
    webhooks,
)
from services.gateway.routes.pages import install_pages
from services.gateway.telemetry import Metrics, RequestTelemetry
from services.runtime.engine_client import EngineClient
from services.runtime.game_cache import GameCache
from services.runtime.game_stream import GameStream, game_partitions
from services.runtime.league_cache import LeagueCache
from services.runtime.league_stream import LeagueStream
from services.runtime.logging import get_logger
from services.runtime.loop import freeze_started_heap
from services.runtime.nats import connect
from services.runtime.settings import Settings, get_settings
from services.runtime.tail import Tail
from services.runtime.webhook_addresses import AddressPolicy
from services.store.database import open_store
from services.store.migrations import migrate

log = get_logger("spades.gateway")

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]

KEEP_ALIVE_S = 15.0
"""Seconds between keep-alive comments on an idle event stream."""
MIN_VERSION_WAIT_S = 5.0
"""The longest a read waits for its ``min_version``."""

OWN_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}
"""FastAPI's native OpenTelemetry off: the gateway's metrics and request log are its own
(:mod:`services.gateway.telemetry`), and no OpenTelemetry provider is configured, yet FastAPI
asked the environment for one on every request (3.5 us)."""

DESCRIPTION = """\
Spades for platforms: create games, take seats, act with seat tokens, follow games as they are
played, and audit them afterwards; run leagues of many tables, with standings and ratings; hear
of a platform's games and leagues through signed webhooks (Standard Webhooks 1.0).
Errors are RFC 9457 problems whose `code` is a docs/rules.md code.
"""


def _lifespan(
    settings: Settings, metrics: Metrics, keep_alive_s: float, min_version_wait_s: float
) -> Lifespan:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if not settings.nats_url:
            raise RuntimeError("the gateway needs a NATS server: set SPADES_NATS_URL")
        platform_keys = PlatformKeys(settings.platform_keys)
        if not platform_keys.required:
            log.warning("SPADES_API_KEYS is not set: anyone may create games")
        secret = settings.signing_key()
        seat_tokens = SeatTokens(secret, settings.seat_token_ttl)
        frame_origins = parse_frame_origins(settings.frame_origins)
        connection = await connect(
            settings.nats_url,
            "spades-gateway",
            user="gateway",
            credentials=settings.nats_credentials("gateway"),
        )
        js = connection.jetstream(timeout=settings.command_timeout_s)
        layout = settings.layout
        stream = GameStream(js, layout)
        games = GameCache(stream)
        # The games it holds take each commit as it is appended: a read then finds its game
        # current, and the stream answers its one question (anything after?) with "no".
        follower = Tail([(p.stream, p.subjects) for p in game_partitions(layout)], games)
        following = asyncio.create_task(_follow(follower, connection))
        store = open_store(settings.read_model_database_url)
        await migrate(store, secret=secret)  # the projection workers may not have started yet
        in_flight = InFlight()
        metrics.in_flight.set_function(lambda: len(in_flight))
        app.state.gateway = Gateway(
            connection=connection,
            js=js,
            stream=stream,
            games=games,
            leagues=LeagueCache(LeagueStream(js)),
            commands=Commands(
                EngineClient(connection, settings.command_timeout_s, layout),
                metrics.engine_timeouts,
            ),
            in_flight=in_flight,
            seat_tokens=seat_tokens,
            watch_tokens=WatchTokens(secret),
            frame_origins=frame_origins,
            watch_link_max_ttl_s=settings.watch_link_max_ttl,
            platform_keys=platform_keys,
            secret=secret,
            read_models=ProjectionReadModels(store),
            store=store,
            metrics=metrics,
            audits=AuditRuns(metrics.audits),
            caps=Caps(
                settings.max_league_players,
                settings.max_round_tables,
                games_going_on=settings.max_games_going_on,
                leagues_going_on=settings.max_leagues_going_on,
                min_turn_s=settings.min_turn_s,
            ),
            keep_alive_s=keep_alive_s,
            min_version_wait_s=min_version_wait_s,
            webhook_policy=AddressPolicy(allow_private=settings.webhook_allow_private),
            log_origin=settings.log_origin,
            log_witnessed=bool(settings.log_witnesses.strip()),
            receipt_wait_s=settings.stream_receipt_wait_s,
            streams=Slots(_stream_caps(settings), "event streams"),
            waits=Slots(_wait_caps(settings), "min_version waits"),
        )
        freeze_started_heap()
        log.info("gateway ready")
        try:
            yield
        finally:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
            await follower.stop()
            try:
                await connection.close()
            except (OSError, nats.errors.Error) as error:  # NATS already gone: nothing to flush
                log.warning("nats connection closed uncleanly", error=repr(error))
            await store.close()

    return lifespan


def _stream_caps(settings: Settings) -> dict[str, int]:
    return parse_caps(settings.max_streams, DEFAULT_STREAMS, "SPADES_MAX_STREAMS")


def _wait_caps(settings: Settings) -> dict[str, int]:
    return parse_caps(settings.max_waits, DEFAULT_WAITS, "SPADES_MAX_WAITS")


FOLLOW_RETRY_S = 1.0
"""How soon the gateway tries again to follow the game stream (not there yet, NATS away)."""


async def _follow(follower: Tail, connection: Client) -> None:
    """Follow the game stream once it can be followed (the engine creates it). Following only
    spares reads a request: until it starts, and if it never does, they read the stream."""
    while True:
        try:
            await follower.start(connection)
        except (nats.errors.Error, nats.js.errors.Error, TimeoutError) as error:
            log.debug("not following the game stream yet", error=repr(error))
            await asyncio.sleep(FOLLOW_RETRY_S)
        else:
            return


def create_app(
    settings: Settings | None = None,
    *,
    keep_alive_s: float = KEEP_ALIVE_S,
    min_version_wait_s: float = MIN_VERSION_WAIT_S,
) -> FastAPI:
    """The gateway as an ASGI application (settings from the environment when not given)."""
    settings = settings if settings is not None else get_settings()
    settings.platform_keys  # noqa: B018 (a bad SPADES_API_KEYS stops the start, not a request)
    rates = parse_rate_limits(settings.rate_limit)
    _stream_caps(settings), _wait_caps(settings)  # a bad setting stops the start, not a request
    parse_frame_origins(settings.frame_origins)
    metrics = Metrics()
    app = FastAPI(
        title="Spades",
        version="1",
        description=DESCRIPTION,
        docs_url=None,  # /docs is a page of our own (services/gateway/routes/pages.py), offline
        redoc_url=None,
        lifespan=_lifespan(settings, metrics, keep_alive_s, min_version_wait_s),
        telemetry=OWN_TELEMETRY,
    )
    routers = (
        games,
        seats,
        actions,
        events,
        hands,
        audit,
        audit_log,
        leagues,
        watch_links,
        webhooks,
        service,
    )
    for router in routers:
        app.include_router(router.router)
    install_pages(app)
    install_problem_handlers(app)
    install_openapi(app)
    app.add_middleware(FastPath)  # innermost: a seat's view and actions, past the router
    app.add_middleware(JsonText)  # reads the body the limit lets through
    app.add_middleware(BodyLimit)
    app.add_middleware(RateLimit, rates=rates, identify=_identify(app), progress=_progress(app))
    app.add_middleware(RequestTelemetry, metrics=metrics)  # outermost: sees every answer
    return app


def _identify(app: FastAPI) -> Identify:
    """Who a request comes from, with the keys and token signer the lifespan made (none yet:
    every caller counts by its address)."""

    def running() -> Gateway | None:
        held: Gateway | None = getattr(app.state, "gateway", None)
        return held

    def revoked(grant: SeatGrant) -> bool:
        # a game not in memory: the route reads it, and refuses a revoked token
        gateway = running()
        return gateway is not None and revoked_in_memory(gateway.games, grant)

    return caller_of(
        lambda: gateway.platform_keys if (gateway := running()) else None,
        lambda: gateway.seat_tokens if (gateway := running()) else None,
        revoked,
    )


def _progress(app: FastAPI) -> Progress:
    """A seat's game version as this gateway holds it (without reading), for the seat's bucket
    to earn its game's pace."""

    def progress(seat_caller: str) -> int | None:
        gateway: Gateway | None = getattr(app.state, "gateway", None)
        held = gateway.games.peek(seat_caller.partition(":")[0]) if gateway else None
        return held.version if held is not None and held.state is not None else None

    return progress
