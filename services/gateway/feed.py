"""One game as server-sent events: a ``state`` event, then every event as it is committed.

The frames, each with an ``id:`` (a version of the game), so that ``Last-Event-ID`` always
names the last version the client has:

- ``state``: the table as the reader sees it; its id is the version it shows.
- one named by each event's type (``bid_placed``, ...): the event as the reader may see it; its
  id is the event's version.
- ``clock`` (a game with a clock, after each commit): the clock as the commit left it; its id
  is the commit's last version, the id of the event frame just before it, so a client that
  resumes after it misses nothing and gets nothing twice.
- ``receipt`` (where a projection worker keeps the audit log), after a hand ends while the
  stream is open: the hand's receipt (:func:`services.store.receipts.hand_receipt`: the signed
  checkpoint, the hand's inclusion proof, the deal's commitment), once the log holds the hand,
  a moment behind the game (waited for up to ``SPADES_STREAM_RECEIPT_WAIT_S``; past that, the hand's
  record carries it). Its id is the last version sent before it, like ``clock``'s, so resuming
  after it misses no event; a client that went away before it reads the hand's record.
- ``end``, last: ``{"reason", "version"}``, why the stream ends (``game_over``,
  ``token_expired``, ``token_revoked``); its id is the last version sent. The server closes the
  stream after it: a client should not reconnect (one that does, after a finished game's last
  version, is answered 204 No Content, which stops an ``EventSource``).

A client that reconnects with ``Last-Event-ID`` gets the events after it and no ``state``; an id
the game has not reached (or not a version at all) gets a fresh ``state``. The events come from
an ordered reader of the game's subject (:mod:`~services.runtime.ordered`), started right after
the last commit already rendered: nothing is missed or sent twice between the state and the
first event. A client that resumes behind the game is sent what it missed from the game's
history first (read as every history is, from the archive too). Idle streams get a keep-alive
comment.

A stream opened with a seat token lasts as long as the token: it ends when the token expires
(at that second), right after the event that issues the seat a new token (which revokes this
one), and within :data:`REVOCATION_CHECK_S` of the gateway's copy of the game saying the token
is no longer the seat's.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Literal

import anyio
import msgspec
import nats.errors
from fastapi.sse import format_sse_event
from nats.aio.client import Client
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from contracts.audit_log import Receipt
from contracts.wire import commit_seconds, read_commit
from domain.events import AnyEvent, GameEnded, HandScored, SeatTokenReissued
from domain.game import evolve
from domain.state import Game
from domain.timing import apply_commit
from domain.views import clock_view
from services.gateway.auth import SeatGrant
from services.gateway.views import Reader, event_json, state_for, versioned
from services.runtime.game_stream import GameStream
from services.runtime.logging import get_logger
from services.runtime.ordered import OrderedReader
from services.store.receipts import ready

KEEP_ALIVE = format_sse_event(comment="keep-alive")
_POSITION = re.compile(r"^[0-9]{1,18}$")

log = get_logger("spades.gateway.feed")


class EventStream(StreamingResponse):
    """``text/event-stream``, framed here (not FastAPI's generator-endpoint SSE, whose
    keep-alive interval is fixed), unbuffered by proxies. ``closed`` runs once the response
    is over, however it ends (the client gone before the first byte included)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        content: AsyncIterator[bytes],
        status_code: int = 200,
        closed: Callable[[], None] | None = None,
    ) -> None:
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        super().__init__(content, status_code, headers)
        self.closed = closed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self.closed is not None:
                self.closed()


@dataclass(frozen=True, slots=True)
class FeedStart:
    """Where a stream begins: the game as last read, and what the client already has."""

    game: Game
    sequence: int
    """The stream sequence of the game's last commit."""
    resume_after: int | None
    """The version the client has seen (from ``Last-Event-ID``), or None for a fresh state."""
    grant: SeatGrant | None = None
    """The seat token the stream was opened with, which it lasts no longer than."""
    owner: bool = False
    """Whether the caller is the game's platform, which alone sees the game's platform."""

    def revokes(self, event: object) -> bool:
        """Whether ``event`` issues this stream's seat a newer token than its own."""
        grant = self.grant
        return (
            grant is not None
            and isinstance(event, SeatTokenReissued)
            and event.seat == grant.seat
            and event.issue > grant.issue
        )

    def expired(self) -> bool:
        return self.grant is not None and self.grant.expired(time.time())

    def lasts_s(self) -> float:
        """Seconds until the stream's token expires (infinite without one)."""
        return float("inf") if self.grant is None else self.grant.expires - time.time()


