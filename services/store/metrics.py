"""Prometheus metrics of the projection workers (served by the gateway's ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

POSITION = Gauge(
    "spades_projection_position",
    "Stream sequence of the last message the read model applied or parked.",
    ["model"],
)
LAG = Gauge(
    "spades_projection_lag",
    "Messages in the game stream that the read model has not reached yet.",
    ["model"],
)
PARKED = Counter(
    "spades_projection_parked_total",
    "Messages the read model could not apply and parked.",
    ["model"],
)
REFUSED = Gauge(
    "spades_projection_refused",
    "1 while the read model refuses the stream it finds (another stream's positions, or a "
    "rewound stream): /readyz says why.",
    ["model"],
)
