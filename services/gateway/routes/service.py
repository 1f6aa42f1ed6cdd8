"""The service's own endpoints: liveness, readiness and metrics."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import nats.errors
from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from sqlalchemy.exc import SQLAlchemyError

from services.gateway.deps import Services
from services.gateway.models import Health, Readiness
from services.gateway.openapi import problems
from services.gateway.problems import ProblemError
from services.store.lag import caught_up, lag_by_model, projection_lag, refusals

router = APIRouter(tags=["service"])

READY_TIMEOUT_S = 2.0
READY_LAG = 1000
"""Stream messages a read model may have yet to apply, over every partition of the game stream,
while the service counts as ready."""


@router.get("/healthz", response_model=Health)
async def healthz() -> Any:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", response_model=Readiness, responses=problems(503))
async def readyz(services: Services) -> Any:
    """NATS is reached, the game stream's partitions are there, every read model follows each
    of them (its positions belong to that stream: not to another one, nor beyond its end) and
    is caught up within ``READY_LAG`` messages over all of them (each model's lag, summed over
    the partitions, is in ``projections``)."""
    if not services.connection.is_connected:
        raise ProblemError("unavailable", "not connected to NATS")
    streams = services.stream
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            report = await projection_lag(
                services.store.engine, services.js, partitions=streams.partitions
            )
    except (nats.errors.Error, TimeoutError):
        raise ProblemError("unavailable", f"the stream {streams.name} is not reachable") from None
    except SQLAlchemyError:
        raise ProblemError("unavailable", "the read-model database is not reachable") from None
    refused = refusals(report)
    if refused is not None:
        raise ProblemError("unavailable", refused)
    lag = lag_by_model(report)
    if not caught_up(report, READY_LAG):
        behind = ", ".join(f"{name} {count}" for name, count in lag.items() if count > READY_LAG)
        raise ProblemError("unavailable", f"read models behind the stream: {behind}")
    return {"status": "ok", "projections": lag}


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text."}},
)
async def metrics(services: Services) -> Response:
    """Prometheus metrics: the gateway's, and the read models' position and lag."""
    with contextlib.suppress(nats.errors.Error, SQLAlchemyError, TimeoutError):
        async with asyncio.timeout(READY_TIMEOUT_S):
            # refreshes the gauges
            await projection_lag(
                services.store.engine, services.js, partitions=services.stream.partitions
            )
    text = generate_latest(services.metrics.registry) + generate_latest(REGISTRY)
    return Response(text, media_type=CONTENT_TYPE_LATEST)
