"""What the gateway tells its operators: Prometheus metrics and an access record.

The access record (:class:`AccessRecord`), at the default level (INFO): every
:data:`SUMMARY_EVERY_S` one line per route and status with the count, the mean and the slowest
time, and at once a line for each request answered 5xx or slower than :data:`SLOW_S`, with its
path. At DEBUG, a line for every request. A line per request at INFO cost the HTTP path about
half its rate (``spades bench http``: 0.38 to 0.41 of the bare app with it, 0.77 without);
counting a request into its line costs a dictionary update.

A line names the method, the path and the status, never the query string: a browser's
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

SUMMARY_EVERY_S = 10.0
SLOW_S = 1.0
"""A request slower than this is logged on its own (an event stream, which lasts, is not)."""
STREAMS = "/v1/games/{game_id}/events/stream"


class AccessRecord:
    """The gateway's account of its requests (see the module's docstring)."""

    def __init__(self, every_s: float = SUMMARY_EVERY_S) -> None:
        self.every_s = every_s
        self._since = time.monotonic()
        self._tally: dict[tuple[str, str, int], list[float]] = {}
        """(method, route, status): [count, seconds in all, the slowest]."""

    def note(self, method: str, route: str, path: str, status: int, seconds: float) -> None:
        if _level.isEnabledFor(logging.DEBUG):
            log.debug("request", method=method, path=path, status=status, ms=_ms(seconds))
        elif status >= 500 or (seconds >= SLOW_S and route != STREAMS):
            log.info("request", method=method, path=path, status=status, ms=_ms(seconds))
        counted = self._tally.get((method, route, status))
        if counted is None:
            self._tally[method, route, status] = [1, seconds, seconds]
        else:
            counted[0] += 1
            counted[1] += seconds
            counted[2] = max(counted[2], seconds)
        if time.monotonic() - self._since >= self.every_s:
            self.flush()

    def flush(self) -> None:
        """One line per route and status counted since the last flush."""
        now = time.monotonic()
        window = round(now - self._since, 1)
        tally, self._tally, self._since = self._tally, {}, now
        if not _level.isEnabledFor(logging.INFO):
            return
        for (method, route, status), (count, total, slowest) in sorted(tally.items()):
            log.info(
                "requests",
                method=method,
                route=route,
                status=status,
                count=int(count),
                mean_ms=_ms(total / count),
                max_ms=_ms(slowest),
                window_s=window,
            )


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


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
            "Audit and integrity reports computed (a report kept or being computed is not "
            "computed again).",
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
        self.access = AccessRecord()

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
        structlog.contextvars.clear_contextvars()  # the request is over: a summary is no one's
        self.access.note(method, route, scope["path"], status, seconds)