def resume_point(last_event_id: str | None, version: int) -> int | None:
    """The version to resume after, or None when ``Last-Event-ID`` is absent or unusable."""
    if last_event_id is None or not _POSITION.match(last_event_id.strip()):
        return None
    position = int(last_event_id)
    return position if position <= version else None


REVOCATION_CHECK_S = 2.0
"""How often a quiet seat's stream asks whether its token is still the seat's (a revocation
the stream missed: the game reset under it, a history read back whole)."""


@contextlib.asynccontextmanager
async def _following(
    connection: Client, stream: GameStream, game_id: str, from_sequence: int
) -> AsyncIterator[OrderedReader]:
    # Each pull waits at most a wait of the loop below: a lost node (the consumer has one
    # replica) is found at the next pull, and the consumer made again on another node.
    part = stream.part(game_id)
    reader = OrderedReader(
        connection, part.name, part.subject(game_id), after=from_sequence - 1, role="feed"
    )
    try:
        yield reader
    finally:
        with anyio.CancelScope(shield=True):
            await reader.close()


def _state_frame(game: Game, reader: Reader) -> bytes:
    data = msgspec.json.encode(state_for(game, reader)).decode()
    return format_sse_event(data_str=data, event="state", id=str(game.version))


def _event_frame(version: int, event: AnyEvent, reader: Reader, owner: bool) -> bytes:
    data = event_json(event, reader, owner).decode()
    return format_sse_event(data_str=data, event=str(event.__struct_config__.tag), id=str(version))


def _clock_frame(game: Game, version: int) -> bytes:
    """The clock after a commit (each seat's bank, away, the deadline of the seat on turn):
    public, with the id of the commit's last event."""
    data = msgspec.json.encode(clock_view(game)).decode()
    return format_sse_event(data_str=data, event="clock", id=str(version))


EndReason = Literal["game_over", "token_expired", "token_revoked"]


class StreamEnd(msgspec.Struct, frozen=True, kw_only=True):
    """The ``end`` frame's data: why the stream ends, after which version."""

    reason: Annotated[
        EndReason,
        msgspec.Meta(
            description="Why the stream ends: the game is over, or the seat's token expired "
            "or was revoked by a new one."
        ),
    ]
    version: Annotated[int, msgspec.Meta(description="The last version sent.")]


RECEIPT_WAIT_S = 10.0
"""How long after a hand's end a stream looks for the hand's receipt in the audit log."""
RECEIPT_POLL_S = 0.1
"""How often it looks meanwhile."""

ReceiptOf = Callable[[str, int], Awaitable[Receipt | None]]
"""A finished hand's receipt by game and hand, None while the log does not hold it."""


class PendingReceipts:
    """The hands that ended while the stream was open, whose receipts are still to come."""

    def __init__(
        self,
        game_id: str,
        receipt_of: ReceiptOf | None,
        witnessed: bool = False,
        wait_s: float = RECEIPT_WAIT_S,
    ):
        self.game_id = game_id
        self.receipt_of = receipt_of
        self.give_up_s = wait_s
        self.witnessed = witnessed
        """The log has witnesses: a receipt is waited for until one has cosigned it too."""
        self.due: dict[int, float] = {}

    def expect(self, event: AnyEvent) -> None:
        if self.receipt_of is not None and isinstance(event, HandScored):
            self.due[event.hand] = time.monotonic() + self.give_up_s

    def wait_s(self, wait_s: float) -> float:
        """``wait_s``, or less while a receipt is due (to look again soon)."""
        return min(wait_s, RECEIPT_POLL_S) if self.due else wait_s

    async def frames(self, version: int) -> AsyncIterator[bytes]:
        """A ``receipt`` frame for each due hand the log holds now (where it has witnesses,
        once one has cosigned it, or past the wait without); a hand past its wait that the log
        does not hold is given up (its record carries the receipt)."""
        if self.receipt_of is None:
            return
        for hand, until in sorted(self.due.items()):
            found = await self.receipt_of(self.game_id, hand)
            late = time.monotonic() > until
            if ready(found, self.witnessed) or (found is not None and late):
                del self.due[hand]
                data = msgspec.json.encode(found).decode()
                yield format_sse_event(data_str=data, event="receipt", id=str(version))
            elif late:
                del self.due[hand]

    async def last(self, version: int) -> AsyncIterator[bytes]:
        """Every due receipt, waiting for each up to its time (the stream is about to end)."""
        while self.due:
            async for frame in self.frames(version):
                yield frame
            if self.due:
                await anyio.sleep(RECEIPT_POLL_S)


