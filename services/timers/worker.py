"""Timers: learn every running clock from the game stream, fire each timeout once, when due.

A :class:`Timers` follows ``SPADES_GAMES`` from its first message with an ordered consumer and
folds each clocked game as the engine does (:func:`domain.timing.apply_commit`: the events, then
the clocks run to the commit's time), so a deadline always derives from the commit that gave the
turn, never from when this process heard of it. It holds running clocked games only: a commit
of any other game is skipped by a look at its bytes, undecoded, unless it may start a game
(only a game's first commit holds a ``game_created`` event), and a finished game is forgotten.
So what it holds stays as small as the games on the clock, however many games come and go.

The next deadlines wait in a heap (one entry per seat on the clock and game version), so the
worker sleeps until the earliest one instead of looking at every game. When it is due the
worker sends the engine a :class:`~contracts.wire.TimeOutRequest` carrying the version the
deadline was learnt at, under a command id made of the seat and that version: a second timer
(several may run) sending the same timeout gets the first answer, a stale one is refused
``conflict`` (the game has moved on), and so one timeout makes one action. Entries whose game
has since moved on are dropped as they reach the top.

After a restart or a fail-over the worker reads the stream again and, once caught up (nothing
pending), fires every overdue timeout at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext, api

from contracts.wire import GAME_SUBJECTS, GAMES_STREAM, TimeOutRequest, commit_seconds, read_commit
from domain.events import TimedOut
from domain.game import evolve
from domain.state import Game
from domain.timing import apply_commit, deadlines
from services.runtime.engine_client import EngineClient, EngineUnavailable
from services.runtime.tail import follow

log = structlog.get_logger("spades.timers")

SUBJECT_PREFIX = GAME_SUBJECTS[:-1]
"""``spades.games.``: what precedes a game's id in its subject."""
IN_FLIGHT = 256
"""Timeouts sent at once (an overdue backlog after a restart goes out this many at a time)."""
RETRY_S = 0.05
"""How soon a timeout the engine found early (its clock behind this one's) is sent again."""
MAX_RETRY_S = 1.0
UNAVAILABLE_RETRY_S = 1.0
STREAM_RETRY_S = 0.5
LATENESS_KEPT = 100_000
_CREATED = b'"game_created"'
"""In the bytes of every game's first commit (and of few others: those are decoded to tell)."""

Entry = tuple[float, str, int, int]
"""A deadline in the heap: when, the game, the seat, the game's version it was learnt at."""


def timeout_command_id(seat: int, version: int) -> str:
    """The same for every timer that fires this timeout: the engine answers it once."""
    return f"timeout-{seat}-v{version}"


