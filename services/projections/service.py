"""The projection workers of one process, and the entry point a supervisor runs.

``spades serve projections`` runs :func:`run_projections` as its own process (``spades up``
starts that process beside the engine and the gateway); a supervisor of its own may also run the
coroutine as a task. Either way: migrate the read-model database, then one worker per read
model, each on its own durable consumer. The game stream is the engine's to declare; until it
exists the workers wait for it, retrying.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from types import TracebackType
from typing import Self

import structlog
from nats.aio.client import Client

from services.projections.read_models import READ_MODELS, read_models
from services.projections.worker import BATCH_SIZE, DEFAULT_RETRY, IDLE_S, RetryPolicy, Worker
from services.runtime.nats import connect
from services.runtime.settings import Settings
from services.store.database import Store, open_store
from services.store.migrations import migrate

log = structlog.get_logger("spades.projections")


class Projections:
    """Workers for the models named (all by default), started and stopped together."""

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
    ) -> None:
        self.store = store
        self.workers = [
            Worker(
                model,
                store,
                client,
                batch_size=batch_size,
                idle_s=idle_s,
                retry=retry,
                auto_rebuild=auto_rebuild,
            )
            for model in read_models(models)
        ]
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Migrate the database, then start every worker."""
        await migrate(self.store)
        self._tasks = [
            asyncio.create_task(worker.run(), name=f"projection {worker.model.name}")
            for worker in self.workers
        ]
        log.info("projection workers started", models=[w.model.name for w in self.workers])

    async def stop(self) -> None:
        """Stop the workers. Nothing is lost: what was not committed is delivered again."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

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
    rebuild its model.
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
            await asyncio.Event().wait()
    finally:
        await store.close()
        await client.close()
