"""How far each read model is behind each partition of the game stream, and whether it refuses
a partition's stream: for ``readyz``, ``spades projections lag`` and the metrics.

Lag is a partition stream's last sequence minus the model's position there: the messages it has
yet to apply (or park). Parked messages do not count: the position has moved past them. A model
refuses a partition's stream when its position there belongs to another stream or lies beyond
this one's end (see :mod:`services.runtime.stream_identity`), or when its worker said so.
``readyz`` sums a model's lag over the partitions (:func:`lag_by_model`).

A model being rebuilt in a partition (:mod:`services.projections.rebuild`) lags there by what it
has yet to replay: that is its rebuild's progress, not the model falling behind, and ``readyz``
does not count it (:func:`behind`) while the replay moves. A rebuild whose position has not
moved for :data:`REBUILD_STALL_S` while the stream holds more (no worker replays the partition:
none runs, or the one that did was killed and none has taken the partition over) counts as any
lag again. The time is the one the workers write in the position rows: the gateways' clocks and
theirs must agree within seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nats.js.manager import JetStreamManager
from sqlalchemy.ext.asyncio import AsyncEngine

from contracts.partitions import ONE, Partitions
from services.runtime.stream_identity import REBUILD_COMMAND, StreamIdentity, refusal
from services.store import positions
from services.store.metrics import LAG, POSITION, REBUILDING, REFUSED

REBUILD_STALL_S = 30.0
"""How long a rebuilding model's position may stand still behind the stream before its rebuild
counts as stalled: a replay moves at every batch (a second or less), and a killed worker's
partitions are taken over within 15 s."""


@dataclass(frozen=True, slots=True)
class WorkerLag:
    model: str
    position: int
    last_sequence: int
    refusal: str | None = None
    """Why the model does not follow the partition's stream (None while it does)."""
    partition: int = 0
    rebuilding: bool = False
    """Whether a rebuild replays the partition for the model and moves: its lag is what it has
    yet to replay."""
    stalled: bool = False
    """Whether a rebuild of the model in the partition is under way but has not moved for
    :data:`REBUILD_STALL_S` while the stream holds more: its lag counts as any lag."""

    @property
    def lag(self) -> int:
        return max(0, self.last_sequence - self.position)


LagReport = dict[tuple[str, int], WorkerLag]
"""Each model's lag in each partition, by (model, partition)."""


async def projection_lag(
    engine: AsyncEngine,
    js: JetStreamManager,
    models: Iterable[str] | None = None,
    partitions: Partitions = ONE,
    *,
    stalled_after_s: float = REBUILD_STALL_S,
) -> LagReport:
    """Each model's position, lag and refusal in each partition now (a model that never ran
    there stands at 0), and whether a rebuild is under way there (stalled, once its position
    has stood still ``stalled_after_s`` behind the stream).

    Also sets the ``spades_projection_position``, ``spades_projection_lag``,
    ``spades_projection_refused`` and ``spades_projection_rebuilding`` gauges, so a process
    that serves ``/metrics`` without running the workers reports them too.
    """
    async with engine.connect() as conn:
        stored = await positions.all_positions(conn)
    # Asked after the positions were read: a position is then never beyond the last sequence
    # of its own stream, however fast the workers go.
    infos = await asyncio.gather(*(js.stream_info(name) for name in partitions.streams))
    names = list(models if models is not None else positions.READ_MODELS)
    now = datetime.now(UTC)
    report: LagReport = {}
    for partition, info in zip(partitions.indexes, infos, strict=True):
        found = StreamIdentity.of(info)
        last = int(info.state.last_seq or 0)
        for name in names:
            position = stored.get(name, {}).get(partition, positions.Position(0, 0))
            refused = position.refusal or refusal(position.followed, found, last)
            under_way = position.rebuilding_since is not None
            moved = positions.written_at(position.updated_at)
            still = moved is None or (now - moved).total_seconds() > stalled_after_s
            stalled = under_way and still and position.position < last
            rebuilding = under_way and not stalled
            worker = WorkerLag(
                name, position.position, last, refused, partition, rebuilding, stalled
            )
            report[name, partition] = worker
            label = str(partition)
            POSITION.labels(name, label).set(position.position)
            LAG.labels(name, label).set(worker.lag)
            REFUSED.labels(name, label).set(1 if refused else 0)
            REBUILDING.labels(name, label).set(1 if under_way else 0)
    return report


def lag_by_model(report: Mapping[tuple[str, int], WorkerLag]) -> dict[str, int]:
    """Each model's lag summed over the partitions, in the report's order of models."""
    summed: dict[str, int] = {}
    for (model, _), worker in report.items():
        summed[model] = summed.get(model, 0) + worker.lag
    return summed


def behind(report: Mapping[tuple[str, int], WorkerLag], bound: int) -> dict[str, int]:
    """The models more than ``bound`` messages behind the streams, with their lag summed over
    the partitions where no rebuild moves (``readyz``)."""
    summed: dict[str, int] = {}
    for (model, _), worker in report.items():
        summed[model] = summed.get(model, 0) + (0 if worker.rebuilding else worker.lag)
    return {model: lag for model, lag in summed.items() if lag > bound}


def caught_up(report: Mapping[tuple[str, int], WorkerLag], bound: int) -> bool:
    """Whether every model is within ``bound`` messages of the streams, over every partition
    where no rebuild moves (``readyz``)."""
    return not behind(report, bound)


def rebuilds(report: Mapping[tuple[str, int], WorkerLag]) -> dict[str, dict[int, int]]:
    """The rebuilds that move: for each model rebuilt, the messages each partition it replays
    has yet to give it."""
    left: dict[str, dict[int, int]] = {}
    for (model, partition), worker in report.items():
        if worker.rebuilding:
            left.setdefault(model, {})[partition] = worker.lag
    return left


def stalled_rebuilds(report: Mapping[tuple[str, int], WorkerLag]) -> dict[str, list[int]]:
    """The rebuilds that stand still: each model's partitions where no worker replays it."""
    stalled: dict[str, list[int]] = {}
    for (model, partition), worker in report.items():
        if worker.stalled:
            stalled.setdefault(model, []).append(partition)
    return stalled


def refusals(report: Mapping[Any, WorkerLag]) -> str | None:
    """What the models that refuse a stream say, with the command that fixes it (None when
    every model follows every partition's stream).

    Models refusing for the same reason are named together: after a stream reset, all do.
    """
    models_by_reason: dict[str, list[str]] = {}
    for worker in report.values():
        if worker.refusal is not None:
            named = models_by_reason.setdefault(worker.refusal, [])
            if worker.model not in named:
                named.append(worker.model)
    if not models_by_reason:
        return None
    causes = "; ".join(
        f"read model{'s' if len(models) > 1 else ''} {', '.join(models)}: {reason}"
        for reason, models in models_by_reason.items()
    )
    return f"{causes}. Run `{REBUILD_COMMAND}` to rebuild from the stream"
