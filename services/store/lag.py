"""How far each read model is behind the game stream, and whether it refuses the stream: for
``readyz``, ``spades projections lag`` and the metrics.

Lag is the stream's last sequence minus the model's position: the messages it has yet to apply
(or park). Parked messages do not count: the position has moved past them. A model refuses the
stream when its position belongs to another stream or lies beyond this one's end (see
:mod:`services.runtime.stream_identity`), or when its worker said so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nats.js.manager import JetStreamManager
from sqlalchemy.ext.asyncio import AsyncEngine

from contracts.wire import GAMES_STREAM
from services.runtime.stream_identity import REBUILD_COMMAND, StreamIdentity, refusal
from services.store import positions
from services.store.metrics import LAG, POSITION, REFUSED


@dataclass(frozen=True, slots=True)
class WorkerLag:
    model: str
    position: int
    last_sequence: int
    refusal: str | None = None
    """Why the model does not follow the stream (None while it does)."""

    @property
    def lag(self) -> int:
        return max(0, self.last_sequence - self.position)


async def projection_lag(
    engine: AsyncEngine, js: JetStreamManager, models: Iterable[str] | None = None
) -> dict[str, WorkerLag]:
    """Each model's position, lag and refusal now (a model that never ran stands at 0).

    Also sets the ``spades_projection_position``, ``spades_projection_lag`` and
    ``spades_projection_refused`` gauges, so a process that serves ``/metrics`` without
    running the workers reports them too.
    """
    async with engine.connect() as conn:
        stored = await positions.all_positions(conn)
    # Asked after the positions were read: a position is then never beyond the last sequence
    # of its own stream, however fast the workers go.
    info = await js.stream_info(GAMES_STREAM)
    found = StreamIdentity.of(info)
    last = int(info.state.last_seq or 0)
    report = {}
    for name in models if models is not None else positions.READ_MODELS:
        position = stored.get(name, positions.Position(0, 0))
        refused = position.refusal or refusal(position.followed, found, last)
        report[name] = WorkerLag(name, position.position, last, refused)
        POSITION.labels(name).set(position.position)
        LAG.labels(name).set(report[name].lag)
        REFUSED.labels(name).set(1 if refused else 0)
    return report


def caught_up(report: dict[str, WorkerLag], bound: int) -> bool:
    """Whether every model is within ``bound`` messages of the stream (``readyz``)."""
    return all(worker.lag <= bound for worker in report.values())


def refusals(report: dict[str, WorkerLag]) -> str | None:
    """What the models that refuse the stream say, with the command that fixes it (None when
    every model follows it).

    Models refusing for the same reason are named together: after a stream reset, all do.
    """
    models_by_reason: dict[str, list[str]] = {}
    for worker in report.values():
        if worker.refusal is not None:
            models_by_reason.setdefault(worker.refusal, []).append(worker.model)
    if not models_by_reason:
        return None
    causes = "; ".join(
        f"read model{'s' if len(models) > 1 else ''} {', '.join(models)}: {reason}"
        for reason, models in models_by_reason.items()
    )
    return f"{causes}. Run `{REBUILD_COMMAND}` to rebuild from the stream"
