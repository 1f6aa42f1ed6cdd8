"""The pull feed of the read models, the webhooks and the round watch
(services/runtime/consumer.py), against a real nats-server: batches in order, an idle fetch
that times out, a batch behind a backlog filled whole, a deleted consumer noticed at once, and
a lightly loaded stream that costs no pull request a message."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api

from services.runtime.consumer import ConsumerGone, PullFeed

pytestmark = pytest.mark.integration

STREAM = "FEED"
CONSUMER = "reader"


@pytest.fixture
async def feed(nats_client: Client) -> AsyncIterator[PullFeed]:
    js = nats_client.jetstream()
    await js.add_stream(name=STREAM, subjects=["feed.>"])
    config = api.ConsumerConfig(durable_name=CONSUMER, ack_policy=api.AckPolicy.EXPLICIT)
    await js.add_consumer(STREAM, config=config)
    opened = PullFeed(nats_client, STREAM, CONSUMER)
    await opened.open()
    yield opened
    await opened.close()


async def publish(client: Client, *payloads: bytes) -> None:
    js = client.jetstream()
    for payload in payloads:
        await js.publish("feed.x", payload)


def payloads(messages: list[Msg]) -> list[bytes]:
    return [message.data for message in messages]


async def test_batches_come_in_order_and_an_idle_fetch_times_out(
    feed: PullFeed, nats_client: Client
) -> None:
    await publish(nats_client, b"1", b"2", b"3", b"4", b"5")
    batches: list[list[bytes]] = []
    while sum(map(len, batches)) < 5:  # a fetch hands on what has arrived: the rest may lag
        batches.append(payloads(await feed.fetch(3, 1.0)))
    assert all(1 <= len(batch) <= 3 for batch in batches)
    assert [payload for batch in batches for payload in batch] == [b"1", b"2", b"3", b"4", b"5"]
    with pytest.raises(TimeoutError):
        await feed.fetch(3, 0.2)

    waiting = asyncio.create_task(feed.fetch(3, 2.0))
    await asyncio.sleep(0.05)
    await publish(nats_client, b"6")
    assert payloads(await waiting) == [b"6"]


async def test_fetch_now_takes_what_the_stream_has_without_waiting(
    feed: PullFeed, nats_client: Client
) -> None:
    assert await feed.fetch_now(10) == []
    await publish(nats_client, b"1", b"2", b"3")
    assert payloads(await feed.fetch_now(2)) == [b"1", b"2"]
    assert payloads(await feed.fetch_now(2)) == [b"3"]


async def test_a_batch_behind_a_backlog_is_filled_whole(
    feed: PullFeed, nats_client: Client
) -> None:
    await publish(nats_client, *(str(n).encode() for n in range(300)))
    first = await feed.fetch(200, 1.0)  # what has arrived: as few as one
    rest = await feed.fetch_backlog(200 - len(first), 5.0)
    assert payloads(first + rest) == [str(n).encode() for n in range(200)]
    assert payloads(await feed.fetch_backlog(200, 5.0)) == [
        str(n).encode() for n in range(200, 300)
    ]


async def test_a_lightly_loaded_stream_costs_no_pull_request_a_message(
    feed: PullFeed, nats_client: Client
) -> None:
    requests = 0

    async def count(_: Msg) -> None:
        nonlocal requests
        requests += 1

    watch = await nats_client.subscribe(f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{CONSUMER}", cb=count)
    try:
        for n in range(20):
            await publish(nats_client, str(n).encode())
            [message] = await feed.fetch(256, 5.0)
            assert message.data == str(n).encode()
            await message.ack()
        await nats_client.flush()
    finally:
        await watch.unsubscribe()
    assert requests == 1  # the first fetch's request is still open


async def test_a_deleted_consumer_ends_a_waiting_fetch(feed: PullFeed, nats_client: Client) -> None:
    waiting = asyncio.create_task(feed.fetch(10, 5.0))
    await asyncio.sleep(0.05)
    await nats_client.jetstream().delete_consumer(STREAM, CONSUMER)
    async with asyncio.timeout(2):
        with pytest.raises(ConsumerGone):
            await waiting
