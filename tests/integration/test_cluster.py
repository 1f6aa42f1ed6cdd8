"""Games survive a NATS node and an engine killed mid-play, on a real three-node cluster.

Three ``nats-server`` processes on loopback ports form a cluster, and the engines create the
game stream with three replicas. Two engines, the projection workers and a gateway (each its own
``spades serve`` process) list all three servers. Bots play through HTTP; while every game is
under way one NATS node is SIGKILLed, and once every game has moved on without it, one engine.
The node killed is never the stream's leader (read from the stream's cluster info): of the two
followers, the one that holds the most of the service's connections, so that clients must fail
over. Every game must still finish and audit clean, each command must be committed once with
the versions contiguous, and the read models must show what the replay shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nats.errors
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from contracts.wire import GAME_SUBJECTS, GAMES_STREAM
from services.audit.read_model_check import ReadModels
from services.audit.replay import audit_game
from services.bots.runner import GameOutcome, play_games
from services.bots.strategy import Bot
from services.client import SpadesClient
from services.runtime.broker_users import ADMIN
from services.runtime.game_stream import GameStream, StoredCommit
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats, free_port, free_ports
from tests.integration.support import (
    EngineProcess,
    ProjectionsProcess,
    ServiceProcess,
    broker_credentials,
    credentials_of,
    ready_client,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODES = 3
GAMES = 4
RULES = {"preset": "partnership", "max_hands": 1}
"""Short games: one hand (more only on a tie), about 60 commits; the faults fall in it."""
COMMITS_BETWEEN_FAULTS = 8
"""Commits every game must make before the node is killed, and again before the engine is."""
START_TIMEOUT_S = 30.0
FAULT_TIMEOUT_S = 60.0
GAMES_TIMEOUT_S = 180.0
POLL_S = 0.1


class GatewayProcess(ServiceProcess):
    """``spades serve gateway`` on ``port``."""

    service = "gateway"

    def __init__(self, nats_url: str, log_dir: Path, port: int, env: dict[str, str]) -> None:
        super().__init__(nats_url, log_dir, env={**env, "SPADES_PORT": str(port)})
        self.url = f"http://127.0.0.1:{port}"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[list[EmbeddedNats]]:
    """Three nodes, each routed to the other two, with JetStream healthy on all."""
    ports = free_ports(3 * NODES)
    clients, monitors, routes = ports[:NODES], ports[NODES : 2 * NODES], ports[2 * NODES :]
    nodes = [
        EmbeddedNats(
            tmp_path / f"nats-{n}",
            port=clients[n],
            http_port=monitors[n],
            server_name=f"nats-{n}",
            cluster_port=routes[n],
            routes=[f"nats-route://127.0.0.1:{port}" for port in routes if port != routes[n]],
            credentials=broker_credentials(),
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


async def until(condition: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> None:
    """Poll ``condition`` until it holds; NATS errors while the cluster heals count as no."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(nats.errors.Error, httpx.HTTPError, TimeoutError):
            if await condition():
                return
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        await asyncio.sleep(POLL_S)  # a condition across processes: nothing to await but time


async def commits_per_game(js: JetStreamContext) -> dict[str, int]:
    info = await js.stream_info(GAMES_STREAM, subjects_filter=GAME_SUBJECTS)
    return dict(info.state.subjects or {})


async def every_game_moves_on(js: JetStreamContext, after: dict[str, int]) -> dict[str, int]:
    """Wait until each of the ``GAMES`` games has ``COMMITS_BETWEEN_FAULTS`` commits more than
    ``after`` (missing games count 0); return the counts then."""
    counts: dict[str, int] = {}

    async def moved() -> bool:
        nonlocal counts
        counts = await commits_per_game(js)
        return len(counts) == GAMES and all(
            count >= after.get(subject, 0) + COMMITS_BETWEEN_FAULTS
            for subject, count in counts.items()
        )

    await until(moved, FAULT_TIMEOUT_S, f"every game makes {COMMITS_BETWEEN_FAULTS} commits")
    return counts


async def service_connections(node: EmbeddedNats) -> int:
    """How many of the service's processes are connected to ``node`` (its monitoring port)."""
    async with httpx.AsyncClient(timeout=2.0) as http:
        connz = (await http.get(f"http://127.0.0.1:{node.http_port}/connz")).json()
    return sum(1 for c in connz.get("connections") or [] if c.get("name", "").startswith("spades"))


async def follower_to_kill(js: JetStreamContext, nodes: list[EmbeddedNats]) -> EmbeddedNats:
    """Of the nodes that do not lead the game stream, the one most of the service uses."""
    info = await js.stream_info(GAMES_STREAM)
    assert info.cluster is not None
    followers = [node for node in nodes if node.server_name != info.cluster.leader]
    assert len(followers) == NODES - 1, (info.cluster.leader, [n.server_name for n in nodes])
    connections = [await service_connections(node) for node in followers]
    return followers[connections.index(max(connections))]


@contextlib.asynccontextmanager
async def running(process: ServiceProcess) -> AsyncIterator[ServiceProcess]:
    process.start()
    try:
        yield process
    finally:
        process.stop()