class Timers:
    """One timer worker's clocks and heap; :meth:`run` follows and fires until cancelled."""

    def __init__(
        self,
        client: Client,
        *,
        now: Callable[[], float] = time.time,
        engine_timeout_s: float = 5.0,
    ) -> None:
        self._client = client
        self._js: JetStreamContext = client.jetstream()
        self._engine = EngineClient(client, engine_timeout_s)
        self._now = now
        self._games: dict[str, Game] = {}
        """Running clocked games (not those whose history this worker cannot read)."""
        self._heap: list[Entry] = []
        self._wake = asyncio.Event()
        self._sent: set[tuple[str, int, int]] = set()
        self._slots = asyncio.Semaphore(IN_FLIGHT)
        self._tasks: set[asyncio.Task[None]] = set()
        self._subscription: Subscription | None = None
        self.caught_up = asyncio.Event()
        self.activity = asyncio.Event()
        """Set whenever a timeout is answered or seen in the stream (for whoever waits on it)."""
        self.fired = 0
        """Timeouts this worker sent that the engine accepted (or had accepted: a twin's)."""
        self.lost = 0
        """Timeouts refused because the game had moved on (another timer, or the player)."""
        self.observed = 0
        """Timeouts seen in the stream, whoever fired them."""
        self.lateness: deque[float] = deque(maxlen=LATENESS_KEPT)
        """Seconds past the deadline at which each timeout seen in the stream was decided."""
        self.sent_late: deque[float] = deque(maxlen=LATENESS_KEPT)
        """Seconds past the deadline at which this worker sent each timeout (its own part)."""

    # ----------------------------------------------------------------------- lifecycle

    async def run(self) -> None:
        await self.start()
        try:
            await self.fire_due()
        finally:
            await self.stop()

    async def start(self) -> None:
        """Follow the game stream from its first message (once an engine has made it)."""
        while True:
            try:
                info = await self._js.stream_info(GAMES_STREAM)
                break
            except nats.js.errors.NotFoundError:
                log.info("waiting for the game stream (an engine makes it)")
                await asyncio.sleep(STREAM_RETRY_S)
        if info.state.messages == 0:
            self.caught_up.set()
        self._subscription = await follow(
            self._js, GAME_SUBJECTS, GAMES_STREAM, self._receive, api.DeliverPolicy.ALL
        )

    async def stop(self) -> None:
        if self._subscription is not None:
            with contextlib.suppress(nats.errors.Error):
                await self._subscription.unsubscribe()
            self._subscription = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def until(self, done: Callable[[Timers], bool]) -> None:
        """Return once ``done(self)`` holds, checked after each answer or timeout seen."""
        while not done(self):
            self.activity.clear()
            await self.activity.wait()

    @property
    def clocks(self) -> int:
        """Running clocked games held."""
        return len(self._games)

    # ----------------------------------------------------------------------- learning

    async def _receive(self, msg: Msg) -> None:
        try:
            self.learn(msg.subject[len(SUBJECT_PREFIX) :], msg.data)
        finally:
            if not self.caught_up.is_set() and msg.metadata.num_pending == 0:
                self.caught_up.set()
                log.info("timers caught up", clocks=len(self._games), due=len(self._heap))

    def learn(self, game_id: str, data: bytes) -> None:
        """Take one commit of a game: fold it, and push the deadlines it gives."""
        before = self._games.get(game_id)
        if before is None and _CREATED not in data:
            return  # neither a clocked game running nor the start of one
        try:
            commit = read_commit(data)
            if not commit.events or (before is None and commit.first_version != 1):
                return  # a refusal, or a game this worker does not hold
            at = commit_seconds(commit.time)
            first = commit.events[0]
            if before is not None and isinstance(first, TimedOut):
                self.observed += 1
                self.activity.set()
                due = before.timing.deadline(first.seat) if before.timing else None
                if due is not None:
                    self.lateness.append(at - due)
            state = apply_commit(before, commit.events, at, evolve)
        except Exception as error:  # a history it cannot fold is not this worker's to judge
            log.warning("game not timed: unreadable history", game_id=game_id, error=repr(error))
            self._games.pop(game_id, None)
            return
        if state is None or state.timing is None or state.status == "finished":
            self._games.pop(game_id, None)
            return
        self._games[game_id] = state
        for seat, deadline in deadlines(state).items():
            self._push((deadline, game_id, seat, state.version))

    def _push(self, entry: Entry) -> None:
        if not self._heap or entry < self._heap[0]:
            self._wake.set()
        heapq.heappush(self._heap, entry)

    def _current(self, game_id: str, seat: int, version: int) -> bool:
        game = self._games.get(game_id)
        return game is not None and game.version == version and seat in deadlines(game)

    # ----------------------------------------------------------------------- firing

    async def fire_due(self) -> None:
        """Sleep until the earliest deadline, fire what is due, forever."""
        await self.caught_up.wait()
        heap = self._heap
        while True:
            self._wake.clear()
            now = self._now()
            while heap:
                deadline, game_id, seat, version = heap[0]
                key = (game_id, seat, version)
                if key in self._sent or not self._current(game_id, seat, version):
                    heapq.heappop(heap)
                    continue
                if deadline > now:
                    break
                heapq.heappop(heap)
                self._sent.add(key)
                await self._slots.acquire()
                task = asyncio.create_task(self._fire(game_id, seat, version, deadline))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            if not heap:
                await self._wake.wait()
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, heap[0][0] - self._now()))

    async def _fire(self, game_id: str, seat: int, version: int, deadline: float) -> None:
        try:
            await self._send(game_id, seat, version, deadline)
        except Exception as error:
            log.warning("timeout not sent", game_id=game_id, seat=seat, error=repr(error))
        finally:
            self._sent.discard((game_id, seat, version))
            self._slots.release()
            self.activity.set()

    async def _send(self, game_id: str, seat: int, version: int, deadline: float) -> None:
        """Send the timeout until the engine answers it, or the game moves on without it (a
        timeout is never dropped while its turn stands: the table would wait for ever)."""
        request = TimeOutRequest(seat=seat, expected_version=version)
        command_id = timeout_command_id(seat, version)
        self.sent_late.append(self._now() - deadline)
        bound = log.bind(game_id=game_id, seat=seat, version=version)
        early = RETRY_S
        while True:
            try:
                reply = await self._engine.send(game_id, request, command_id)
            except EngineUnavailable as error:
                if not self._current(game_id, seat, version):
                    return
                bound.warning("no engine answered the timeout; retrying", error=str(error))
                await asyncio.sleep(UNAVAILABLE_RETRY_S)
                continue
            if reply.ok:
                self.fired += 1
                bound.debug("timeout fired", late_s=round(self._now() - deadline, 4))
                return
            if reply.code in ("conflict", "game_over", "not_your_turn"):
                self.lost += 1  # the game moved on first: another timer, or the player
                return
            if not self._current(game_id, seat, version):
                return  # moved on meanwhile: its next turn has a deadline of its own
            if reply.code == "wrong_phase":  # the engine's clock is behind this one's
                bound.info("the engine finds the timeout early; retrying", detail=reply.detail)
                await asyncio.sleep(early)
                early = min(early * 2, MAX_RETRY_S)
                continue
            if reply.code == "unavailable":
                await asyncio.sleep(UNAVAILABLE_RETRY_S)
                continue
            bound.warning("timeout refused", code=reply.code, detail=reply.detail)
            return


def stats(timers: Timers) -> dict[str, Any]:
    """What a worker has done, for its periodic log line: the clocks it holds, timeouts fired
    and lost, and how late (ms past the deadline) it sent them and the engine decided them, over
    the last :data:`LATENESS_KEPT`."""
    return {
        "clocks": timers.clocks,
        "fired": timers.fired,
        "lost": timers.lost,
        "observed": timers.observed,
        "sent_late_p50_ms": _percentile_ms(timers.sent_late, 0.5),
        "sent_late_p99_ms": _percentile_ms(timers.sent_late, 0.99),
        "decided_late_p50_ms": _percentile_ms(timers.lateness, 0.5),
        "decided_late_p99_ms": _percentile_ms(timers.lateness, 0.99),
    }


def _percentile_ms(values: deque[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000, 1)
