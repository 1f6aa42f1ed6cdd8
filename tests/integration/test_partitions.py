"""Partitions of the game stream against a real nats-server: the server's own ``partition()``
mapping agrees with the code, engines share the partitions and take over a killed one's, and a
process started with another number of partitions than the streams were made with refuses to
start."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from benchmarks.commands import wait_for_engine
from benchmarks.nats_table import RandomTable
from contracts.partitions import Partitions, partition_of
from services.runtime.broker_users import CLAIMS_BUCKET
from services.runtime.claims import Claims
from services.runtime.engine_client import EngineClient
from services.runtime.game_stream import GameStream
from services.runtime.nats_server import EmbeddedNats, find_nats_server_binary, free_port
from tests.integration.support import EngineProcess, broker_credentials, connected, history
from tests.integration.test_engine import assert_record_sound

pytestmark = pytest.mark.integration

THREE = Partitions(3)
TAKE_OVER_S = 10.0
"""A killed member's lease runs out in 5 s, and the next renewal (1 s) takes it over."""


async def test_the_partition_of_a_game_is_the_one_nats_subject_mapping_gives(
    tmp_path: Path,
) -> None:
    """Account subject mapping with ``partition(K, 1)``, on the nats-server binary the project
    ships: what the server maps each id to is what :func:`partition_of` computes."""
    port = free_port()
    config = tmp_path / "mapping.conf"
    config.write_text(
        f"listen: 127.0.0.1:{port}\n"
        "mappings = {\n"
        '  "probe.three.*": "mapped.three.{{partition(3,1)}}.{{wildcard(1)}}"\n'
        '  "probe.seven.*": "mapped.seven.{{partition(7,1)}}.{{wildcard(1)}}"\n'
        "}\n"
    )
    server = await asyncio.create_subprocess_exec(
        str(find_nats_server_binary()),
        "-c",
        str(config),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        client = await _connect_when_up(f"nats://127.0.0.1:{port}")
        mapped: dict[tuple[str, str], int] = {}
        done = asyncio.Event()
        ids = [f"{random.Random(n).getrandbits(64):016x}" for n in range(300)] + ["x", "a-b_c"]

        async def seen(msg: Msg) -> None:
            _, count, partition, game_id = msg.subject.split(".")
            mapped[(count, game_id)] = int(partition)
            if len(mapped) == 2 * len(ids):
                done.set()

        await client.subscribe("mapped.>", cb=seen)
        for game_id in ids:
            await client.publish(f"probe.three.{game_id}", b"")
            await client.publish(f"probe.seven.{game_id}", b"")
        async with asyncio.timeout(10):
            await done.wait()
        await client.close()
    finally:
        server.terminate()
        await server.wait()
    for game_id in ids:
        assert mapped[("three", game_id)] == partition_of(game_id, 3), game_id
        assert mapped[("seven", game_id)] == partition_of(game_id, 7), game_id


async def _connect_when_up(url: str) -> Client:
    deadline = time.monotonic() + 10
    while True:
        try:
            return await nats.connect(url, allow_reconnect=False)
        except (OSError, nats.errors.NoServersError):
            assert time.monotonic() < deadline, "the mapping server did not start"
            await asyncio.sleep(0.05)


@pytest.fixture
def partitioned_nats(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A server whose broker users are those of a deployment of three partitions."""
    with EmbeddedNats(
        tmp_path / "nats", credentials=broker_credentials(), partitions=THREE
    ) as server:
        yield server


@pytest.fixture
async def admin(partitioned_nats: EmbeddedNats) -> AsyncIterator[Client]:
    client = await connected(partitioned_nats.url)
    yield client
    await client.close()


def _engine(server: EmbeddedNats, tmp_path: Path, name: str, count: int = 3) -> EngineProcess:
    engine = EngineProcess(server.url, tmp_path, name, env={"SPADES_PARTITIONS": str(count)})
    engine.start()
    return engine


async def _holders(client: Client, kind: str, count: int) -> dict[int, int]:
    """The process id holding each held partition of ``kind`` now."""
    kv = await client.jetstream().key_value(CLAIMS_BUCKET)
    held: dict[int, int] = {}
    for partition in range(count):
        try:
            entry = await kv.get(f"{kind}.partitions.{partition}")
        except nats.js.errors.NotFoundError:
            continue
        if entry.value:
            held[partition] = int(entry.value.decode().rsplit("-", 2)[1])
    return held


async def _until_held(client: Client, wanted: set[int], timeout_s: float) -> dict[int, int]:
    """Wait until every partition is held, by the processes ``wanted`` and all of them."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            held = await _holders(client, "engine", THREE.count)
        except nats.js.errors.NotFoundError:  # the bucket is not made yet
            held = {}
        if len(held) == THREE.count and set(held.values()) == wanted:
            return held
        assert time.monotonic() < deadline, f"partitions held by {held}, wanted {wanted}"
        await asyncio.sleep(0.1)  # the claims renew once a second: nothing else to await


async def test_engines_share_the_partitions_and_one_takes_over_a_killed_ones(
    partitioned_nats: EmbeddedNats, admin: Client, tmp_path: Path
) -> None:
    engines = [_engine(partitioned_nats, tmp_path, name) for name in ("engine-a", "engine-b")]
    try:
        for engine in engines:
            engine.wait_ready()
        held = await _until_held(admin, {e.pid for e in engines}, 20)
        client = EngineClient(admin, timeout_s=5, partitions=THREE)
        await wait_for_engine(client)
        stream = GameStream(admin.jetstream(), THREE)
        tables = [
            RandomTable(client, stream, f"part-{n}", random.Random(n), avoid_blind_nil=True)
            for n in range(6)
        ]
        assert {THREE.of(table.game_id) for table in tables} == {0, 1, 2}
        await asyncio.gather(*(t.open({"preset": "solo", "target": 10**6}) for t in tables))

        async def play(table: RandomTable, steps: int) -> None:
            for _ in range(steps):
                await table.step()

        await asyncio.gather(*(play(table, 20) for table in tables))
        victim = engines[0] if list(held.values()).count(engines[0].pid) else engines[1]
        survivor = engines[1] if victim is engines[0] else engines[0]
        killed_at = time.monotonic()
        playing = asyncio.gather(*(play(table, 30) for table in tables))
        victim.kill()
        await _until_held(admin, {survivor.pid}, TAKE_OVER_S + 10)
        taken_over_s = time.monotonic() - killed_at
        await playing
        print(f"\nevery partition held by the survivor {taken_over_s:.1f} s after the kill")
        assert taken_over_s < TAKE_OVER_S
        for table in tables:
            commits = await history(admin, table.game_id, THREE)
            assert_record_sound(commits, table.game_id)
            home = THREE.stream(THREE.of(table.game_id))
            info = await admin.jetstream().stream_info(
                home, subjects_filter=THREE.game_subject(table.game_id)
            )
            assert info.state.subjects == {THREE.game_subject(table.game_id): len(commits)}
    finally:
        for engine in engines:
            engine.stop()


async def test_an_engine_started_with_another_count_of_partitions_refuses_to_start(
    partitioned_nats: EmbeddedNats, admin: Client, tmp_path: Path
) -> None:
    first = _engine(partitioned_nats, tmp_path, "engine-three")
    try:
        first.wait_ready()
    finally:
        first.stop()
    for count, says in ((1, "SPADES_PARTITIONS=3"), (2, "deployment of 3 partitions")):
        other = _engine(partitioned_nats, tmp_path, f"engine-{count}", count)
        try:
            assert other.process is not None
            other.process.wait(timeout=30)
            log = other.log_path.read_text()
            assert says in log, log[-2000:]
        finally:
            other.stop()


async def test_members_share_partitions_evenly_and_take_over_a_stopped_ones(
    admin: Client,
) -> None:
    """Three members of one kind, six partitions: two each; stop one, and the other two hold
    all six within a lease and a renewal."""
    js = admin.jetstream()
    held: dict[str, set[int]] = {}

    def member(name: str) -> Claims:
        held[name] = set()

        async def gain(partition: int) -> None:
            held[name].add(partition)

        async def lose(partition: int) -> None:
            held[name].discard(partition)

        return Claims(js, "probe", 6, gain, lose, member=name, lease_s=3.0, renew_s=0.5)

    members = [member(name) for name in ("m1", "m2", "m3")]
    tasks = [asyncio.create_task(m.run()) for m in members]
    try:
        await _until(lambda: sorted(len(p) for p in held.values()) == [2, 2, 2], 15)
        assert set().union(*held.values()) == set(range(6))
        tasks[0].cancel()
        await asyncio.gather(tasks[0], return_exceptions=True)
        assert held["m1"] == set()
        started = time.monotonic()
        await _until(lambda: held["m2"] | held["m3"] == set(range(6)), 10)
        assert not held["m2"] & held["m3"]
        print(f"\na stopped member's partitions taken over in {time.monotonic() - started:.1f} s")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _until(condition: object, timeout_s: float) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.05)
