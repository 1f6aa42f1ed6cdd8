"""Errors as RFC 9457 problems: the one place where a code becomes an HTTP status.

Every refusal the gateway sends is ``application/problem+json`` with ``type``, ``title``,
``status``, ``detail`` and ``code`` (a docs/rules.md code, or one of the gateway's own below).
"""

from __future__ import annotations

import re
from http import HTTPStatus

import msgspec
import nats.errors
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from contracts.answers import Problem
from services.runtime.logging import get_logger

log = get_logger("spades.gateway")

PROBLEM_JSON = "application/problem+json"
RETRY_AFTER_S = 1
"""What a 503, or a 429 that names no wait of its own, asks a client to wait before it retries
(with the same Idempotency-Key)."""

_STATUS: dict[str, int] = {
    "malformed": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "game_not_found": 404,
    "hand_not_found": 404,
    "league_not_found": 404,
    "round_not_found": 404,
    "webhook_not_found": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "not_your_turn": 409,
    "wrong_phase": 409,
    "game_over": 409,
    "seat_taken": 409,
    "conflict": 409,
    "rate_limited": 429,
    "unavailable": 503,
}
"""docs/api.md's table ("Errors"). Every code not named here (the rest of docs/rules.md,
``invalid_rules``, ``idempotency_key_reused``) is 422."""

_CODE_OF_STATUS: dict[int, str] = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
}
"""The code of an HTTP error the framework raises itself (an unknown path, a wrong method)."""


def status_of(code: str) -> int:
    return _STATUS.get(code, 422)


def code_of_status(status: int) -> str:
    """The code for a bare HTTP status: anything else a client did wrong is ``malformed``."""
    if status >= 500:
        return "unavailable"
    return _CODE_OF_STATUS.get(status, "malformed")


class ProblemError(HTTPException):
    """A refusal with its code; raised anywhere, answered as a problem."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(status_of(code), detail)
        self.code = code
        self.detail: str = detail


def problem_response(code: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The problem document for ``code``, with ``Retry-After`` when it asks for a retry (and
    any other ``headers`` given)."""
    status = status_of(code)
    body = Problem(
        type=f"urn:spades:problem:{code}",
        title=HTTPStatus(status).phrase,
        status=status,
        detail=detail,
        code=code,
    )
    if status in (429, 503):  # a quota or an engine's budget gives none of its own
        headers = {"Retry-After": str(RETRY_AFTER_S), **(headers or {})}
    return JSONResponse(
        msgspec.to_builtins(body), status_code=status, headers=headers, media_type=PROBLEM_JSON
    )


def _validation_detail(error: RequestValidationError) -> str:
    """What was wrong with the request, by place; never the values sent (they may be secret)."""
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(part) for part in item.get("loc", ()))
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request is not valid"


async def _on_problem(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ProblemError)
    return problem_response(error.code, error.detail)


async def _on_invalid_request(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    return problem_response("malformed", _validation_detail(error))


def allowed_methods(request: Request) -> str | None:
    """Every method the API document gives the request's path, for ``Allow`` (RFC 9110; HEAD
    with GET, as the router answers it); None for a path it does not describe. (The router
    names only the methods of the first route whose path matched.)"""
    path = request.url.path
    methods: set[str] = set()
    for template, operations in request.app.openapi()["paths"].items():
        if re.fullmatch(re.sub(r"\{[^/]+\}", "[^/]+", template), path):
            methods |= {method.upper() for method in operations}
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods)) or None


async def _on_http_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, StarletteHTTPException)
    headers = dict(error.headers) if error.headers else None
    if error.status_code == 405 and (allowed := allowed_methods(request)) is not None:
        headers = {**(headers or {}), "Allow": allowed}
    return problem_response(code_of_status(error.status_code), str(error.detail), headers)


async def _on_store_unreachable(request: Request, error: Exception) -> JSONResponse:
    log.warning("nats did not answer", path=request.url.path, error=type(error).__name__)
    return problem_response("unavailable", "the event store did not answer in time; retry")


def install_problem_handlers(app: FastAPI) -> None:
    """Answer every refusal, malformed request and NATS outage as a problem."""
    app.add_exception_handler(ProblemError, _on_problem)
    app.add_exception_handler(RequestValidationError, _on_invalid_request)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    for unreachable in (nats.errors.Error, TimeoutError, ConnectionError):
        app.add_exception_handler(unreachable, _on_store_unreachable)
