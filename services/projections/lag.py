"""How far each read model is behind the game stream: for ``readyz`` and the metrics.

Lag is the stream's last sequence minus the model's position: the messages it has yet to apply
(or park). Parked messages do not count: the position has moved past them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nats.js.manager import JetStreamManager
from sqlalchemy.ext.asyncio import AsyncEngine

from contracts.wire import GAMES_STREAM
from services.projections import positions
from services.projections.metrics import LAG, POSITION
from services.projections.read_models import READ_MODELS


@dataclass(frozen=True, slots=True)
class WorkerLag:
    model: str
    position: int
    last_sequence: int

    @property
    def lag(self) -> int:
        return max(0, self.last_sequence - self.position)


async def projection_lag(
    engine: AsyncEngine, js: JetStreamManager, models: Iterable[str] | None = None
) -> dict[str, WorkerLag]:
    """Each model's position and lag now (a model that never ran stands at 0).

    Also sets the ``spades_projection_position`` and ``spades_projection_lag`` gauges, so a
    process that serves ``/metrics`` without running the workers reports them too.
    """
    info = await js.stream_info(GAMES_STREAM)
    last = int(info.state.last_seq or 0)
    async with engine.connect() as conn:
        stored = await positions.all_positions(conn)
    report = {}
    for name in models if models is not None else READ_MODELS:
        position = stored.get(name, positions.Position(0, 0)).position
        report[name] = WorkerLag(name, position, last)
        POSITION.labels(name).set(position)
        LAG.labels(name).set(report[name].lag)
    return report


def caught_up(report: dict[str, WorkerLag], bound: int) -> bool:
    """Whether every model is within ``bound`` messages of the stream (``readyz``)."""
    return all(worker.lag <= bound for worker in report.values())
