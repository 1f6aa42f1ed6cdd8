"""Prometheus metrics of the projection workers (the gateway's ``/metrics`` serves them too).

Positions, lag and refusals are per read model and partition of the game stream: each partition
is a stream of its own, followed by whichever projections process holds it.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

POSITION = Gauge(
    "spades_projection_position",
    "Sequence, in the partition's stream, of the last message the read model applied or parked.",
    ["model", "partition"],
)
LAG = Gauge(
    "spades_projection_lag",
    "Messages in the partition's stream that the read model has not reached yet.",
    ["model", "partition"],
)
PARKED = Counter(
    "spades_projection_parked_total",
    "Messages the read model could not apply and parked.",
    ["model"],
)
REFUSED = Gauge(
    "spades_projection_refused",
    "1 while the read model refuses the stream it finds in the partition (another stream's "
    "positions, or a rewound stream): /readyz says why.",
    ["model", "partition"],
)
REBUILDING = Gauge(
    "spades_projection_rebuilding",
    "1 while a rebuild of the read model replays the partition (its lag is what it has yet to "
    "replay; /readyz does not count it while the position moves).",
    ["model", "partition"],
)