def _end_frame(reason: EndReason, version: int) -> bytes:
    data = msgspec.json.encode(StreamEnd(reason=reason, version=version)).decode()
    return format_sse_event(data_str=data, event="end", id=str(version))


def finished_at(game: Game, resume_after: int | None) -> bool:
    """Whether a stream resuming after ``resume_after`` has nothing left to get: the game is
    over and the client has its last version."""
    return game.status == "finished" and resume_after == game.version


async def frames(
    connection: Client,
    stream: GameStream,
    start: FeedStart,
    reader: Reader,
    keep_alive_s: float,
    revoked: Callable[[], bool] | None = None,
    receipt_of: ReceiptOf | None = None,
    witnessed: bool = False,
    receipt_wait_s: float = RECEIPT_WAIT_S,
) -> AsyncIterator[bytes]:
    """The stream's bytes, until the client goes or NATS does, or the stream's token expires
    (at its expiry) or is revoked (at the event that revokes it, or within
    :data:`REVOCATION_CHECK_S` of ``revoked`` saying so). With ``receipt_of``, the receipt of
    each hand that ends while it is open."""
    game = start.game
    pending = PendingReceipts(game.game_id, receipt_of, witnessed, receipt_wait_s)
    seen = start.resume_after
    if seen is None:
        yield _state_frame(game, reader)
        seen = game.version
    try:
        if seen < game.version:  # what the client missed, from the history (archived or not)
            for stored in await stream.read(game.game_id, until=start.sequence):
                for version, event in versioned(stored.commit):
                    if version > seen:
                        yield _event_frame(version, event, reader, start.owner)
                        seen = version
                        if start.revokes(event):
                            yield _end_frame("token_revoked", seen)
                            return
        if game.status == "finished":
            yield _end_frame("game_over", seen)
            return
        async with _following(connection, stream, game.game_id, start.sequence + 1) as following:
            quiet_since = time.monotonic()
            while True:
                if start.expired():
                    yield _end_frame("token_expired", seen)
                    return
                keep_alive_in = quiet_since + keep_alive_s - time.monotonic()
                if keep_alive_in <= 0:
                    yield KEEP_ALIVE
                    quiet_since = time.monotonic()
                    continue
                wait_s = pending.wait_s(min(keep_alive_in, start.lasts_s(), REVOCATION_CHECK_S))
                try:
                    message = await following.next_msg(max(wait_s, 0.01))
                except nats.errors.TimeoutError:
                    if revoked is not None and revoked():
                        yield _end_frame("token_revoked", seen)
                        return
                    async for frame in pending.frames(seen):
                        yield frame
                        quiet_since = time.monotonic()
                    continue
                quiet_since = time.monotonic()
                commit = read_commit(message.data)
                over = False
                for version, event in versioned(commit):
                    if version > seen:
                        yield _event_frame(version, event, reader, start.owner)
                        seen = version
                        over = over or isinstance(event, GameEnded)
                        pending.expect(event)
                        if start.revokes(event):
                            yield _end_frame("token_revoked", seen)
                            return
                if game.timing is not None and commit.events and commit.version > game.version:
                    at = commit_seconds(commit.time)
                    game = apply_commit(game, commit.events, at, evolve) or game
                    yield _clock_frame(game, seen)
                if over:
                    async for frame in pending.last(seen):
                        yield frame
                    yield _end_frame("game_over", seen)
                    return
                async for frame in pending.frames(seen):
                    yield frame
    except nats.errors.Error as error:
        log.warning("event stream ends: nats", game_id=game.game_id, error=type(error).__name__)
