"""What the gateway tells its operators: Prometheus metrics and one log line per request.

The request log names the method, the path and the status, never the query string: a browser's
``EventSource`` sends its seat token as ``?access_token=`` (uvicorn's own access log, which
prints query strings, is turned off). A request that fails in a way nothing else caught is
logged and answered 503, never 500.
"""

from __future__ import annotations

import logging
import time

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.gateway.problems import problem_response
from services.runtime.logging import get_logger

log = get_logger("spades.gateway.http")
_level = logging.getLogger("spades.gateway.http")
"""The stdlib logger behind ``log``: whether a line at a level would be written at all."""


class Metrics:
    """The gateway's metrics, in a registry of its own (one per app, so tests can make many)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "spades_http_requests",
            "HTTP requests answered, by route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "spades_http_request_duration_seconds",
            "Time to answer an HTTP request (a stream counts until it closes).",
            ["method", "route"],
            registry=self.registry,
        )
        self.engine_timeouts = Counter(
            "spades_engine_timeouts",
            "Commands no engine answered in time (answered 503).",
            registry=self.registry,
        )
        self.streams = Gauge(
            "spades_event_streams", "Server-sent event streams open now.", registry=self.registry
        )
        self.audits = Counter(
            "spades_audits_computed",
            "Audit reports computed (a report kept or being computed is not computed again).",
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "spades_commands_in_flight",
            "Actions sent to an engine and not answered yet.",
            registry=self.registry,
        )


def _route_template(scope: Scope) -> str:
    """``/v1/games/{game_id}``, not the game's id: one series per route, not per game."""
    route = scope.get("route")
    return route.path if isinstance(route, BaseRoute) and hasattr(route, "path") else "unmatched"


class RequestTelemetry:
    """Pure ASGI middleware: count, time and log every request; turn a stray error into 503."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        # The labelled series, each looked up once: ``labels()`` checks and joins its values
        # under a lock at every call. Methods, route templates and statuses are few.
        self._counters: dict[tuple[str, str, int], Counter] = {}
        self._histograms: dict[tuple[str, str], Histogram] = {}

    def _counted(self, method: str, route: str, status: int) -> Counter:
        series = self._counters.get((method, route, status))
        if series is None:
            series = self.metrics.requests.labels(method, route, str(status))
            self._counters[method, route, status] = series
        return series

    def _timed(self, method: str, route: str) -> Histogram:
        series = self._histograms.get((method, route))
        if series is None:
            series = self.metrics.latency.labels(method, route)
            self._histograms[method, route] = series
        return series

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        structlog.contextvars.clear_contextvars()
        start = time.perf_counter()
        status = 0

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        except Exception:
            log.exception("request failed", method=scope["method"], path=scope["path"])
            if status:  # the response had begun: nothing left to answer with
                raise
            status = 503
            await problem_response("unavailable", "the request could not be answered; retry")(
                scope, receive, send
            )
        finally:
            self._record(scope, status, time.perf_counter() - start)

    def _record(self, scope: Scope, status: int, seconds: float) -> None:
        method, route = scope["method"], _route_template(scope)
        self._counted(method, route, status).inc()
        self._timed(method, route).observe(seconds)
        if not _level.isEnabledFor(logging.INFO):
            return  # asked first: a structlog call costs tens of microseconds even when dropped
        log.info(
            "request",
            method=method,
            path=scope["path"],
            status=status,
            ms=round(seconds * 1000, 1),
        )
