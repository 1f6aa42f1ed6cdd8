"""Requests answered on one inbox subscription (services.runtime.replies), against the real
nats-server: each request gets its own reply however they interleave, and the two failures are
nats-py's own (no responders, timeout)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import nats.errors
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from services.runtime.nats_server import EmbeddedNats
from services.runtime.replies import Replies
from tests.integration.support import connected

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(shared_nats: EmbeddedNats) -> AsyncIterator[Client]:
    connection = await connected(shared_nats.url)
    yield connection
    await connection.close()


async def test_requests_in_flight_each_get_their_own_reply(client: Client) -> None:
    async def echo_late(message: Msg) -> None:
        await asyncio.sleep(0.05 - int(message.data) * 0.001)  # later requests answered first
        await client.publish(message.reply, b"re:" + message.data)

    await client.subscribe("replies.echo", cb=echo_late)
    replies = Replies(client)
    answers = await asyncio.gather(
        *(replies.request("replies.echo", b"%d" % n, timeout_s=5) for n in range(20))
    )

    assert [answer.data for answer in answers] == [b"re:%d" % n for n in range(20)]


async def test_a_subject_nobody_listens_on_raises_no_responders_at_once(client: Client) -> None:
    start = time.monotonic()
    with pytest.raises(nats.errors.NoRespondersError):
        await Replies(client).request("replies.nobody", b"", timeout_s=5)
    assert time.monotonic() - start < 1


async def test_a_reply_that_never_comes_times_out(client: Client) -> None:
    async def silent(message: Msg) -> None:
        pass

    await client.subscribe("replies.silent", cb=silent)
    start = time.monotonic()
    with pytest.raises(nats.errors.TimeoutError):
        await Replies(client).request("replies.silent", b"", timeout_s=0.2)
    assert 0.2 <= time.monotonic() - start < 1
