"""One contract for every event store: the JetStream one (against a real nats-server) and the
in-memory one pass the same tests, so what passes on the memory store holds on JetStream.

Each test gets a stream and subjects of its own on the session's server.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import AsyncIterator

import pytest

from services.runtime.broker_users import ADMIN
from services.runtime.event_store import (
    DIRECT_READS,
    AppendConflict,
    DuplicateCommand,
    EventStore,
    History,
    JetStreamEventStore,
    history_stream_config,
)
from services.runtime.memory_store import MemoryEventStore
from services.runtime.nats import connect, ensure_stream
from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import credentials_of


def _text(data: bytes) -> str:
    return data.decode()


@pytest.fixture(params=["memory", "jetstream"])
async def store(
    request: pytest.FixtureRequest, shared_nats: EmbeddedNats
) -> AsyncIterator[EventStore[str]]:
    tag = secrets.token_hex(4)
    history = History(f"CONTRACT_{tag}", lambda key: f"contract.{tag}.{key}", _text)
    if request.param == "memory":
        yield MemoryEventStore(history)
        return
    client = await connect(shared_nats.url, "pytest", credentials=credentials_of(ADMIN))
    js = client.jetstream()
    await ensure_stream(js, history_stream_config(history.stream, f"contract.{tag}.>"))
    yield JetStreamEventStore(js, history)
    await js.delete_stream(history.stream)
    await client.close()


async def test_a_history_no_one_wrote_is_empty(store: EventStore[str]) -> None:
    assert await store.last_sequence("g1") == 0
    assert await store.read("g1") == []


async def test_an_append_is_read_back_as_stored(store: EventStore[str]) -> None:
    sequence = await store.append("g1", b"created", expected=0, command_id="c1")
    assert sequence >= 1
    assert await store.last_sequence("g1") == sequence
    [stored] = await store.read("g1")
    assert (stored.sequence, stored.data, stored.commit) == (sequence, b"created", "created")
    assert stored.digest == hashlib.sha256(b"created").hexdigest()
    assert await store.read_one("g1", sequence) == stored


async def test_an_append_must_name_the_subjects_last_sequence(store: EventStore[str]) -> None:
    with pytest.raises(AppendConflict):
        await store.append("g1", b"x", expected=5, command_id="c0")
    first = await store.append("g1", b"a", expected=0, command_id="c1")
    with pytest.raises(AppendConflict):
        await store.append("g1", b"b", expected=0, command_id="c2")
    with pytest.raises(AppendConflict):
        await store.append("g1", b"b", expected=first + 1, command_id="c3")
    second = await store.append("g1", b"b", expected=first, command_id="c4")
    assert second > first
    assert [s.commit for s in await store.read("g1")] == ["a", "b"]


async def test_of_two_writers_from_the_same_position_one_wins(store: EventStore[str]) -> None:
    async def write(name: str) -> str:
        try:
            await store.append("g1", name.encode(), expected=0, command_id=name)
        except AppendConflict:
            return "conflict"
        return "stored"

    outcomes = await asyncio.gather(write("w1"), write("w2"))
    assert sorted(outcomes) == ["conflict", "stored"]
    assert len(await store.read("g1")) == 1


async def test_a_command_id_is_stored_once(store: EventStore[str]) -> None:
    first = await store.append("g1", b"a", expected=0, command_id="g1:c1")
    with pytest.raises(DuplicateCommand) as raised:
        await store.append("g1", b"a again", expected=first, command_id="g1:c1")
    assert raised.value.sequence == first
    # The position is checked first: a retry from a stale one is a conflict (the caller
    # reloads and finds the command in the history).
    for stale in (0, first + 7):
        with pytest.raises(AppendConflict):
            await store.append("g1", b"a again", expected=stale, command_id="g1:c1")
    assert [s.commit for s in await store.read("g1")] == ["a"]
    assert await store.last_sequence("g1") == first


async def test_command_ids_are_unique_across_the_whole_stream(store: EventStore[str]) -> None:
    first = await store.append("g1", b"a", expected=0, command_id="same")
    with pytest.raises(DuplicateCommand) as raised:
        await store.append("g2", b"b", expected=0, command_id="same")
    assert raised.value.sequence == first
    assert await store.read("g2") == []


async def test_each_aggregate_has_its_subject_and_sequences_span_the_stream(
    store: EventStore[str],
) -> None:
    a1 = await store.append("g1", b"a1", expected=0, command_id="1")
    b1 = await store.append("g2", b"b1", expected=0, command_id="2")
    a2 = await store.append("g1", b"a2", expected=a1, command_id="3")
    with pytest.raises(AppendConflict):  # the other subject's last sequence is not this one's
        await store.append("g2", b"b2", expected=a2, command_id="4")
    b2 = await store.append("g2", b"b2", expected=b1, command_id="5")
    assert a1 < b1 < a2 < b2
    assert [s.commit for s in await store.read("g1")] == ["a1", "a2"]
    assert [s.sequence for s in await store.read("g2")] == [b1, b2]
    assert (await store.read_one("g2", b1)).commit == "b1"


async def test_a_subject_names_its_aggregate(store: EventStore[str]) -> None:
    prefix = store.subject("")
    assert store.key_of(f"{prefix}game-7") == "game-7"
    assert store.key_of("elsewhere.game-7") is None
    assert store.stored(3, b"raw").commit == "raw"
    assert store.name.startswith("CONTRACT_")


async def test_reads_from_a_point_up_to_a_point_and_at_most_so_many(
    store: EventStore[str],
) -> None:
    sequences: list[int] = []
    for n in range(6):
        last = sequences[-1] if sequences else 0
        sequences.append(await store.append("g1", b"%d" % n, expected=last, command_id=f"c{n}"))
        await store.append(f"other{n}", b"noise", expected=0, command_id=f"noise{n}")

    async def read(**bounds: int) -> list[str]:
        return [s.commit for s in await store.read("g1", **bounds)]

    assert await read(after=sequences[2]) == ["3", "4", "5"]
    assert await read(limit=2) == ["0", "1"]
    assert await read(until=sequences[3]) == ["0", "1", "2", "3"]
    assert await read(after=sequences[1], until=sequences[4], limit=2) == ["2", "3"]
    assert await read(after=sequences[5]) == []
    assert await read(after=sequences[3], until=sequences[3]) == []


async def test_a_long_history_is_read_whole_and_from_any_point(store: EventStore[str]) -> None:
    count = DIRECT_READS * 2 + 5  # past what JetStream reads with direct gets
    last = 0
    for n in range(count):
        last = await store.append("g1", b"%d" % n, expected=last, command_id=f"c{n}")
    whole = await store.read("g1")
    assert [s.commit for s in whole] == [str(n) for n in range(count)]
    middle = whole[DIRECT_READS - 3].sequence
    assert [s.commit for s in await store.read("g1", after=middle)] == [
        str(n) for n in range(DIRECT_READS - 2, count)
    ]
    assert len(await store.read("g1", limit=DIRECT_READS + 3)) == DIRECT_READS + 3
