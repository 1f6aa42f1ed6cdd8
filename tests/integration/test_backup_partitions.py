"""Backups of a deployment of three partitions: every partition's stream comes back message for
message, and a restore into a deployment of another number of partitions is refused before
anything is written."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.commands import wait_for_engine
from benchmarks.nats_table import RandomTable
from contracts.partitions import Partitions
from contracts.wire import ARCHIVE_STREAM, LEAGUES_STREAM
from services.backup.deployment import restore_backup, take_backup
from services.backup.manifest import BackupError
from services.runtime.broker_users import ADMIN
from services.runtime.engine_client import EngineClient
from services.runtime.game_stream import GameStream
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats
from services.runtime.settings import SIGNING_KEY_FILENAME, Settings
from tests.integration.support import EngineProcess

pytestmark = pytest.mark.integration

THREE = Partitions(3)


def deployment(data_dir: Path, partitions: int = 3) -> Settings:
    return Settings(data_dir=data_dir, secret_key=None, partitions=partitions)


async def _admin(server: EmbeddedNats) -> Client:
    credentials = server.credentials_for(ADMIN)
    return await connect(server.url, "pytest", user=ADMIN, credentials=credentials)


async def _stored(js: JetStreamContext, stream: str) -> list[tuple[object, ...]]:
    last = int((await js.stream_info(stream)).state.last_seq or 0)
    found: list[tuple[object, ...]] = []
    for sequence in range(1, last + 1):
        message = await js.get_msg(stream, sequence)
        found.append((message.seq, message.subject, message.headers, message.data))
    return found


async def test_every_partition_is_backed_up_and_restored_message_for_message(
    tmp_path: Path,
) -> None:
    source = deployment(tmp_path / "source")
    source.data_dir.mkdir()
    (source.data_dir / SIGNING_KEY_FILENAME).write_bytes(bytes(range(32)))
    folder = tmp_path / "backup"
    with EmbeddedNats(tmp_path / "nats", partitions=THREE) as server:
        credentials = server.credentials_for("engine")
        engine = EngineProcess(
            server.url,
            tmp_path,
            env={"SPADES_PARTITIONS": "3", "SPADES_NATS_CREDS": str(credentials)},
        )
        engine.start()
        admin = await _admin(server)
        try:
            engine.wait_ready()
            client = EngineClient(admin, timeout_s=10, partitions=THREE)
            await wait_for_engine(client)
            stream = GameStream(admin.jetstream(), THREE)
            tables = [RandomTable(client, stream, f"b{n}", random.Random(n)) for n in range(6)]
            await asyncio.gather(*(t.open({"preset": "solo", "target": 10**6}) for t in tables))
            for table in tables:
                for _ in range(12):
                    await table.step()
            manifest = await take_backup(source, admin, folder)
            original = {s: await _stored(admin.jetstream(), s) for s in THREE.streams}
        finally:
            await admin.close()
            engine.stop()

    assert manifest.partitions == 3
    assert [copy.name for copy in manifest.streams] == [
        *THREE.streams,
        LEAGUES_STREAM,
        ARCHIVE_STREAM,
    ]
    assert all(copy.messages for copy in manifest.streams[:3])

    with EmbeddedNats(tmp_path / "fresh", partitions=THREE) as fresh:
        admin = await _admin(fresh)
        try:
            with pytest.raises(BackupError, match="SPADES_PARTITIONS=3"):
                await restore_backup(deployment(tmp_path / "one", 1), admin, folder)
            assert (await admin.jetstream().streams_info()) == []  # nothing was written
            await restore_backup(deployment(tmp_path / "target"), admin, folder)
            for name, messages in original.items():
                assert await _stored(admin.jetstream(), name) == messages
                info = await admin.jetstream().stream_info(name)
                assert (
                    THREE.mismatch(THREE.partition_of_stream(name) or 0, info.config.metadata)
                    is None
                )
        finally:
            await admin.close()
