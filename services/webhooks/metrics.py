"""What a webhooks process tells Prometheus (served on ``SPADES_METRICS_PORT``): the outbox's
pending deliveries, deliveries failed for good, endpoints disabled, and every try by its result.
The ingest's lag and its partitions are the shared follower's and claims' metrics
(:mod:`services.runtime.metrics`, kinds ``webhooks`` and ``webhooks-leagues``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

ACKNOWLEDGED = "acknowledged"
"""A try answered 2xx."""
REJECTED = "rejected"
"""A try answered with another status."""
TIMEOUT = "timeout"
"""No answer within the timeout."""
UNREACHABLE = "unreachable"
"""No connection (refused, reset, name not resolved)."""
REFUSED = "refused"
"""Not sent: the endpoint's address is one the worker may not reach (private, loopback)."""

PENDING = Gauge(
    "spades_webhook_deliveries_pending",
    "Deliveries in the outbox waiting to be sent or being sent, over every endpoint, as the "
    "process that follows the leagues' stream counted them last (0 from every other process: "
    "summed over the processes, the outbox's count).",
)
FAILED = Counter(
    "spades_webhook_deliveries_failed_total",
    "Deliveries this process gave up on: every try of the schedule failed (their endpoint is "
    "disabled).",
)
DISABLED = Gauge(
    "spades_webhook_endpoints_disabled",
    "Endpoints disabled now (every try of a delivery failed; a replay enables them again).",
)
ATTEMPTS = Counter(
    "spades_webhook_attempts_total",
    "Tries this process made, by result: acknowledged (2xx), rejected (another status), "
    "timeout, unreachable (no connection), refused (an address the worker may not reach).",
    ["result"],
)
