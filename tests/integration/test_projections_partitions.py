"""Projections on a partitioned game stream: processes share the partitions, one takes over
those of another that is killed, and two that hold a partition at once apply each message once.
Whatever happened, every read model is what a replay of the streams makes."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.commands import wait_for_engine
from benchmarks.nats_table import RandomTable
from contracts.partitions import Partitions
from services.projections.parking import parked_messages
from services.projections.rebuild import rebuild
from services.projections.registry import READ_MODELS
from services.runtime.engine_client import EngineClient
from services.runtime.game_stream import GameStream
from services.runtime.nats_server import EmbeddedNats
from services.store.database import Store, open_store
from services.store.lag import lag_by_model, projection_lag, refusals
from tests.integration.support import (
    EngineProcess,
    ProjectionsProcess,
    broker_credentials,
    connected,
    holder_pid,
)

pytest.register_assert_rewrite("tests.integration.conftest_projections")
pytest.register_assert_rewrite("tests.integration.test_league_standings")
from tests.integration.conftest_projections import (  # noqa: E402
    append_games,
    random_logs,
    snapshot,
    wait_for_position,
    wait_for_positions,
    workers,
)
from tests.integration.test_league_standings import played_league  # noqa: E402

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration

LAYOUT = Partitions(3)
TAKEOVER_S = 15.0
"""A killed member's leases run out within 5 s of its last renewal; its partitions are then
taken at the survivor's next renewal, or after three more when the dead member still looks
alive (its membership runs out as its leases do)."""


async def test_two_holders_of_one_partition_apply_each_message_once(
    store: Store, database_url: str, js: JetStreamContext, nats_client: Client
) -> None:
    """Two processes' workers follow the one partition at once, on its one consumer, as they
    may for a moment when a lease changes hands: each takes part of what it delivers, and
    opens it again under the other. Nothing is applied twice, nothing skipped, nothing parked:
    the rows are a replay's."""
    logs = random_logs(12, seed=51)
    await append_games(js, logs[:4])
    other = open_store(database_url)
    try:
        async with (
            workers(store, nats_client, batch_size=7),
            workers(other, nats_client, batch_size=5),
        ):
            last = await append_games(js, logs[4:])
            await wait_for_position(store, last)
    finally:
        await other.close()
    assert await parked_messages(store) == []
    both = await snapshot(store)
    await rebuild(store)
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    assert await snapshot(store) == both