async def cancelled(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def gateway_ready(gateway: GatewayProcess) -> None:
    async def ready() -> bool:
        assert gateway.alive, f"the gateway exited; see {gateway.log_path}"
        async with httpx.AsyncClient(timeout=2.0) as http:
            return (await http.get(f"{gateway.url}/readyz")).status_code == 200

    await until(ready, START_TIMEOUT_S, "the gateway is ready")


async def read_models_caught_up(gateway: GatewayProcess) -> None:
    async def caught_up() -> bool:
        async with httpx.AsyncClient(timeout=2.0) as http:
            response = await http.get(f"{gateway.url}/readyz")
        lags = response.json().get("projections", {}) if response.status_code == 200 else {}
        return bool(lags) and not any(lags.values())

    await until(caught_up, FAULT_TIMEOUT_S, "every read model holds the whole stream")


def committed_once_in_order(commits: list[StoredCommit]) -> None:
    """Each command id once, and the events' versions 1, 2, 3, ... with no gap or repeat."""
    command_ids = [stored.commit.command_id for stored in commits]
    assert len(set(command_ids)) == len(command_ids), "a command was committed twice"
    version = 0
    for stored in commits:
        commit = stored.commit
        assert commit.version - len(commit.events) == version, (version, commit)
        version = commit.version


async def served_read_models(gateway: GatewayProcess, game_id: str, version: int) -> ReadModels:
    """The scoreboard and hand records exactly as the API serves them (raw JSON), once the read
    models hold ``version``."""
    params = {"min_version": version}
    async with httpx.AsyncClient(base_url=gateway.url, timeout=10.0) as http:
        board = await http.get(f"/v1/games/{game_id}/scoreboard", params=params)
        hands = await http.get(f"/v1/games/{game_id}/hands", params=params)
    assert board.status_code == 200, board.text
    assert hands.status_code == 200, hands.text
    return ReadModels(board.json(), hands.json()["hands"])


@dataclass
class Service:
    """The service's processes on the cluster, and a connection of the test's own."""

    js: JetStreamContext
    engines: list[EngineProcess]
    gateway: GatewayProcess


@pytest.fixture
async def service(cluster: list[EmbeddedNats], tmp_path: Path) -> AsyncIterator[Service]:
    """Two engines (which create the stream, R3), the projection workers and a gateway, each
    given all three servers; stopped afterwards."""
    url = ",".join(node.url for node in cluster)
    env = {
        "SPADES_STREAM_REPLICAS": "3",
        "SPADES_DATA_DIR": str(tmp_path / "data"),
        "SPADES_SECRET_KEY": "cluster-tests-signing-key",
    }
    engines = [EngineProcess(url, tmp_path, f"engine-{n}", env) for n in (1, 2)]
    gateway = GatewayProcess(url, tmp_path, free_port(), env)
    async with contextlib.AsyncExitStack() as stack:
        connection: Client = await connect(url, "pytest", credentials=credentials_of(ADMIN))
        stack.push_async_callback(connection.close)
        for engine in engines:
            await stack.enter_async_context(running(engine))
        await ready_client(connection, timeout_s=2.0)
        await stack.enter_async_context(running(ProjectionsProcess(url, tmp_path, env=env)))
        await stack.enter_async_context(running(gateway))
        await gateway_ready(gateway)
        yield Service(connection.jetstream(timeout=5.0), engines, gateway)


async def replicated_on_every_node(js: JetStreamContext) -> None:
    info = await js.stream_info(GAMES_STREAM)
    assert info.config.num_replicas == NODES
    assert not info.config.allow_direct  # a replica's direct answer may lag behind its leader
    assert info.cluster is not None
    assert len(info.cluster.replicas or []) == NODES - 1


async def test_games_survive_a_nats_node_and_an_engine_killed(
    cluster: list[EmbeddedNats], service: Service
) -> None:
    js = service.js
    await replicated_on_every_node(js)
    async with SpadesClient(service.gateway.url) as client:
        playing = asyncio.create_task(play_games(client, RULES, GAMES, Bot, concurrency=GAMES))
        try:
            under_way = await every_game_moves_on(js, {})
            (await follower_to_kill(js, cluster)).kill()
            await every_game_moves_on(js, under_way)
            service.engines[0].kill()
            async with asyncio.timeout(GAMES_TIMEOUT_S):
                outcomes = await playing
        finally:
            await cancelled(playing)

    assert service.engines[1].alive
    await read_models_caught_up(service.gateway)
    await every_game_audits_clean(js, service.gateway, outcomes)


async def every_game_audits_clean(
    js: JetStreamContext, gateway: GatewayProcess, outcomes: list[GameOutcome]
) -> None:
    assert len(outcomes) == GAMES
    stream = GameStream(js)
    stored = 0
    for outcome in outcomes:
        assert outcome.winners, f"{outcome.game_id} did not finish"
        commits = await stream.read(outcome.game_id)
        stored += len(commits)
        committed_once_in_order(commits)
        version = commits[-1].commit.version
        read_models = await served_read_models(gateway, outcome.game_id, version)
        report = audit_game(commits, read_models)
        assert report.problems == [], (outcome.game_id, report.problems[:3])
        assert report.ok
        assert report.chain
        assert report.events == version
        assert read_models.scoreboard is not None
        assert read_models.scoreboard["scores"] == outcome.scores
    info = await js.stream_info(GAMES_STREAM)
    assert info.state.messages == stored, "the stream holds commits of no game played"
