"""``spades bench partitions``: what K partitions buy on a three-node cluster, measured in one run.

Everything runs on this machine: three ``nats-server`` processes form a cluster on loopback
ports (as ``tests/integration/cluster.py`` starts it), streams are R3 on file storage.

1. **Raw acknowledged publishes** to one R3 stream against K R3 streams whose leaders sit on K
   different nodes (moved there with JetStream's leader step-down), the same publishers (each
   waiting for its acknowledgement, commit-sized messages) split evenly over the streams.
   Rounds alternate (one, K, one, K, ...) so that both sides meet the same machine. Printed:
   publishes/s, the cluster's CPU per publish, and each node's share (a leader does more than
   a follower: with one stream, one node does the leader's work for everything).
2. **Commands through the service**: two engine processes and random players
   (:class:`benchmarks.nats_table.RandomTable`) on the same cluster, a deployment of one
   partition then of K (streams deleted between), commands/s and each process kind's CPU per
   command.

On a machine of two cores the nodes, the engines and the players share the cores, so the
rates say what the processes cost more than what a cluster of real machines would do: read the
CPU per message, and the nodes' shares, as the durable figures.
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
from collections.abc import Iterator
from pathlib import Path

import msgspec
import nats
from nats.aio.client import Client
from nats.js import JetStreamContext, api

from benchmarks.commands import CpuMeter, wait_for_engine
from benchmarks.http import cpu_of
from benchmarks.nats_table import RandomTable
from contracts.partitions import Partitions
from domain.rules import MAX_POINTS
from services.runtime.broker_users import ADMIN
from services.runtime.credentials import BrokerCredentials, connect_options
from services.runtime.engine_client import EngineClient
from services.runtime.game_stream import GameStream
from services.runtime.leaders import leaders, spread, step_down
from services.runtime.nats_server import EmbeddedNats, free_ports

COMMIT_BYTES = 600
"""About a commit's size (a card played with its hash chain and envelope)."""
NODES = 3


class PublishRound(msgspec.Struct):
    streams: int
    publishes: int
    seconds: float
    publishes_per_s: float
    cluster_cpu_us_per_publish: float
    node_cpu_share: dict[str, float]
    """Each node's share of the cluster's CPU in the round."""
    leaders: dict[str, str]


class CommandRound(msgspec.Struct):
    partitions: int
    commands: int
    seconds: float
    commands_per_s: float
    p50_ms: float
    p99_ms: float
    cpu_us_per_command: dict[str, float]


class PartitionFigures(msgspec.Struct):
    partitions: int
    publishers: int
    publish_rounds: list[PublishRound]
    publishes_ratio: float
    """K streams' publishes/s over one stream's (medians of the rounds)."""
    cpu_ratio: float
    """K streams' cluster CPU per publish over one stream's."""
    command_rounds: list[CommandRound]
    commands_ratio: float
    """K partitions' commands/s over one partition's (medians of the rounds)."""


@contextlib.contextmanager
def cluster(root: Path, partitions: Partitions) -> Iterator[list[EmbeddedNats]]:
    ports = free_ports(3 * NODES)
    clients, monitors, routes = ports[:NODES], ports[NODES : 2 * NODES], ports[2 * NODES :]
    credentials = BrokerCredentials(root / "credentials").ensure()
    nodes = [
        EmbeddedNats(
            root / f"nats-{n}",
            port=clients[n],
            http_port=monitors[n],
            server_name=f"nats-{n}",
            cluster_port=routes[n],
            routes=[f"nats-route://127.0.0.1:{port}" for port in routes if port != routes[n]],
            partitions=partitions,
            credentials=credentials,
        )
        for n in range(NODES)
    ]
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_until_healthy()
        yield nodes
    finally:
        for node in nodes:
            node.stop()


async def _admin(nodes: list[EmbeddedNats]) -> Client:
    return await nats.connect(
        [node.url for node in nodes], **connect_options(nodes[0].credentials_for(ADMIN))
    )