@pytest.fixture
def server_of_three(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A server of this test's own whose users are those of a deployment of three partitions."""
    with EmbeddedNats(
        tmp_path / "nats", credentials=broker_credentials(), partitions=LAYOUT
    ) as server:
        yield server


@pytest.fixture
async def connection_of_three(server_of_three: EmbeddedNats) -> AsyncIterator[Client]:
    client = await connected(server_of_three.url)
    yield client
    await client.close()


@pytest.fixture
def engine_of_three(server_of_three: EmbeddedNats, tmp_path: Path) -> Iterator[EngineProcess]:
    process = EngineProcess(server_of_three.url, tmp_path, env={"SPADES_PARTITIONS": "3"})
    process.start()
    process.wait_ready()
    yield process
    process.stop()


@pytest.fixture
async def projections_of_three(
    server_of_three: EmbeddedNats, database_url: str, tmp_path: Path
) -> AsyncIterator[list[ProjectionsProcess]]:
    """Two ``spades serve projections`` on the one database, sharing three partitions."""
    env = {
        "SPADES_PARTITIONS": "3",
        "SPADES_DATABASE_URL": database_url,
        "SPADES_DATA_DIR": str(tmp_path),
    }
    processes = [
        ProjectionsProcess(server_of_three.url, tmp_path, f"projections-{name}", env)
        for name in ("a", "b")
    ]
    for process in processes:
        process.start()
    try:
        for process in processes:
            await asyncio.to_thread(process.wait_ready, "projections ready")
        yield processes
    finally:
        for process in processes:
            process.stop()


async def holders(connection: Client) -> dict[int, int]:
    return {p: await holder_pid(connection, "projections", p) for p in LAYOUT.indexes}


async def shared_out(connection: Client, processes: list[ProjectionsProcess]) -> dict[int, int]:
    """The partitions' holders once both processes hold some, or once the first has had time
    to give the second those it prefers (three renewals of having seen it): by rendezvous
    hashing, one member of two prefers all three partitions one time in four."""
    deadline = time.monotonic() + 5.0
    while (held := await holders(connection)) and time.monotonic() < deadline:
        if set(held.values()) == {process.pid for process in processes}:
            break
        await asyncio.sleep(0.1)  # the claims' renewals, in other processes: nothing to await
    return held


async def last_sequences(js: JetStreamContext) -> dict[int, int]:
    return {
        p: int((await js.stream_info(LAYOUT.stream(p))).state.last_seq or 0) for p in LAYOUT.indexes
    }


async def play(tables: list[RandomTable], *, commands: int = 0, until: asyncio.Event) -> None:
    """The tables played at once, each until it ends, ``until`` is set, or (with ``commands``)
    it has played that many more commands."""

    async def at(table: RandomTable) -> None:
        stop = table.commands + commands if commands else None
        while not table.finished and not until.is_set():
            if stop is not None and table.commands >= stop:
                return
            await table.step()

    await asyncio.gather(*(at(table) for table in tables))


async def test_a_killed_projections_process_s_partitions_are_taken_over(
    engine_of_three: EngineProcess,
    projections_of_three: list[ProjectionsProcess],
    store: Store,
    connection_of_three: Client,
) -> None:
    """Games played through the engine on three partitions (and a league's games appended
    beside them) while two projections processes share the partitions; the one holding
    partition 0 is killed mid-work. The other holds every partition within seconds and applies
    what is left: every read model equals a replay of the streams, and nothing was parked."""
    connection = connection_of_three
    js = connection.jetstream()
    client = EngineClient(connection, 5.0, LAYOUT)
    await wait_for_engine(client)
    stream = GameStream(js, LAYOUT)
    tables = [
        RandomTable(client, stream, f"k3-{n}", random.Random(n), avoid_blind_nil=True)
        for n in range(9)
    ]
    assert {LAYOUT.of(table.game_id) for table in tables} == set(LAYOUT.indexes)
    await asyncio.gather(
        *(table.open({"preset": "partnership", "target": 10**6}) for table in tables)
    )
    _league, league_logs = played_league("k3", "partnership", 8, 3, seed=7)
    taken_over = asyncio.Event()
    playing = asyncio.gather(play(tables, until=taken_over), append_games(js, league_logs, LAYOUT))

    held = await shared_out(connection, projections_of_three)
    victim = next(p for p in projections_of_three if p.pid == held[0])
    survivor = next(p for p in projections_of_three if p is not victim)
    victim.kill()
    killed_at = time.monotonic()
    at_kill = await last_sequences(js)
    while set((await holders(connection)).values()) != {survivor.pid}:
        assert time.monotonic() - killed_at < TAKEOVER_S, await holders(connection)
        await asyncio.sleep(0.1)  # the claims' renewals, in another process: nothing to await
    taken_over_s = time.monotonic() - killed_at
    taken_over.set()
    await playing
    await play(tables, commands=20, until=asyncio.Event())  # the survivor's alone

    ends = await last_sequences(js)
    assert sum(ends.values()) > sum(at_kill.values()) + 100, "killed mid-work"
    await wait_for_positions(store, ends)
    assert await parked_messages(store) == []
    report = await projection_lag(store.engine, js, partitions=LAYOUT)
    assert set(report) == {(model, p) for model in READ_MODELS for p in LAYOUT.indexes}
    assert lag_by_model(report) == dict.fromkeys(READ_MODELS, 0)
    assert refusals(report) is None
    survivor.stop()
    shared = await snapshot(store)
    assert len(shared["league_standings"]) == 8

    await rebuild(store, partitions=LAYOUT)
    async with workers(store, connection, partitions=LAYOUT):
        await wait_for_positions(store, ends)
    assert await snapshot(store) == shared
    print(f"holders before the kill {held}: partitions taken over {taken_over_s:.1f} s after it")
