"""What an engine tells its operators: how long a command takes to answer, how often an append
met another engine's commit, and how commands end.

Served on the engine's ``SPADES_METRICS_PORT`` (:func:`services.runtime.metrics.serve_metrics`).
Every command the engine answers counts, game and league alike: they share its event loop.

The tally is kept in plain numbers and turned into metric families only when Prometheus scrapes:
prometheus_client's own histogram and counter take a lock and walk their buckets at every
observation, 3 to 3.7 us a command with the timing, where the engine's whole handling of a command
costs some 20 to 25 (``spades bench commands``); this costs 0.8 to 1. Only the engine's event loop
writes it; a scrape, from the metrics server's thread, reads a copy.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Literal

from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

Outcome = Literal["accepted", "refused", "malformed", "unavailable"]
"""How a command ended: decided and answered yes (or given its first answer again), refused by
the rules or the handler, not a command at all, or not answered for want of the event store (or
after too many conflicts in a row). Four values, so a series per value stays cheap."""
OUTCOMES: tuple[Outcome, ...] = ("accepted", "refused", "malformed", "unavailable")

DECISION_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)
"""From a tenth of a millisecond (a cached game, an append on a quiet cluster) to the command
timeout the gateway gives up at (5 s by default)."""

DECISION = "spades_engine_decision_seconds"
CONFLICTS = "spades_engine_conflicts_total"
COMMANDS = "spades_engine_commands_total"

_SPECIAL: dict[str, Outcome] = {"malformed": "malformed", "unavailable": "unavailable"}


def outcome_of(ok: bool, code: str | None) -> Outcome:
    """How a reply ended, from its ``ok`` and refusal code."""
    if ok:
        return "accepted"
    return _SPECIAL.get(code or "", "refused")


class EngineTally(Collector):
    """The engine's commands and conflicts, as numbers the handler adds to and a scrape reads."""

    def __init__(self, buckets: tuple[float, ...] = DECISION_BUCKETS) -> None:
        self.bounds = buckets
        self.decided = [0] * (len(buckets) + 1)
        """Commands by the first bucket their time fits in (the last: beyond every bound)."""
        self.seconds = 0.0
        self.outcomes: dict[Outcome, int] = dict.fromkeys(OUTCOMES, 0)
        self.conflicts = 0

    def answered(self, seconds: float, outcome: Outcome) -> None:
        """One command answered, in ``seconds``, ending as ``outcome``."""
        self.decided[bisect_left(self.bounds, seconds)] += 1
        self.seconds += seconds
        self.outcomes[outcome] += 1

    def conflicted(self) -> None:
        """One append refused: another commit reached the history first."""
        self.conflicts += 1

    def collect(self) -> Iterator[Metric]:
        decided, seconds = list(self.decided), self.seconds  # a copy: the loop goes on adding
        cumulative, buckets = 0, []
        for bound, count in zip((*map(str, self.bounds), "+Inf"), decided, strict=True):
            cumulative += count
            buckets.append((bound, float(cumulative)))
        yield HistogramMetricFamily(
            DECISION,
            "Time from a command's request to its answer in the engine: read, decide, append "
            "(a round trip to the stream's leader), and every re-read after a conflict.",
            buckets=buckets,
            sum_value=seconds,
        )
        conflicts = CounterMetricFamily(
            CONFLICTS,
            "Appends refused because another commit reached the history first (each costs a "
            "re-read).",
        )
        conflicts.add_metric([], self.conflicts)
        yield conflicts
        commands = CounterMetricFamily(
            COMMANDS,
            "Commands answered, by outcome: accepted, refused, malformed, unavailable.",
            labels=["outcome"],
        )
        for outcome, count in dict(self.outcomes).items():
            commands.add_metric([outcome], count)
        yield commands


TALLY = EngineTally()
"""The process's tally, served by the default registry."""
REGISTRY.register(TALLY)
