"""What the timer workers export (names fixed: the alert rules and the dashboard read them)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

CLOCKS = Gauge(
    "spades_timers_clocks",
    "Running clocked games this process holds, over the partitions it works.",
)
OVERDUE = Gauge(
    "spades_timers_overdue",
    "Timeouts past their deadline in the partitions this process works that the engine has "
    "not taken: not sent yet, or sent a second or more ago and not answered.",
)
LATENESS = Histogram(
    "spades_timer_lateness_seconds",
    "Seconds past a seat's deadline at which the engine decided its timeout (from the stream).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
FIRED = Counter(
    "spades_timeouts_fired_total",
    "Timeouts this process sent that the engine took (or had taken: the same command id).",
)
