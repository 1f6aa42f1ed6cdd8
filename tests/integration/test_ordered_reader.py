"""The ordered reader of the gateway's event streams and the engines' tails
(services/runtime/ordered.py), against a real nats-server: in order from a sequence or from the
end, each consumer under a name of its own in the subject, and a consumer lost under it made
again where it stopped, with nothing missed or read twice."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import nats.errors
import pytest
from nats.aio.client import Client

from services.runtime.ordered import OrderedReader

pytestmark = pytest.mark.integration

STREAM = "ORDERED"


@pytest.fixture
async def stream(nats_client: Client) -> AsyncIterator[Client]:
    js = nats_client.jetstream()
    await js.add_stream(name=STREAM, subjects=["ordered.>"])
    yield nats_client
    await js.delete_stream(STREAM)


async def publish(client: Client, subject: str, *payloads: bytes) -> None:
    for payload in payloads:
        await client.jetstream().publish(subject, payload)


async def read(reader: OrderedReader, count: int) -> list[bytes]:
    got: list[bytes] = []
    async with asyncio.timeout(10):
        while len(got) < count:
            got += [message.data for message in await reader.fetch(count - len(got), 1.0)]
    return got


async def test_from_a_sequence_on_its_subject_only_in_order(stream: Client) -> None:
    await publish(stream, "ordered.a", b"a1", b"a2")
    await publish(stream, "ordered.b", b"b1")
    await publish(stream, "ordered.a", b"a3")
    reader = OrderedReader(stream, STREAM, "ordered.a", after=1, role="test")
    assert await read(reader, 2) == [b"a2", b"a3"]
    assert reader.after == 4
    assert await reader.fetch(8, 0.2) == []
    [consumer] = await stream.jetstream().consumers_info(STREAM)
    assert consumer.name.startswith("spades-test-")  # named in the subject, by the reader
    await reader.close()


async def test_from_the_end_and_one_message_at_a_time(stream: Client) -> None:
    await publish(stream, "ordered.a", b"old")
    reader = OrderedReader(stream, STREAM, "ordered.>", after=None, role="test")
    await reader.open()
    await publish(stream, "ordered.a", b"new1", b"new2")
    assert (await reader.next_msg(2.0)).data == b"new1"
    assert (await reader.next_msg(2.0)).data == b"new2"
    with pytest.raises(nats.errors.TimeoutError):
        await reader.next_msg(0.2)
    await reader.close()


async def test_a_consumer_deleted_under_it_is_made_again_where_it_stopped(
    stream: Client,
) -> None:
    await publish(stream, "ordered.a", b"1", b"2")
    reader = OrderedReader(stream, STREAM, "ordered.a", after=0, role="test")
    assert await read(reader, 2) == [b"1", b"2"]
    [lost] = await stream.jetstream().consumers_info(STREAM)
    await stream.jetstream().delete_consumer(STREAM, lost.name)
    await publish(stream, "ordered.a", b"3", b"4")
    assert await read(reader, 2) == [b"3", b"4"]
    assert reader.made == 2
    [made] = await stream.jetstream().consumers_info(STREAM)
    assert made.name != lost.name
    await reader.close()