async def _streams(js: JetStreamContext, layout: Partitions) -> list[str]:
    """Fresh R3 streams, one per partition of ``layout`` (bench subjects), leaders spread."""
    names = [f"BENCH_{layout.count}_{p}" for p in layout.indexes]
    for p, name in enumerate(names):
        with contextlib.suppress(Exception):
            await js.delete_stream(name)
        await js.add_stream(
            api.StreamConfig(
                name=name,
                subjects=[f"bench.{layout.count}.{p}.>"],
                storage=api.StorageType.FILE,
                num_replicas=NODES,
            )
        )
    await _spread_bench(js, names)
    return names


async def _spread_bench(js: JetStreamContext, names: list[str]) -> None:
    """Move stream ``n``'s leader to node ``n`` (round the nodes), and wait until it leads."""
    for n, name in enumerate(names):
        target = f"nats-{n % NODES}"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(Exception):
                info = await js.stream_info(name)
                if info.cluster is not None and info.cluster.leader == target:
                    break
                await step_down(js, name, target)
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.3)


async def _publish_round(
    client: Client, nodes: list[EmbeddedNats], streams: int, publishers: int, seconds: float
) -> PublishRound:
    """Publishers spread over connections to every node, as a deployment's processes are."""
    js = client.jetstream(timeout=30)
    names = await _streams(js, Partitions(streams))
    admin = connect_options(nodes[0].credentials_for(ADMIN))
    links = [await nats.connect(node.url, **admin) for node in nodes]
    payload = os.urandom(COMMIT_BYTES)
    counts = [0] * publishers
    stop = time.monotonic() + seconds
    pids = {f"nats-{n}": node.pid for n, node in enumerate(nodes) if node.pid is not None}

    async def publisher(n: int) -> None:
        subject = f"bench.{streams}.{n % streams}.{n}"
        own = links[n % len(links)].jetstream(timeout=30)
        while time.monotonic() < stop:
            await own.publish(subject, payload)
            counts[n] += 1

    before = cpu_of(pids)
    start = time.perf_counter()
    await asyncio.gather(*(publisher(n) for n in range(publishers)))
    elapsed = time.perf_counter() - start
    after = cpu_of(pids)
    for link in links:
        await link.close()
    spent = {name: after[name] - before[name] for name in pids}
    total = sum(spent.values())
    placed = {}
    for name in names:
        info = await js.stream_info(name)
        placed[name] = info.cluster.leader if info.cluster is not None else "-"
    for name in names:
        await js.delete_stream(name)
    published = sum(counts)
    return PublishRound(
        streams=streams,
        publishes=published,
        seconds=round(elapsed, 2),
        publishes_per_s=round(published / elapsed, 1),
        cluster_cpu_us_per_publish=round(total * 1e6 / max(published, 1), 1),
        node_cpu_share={name: round(s / total, 3) for name, s in spent.items()} if total else {},
        leaders={name: leader or "-" for name, leader in placed.items()},
    )


