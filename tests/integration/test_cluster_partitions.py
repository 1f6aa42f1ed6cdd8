"""Partitions on a three-node cluster: each partition is a replicated stream of its own, and the
engines spread their leaders over the nodes, one each, and again once they all sit on one."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import nats.errors
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from contracts.partitions import Partitions
from services.runtime.leaders import EVERY_S as LEADERS_EVERY_S
from services.runtime.leaders import leaders
from tests.integration.cluster import cluster_url, three_nodes
from tests.integration.support import EngineProcess, connected

pytestmark = [pytest.mark.integration, pytest.mark.slow]

THREE = Partitions(3)


async def _spread_within(js: JetStreamContext, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        placed: dict[int, str | None] = {}
        with contextlib.suppress(nats.errors.Error):  # a leader being elected: not yet
            placed = await leaders(js, THREE)
        if placed and None not in placed.values() and len(set(placed.values())) == 3:
            return
        assert time.monotonic() < deadline, f"leaders not spread: {placed}"
        await asyncio.sleep(0.5)  # the engine looks again every few seconds


async def _step_down(admin: Client, stream: str, preferred: str) -> None:
    """Move a stream's leader to ``preferred`` (unless it leads already) and wait until it
    does."""
    body = json.dumps({"placement": {"preferred": preferred}}).encode()
    await admin.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}", body, timeout=5)
    deadline = time.monotonic() + 20
    while True:
        with contextlib.suppress(nats.errors.Error):  # a leader being elected: not yet
            cluster = (await admin.jetstream().stream_info(stream)).cluster
            if cluster is not None and cluster.leader == preferred:
                return
        assert time.monotonic() < deadline, f"{stream}'s leader did not move to {preferred}"
        await asyncio.sleep(0.2)


async def test_the_partitions_leaders_sit_on_three_different_nodes(tmp_path: Path) -> None:
    with three_nodes(tmp_path, THREE) as nodes:
        url = cluster_url(nodes)
        env = {"SPADES_PARTITIONS": "3", "SPADES_STREAM_REPLICAS": "3"}
        engines = [EngineProcess(url, tmp_path, f"engine-{n}", env=env) for n in range(2)]
        for engine in engines:
            engine.start()
        admin = await connected(url)
        try:
            for engine in engines:
                engine.wait_ready()
            js = admin.jetstream()
            await _spread_within(js, 60)
            # every leader moved to one node (as after the others' restart): spread again. The
            # engines stand still meanwhile, or one spreads them while they are being moved
            for engine in engines:
                engine.pause()
            try:
                for partition in THREE.indexes:
                    await _step_down(admin, THREE.stream(partition), "nats-0")
                assert set((await leaders(js, THREE)).values()) <= {"nats-0", None}
            finally:
                for engine in engines:
                    engine.resume()
            started = time.monotonic()
            await _spread_within(js, 2 * LEADERS_EVERY_S + 10)
            print(f"\nleaders spread again {time.monotonic() - started:.1f} s later")
            for partition in THREE.indexes:
                info = await js.stream_info(THREE.stream(partition))
                assert info.config.num_replicas == 3
                assert info.cluster is not None
                assert len(info.cluster.replicas or []) == 2
        finally:
            await admin.close()
            for engine in engines:
                engine.stop()
