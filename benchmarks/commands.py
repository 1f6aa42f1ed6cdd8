"""``spades bench commands``: commands per second through the engine over NATS, no HTTP.

G games are played at once by random players (:class:`benchmarks.nats_table.RandomTable`),
each sending one command at a time and waiting for its reply, against an engine in its own
process. In the same run, the baseline: G tasks each publishing messages of the same size as
the average commit to a JetStream stream of the same storage, each waiting for its PubAck (the
ceiling for a store that acknowledges every append). Measured on an embedded nats-server unless
``SPADES_NATS_URL`` names one (with ``SPADES_NATS_CREDS`` for its users: the engine's for the
engines, the admin's for the benchmark's own connections).

Each side also gets the CPU its processes spent per command (per publish), from ``/proc``: the
engines, the embedded nats-server and this process (the players, or the publishing tasks). On a
busy machine the rates of the two sides move with the load each one met; the CPU per command
moves much less.

Then the floor of any engine of this shape (:mod:`benchmarks.relay`): a process that answers
each request as an engine does on NATS (an append with optimistic concurrency, its
acknowledgement, a reply) and does nothing else, driven with the same concurrency. Its ratio to
the raw publishes is the most an engine could reach here; the engine's ratio to it is what the
engine's own work (reading, deciding, caching, the round watch) costs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import nats
from nats.aio.client import Client
from nats.js import JetStreamContext, api

from benchmarks import relay
from benchmarks.nats_table import RandomTable
from contracts.wire import ActRequest
from domain.rules import MAX_POINTS
from services.engine.service import ensure_streams
from services.runtime.broker_users import ADMIN
from services.runtime.credentials import connect_options
from services.runtime.engine_client import EngineClient, EngineUnavailable
from services.runtime.game_stream import GameStream
from services.runtime.nats_server import EmbeddedNats
from services.runtime.replies import Replies
from services.runtime.settings import get_settings

BASELINE_STREAM = "SPADES_BENCH_BASELINE"
REQUEST_BYTES = 160
"""About a command request's JSON (an action with its command id, seat and token issue)."""


class CommandFigures(msgspec.Struct):
    games: int
    engines: int
    commands: int
    seconds: float
    commands_per_s: float
    p50_ms: float
    p99_ms: float
    mean_commit_bytes: int
    baseline_publish_per_s: float
    ratio: float
    cpu_us_per_command: dict[str, float]
    """Per process: ``engine`` (all of them), ``nats-server`` (embedded only), ``client``."""
    baseline_cpu_us_per_publish: dict[str, float]
    relay_per_s: float
    """Requests/s through the bare relay (:mod:`benchmarks.relay`): the floor's rate."""
    relay_ratio: float
    """Commands/s over the relay's requests/s: the share of the floor the engine reaches."""
    relay_ceiling: float
    """The relay's requests/s over raw publishes/s: the most any engine of this shape reaches."""
    relay_cpu_us_per_request: dict[str, float]


class CpuMeter:
    """CPU seconds of this process and of the processes it started, by name, over a window."""

    def __init__(self) -> None:
        from benchmarks import http  # here: it imports this module (through benchmarks.e2e)

        pids = http.descendants(os.getpid())[1:]
        self._pids = {f"{http.process_name(pid)}:{pid}": pid for pid in pids}
        self._cpu_of = http.cpu_of
        self._start = self._now()

    def _now(self) -> dict[str, float]:
        return {**self._cpu_of(self._pids), "client": time.process_time()}

    def per(self, count: int) -> dict[str, float]:
        """Microseconds of CPU per ``count`` since the meter was made, summed by name."""
        spent: dict[str, float] = {}
        for key, seconds in self._now().items():
            name = key.split(":")[0]
            spent[name] = spent.get(name, 0.0) + seconds - self._start.get(key, seconds)
        return {name: round(seconds * 1e6 / max(count, 1), 1) for name, seconds in spent.items()}


@dataclass(frozen=True)
class Broker:
    """The server measured on, and where each of its users' credentials are."""

    url: str
    credentials: Callable[[str], Path | None]

    async def connect(self) -> Client:
        """A connection as the broker's admin (the benchmark makes and drops streams)."""
        return await nats.connect(self.url, **connect_options(self.credentials(ADMIN)))


@contextlib.contextmanager
def _nats(url: str | None) -> Iterator[Broker]:
    if url:
        yield Broker(url, get_settings().nats_credentials)
        return
    with (
        tempfile.TemporaryDirectory(prefix="spades-bench-") as store,
        EmbeddedNats(Path(store)) as server,
    ):
        yield Broker(server.url, server.credentials_for)


@contextlib.contextmanager
def engine_processes(broker: Broker, count: int) -> Iterator[None]:
    """Engine processes (``spades serve engine``), stopped on exit."""
    env = {**os.environ, "SPADES_NATS_URL": broker.url, "SPADES_LOG_LEVEL": "WARNING"}
    credentials = broker.credentials("engine")
    if credentials is not None:
        env["SPADES_NATS_CREDS"] = str(credentials)
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "services.cli.main", "serve", "engine"],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]
    try:
        yield
    finally:
        _stop(processes)


