"""HTTP/1.1 by hand, for the attacks no client library makes: heads that never end, heads sent a
line at a time, more connections than a caller should hold."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

HEAD = b"GET /healthz HTTP/1.1\r\nHost: spades\r\n"
LINE = b"X-A: " + b"a" * 1018 + b"\r\n"
"""One header line of 1 KiB."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What the server said before it closed (``status`` 0: it closed saying nothing)."""

    status: int
    body: bytes
    closed: bool
    """Whether the server closed the connection."""
    headers: dict[str, str]
    """The answer's header fields, names in lower case."""

    def problem(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.body)
        return document


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port


async def read_answer(
    reader: asyncio.StreamReader, within_s: float, arrived: asyncio.Event | None = None
) -> Answer:
    """The answer on a connection, read until the server closes it (or ``within_s`` passes:
    then ``closed`` is False); ``arrived`` is set at its first byte."""
    data = b""
    deadline = time.monotonic() + within_s
    try:
        while chunk := await asyncio.wait_for(reader.read(65536), deadline - time.monotonic()):
            data += chunk
            if arrived is not None:
                arrived.set()
    except TimeoutError:
        return _parse(data, closed=False)
    except ConnectionError:
        pass
    return _parse(data, closed=True)


def _parse(data: bytes, *, closed: bool) -> Answer:
    if not data:
        return Answer(0, b"", closed, {})
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    headers = {
        name.strip().lower(): value.strip() for name, _, value in (f.partition(":") for f in fields)
    }
    return Answer(int(status_line.split(" ", 2)[1]), body, closed, headers)


async def endless_head(url: str, most_bytes: int) -> tuple[int, Answer]:
    """Send header lines without end (up to ``most_bytes``) until the server answers; the
    bytes sent by then, and its answer."""
    reader, writer = await asyncio.open_connection(*address(url))
    arrived = asyncio.Event()
    heard = asyncio.create_task(read_answer(reader, 30, arrived))
    sent = 0
    try:
        writer.write(HEAD)
        while sent < most_bytes and not heard.done() and not arrived.is_set():
            writer.write(LINE * 16)
            await writer.drain()
            await asyncio.sleep(0)  # the reader's turn
            sent += len(LINE) * 16
    except ConnectionError:
        pass
    answer = await heard
    writer.close()
    return sent, answer


async def slow_head(url: str, every_s: float, lines: int) -> tuple[float, Answer]:
    """Send a head one short line every ``every_s`` (``lines`` of them, never the blank line
    that ends it); the seconds until the server closed (or the last line was sent), and what
    it said."""
    reader, writer = await asyncio.open_connection(*address(url))
    start = time.monotonic()
    heard = asyncio.create_task(read_answer(reader, every_s * (lines + 2)))
    try:
        writer.write(HEAD)
        await writer.drain()
        for _ in range(lines):
            done, _ = await asyncio.wait([heard], timeout=every_s)
            if done:
                break
            writer.write(b"X-A: a\r\n")
            await writer.drain()
    except ConnectionError:
        pass
    answer = await heard
    writer.close()
    return time.monotonic() - start, answer
