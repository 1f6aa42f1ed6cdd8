"""Requests over NATS whose replies all come to one inbox subscription of the connection.

nats-py's ``request`` (and ``js.publish``, which is one) draws a random token per request,
hangs a callback on its future and waits with ``wait_for``; on the command path (the engine's
appends, the commands the gateway and the benchmarks send) that was a good part of a request's
CPU. Here a request is a counter token under the connection's own inbox prefix, a future and a
timer: ``spades bench commands`` measures it. The outcomes are nats-py's: the reply,
``nats.errors.NoRespondersError`` when nothing listens on the subject, or
``nats.errors.TimeoutError``.
"""

from __future__ import annotations

import asyncio
import itertools

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api

NO_RESPONDERS = "503"
"""The status of the reply NATS itself sends when no one listens on a request's subject."""


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
            await self._client.publish(subject, data, reply=prefix + token, headers=headers)
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
