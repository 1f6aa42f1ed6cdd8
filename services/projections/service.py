"""The projection workers of one process, and the entry point a supervisor runs.

``spades serve projections`` runs :func:`run_projections` as its own process (``spades up``
starts that process beside the engine and the gateway); a deployment runs as many as it likes.
They share the K partitions of the game stream (``SPADES_PARTITIONS``) through leases
(:mod:`services.runtime.claims`, kind ``projections``): each partition is followed by one
process at a time, and by another within seconds of that one's end. For each partition it
holds, a process runs the read models on the shared follower (:mod:`services.runtime.follower`):
the models that stand together on one consumer and in one transaction per batch (see
:mod:`.worker`); a model behind them (a rebuild) replays the partition on a consumer of its own
first, then joins them. The game streams are the engine's to declare; until they exist the
followers wait for them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Self

import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client

from contracts.partitions import LEGACY_STREAM, ONE, Partitions
from services.projections.model import ReadModel
from services.projections.registry import (
    READ_MODELS,
    lay_out_log,
    read_models,
    seal_hands,
    sign_log,
)
from services.projections.witnesses import Witnessing
from services.projections.worker import (
    BATCH_SIZE,
    DEFAULT_RETRY,
    KIND,
    PACE,
    REPLAY_KIND,
    RetryPolicy,
    Worker,
)
from services.runtime.broker_users import EARLIER_PROJECTIONS
from services.runtime.claims import Claims
from services.runtime.follower import Following, Pace
from services.runtime.game_stream import LayoutError, check_partitions, game_partitions
from services.runtime.loop import freeze_started_heap
from services.runtime.nats import connect
from services.runtime.settings import Settings
from services.store.database import Store, open_store
from services.store.migrations import migrate

log = structlog.get_logger("spades.projections")

EARLIER_CONSUMER = "spades-projections-"
"""What the consumers of the workers before partitions were named, before their models."""


class Projections:
    """The read models named (all by default) on the partitions this process holds: the
    :class:`~.worker.Crew` of its two workers.

    :meth:`gain` and :meth:`lose` start and stop a partition (a
    :class:`~services.runtime.claims.Claims`'s work); used as an async context manager, it
    holds every partition itself, as a process that works alone.
    """

    def __init__(
        self,
        store: Store,
        client: Client,
        models: Iterable[str] | None = None,
        *,
        partitions: Partitions = ONE,
        pace: Pace = PACE,
        retry: RetryPolicy = DEFAULT_RETRY,
        auto_rebuild: bool = False,
        secret: bytes | None = None,
    ) -> None:
        self.store = store
        self.client = client
        self.secret = secret
        """The service's key, for the migrations that seal (without it, :meth:`start` stops
        before them, and before every later one: the integrity model's tables among them)."""
        self.models = read_models(models)
        self.partitions = partitions
        lay_out_log(partitions)
        self.steady = Worker(
            KIND,
            self.models,
            store,
            client,
            partitions,
            self,
            retry=retry,
            auto_rebuild=auto_rebuild,
        )
        """The models that stand together, in each partition held."""
        self.replay = Worker(
            REPLAY_KIND,
            self.models,
            store,
            client,
            partitions,
            self,
            retry=retry,
            auto_rebuild=auto_rebuild,
        )
        """The models that replay a partition on their own until they catch up."""
        streams = game_partitions(partitions)
        self.following = Following(client, self.steady, streams, pace)
        self.replaying = Following(client, self.replay, streams, pace)
        self._ending: dict[int, asyncio.Task[None]] = {}
        """Per partition, the replay being ended (its models have joined the others)."""

    @property
    def held(self) -> list[int]:
        """The partitions this process follows now."""
        return sorted(self.following.followers)

    async def start(self) -> None:
        """Migrate the read-model database (before any partition is followed)."""
        await migrate(self.store, secret=self.secret)

    async def gain(self, partition: int) -> None:
        if self.partitions.legacy:
            await self._drop_earlier_consumers()
        await self.following.gain(partition)
        log.info("projections follow a partition", partition=partition)

    async def _drop_earlier_consumers(self) -> None:
        """Delete the consumers an earlier version's workers followed the one stream with,
        named after their models (all of them, or one being rebuilt): they would sit on the
        server unused. Only those models' labels: the process may delete no other consumer."""
        js = self.client.jetstream()
        for label in EARLIER_PROJECTIONS:
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await js.delete_consumer(LEGACY_STREAM, f"{EARLIER_CONSUMER}{label}")

    async def lose(self, partition: int) -> None:
        """Stop following the partition (nothing is lost: what was not committed is delivered
        again to whoever follows it next)."""
        await self.following.lose(partition)
        await self._end_replay(partition)
        self.steady.forget(partition)
        self.replay.forget(partition)
        log.info("projections no longer follow a partition", partition=partition)

    async def detach(self, partition: int, models: Sequence[ReadModel]) -> None:
        self.replay.join(partition, models)
        ending = self._ending.pop(partition, None)
        if ending is not None:
            await ending
        if partition not in self.replaying.followers:
            await self.replaying.gain(partition)

    def caught_up(self, partition: int, models: Sequence[ReadModel]) -> None:
        self.steady.join(partition, models)
        if partition not in self._ending and not self.replay.busy(partition):
            self._ending[partition] = asyncio.create_task(
                self._stop_replaying(partition), name=f"end the replay of partition {partition}"
            )

    async def _end_replay(self, partition: int) -> None:
        ending = self._ending.pop(partition, None)
        if ending is not None:
            await ending
        await self._stop_replaying(partition)

    async def _stop_replaying(self, partition: int) -> None:
        """Stop the partition's replay and delete its consumer (the next replay makes it
        again, from where it starts)."""
        if partition not in self.replaying.followers:
            return
        follower = self.replaying.followers[partition]
        await self.replaying.lose(partition)
        with contextlib.suppress(nats.errors.Error, nats.js.errors.Error, TimeoutError):
            await self.client.jetstream().delete_consumer(
                follower.durable.stream, follower.durable.name
            )

    async def stop(self) -> None:
        """Stop following every partition."""
        for partition in self.held:
            await self.lose(partition)

    async def __aenter__(self) -> Self:
        await self.start()
        for partition in self.partitions.indexes:
            await self.gain(partition)
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
    """Run the projection workers until cancelled, on the partitions this process holds among
    those of the other projections processes.

    ``nats_url`` overrides ``settings.nats_url`` (a supervisor that started the embedded server
    knows its address). The read models live at ``settings.read_model_database_url``; without
    ``models``, every model runs, the league standings included.
    ``settings.projections_auto_rebuild`` lets a worker that refuses the stream it finds
    rebuild its models. Every projections process of a deployment must run the same models.
    """
    url = nats_url or settings.nats_url
    if url is None:
        raise ValueError("the projection workers need a NATS server: set SPADES_NATS_URL")
    secret = settings.signing_key()
    client = await connect(
        url,
        "spades-projections",
        user="projections",
        credentials=settings.nats_credentials("projections"),
    )
    store = open_store(settings.read_model_database_url)
    witnessing: asyncio.Task[None] | None = None
    layout = settings.layout
    chosen = models if models is not None else list(READ_MODELS)
    projections = Projections(
        store,
        client,
        chosen,
        partitions=layout,
        pace=Pace(batch_size, PACE.idle_s, PACE.gather_s, PACE.ack_wait_s),
        auto_rebuild=settings.projections_auto_rebuild,
        secret=secret,  # the sealing steps of the migrations need the key
    )
    try:
        js = client.jetstream()
        reason = await check_partitions(js, layout)
        if reason is not None:
            raise LayoutError(reason)
        seal_hands(secret)
        log_key = settings.log_signer()
        sign_log(settings.log_origin, log_key)
        if log_key is None:
            log.warning(
                "the audit log has no key: its checkpoints are kept unsigned "
                "(set SPADES_LOG_KEY; `spades up` makes one in its data directory)"
            )
        await projections.start()
        witnessing = _witnessing(settings, store, projections, chosen)
        claims = Claims(
            js,
            KIND,
            layout.count,
            projections.gain,
            projections.lose,
            replicas=settings.stream_replicas,
        )
        freeze_started_heap()
        log.info("projections ready", partitions=layout.count, member=claims.member)
        await claims.run()  # until cancelled; it gives every partition up as it stops
    finally:
        if witnessing is not None:
            witnessing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await witnessing
        await projections.stop()
        await store.close()
        await client.close()


def _witnessing(
    settings: Settings, store: Store, projections: Projections, models: Iterable[str]
) -> asyncio.Task[None] | None:
    """The task that offers the log's checkpoints to its witnesses (``SPADES_LOG_WITNESSES``),
    beside the workers and never in their way (:mod:`.witnesses`); None without witnesses, or
    when this process keeps no log."""
    witnesses = settings.witnesses
    if not witnesses or "log" not in models:
        return None
    witnessing = Witnessing(
        store,
        witnesses,
        lambda: projections.held,
        timeout_s=settings.log_witness_timeout_s,
        retry_s=settings.log_witness_retry_s,
    )
    log.info("the audit log offers its checkpoints to witnesses", witnesses=len(witnesses))
    return asyncio.create_task(witnessing.run(), name="offer the log's checkpoints to witnesses")
