"""The service's own endpoints: liveness, readiness and metrics."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import nats.errors
from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from sqlalchemy.exc import SQLAlchemyError

from contracts.answers import Health, Readiness
from services.gateway.deps import Services
from services.gateway.models import Health as HealthAnswer
from services.gateway.models import Readiness as ReadinessAnswer
from services.gateway.openapi import problems
from services.gateway.problems import ProblemError
from services.gateway.views import Answer
from services.store.lag import (
    REBUILD_STALL_S,
    behind,
    lag_by_model,
    projection_lag,
    rebuilds,
    refusals,
    stalled_rebuilds,
)

router = APIRouter(tags=["service"])

READY_TIMEOUT_S = 2.0
READY_LAG = 1000
"""Stream messages a read model may have yet to apply, over every partition of the game stream,
while the service counts as ready."""


@router.get("/healthz", response_model=HealthAnswer)
async def healthz() -> Any:
    """The process is up."""
    return Answer(Health("ok"))


@router.get("/readyz", response_model=ReadinessAnswer, responses=problems(503))
async def readyz(services: Services) -> Any:
    """NATS is reached, the game stream's partitions are there, every read model follows each
    of them (its positions belong to that stream: not to another one, nor beyond its end) and
    is caught up within ``READY_LAG`` messages over all of them (each model's lag, summed over
    the partitions, is in ``projections``). A partition a rebuild replays does not count while
    the replay moves: ``rebuilding`` gives what each such partition has yet to replay."""
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
    late = behind(report, READY_LAG)
    if late:
        stalled = stalled_rebuilds(report)
        named = ", ".join(
            f"{name} {count}" + _stalled(stalled.get(name, [])) for name, count in late.items()
        )
        raise ProblemError("unavailable", f"read models behind the stream: {named}")
    rebuilding = {
        name: {str(partition): left for partition, left in by_partition.items()}
        for name, by_partition in rebuilds(report).items()
    }
    return Answer(Readiness(status="ok", projections=lag_by_model(report), rebuilding=rebuilding))


def _stalled(partitions: list[int]) -> str:
    """What a model's stalled rebuild adds to the reason it is behind."""
    if not partitions:
        return ""
    where = f"partition{'s' if len(partitions) > 1 else ''} {', '.join(map(str, partitions))}"
    return (
        f" (its rebuild has not moved for {REBUILD_STALL_S:.0f} s in {where}: "
        "is a projections worker running?)"
    )


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