def _stop(processes: list[subprocess.Popen[Any]]) -> None:
    """Terminate the processes, and kill those still running 10 s later."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


async def wait_for_engine(client: EngineClient, timeout_s: float = 30.0) -> None:
    """Return once an engine answers (a probe for a game that does not exist)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await client.send("probe", ActRequest(seat=0, action={"type": "look"}))
            return
        except EngineUnavailable:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _play(
    broker: Broker, games: int, commands: int, preset: str, seed: int
) -> tuple[float, list[float], int, dict[str, float]]:
    connection = await broker.connect()
    js = connection.jetstream()
    await ensure_streams(js)
    client = EngineClient(connection, timeout_s=30)
    await wait_for_engine(client)
    stream = GameStream(js)
    rng = random.Random(seed)
    tables = [
        RandomTable(
            client, stream, f"bench-{seed}-{n}", random.Random(rng.random()), avoid_blind_nil=True
        )
        for n in range(games)
    ]
    await asyncio.gather(
        *(table.open({"preset": preset, "target": MAX_POINTS}) for table in tables)
    )
    for table in tables:
        table.latencies.clear()
    per_table = max(1, commands // games)

    async def run(table: RandomTable) -> None:
        for _ in range(per_table):
            await table.step()

    meter = CpuMeter()
    start = time.perf_counter()
    await asyncio.gather(*(run(table) for table in tables))
    seconds = time.perf_counter() - start
    latencies = [latency for table in tables for latency in table.latencies]
    cpu = meter.per(len(latencies))
    info = await js.stream_info("SPADES_GAMES")
    mean_size = int(info.state.bytes / max(info.state.messages, 1))
    await connection.close()
    return seconds, latencies, mean_size, cpu


async def _fresh_stream(js: JetStreamContext, config: api.StreamConfig) -> None:
    """The stream of ``config``, empty: one left by an earlier run is deleted first."""
    assert config.name is not None
    with contextlib.suppress(Exception):
        await js.delete_stream(config.name)
    await js.add_stream(config)


async def _timed(
    concurrency: int, per_task: int, task: Callable[[int], Awaitable[None]]
) -> tuple[float, dict[str, float]]:
    """``concurrency`` tasks at once, each sending ``per_task`` messages: messages/s, and the
    CPU per message of each process (:class:`CpuMeter`)."""
    meter = CpuMeter()
    start = time.perf_counter()
    await asyncio.gather(*(task(number) for number in range(concurrency)))
    seconds = time.perf_counter() - start
    return per_task * concurrency / seconds, meter.per(per_task * concurrency)


async def _baseline(
    broker: Broker, concurrency: int, publishes: int, size: int
) -> tuple[float, dict[str, float]]:
    connection = await broker.connect()
    js = connection.jetstream()
    await _fresh_stream(
        js,
        api.StreamConfig(
            name=BASELINE_STREAM,
            subjects=["spades.bench.>"],
            storage=api.StorageType.FILE,
            duplicate_window=120,
        ),
    )
    payload = os.urandom(size)
    per_task = max(1, publishes // concurrency)

    async def publish(task: int) -> None:
        subject = f"spades.bench.{task}"
        for n in range(per_task):
            await js.publish(subject, payload, headers={"Nats-Msg-Id": f"{task}-{n}"})

    figures = await _timed(concurrency, per_task, publish)
    await js.delete_stream(BASELINE_STREAM)
    await connection.close()
    return figures


@contextlib.contextmanager
def relay_process(broker: Broker, commit_bytes: int) -> Iterator[None]:
    """The bare relay (``python -m benchmarks.relay``) in its own process, stopped on exit."""
    credentials = broker.credentials(ADMIN)
    command = [sys.executable, "-m", "benchmarks.relay", broker.url, str(commit_bytes)]
    if credentials is not None:
        command.append(str(credentials))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError("the relay did not start")
        yield
    finally:
        _stop([process])


async def _relay(
    broker: Broker, concurrency: int, requests: int, commit_bytes: int
) -> tuple[float, dict[str, float]]:
    """Requests/s through the bare relay, each of ``concurrency`` tasks waiting for its reply."""
    connection = await broker.connect()
    js = connection.jetstream()
    await _fresh_stream(js, relay.stream_config())
    replies = Replies(connection)
    body = os.urandom(REQUEST_BYTES)
    per_task = max(1, requests // concurrency)

    async def ask(table: int) -> None:
        subject = relay.request_subject(table)
        for _ in range(per_task):
            await replies.request(subject, body, timeout_s=30.0)

    try:
        with relay_process(broker, commit_bytes):
            return await _timed(concurrency, per_task, ask)
    finally:
        await js.delete_stream(relay.STREAM)
        await connection.close()


def run(
    games: int, commands: int, engines: int = 1, preset: str = "partnership", seed: int = 1
) -> CommandFigures:
    with _nats(os.environ.get("SPADES_NATS_URL")) as broker:

        async def measure() -> CommandFigures:
            with engine_processes(broker, engines):
                seconds, latencies, size, cpu = await _play(broker, games, commands, preset, seed)
            baseline, baseline_cpu = await _baseline(broker, games, len(latencies), size)
            floor, floor_cpu = await _relay(broker, games, len(latencies), size)
            ordered = sorted(latencies)
            rate = len(latencies) / seconds
            return CommandFigures(
                games=games,
                engines=engines,
                commands=len(latencies),
                seconds=round(seconds, 3),
                commands_per_s=round(rate, 1),
                p50_ms=round(statistics.median(ordered) * 1000, 2),
                p99_ms=round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 2),
                mean_commit_bytes=size,
                baseline_publish_per_s=round(baseline, 1),
                ratio=round(rate / baseline, 3),
                cpu_us_per_command=cpu,
                baseline_cpu_us_per_publish=baseline_cpu,
                relay_per_s=round(floor, 1),
                relay_ratio=round(rate / floor, 3),
                relay_ceiling=round(floor / baseline, 3),
                relay_cpu_us_per_request=floor_cpu,
            )

        return asyncio.run(measure())
