"""Following a game's server-sent events in the background, reconnecting where it left off."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Self

import httpx

from services.client import ApiError, ServerSentEvent, SpadesClient

RECONNECT_PAUSE_S = 0.5
MAX_RECONNECT_PAUSE_S = 5.0


class GameFollower:
    """Reads ``GET /v1/games/{id}/events/stream`` into a queue while the caller does other
    things (asks a player, posts an action). A dropped connection is resumed with
    ``Last-Event-ID``, and so is a 503; any other error answer (an unknown game, a bad token)
    ends it and is raised by :meth:`next`.
    """

    def __init__(self, client: SpadesClient, game_id: str, token: str | None = None) -> None:
        self._client = client
        self._game_id = game_id
        self._token = token
        self._queue: asyncio.Queue[ServerSentEvent | BaseException] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.last_event_id: str | None = None

    async def __aenter__(self) -> Self:
        self._task = asyncio.create_task(self._read(), name=f"follow {self._game_id}")
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def pending(self) -> int:
        """Messages received and not yet taken."""
        return self._queue.qsize()

    async def next(self) -> ServerSentEvent:
        """The next message of the stream (waiting for it)."""
        item = await self._queue.get()
        if isinstance(item, BaseException):
            raise item
        return item

    async def _read(self) -> None:
        pause = RECONNECT_PAUSE_S
        while True:
            try:
                async for message in self._client.stream(
                    self._game_id, self._token, last_event_id=self.last_event_id
                ):
                    if message.id is not None:
                        self.last_event_id = message.id
                    self._queue.put_nowait(message)
                    pause = RECONNECT_PAUSE_S
            except ApiError as error:
                if error.status != 503:  # an unknown game, a bad token: no use coming back
                    self._queue.put_nowait(error)
                    return
            except httpx.TransportError:
                pass
            # The server closed the stream or the connection dropped: come back after a pause
            # that grows while the server stays away.
            await asyncio.sleep(pause)
            pause = min(MAX_RECONNECT_PAUSE_S, pause * 2)
