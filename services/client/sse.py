"""Reading a ``text/event-stream`` (the HTML Living Standard's server-sent events).

Lines come in already split (httpx splits on CR, LF and CRLF, as the standard asks). A blank line
ends a message; ``event:``, ``id:``, ``data:`` and ``retry:`` set its fields, several ``data:``
lines join with newlines, and a line starting with a colon is a comment (servers send them as
keep-alives).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import msgspec


class ServerSentEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One message of the stream; a keep-alive comment has ``comment`` set and nothing else."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    """The last event id the stream has set, which a reconnect sends as ``Last-Event-ID``."""
    retry: int | None = None
    comment: str | None = None

    @property
    def is_comment(self) -> bool:
        return self.comment is not None

    def json(self) -> Any:
        """The data, decoded as JSON."""
        return msgspec.json.decode(self.data)


async def parse_server_sent_events(
    lines: AsyncIterable[str], *, comments: bool = False
) -> AsyncIterator[ServerSentEvent]:
    """The messages of a stream of lines; comments too when ``comments`` is true."""
    event_type = ""
    data: list[str] = []
    last_id: str | None = None
    retry: int | None = None
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield ServerSentEvent(
                    event=event_type or "message", data="\n".join(data), id=last_id, retry=retry
                )
            event_type, data, retry = "", [], None
            continue
        if line.startswith(":"):
            if comments:
                yield ServerSentEvent(comment=line[1:].removeprefix(" "), id=last_id)
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event_type = value
        elif name == "data":
            data.append(value)
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value.isdigit():
            retry = int(value)
