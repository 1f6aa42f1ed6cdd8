"""The two requests of every turn, answered without FastAPI solving their dependencies anew.

A seat plays by asking for its view (``GET /v1/games/{game_id}/view``) and sending one of its
actions (``POST /v1/games/{game_id}/actions``): most of what the gateway is asked. FastAPI
answers each by walking its routers and solving the route's dependencies (inspecting every
parameter, a ``Request``, exit stacks), which cost the gateway more than the game did. Here
those two routes call the same dependencies and the same endpoint, in the order FastAPI calls
them, as the plain functions they are.

Only a request the route would take as it is comes this way: an action's body JSON (sent as
``application/json``) that validates as an action, its ``Idempotency-Key`` well formed. Anything
else (HEAD, a body to refuse, an app whose lifespan has not run) goes on to the router, which
answers it as it always has, validation details included; nothing is drawn or recorded twice,
as the middlewares outside (telemetry, rate limit, body limit, lone surrogates) see every
request once, whichever path answers it. The routes stay declared for the OpenAPI document.
``tests/integration/test_fast_path.py`` checks that both paths give the same answers.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute
from pydantic import TypeAdapter
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from services.gateway.commands import MAX_IDEMPOTENCY_KEY
from services.gateway.deps import (
    Caller,
    Gateway,
    bearer_credential,
    game_caller,
    seat_read,
    valid_game_id,
)
from services.gateway.headers import header
from services.gateway.json_text import read_body, replaying
from services.gateway.models import Action
from services.gateway.routes import actions, games

_ACTION: TypeAdapter[Action] = TypeAdapter(actions.ActionBody)
"""The action route's body, validated as FastAPI validates it."""
_IDEMPOTENCY_KEY = re.compile(actions.IDEMPOTENCY_KEY_PATTERN)


def _route(router: APIRouter, endpoint: Callable[..., Any]) -> APIRoute:
    return next(
        route
        for route in router.routes
        if isinstance(route, APIRoute) and route.endpoint is endpoint
    )


def _plain_action(scope: Scope, body: bytes) -> tuple[Action, str | None] | None:
    """The action and its ``Idempotency-Key``, when the route would take both as they are;
    None for anything it would refuse (or read otherwise)."""
    content_type = header(scope, b"content-type")
    if content_type is None or content_type.lower() != "application/json":
        return None
    key = header(scope, b"idempotency-key")
    if key is not None and (len(key) > MAX_IDEMPOTENCY_KEY or not _IDEMPOTENCY_KEY.fullmatch(key)):
        return None
    try:
        return _ACTION.validate_python(json.loads(body)), key
    except (ValueError, RecursionError):  # not JSON, or not an action (ValidationError)
        return None


class FastPath:
    """Pure ASGI middleware, innermost: answer a seat's view and its actions directly."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.view = _route(games.router, games.seat_view)
        self.act = _route(actions.router, actions.act)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        services = _services(scope)
        if services is not None:
            method = scope["method"]
            if method == "GET" and (key := self._game_of(self.view, scope)) is not None:
                await self._answer(scope, receive, send, self._seat_view(services, scope, key))
                return
            if method == "POST" and (key := self._game_of(self.act, scope)) is not None:
                await self._action(services, scope, key, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def _game_of(route: APIRoute, scope: Scope) -> str | None:
        """The game named in the path, when it is ``route``'s path (as the router matches)."""
        match = route.path_regex.match(scope["path"])
        if match is None:
            return None
        game_id: str = route.param_convertors["game_id"].convert(match["game_id"])
        scope["route"], scope["endpoint"] = route, route.endpoint
        scope["path_params"] = {"game_id": game_id}
        return game_id

    async def _seat_view(self, services: Gateway, scope: Scope, key: str) -> Response:
        game_id, asking = await _game_and_caller(services, scope, key)
        answer: Response = await games.seat_view(await seat_read(services, game_id, asking))
        return answer

    async def _action(
        self, services: Gateway, scope: Scope, key: str, receive: Receive, send: Send
    ) -> None:
        body, last = await read_body(receive)
        plain = _plain_action(scope, body)
        if plain is None:
            await self.app(scope, replaying(body, last, receive), send)
            return
        action, idempotency_key = plain

        async def act() -> Response:
            game_id, asking = await _game_and_caller(services, scope, key)
            answer: Response = await actions.act(game_id, asking, action, services, idempotency_key)
            return answer

        await self._answer(scope, replaying(body, last, receive), send, act())

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, answering: Awaitable[Response]
    ) -> None:
        """Send the route's answer, or the answer the app's exception handlers give to what it
        raised (anything they do not handle goes on up, as from the router)."""
        try:
            response = await answering
        except Exception as error:
            handler = _handler_of(scope, error)
            if handler is None:
                raise
            handled = handler(Request(scope, receive), error)
            response = await handled if inspect.isawaitable(handled) else handled
        await response(scope, receive, send)


async def _game_and_caller(services: Gateway, scope: Scope, key: str) -> tuple[str, Caller]:
    """The game's id and the caller, as both routes' first dependencies resolve them (the id
    is checked before the credential is read)."""
    game_id = await valid_game_id(key)
    credential = bearer_credential(header(scope, b"authorization"))
    return game_id, await game_caller(services, game_id, credential)


def _services(scope: Scope) -> Gateway | None:
    """The gateway's services, for an HTTP request to an app whose lifespan has run."""
    if scope["type"] != "http" or scope.get("root_path"):
        return None
    held: Gateway | None = getattr(scope["app"].state, "gateway", None)
    return held


def _handler_of(scope: Scope, error: Exception) -> Callable[..., Any] | None:
    """The app's handler for ``error``, found as Starlette finds it (the closest class)."""
    handlers = scope["app"].exception_handlers
    for kind in type(error).__mro__:
        if kind in handlers:
            handler: Callable[..., Any] = handlers[kind]
            return handler
    return None
