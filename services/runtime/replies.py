"""Requests over NATS whose replies all come to one inbox subscription of the connection.

nats-py's ``request`` (and ``js.publish``, which is one) draws a random token per request,
hangs a callback on its future and waits with ``wait_for``; on the command path (the engine's
appends, the commands the gateway and the benchmarks send) that was a good part of a request's
CPU. Here a request is a counter token under the connection's own inbox prefix, a future and a
timer: ``spades bench commands`` measures it. The outcomes are nats-py's: the reply,
``nats.errors.NoRespondersError`` when nothing listens on the subject, or
``nats.errors.TimeoutError``.

The messages of the command path (requests, the engine's replies, the round watch's
acknowledgements) are written by :func:`publish`: the protocol command built here, byte for
byte what nats-py's ``publish`` writes, headers included (the stream stores them), and handed to
the connection as nats-py hands its own. nats-py's ``publish`` checks each header key with a
regular expression and builds the header a byte at a time: about 3 us an append, 1 us a reply.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Mapping

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api

NO_RESPONDERS = "503"
"""The status of the reply NATS itself sends when no one listens on a request's subject."""

_SPACE = re.compile(r"[ \t\r\n]")
"""What a subject may not hold (nats-py's test): it would end or split the command."""
_HEADER_KEY = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_NEWLINES = str.maketrans({"\r": " ", "\n": " "})


def command(
    subject: str, data: bytes, reply: str = "", headers: Mapping[str, str] | None = None
) -> bytes:
    """The PUB (or, with headers, HPUB) command that publishes ``data``, as nats-py writes it.
    Raises nats-py's errors for a subject or a header key it would refuse."""
    if not subject or _SPACE.search(subject) or _SPACE.search(reply):
        raise nats.errors.BadSubjectError
    if not headers:
        return b"PUB %b %b %d\r\n%b\r\n" % (subject.encode(), reply.encode(), len(data), data)
    lines = []
    for key, value in headers.items():
        name = key.strip()
        if not name:
            continue
        if not _HEADER_KEY.fullmatch(name):
            raise nats.errors.BadHeaderError(name)
        lines.append(b"%b: %b\r\n" % (name.encode(), value.strip().translate(_NEWLINES).encode()))
    header = b"NATS/1.0\r\n%b\r\n" % b"".join(lines)
    size = len(header) + len(data)
    return b"HPUB %b %b %d %d\r\n%b%b\r\n" % (
        subject.encode(),
        reply.encode(),
        len(header),
        size,
        header,
        data,
    )


async def publish(
    client: Client,
    subject: str,
    data: bytes,
    reply: str = "",
    headers: Mapping[str, str] | None = None,
) -> None:
    """What ``client.publish`` does, with the command built by :func:`command`."""
    await send(client, command(subject, data, reply, headers), len(data))


async def send(client: Client, built: bytes, payload_size: int = 0) -> None:
    """Hand built commands to the connection as nats-py's ``publish`` hands its own: refused
    on a closed or draining connection, buffered while it reconnects (up to nats-py's pending
    limit), written by the connection's flusher, which is woken unless it is already."""
    if client.is_closed:
        raise nats.errors.ConnectionClosedError
    if client.is_draining_pubs:
        raise nats.errors.ConnectionDrainingError
    if payload_size > client.max_payload:
        raise nats.errors.MaxPayloadError
    if not client.is_connected:
        limit = client._max_pending_size
        if limit <= 0 or len(built) + client.pending_data_size > limit:
            raise nats.errors.OutboundBufferLimitError
    await client._send_command(built)
    flushing = client._flush_queue
    if flushing is not None and flushing.empty():
        await client._flush_pending()


def _expire(reply: asyncio.Future[Msg]) -> None:
    if not reply.done():
        reply.set_exception(nats.errors.TimeoutError())


class Replies:
    """One connection's requests in flight, a future each, answered by one wildcard inbox
    subscription (made at the first request)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._prefix = ""
        self._opening = asyncio.Lock()
        self._waiting: dict[str, asyncio.Future[Msg]] = {}
        self._tokens = itertools.count()

    async def request(
        self, subject: str, data: bytes, *, timeout_s: float, headers: dict[str, str] | None = None
    ) -> Msg:
        """Publish ``data`` with a reply subject of this connection's; the reply."""
        prefix = self._prefix or await self._subscribe()
        token = str(next(self._tokens))
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[Msg] = loop.create_future()
        self._waiting[token] = reply
        expiry = loop.call_later(timeout_s, _expire, reply)
        try:
            await publish(self._client, subject, data, prefix + token, headers)
            message = await reply
        finally:
            expiry.cancel()
            del self._waiting[token]
        if message.headers and message.headers.get(api.Header.STATUS) == NO_RESPONDERS:
            raise nats.errors.NoRespondersError
        return message

    async def _subscribe(self) -> str:
        async with self._opening:
            if not self._prefix:
                prefix = f"{self._client.new_inbox()}."
                await self._client.subscribe(f"{prefix}*", cb=self._receive)
                self._prefix = prefix
        return self._prefix

    async def _receive(self, message: Msg) -> None:
        reply = self._waiting.get(message.subject[len(self._prefix) :])
        if reply is not None and not reply.done():
            reply.set_result(message)
