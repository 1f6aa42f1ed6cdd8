"""Which get a JetStream event store asks: JetStream's direct get on a stream of one replica
(its only copy answers, exactly), the leader's ``STREAM.MSG.GET`` on any other; a stream that
stops allowing direct gets while a store reads it is read the other way at once.

A plain subscription beside the server's own sees the get requests the store sends (it never
answers them; with it on the direct subject, though, a direct get always has a responder, so the
test of direct gets turned off watches the leader's subject only).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import nats.js.errors
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from services.runtime.broker_users import ADMIN
from services.runtime.event_store import History, JetStreamEventStore, history_stream_config
from services.runtime.nats import connect, ensure_stream
from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import credentials_of


@dataclass
class Gets:
    direct: list[bytes] = field(default_factory=list)
    leader: list[bytes] = field(default_factory=list)


@dataclass
class Setup:
    js: JetStreamContext
    stream: str
    subjects: str
    store: JetStreamEventStore[str]
    watcher: Client
    gets: Gets = field(default_factory=Gets)

    async def watch(self, direct: bool = True) -> None:
        async def seen_direct(message: Msg) -> None:
            self.gets.direct.append(message.data)

        async def seen_leader(message: Msg) -> None:
            self.gets.leader.append(message.data)

        if direct:
            await self.watcher.subscribe(f"$JS.API.DIRECT.GET.{self.stream}", cb=seen_direct)
        await self.watcher.subscribe(f"$JS.API.STREAM.MSG.GET.{self.stream}", cb=seen_leader)
        await self.watcher.flush()


@pytest.fixture
async def setup(shared_nats: EmbeddedNats) -> AsyncIterator[Setup]:
    tag = secrets.token_hex(4)
    history = History(f"DIRECT_{tag}", lambda key: f"direct.{tag}.{key}", bytes.decode)
    client = await connect(shared_nats.url, "pytest", credentials=credentials_of(ADMIN))
    watcher = await connect(shared_nats.url, "pytest-watch", credentials=credentials_of(ADMIN))
    js = client.jetstream()
    store = JetStreamEventStore(js, history)
    try:
        yield Setup(js, history.stream, f"direct.{tag}.>", store, watcher)
    finally:
        await js.delete_stream(history.stream)
        await _close(client, watcher)


async def _close(*clients: Client) -> None:
    for client in clients:
        await client.close()


async def _seen(gets: Gets, direct: int, leader: int) -> None:
    """Wait until the watcher has seen that many gets of each kind (the requests reach it about
    when they reach the server)."""
    for _ in range(500):  # up to 5 s, for a loaded machine
        if (len(gets.direct), len(gets.leader)) == (direct, leader):
            return
        await asyncio.sleep(0.01)
    assert (len(gets.direct), len(gets.leader)) == (direct, leader)


def test_a_history_stream_allows_direct_gets_with_one_replica_only() -> None:
    assert history_stream_config("S", "s.>", replicas=1).allow_direct
    assert not history_stream_config("S", "s.>", replicas=3).allow_direct


async def test_a_stream_of_one_replica_is_read_with_direct_gets(setup: Setup) -> None:
    await ensure_stream(setup.js, history_stream_config(setup.stream, setup.subjects, 1))
    await setup.watch()
    store = setup.store
    first = await store.append("g1", b"a", expected=0, command_id="c1")
    second = await store.append("g1", b"b", expected=first, command_id="c2")

    assert [(s.sequence, s.commit) for s in await store.read("g1")] == [(first, "a"), (second, "b")]
    assert await store.read("g1", after=second) == []  # a view's question: anything after?
    assert (await store.read_one("g1", first)).commit == "a"
    assert await store.last_sequence("g1") == second
    assert await store.last_sequence("g2") == 0
    with pytest.raises(nats.js.errors.NotFoundError):
        await store.read_one("g1", second + 100)
    # Three gets for the first read (two commits, then "no more"), one for each of the rest.
    await _seen(setup.gets, direct=8, leader=0)


async def test_a_stream_that_does_not_allow_direct_gets_is_read_through_its_leader(
    setup: Setup,
) -> None:
    config = history_stream_config(setup.stream, setup.subjects, 1)
    config.allow_direct = False
    await ensure_stream(setup.js, config)
    await setup.watch()
    store = setup.store
    first = await store.append("g1", b"a", expected=0, command_id="c1")

    assert [s.commit for s in await store.read("g1")] == ["a"]
    assert await store.read("g1", after=first) == []
    await _seen(setup.gets, direct=0, leader=3)

    # Brought to this version's definition (as the engine does at its start), the stream
    # allows them: a store that looks at it from then on reads directly.
    await ensure_stream(setup.js, history_stream_config(setup.stream, setup.subjects, 1))
    history = History(setup.stream, lambda key: setup.subjects[:-1] + key, bytes.decode)
    assert await JetStreamEventStore(setup.js, history).read("g1", after=first) == []
    await _seen(setup.gets, direct=1, leader=3)


async def test_direct_gets_turned_off_while_reading_fall_back_to_the_leader(
    setup: Setup,
) -> None:
    config = history_stream_config(setup.stream, setup.subjects, 1)
    await ensure_stream(setup.js, config)
    await setup.watch(direct=False)
    store = setup.store
    first = await store.append("g1", b"a", expected=0, command_id="c1")
    assert await store.read("g1", after=first) == []
    await _seen(setup.gets, direct=0, leader=0)  # asked directly

    config.allow_direct = False
    await ensure_stream(setup.js, config)
    second = await store.append("g1", b"b", expected=first, command_id="c2")

    assert [s.commit for s in await store.read("g1", after=first)] == ["b"]
    assert await store.read("g1", after=second) == []
    # The first get after the change had no responder: it is asked again of the leader, and
    # so is every get after it.
    await _seen(setup.gets, direct=0, leader=3)
