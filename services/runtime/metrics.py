"""Prometheus metrics every worker process shares, and the ``/metrics`` endpoint of a process
that serves no HTTP of its own.

The gateway serves ``/metrics`` on its own port; every other process kind (engine, projections,
webhooks, timers) serves the default registry on ``SPADES_METRICS_PORT`` (``spades up`` gives
each process one, and records it). Metric names carry the kind of work as a label, so one
dashboard reads every process: partitions held and fail-overs (:mod:`.claims`), lag per
partition and batches (:mod:`.follower`), and each kind's own.
"""

from __future__ import annotations

from wsgiref.simple_server import WSGIServer

import structlog
from prometheus_client import Counter, Gauge, start_http_server

log = structlog.get_logger("spades.metrics")

HELD = Gauge(
    "spades_partitions_held",
    "Partitions this process works now, by kind of work.",
    ["kind"],
)
FAILOVERS = Counter(
    "spades_partition_failovers_total",
    "Partitions this process took over that no member held (their holder ended, or stalled).",
    ["kind"],
)
LEASE_RENEWALS = Counter(
    "spades_lease_renewals_total",
    "Partition leases renewed by this process.",
    ["kind"],
)
FOLLOWED = Gauge(
    "spades_follower_position",
    "Stream sequence of the last message a follower committed, per kind of work and partition.",
    ["kind", "partition"],
)
PENDING = Gauge(
    "spades_follower_lag",
    "Messages of the partition's stream its follower has not reached yet.",
    ["kind", "partition"],
)
BATCHES = Counter(
    "spades_follower_batches_total",
    "Batches a follower applied and acknowledged.",
    ["kind"],
)
RESTARTS = Counter(
    "spades_follower_restarts_total",
    "Times a follower started again after a failure (NATS, the stream, the store).",
    ["kind"],
)


def serve_metrics(port: int, host: str = "127.0.0.1") -> WSGIServer | None:
    """Serve the default registry's ``/metrics`` on ``port`` in a thread of its own (none for
    port 0); the server is returned to be shut down."""
    if not port:
        return None
    server, _ = start_http_server(port, addr=host)
    log.info("metrics served", address=f"http://{host}:{port}/metrics")
    return server
