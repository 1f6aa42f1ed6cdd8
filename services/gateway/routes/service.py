"""The service's own endpoints: liveness, readiness and metrics."""

from __future__ import annotations

import asyncio
from typing import Any

import nats.errors
from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from contracts.wire import GAMES_STREAM
from services.gateway.deps import Services
from services.gateway.models import Health
from services.gateway.openapi import problems
from services.gateway.problems import ProblemError

router = APIRouter(tags=["service"])

READY_TIMEOUT_S = 2.0


@router.get("/healthz", response_model=Health)
async def healthz() -> Any:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", response_model=Health, responses=problems(503))
async def readyz(services: Services) -> Any:
    """NATS is reached and the game stream is there."""
    if not services.connection.is_connected:
        raise ProblemError("unavailable", "not connected to NATS")
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            await services.js.stream_info(GAMES_STREAM)
    except (nats.errors.Error, TimeoutError):
        raise ProblemError("unavailable", f"the stream {GAMES_STREAM} is not reachable") from None
    return {"status": "ok"}


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text."}},
)
async def metrics(services: Services) -> Response:
    """Prometheus metrics."""
    return Response(generate_latest(services.metrics.registry), media_type=CONTENT_TYPE_LATEST)