@contextlib.contextmanager
def _engines(nodes: list[EmbeddedNats], count: int, partitions: int) -> Iterator[None]:
    env = {
        **os.environ,
        "SPADES_NATS_URL": ",".join(node.url for node in nodes),
        "SPADES_NATS_CREDS": str(nodes[0].credentials_for(ADMIN)),
        "SPADES_PARTITIONS": str(partitions),
        "SPADES_STREAM_REPLICAS": str(NODES),
        "SPADES_LOG_LEVEL": os.environ.get("SPADES_BENCH_ENGINE_LOG_LEVEL", "WARNING"),
        "SPADES_LOG_FORMAT": "json",
    }
    logs = Path(nodes[0].store_dir).parent
    processes = []
    for number in range(count):
        with (logs / f"engine-k{partitions}-{number}.log").open("ab") as log:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "services.cli.main", "serve", "engine"],
                    env={**env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        yield
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


async def _command_round(
    nodes: list[EmbeddedNats], partitions: int, games: int, commands: int
) -> CommandRound:
    layout = Partitions(partitions)
    client = await _admin(nodes)
    js = client.jetstream(timeout=30)
    with _engines(nodes, 2, partitions):
        engine = EngineClient(client, timeout_s=30, partitions=layout)
        await wait_for_engine(engine, 60)
        await _until_claimed(js, layout)
        if not layout.legacy:
            for _ in range(20):
                await spread(js, layout)
                placed = await leaders(js, layout)
                if len(set(placed.values())) == min(partitions, NODES):
                    break
                await asyncio.sleep(0.5)
        stream = GameStream(js, layout)
        tables = [
            RandomTable(
                engine, stream, f"k{partitions}-{n}", random.Random(n), avoid_blind_nil=True
            )
            for n in range(games)
        ]
        await asyncio.gather(
            *(t.open({"preset": "partnership", "target": MAX_POINTS}) for t in tables)
        )
        for table in tables:
            table.latencies.clear()
        per_table = max(1, commands // games)

        async def play(table: RandomTable) -> None:
            for _ in range(per_table):
                await table.step()

        meter = CpuMeter()
        start = time.perf_counter()
        await asyncio.gather(*(play(table) for table in tables))
        elapsed = time.perf_counter() - start
        latencies = sorted(latency for table in tables for latency in table.latencies)
        cpu = meter.per(len(latencies))
    for name in layout.streams:
        with contextlib.suppress(Exception):
            await js.delete_stream(name)
    with contextlib.suppress(Exception):
        await js.delete_key_value("SPADES_CLAIMS")
    await client.close()
    return CommandRound(
        partitions=partitions,
        commands=len(latencies),
        seconds=round(elapsed, 2),
        commands_per_s=round(len(latencies) / elapsed, 1),
        p50_ms=round(statistics.median(latencies) * 1000, 2),
        p99_ms=round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
        cpu_us_per_command=cpu,
    )


async def _until_claimed(js: JetStreamContext, layout: Partitions) -> None:
    """Until an engine holds every partition (the commands go to their holders)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            kv = await js.key_value("SPADES_CLAIMS")
            held = 0
            for p in layout.indexes:
                with contextlib.suppress(Exception):
                    if (await kv.get(f"engine.partitions.{p}")).value:
                        held += 1
            if held == layout.count:
                return
        await asyncio.sleep(0.2)


def run(
    partitions: int = 3,
    publishers: int = 48,
    seconds: float = 8.0,
    rounds: int = 2,
    games: int = 48,
    commands: int = 6000,
) -> PartitionFigures:
    with (
        tempfile.TemporaryDirectory(prefix="spades-bench-partitions-") as root,
        cluster(Path(root), Partitions(partitions)) as nodes,
    ):

        async def measure() -> PartitionFigures:
            client = await _admin(nodes)
            publish_rounds = []
            for _ in range(rounds):
                for streams in (1, partitions):
                    publish_rounds.append(
                        await _publish_round(client, nodes, streams, publishers, seconds)
                    )
            await client.close()
            command_rounds = [
                await _command_round(nodes, count, games, commands)
                for _ in range(rounds)
                for count in (1, partitions)
            ]
            one = [r for r in publish_rounds if r.streams == 1]
            many = [r for r in publish_rounds if r.streams == partitions]
            rate = statistics.median(r.publishes_per_s for r in many) / statistics.median(
                r.publishes_per_s for r in one
            )
            cpu = statistics.median(r.cluster_cpu_us_per_publish for r in many) / statistics.median(
                r.cluster_cpu_us_per_publish for r in one
            )
            return PartitionFigures(
                partitions=partitions,
                publishers=publishers,
                publish_rounds=publish_rounds,
                publishes_ratio=round(rate, 3),
                cpu_ratio=round(cpu, 3),
                command_rounds=command_rounds,
                commands_ratio=round(
                    statistics.median(
                        r.commands_per_s for r in command_rounds if r.partitions == partitions
                    )
                    / statistics.median(
                        r.commands_per_s for r in command_rounds if r.partitions == 1
                    ),
                    3,
                ),
            )

        return asyncio.run(measure())
