"""How far each read model is behind each partition of the game stream, and whether it refuses
a partition's stream: for ``readyz``, ``spades projections lag`` and the metrics.

Lag is a partition stream's last sequence minus the model's position there: the messages it has
yet to apply (or park). Parked messages do not count: the position has moved past them. A model
refuses a partition's stream when its position there belongs to another stream or lies beyond
this one's end (see :mod:`services.runtime.stream_identity`), or when its worker said so.
``readyz`` sums a model's lag over the partitions (:func:`lag_by_model`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nats.js.manager import JetStreamManager
from sqlalchemy.ext.asyncio import AsyncEngine

from contracts.partitions import ONE, Partitions
from services.runtime.stream_identity import REBUILD_COMMAND, StreamIdentity, refusal
from services.store import positions
from services.store.metrics import LAG, POSITION, REFUSED


@dataclass(frozen=True, slots=True)
class WorkerLag:
    model: str
    position: int
    last_sequence: int
    refusal: str | None = None
    """Why the model does not follow the partition's stream (None while it does)."""
    partition: int = 0

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
) -> LagReport:
    """Each model's position, lag and refusal in each partition now (a model that never ran
    there stands at 0).

    Also sets the ``spades_projection_position``, ``spades_projection_lag`` and
    ``spades_projection_refused`` gauges, so a process that serves ``/metrics`` without
    running the workers reports them too.
    """
    async with engine.connect() as conn:
        stored = await positions.all_positions(conn)
    # Asked after the positions were read: a position is then never beyond the last sequence
    # of its own stream, however fast the workers go.
    infos = await asyncio.gather(*(js.stream_info(name) for name in partitions.streams))
    names = list(models if models is not None else positions.READ_MODELS)
    report: LagReport = {}
    for partition, info in zip(partitions.indexes, infos, strict=True):
        found = StreamIdentity.of(info)
        last = int(info.state.last_seq or 0)
        for name in names:
            position = stored.get(name, {}).get(partition, positions.Position(0, 0))
            refused = position.refusal or refusal(position.followed, found, last)
            worker = WorkerLag(name, position.position, last, refused, partition)
            report[name, partition] = worker
            label = str(partition)
            POSITION.labels(name, label).set(position.position)
            LAG.labels(name, label).set(worker.lag)
            REFUSED.labels(name, label).set(1 if refused else 0)
    return report


def lag_by_model(report: Mapping[tuple[str, int], WorkerLag]) -> dict[str, int]:
    """Each model's lag summed over the partitions, in the report's order of models."""
    summed: dict[str, int] = {}
    for (model, _), worker in report.items():
        summed[model] = summed.get(model, 0) + worker.lag
    return summed


def caught_up(report: Mapping[tuple[str, int], WorkerLag], bound: int) -> bool:
    """Whether every model is within ``bound`` messages of the streams, over every partition
    (``readyz``)."""
    return all(lag <= bound for lag in lag_by_model(report).values())


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
