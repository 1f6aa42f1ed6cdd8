"""``spades bench rebuild``: how long a rebuild takes, of one read model and of every one, with
the game stream in K partitions replayed by projections processes that share them.

A server of the bench's own holds ``games`` finished games (121 commits each, written straight
to the partitions' streams); ``workers`` processes of ``spades serve projections`` follow them
into a fresh read-model database (SQLite, or PostgreSQL at ``database_url``) and share the
partitions by their leases. Measured: the first replay, into empty tables; a rebuild of one
model; a rebuild of every model. A rebuild's time runs from the reset to the moment every
position it reset stands at its partition's end with its rebuild said over (polled every
20 ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import msgspec
from nats.js import JetStreamContext

from benchmarks.timers import (
    _server,
    cpu_seconds,
    fill,
    finished_histories,
    lease_holder,
    member_pid,
    service,
)
from contracts.partitions import Partitions
from services.engine.service import ensure_streams
from services.projections.rebuild import rebuild
from services.projections.registry import READ_MODELS
from services.projections.worker import KIND
from services.store import positions
from services.store.database import Store, open_store
from services.store.migrations import migrate

POLL_S = 0.02
SHARE_S = 20.0
"""How long the processes have to share the partitions out before the replay is measured
(their leases are taken at their renewals, a second apart)."""
TIMEOUT_S = 1800.0


class RebuildFigures(msgspec.Struct):
    games: int
    messages: int
    partitions: int
    workers: int
    store: str
    held: list[list[int]]
    """The partitions each process held while the rebuilds ran."""
    first_replay_s: float
    model: str
    model_s: float
    all_s: float
    model_cpu_s: list[float]
    """The CPU seconds each process spent in the rebuild of the one model."""
    all_cpu_s: list[float]


async def until_replayed(
    store: Store, ends: dict[int, int], models: Iterable[str], timeout_s: float = TIMEOUT_S
) -> None:
    """Until each model stands at each partition's end with no rebuild under way."""
    names = list(models)
    async with asyncio.timeout(timeout_s):
        while True:
            async with store.reading() as conn:
                stored = await positions.all_positions(conn)
            if all(
                (at := stored.get(name, {}).get(p)) is not None
                and at.position >= end
                and at.rebuilding_since is None
                for name in names
                for p, end in ends.items()
            ):
                return
            await asyncio.sleep(POLL_S)


async def measure(
    games: int, partitions: Partitions, workers: int, database_url: str | None, model: str
) -> RebuildFigures:
    with (
        _server(None, partitions) as broker,
        tempfile.TemporaryDirectory(prefix="spades-bench-rebuild-") as directory,
    ):
        url = database_url or f"sqlite:///{Path(directory) / 'read_models.db'}"
        connection = await broker.connect()
        store = open_store(url)
        try:
            js = connection.jetstream()
            await ensure_streams(js, partitions=partitions)
            messages = await fill(connection, partitions, finished_histories(games))
            ends = {
                p: int((await js.stream_info(partitions.stream(p))).state.last_seq or 0)
                for p in partitions.indexes
            }
            await migrate(store)
            env = {
                "SPADES_PARTITIONS": str(partitions.count),
                "SPADES_DATABASE_URL": url,
                "SPADES_DATA_DIR": directory,
            }
            with contextlib.ExitStack() as stack:
                began = time.monotonic()
                processes = [
                    stack.enter_context(service(broker, "projections", env)) for _ in range(workers)
                ]
                await until_replayed(store, ends, READ_MODELS)
                first_replay_s = time.monotonic() - began
                pids = [process.pid for process in processes]
                held = await shared(js, partitions, pids)

                spent = [cpu_seconds(pid) for pid in pids]
                began = time.monotonic()
                await rebuild(store, [model], partitions)
                await until_replayed(store, ends, [model])
                model_s = time.monotonic() - began
                model_cpu = [cpu_seconds(pid) - was for pid, was in zip(pids, spent, strict=True)]

                spent = [cpu_seconds(pid) for pid in pids]
                began = time.monotonic()
                await rebuild(store, None, partitions)
                await until_replayed(store, ends, READ_MODELS)
                all_s = time.monotonic() - began
                all_cpu = [cpu_seconds(pid) - was for pid, was in zip(pids, spent, strict=True)]
        finally:
            await store.close()
            await connection.close()
    return RebuildFigures(
        games=games,
        messages=messages,
        partitions=partitions.count,
        workers=workers,
        store="postgresql" if url.startswith("postgresql") else "sqlite",
        held=held,
        first_replay_s=round(first_replay_s, 2),
        model=model,
        model_s=round(model_s, 2),
        all_s=round(all_s, 2),
        model_cpu_s=[round(seconds, 2) for seconds in model_cpu],
        all_cpu_s=[round(seconds, 2) for seconds in all_cpu],
    )


async def shared(js: JetStreamContext, partitions: Partitions, pids: list[int]) -> list[list[int]]:
    """The partitions each process holds, once each holds one (or :data:`SHARE_S` passed)."""
    deadline = time.monotonic() + SHARE_S
    while True:
        holders = {p: await lease_holder(js, KIND, p) for p in partitions.indexes}
        held = [
            [p for p, member in holders.items() if member and member_pid(member) == pid]
            for pid in pids
        ]
        every = all(holders.values())
        if every and (all(held) or time.monotonic() > deadline):
            return held
        await asyncio.sleep(0.1)


def run(
    games: int, partitions: int, workers: int, database_url: str | None, model: str
) -> RebuildFigures:
    return asyncio.run(measure(games, Partitions(partitions), workers, database_url, model))
