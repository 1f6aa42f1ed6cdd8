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

from services.runtime.broker_users import ADMIN
from services.runtime.credentials import connect_options
from services.runtime.nats_server import EmbeddedNats
from services.runtime.replies import Replies, command, publish
from tests.integration.support import connected, credentials_of

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


class Recording(Client):
    """A connection that keeps each command it writes."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []

    async def _send_command(self, cmd: bytes, priority: bool = False) -> None:
        self.written.append(cmd)
        await super()._send_command(cmd, priority)


HEADERS = {
    "Nats-Expected-Last-Subject-Sequence": "41",
    "Nats-Msg-Id": "g-1:c-7",
    "Nats-Expected-Stream": "SPADES_GAMES",
}


@pytest.mark.parametrize(
    ("reply", "headers"), [("", None), ("_INBOX.x.1", None), ("_INBOX.x.2", HEADERS), ("", HEADERS)]
)
async def test_a_command_is_written_byte_for_byte_as_nats_py_writes_it(
    shared_nats: EmbeddedNats, reply: str, headers: dict[str, str] | None
) -> None:
    client = Recording()
    await client.connect(shared_nats.url, **connect_options(credentials_of(ADMIN)))
    try:
        received: list[Msg] = []

        async def keep(message: Msg) -> None:
            received.append(message)

        await client.subscribe("replies.written", cb=keep)
        await client.publish("replies.written", b"{}", reply=reply, headers=headers)
        theirs = client.written[-1]
        await publish(client, "replies.written", b"{}", reply, headers)
        assert client.written[-1] == theirs == command("replies.written", b"{}", reply, headers)
        await client.flush()
        await asyncio.sleep(0.05)
        assert [(m.data, m.reply, m.headers) for m in received] == [(b"{}", reply, headers)] * 2
    finally:
        await client.close()


@pytest.mark.parametrize("subject", ["", "a b", "a\r\nPUB b 0", "a\tb"])
async def test_a_subject_that_would_break_the_command_is_refused(
    client: Client, subject: str
) -> None:
    with pytest.raises(nats.errors.BadSubjectError):
        await publish(client, subject, b"")
    with pytest.raises(nats.errors.BadSubjectError):
        await publish(client, "replies.fine", b"", reply=subject or " ")
