"""A deployment of one partition moved into three with ``spades partitions migrate``: every game
keeps its history byte for byte and audits clean, games in progress go on under an engine of
the new layout, and a process of the old layout refuses to start on it."""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import pytest

from benchmarks.commands import wait_for_engine
from benchmarks.nats_table import RandomTable
from contracts.partitions import LEGACY_STREAM, ONE, Partitions
from contracts.wire import LEAGUES_STREAM
from services.audit.replay import audit_game
from services.runtime.broker_users import ADMIN
from services.runtime.engine_client import EngineClient
from services.runtime.game_stream import MOVED_KEY, GameStream
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats
from services.runtime.settings import Settings
from services.store.database import open_store
from services.store.migrations import migrate as migrate_store
from services.store.webhook_endpoints import Endpoint, every_endpoint
from services.store.webhook_endpoints import add as add_endpoint
from tests.integration.support import EngineProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

THREE = Partitions(3)
GAMES = 6
RULES = {"preset": "partnership", "target": 10**6, "max_hands": 2}


def _engine(server: EmbeddedNats, tmp_path: Path, name: str, count: int) -> EngineProcess:
    credentials = server.credentials_for("engine")
    assert credentials is not None
    engine = EngineProcess(
        server.url,
        tmp_path,
        name,
        env={"SPADES_PARTITIONS": str(count), "SPADES_NATS_CREDS": str(credentials)},
    )
    engine.start()
    return engine


async def _admin(server: EmbeddedNats):  # type: ignore[no-untyped-def]
    return await connect(
        server.url, "pytest", user=ADMIN, credentials=server.credentials_for(ADMIN)
    )


async def test_a_one_partition_deployment_moves_into_three_and_plays_on(tmp_path: Path) -> None:
    data = tmp_path / "data"
    nats_store = data / "nats"
    # 1. The deployment as an earlier version made it: one stream, games finished and not.
    with EmbeddedNats(nats_store, partitions=ONE) as server:
        engine = _engine(server, tmp_path, "engine-one", 1)
        try:
            engine.wait_ready()
            admin = await _admin(server)
            client = EngineClient(admin, timeout_s=10)
            await wait_for_engine(client)
            tables = [
                RandomTable(client, GameStream(admin.jetstream()), f"g{n}", random.Random(n))
                for n in range(GAMES)
            ]
            await asyncio.gather(*(table.open(RULES) for table in tables))
            for n, table in enumerate(tables):  # half of them to their end
                if n % 2 == 0:
                    await table.play_out()
                else:
                    for _ in range(30):
                        await table.step()
            before = {
                t.game_id: await GameStream(admin.jetstream()).read(t.game_id) for t in tables
            }
            await admin.close()
        finally:
            engine.stop()

    # A webhook endpoint of the platform, which heard the history from the one stream.
    database = Settings(data_dir=data).read_model_database_url
    read_models = open_store(database)
    await migrate_store(read_models)
    endpoint = Endpoint(
        id="ep_before_the_move",
        platform="",
        url="https://example.invalid/hooks",
        events=("game.ended",),
        secret="whsec_x",
        created_at=0.0,
        starts={LEGACY_STREAM: 0, LEAGUES_STREAM: 0},
    )
    async with read_models.writing() as conn:
        await add_endpoint(conn, endpoint)
    await read_models.close()

    # 2. The move, as an operator runs it on the stopped stack's data directory.
    moved = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli.main", "partitions", "migrate", "-k", "3",
        "--data-dir", str(data),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(moved.communicate(), 120)
    assert moved.returncode == 0, err.decode()[-2000:]
    commits = sum(len(history) for history in before.values())
    assert f"{commits} commits of {GAMES} games moved into 3 partitions" in out.decode()
    read_models = open_store(database)
    async with read_models.reading() as conn:
        [moved_endpoint] = await every_endpoint(conn)
    await read_models.close()
    per_partition = [
        sum(len(h) for game_id, h in before.items() if THREE.of(game_id) == p)
        for p in THREE.indexes
    ]
    # it hears of what the new streams get after the move, not of the history again
    starts = {stream: moved_endpoint.starts.get(stream) for stream in THREE.streams}
    assert starts == dict(zip(THREE.streams, per_partition, strict=True))

    # 3. The new layout: every game where its id says, byte for byte; play goes on.
    with EmbeddedNats(nats_store, partitions=THREE) as server:
        admin = await _admin(server)
        js = admin.jetstream()
        old = await js.stream_info(LEGACY_STREAM)
        assert (old.config.metadata or {}).get(MOVED_KEY) == "3"
        stream = GameStream(js, THREE)
        for game_id, history in before.items():
            after = await stream.read(game_id)
            assert [s.data for s in after] == [s.data for s in history]
            assert audit_game(after).ok
        assert {THREE.of(game_id) for game_id in before} == {0, 1, 2}

        stale = _engine(server, tmp_path, "engine-stale", 1)
        try:
            assert stale.process is not None
            stale.process.wait(timeout=30)
            assert "moved into 3 partitions" in stale.log_path.read_text()
        finally:
            stale.stop()

        engine = _engine(server, tmp_path, "engine-three", 3)
        try:
            engine.wait_ready()
            client = EngineClient(admin, timeout_s=10, partitions=THREE)
            await wait_for_engine(client)
            going = [t for n, t in enumerate(tables) if n % 2 == 1]
            for table in going:
                table.client, table.stream = client, stream
            await asyncio.gather(*(table.play_out() for table in going))
            for table in tables:
                history = await stream.read(table.game_id)
                report = audit_game(history)
                assert report.ok, report.problems[:3]
                assert table.finished
        finally:
            engine.stop()
            await admin.close()
