"""The projection workers of one process, and the entry point a supervisor runs.

``spades serve projections`` runs :func:`run_projections` as its own process (``spades up``
starts that process beside the engine and the gateway); a supervisor of its own may also run the
coroutine as a task. Either way: migrate the read-model database, then one worker for the models
that stand furthest in the stream, all on one durable consumer and in one transaction per batch
(see :mod:`.worker`). A model further behind (a rebuild the last run did not finish) catches up
on a worker of its own first, and so does a model rebuilt while the workers run; once caught up,
it joins the first worker. The game stream is the engine's to declare; until it exists the
workers wait for it, retrying.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Self

import structlog
from nats.aio.client import Client

from services.projections.model import ReadModel
from services.projections.read_models import READ_MODELS, read_models
from services.projections.worker import (
    BATCH_SIZE,
    DEFAULT_RETRY,
    GATHER_S,
    IDLE_S,
    RetryPolicy,
    Worker,
)
from services.runtime.loop import freeze_started_heap
from services.runtime.nats import connect
from services.runtime.settings import Settings
from services.store import positions
from services.store.database import Store, open_store
from services.store.migrations import migrate

log = structlog.get_logger("spades.projections")


class Projections:
    """Workers for the models named (all by default), started and stopped together: the
    :class:`~.worker.Crew` of each of them."""

    def __init__(
        self,
        store: Store,
        client: Client,
        models: Iterable[str] | None = None,
        *,
        batch_size: int = BATCH_SIZE,
        idle_s: float = IDLE_S,
        retry: RetryPolicy = DEFAULT_RETRY,
        auto_rebuild: bool = False,
        gather_s: float = GATHER_S,
    ) -> None:
        self.store = store
        self.client = client
        self.models = read_models(models)
        self.batch_size = batch_size
        self.idle_s = idle_s
        self.retry = retry
        self.auto_rebuild = auto_rebuild
        self.gather_s = gather_s
        self.first: Worker | None = None
        """The worker that models rejoin once they have caught up."""
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Migrate the database, then start the workers: one for the models furthest in the
        stream, one for the others (if any)."""
        await migrate(self.store)
        async with self.store.writing() as conn:
            stored = [await positions.ensure(conn, model.name) for model in self.models]
        furthest = max(start.position for start in stored)
        ahead = [
            m for m, start in zip(self.models, stored, strict=True) if start.position == furthest
        ]
        self.first = self._start(ahead)
        behind = [model for model in self.models if model not in ahead]
        if behind:
            self.detach(behind)
        log.info("projection workers started", models=[model.name for model in self.models])

    def detach(self, models: Sequence[ReadModel]) -> None:
        self._start(models)

    def caught_up(self, worker: Worker) -> bool:
        if self.first is None or worker is self.first:
            return False
        self.first.joining += worker.models
        return True

    def _start(self, models: Sequence[ReadModel]) -> Worker:
        worker = Worker(
            models,
            self.store,
            self.client,
            self,
            batch_size=self.batch_size,
            idle_s=self.idle_s,
            retry=self.retry,
            auto_rebuild=self.auto_rebuild,
            gather_s=self.gather_s,
        )
        names = ", ".join(model.name for model in models)
        self._tasks = [task for task in self._tasks if not task.done()]
        self._tasks.append(asyncio.create_task(worker.run(), name=f"projections {names}"))
        return worker

    async def stop(self) -> None:
        """Stop the workers. Nothing is lost: what was not committed is delivered again."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        self.first = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()


async def run_projections(
    settings: Settings,
    *,
    nats_url: str | None = None,
    models: Iterable[str] | None = None,
    batch_size: int = BATCH_SIZE,
) -> None:
    """Run the projection workers until cancelled.

    ``nats_url`` overrides ``settings.nats_url`` (a supervisor that started the embedded server
    knows its address). The read models live at ``settings.read_model_database_url``; without
    ``models``, every model runs, the league standings included.
    ``settings.projections_auto_rebuild`` lets a worker that refuses the stream it finds
    rebuild its models.
    """
    url = nats_url or settings.nats_url
    if url is None:
        raise ValueError("the projection workers need a NATS server: set SPADES_NATS_URL")
    client = await connect(
        url,
        "spades-projections",
        user="projections",
        credentials=settings.nats_credentials("projections"),
    )
    store = open_store(settings.read_model_database_url)
    chosen = models if models is not None else list(READ_MODELS)
    try:
        async with Projections(
            store,
            client,
            chosen,
            batch_size=batch_size,
            auto_rebuild=settings.projections_auto_rebuild,
        ):
            freeze_started_heap()
            await asyncio.Event().wait()
    finally:
        await store.close()
        await client.close()
