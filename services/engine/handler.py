"""What every command handler does, for games and leagues alike: read, decide, then append.

:meth:`CommandHandler.answer` reads a request message (refusing ``malformed`` what is too long,
unreadable or names a bad id), runs it, and turns an unreachable event store into
``unavailable``: every outcome is a reply. :meth:`CommandHandler.execute` answers a command id
seen before with its first answer (or ``idempotency_key_reused`` when it comes with another
request), decides, and appends the outcome as one commit with optimistic concurrency: the events
of an accepted command, or the refusal of a refused one, so that a retry gets the first answer
however late it comes. A conflict means another process appended first: catch up from the stream
and decide again. An answer that appends nothing (a refusal that is not recorded, a command that
changes nothing) is given only on a state read from the stream for that command, since no append
checks it. A command is never committed twice (its id is checked against the history and
deduplicated by JetStream) and versions never have a gap (each commit starts from the version
the last one reached). Subclasses say what their requests look like, how to decide, how to write
a commit and how to reply.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import secrets
import time
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

import msgspec
import nats.errors
import nats.js.errors

from contracts.wire import COMMAND_ID, Refusal
from domain.errors import RuleViolation
from services.engine.metrics import TALLY, outcome_of
from services.runtime.aggregate_cache import AggregateCache, Loaded
from services.runtime.event_store import AppendConflict, DuplicateCommand, EventStore, Stored
from services.runtime.logging import get_logger

SEED_BYTES = 32
"""A fresh secret seed's length: 256 bits, as the deal's HMAC key."""

Lane = Literal["commands", "timeouts"]
"""The kind of subject a request came on (:meth:`CommandHandler.misrouted`): the command
subjects, which the gateway sends to, or the timeout subjects, which the timers send to."""

MAX_ATTEMPTS = 16
"""Conflicts in a row before a command is answered ``unavailable`` (the client retries)."""

log = get_logger("spades.engine")
_level = logging.getLogger("spades.engine")
"""The stdlib logger behind ``log``: whether a line at a level would be written at all (a
structlog call costs tens of microseconds even when its level drops it)."""


class Addressed(Protocol):
    """A command request: its id makes a retry safe; its body is what it asks."""

    @property
    def command_id(self) -> str: ...
    @property
    def body(self) -> Any: ...


class Answer(Protocol):
    """A command reply."""

    @property
    def ok(self) -> bool: ...
    @property
    def version(self) -> int: ...
    @property
    def code(self) -> str | None: ...
    @property
    def events(self) -> list[Any]: ...


Request = TypeVar("Request", bound=Addressed)
Reply = TypeVar("Reply", bound=Answer)
C = TypeVar("C")
Held = TypeVar("Held", bound="Loaded[Any, Any]")

_canonical = msgspec.json.Encoder(order="sorted")


def body_digest(body: Any) -> str:
    """SHA-256 of what a command asks, however its JSON was spelled (key order, spacing)."""
    return hashlib.sha256(_canonical.encode(body)).hexdigest()


_MILLISECONDS = tuple(f"{n:03d}Z" for n in range(1000))


class _Second:
    """The second :func:`commit_time_at` last formatted, and its text up to the milliseconds
    (one tuple: replaced whole, never read half new)."""

    formatted: tuple[int, str] = (-1, "")


def commit_time() -> str:
    """Now, as a commit records it (UTC, ISO 8601, milliseconds: ``2026-12-01T12:00:00.123Z``)."""
    return commit_time_at(time.time_ns())


def commit_time_at(nanoseconds: int) -> str:
    """A time since the epoch, in nanoseconds, as a commit records it. The date and the time to
    the second are formatted once a second (``datetime.now(UTC).isoformat(...)`` every commit
    cost a few microseconds, ``spades bench commands``)."""
    second, part = divmod(nanoseconds, 1_000_000_000)
    at, text = _Second.formatted
    if second != at:
        text = time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(second))
        _Second.formatted = (second, text)
    return text + _MILLISECONDS[part // 1_000_000]


def fresh_seed() -> bytes:
    """A secret seed, drawn for every hand's shuffle and every league's draw: the one source of
    randomness of the decisions (the domain takes it as an input)."""
    return secrets.token_bytes(SEED_BYTES)


class Refused(Exception):
    """A refusal a handler makes itself, not a rule of the game: no such game or league, one
    that exists already, a stale ``expected_version``."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


class CommandHandler(ABC, Generic[Request, Reply, C, Held]):
    """Decides commands against cached aggregates and appends their outcomes."""

    UNRECORDED: ClassVar[frozenset[str]] = frozenset()
    """Refusals with no history to record them in (the aggregate does not exist)."""
    NAME: ClassVar[str] = "aggregate"
    COMMAND: ClassVar[str] = "command"
    """What a request is called in refusals and logs."""
    MAX_BYTES: ClassVar[int]
    KEY: ClassVar[re.Pattern[str]]
    """The aggregate ids a request may name."""
    KEY_RULE: ClassVar[str]
    """What :attr:`KEY` allows, in words."""
    ACCEPTED_LOG_LEVEL: ClassVar[int] = logging.DEBUG
    _encoder: ClassVar[msgspec.json.Encoder] = msgspec.json.Encoder()

    def __init__(self, stream: EventStore[C], cache: AggregateCache[Held]) -> None:
        self._stream = stream
        self._cache = cache
        self.conflicts = 0
        """Appends refused because another commit got there first (each costs a re-read)."""
        self.contested = asyncio.Event()
        """Set at the first conflict: another process appends to these histories too."""

    async def handle(self, data: bytes, lane: Lane | None = None) -> bytes:
        """Answer one request message. Never raises: every outcome is a reply, timed and
        counted by its outcome (:mod:`services.engine.metrics`)."""
        started = time.perf_counter()
        reply = await self.answer(data, lane)
        TALLY.answered(time.perf_counter() - started, outcome_of(reply.ok, reply.code))
        return self._encoder.encode(reply)

    async def answer(self, data: bytes, lane: Lane | None = None) -> Reply:
        """Read, run and answer one request message; one that came on a ``lane`` not its own
        is refused ``unauthorized`` and not run (None: from inside the process, any request)."""
        if len(data) > self.MAX_BYTES:
            return self.refusal(
                "", "malformed", f"a {self.COMMAND} is at most {self.MAX_BYTES} bytes"
            )
        try:
            request = self.read(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            return self.refusal("", "malformed", f"not a {self.COMMAND} request: {error}")
        key = self.key_of(request)
        if not self.KEY.fullmatch(key):
            return self.refusal(request.command_id, "malformed", self.KEY_RULE)
        if not COMMAND_ID.match(request.command_id):
            detail = "a command id is 1 to 128 of A-Z a-z 0-9 _ = -"
            return self.refusal(request.command_id, "malformed", detail)
        misrouted = None if lane is None else self.misrouted(request, lane)
        if misrouted is not None:
            log.info(f"{self.COMMAND} refused: not its subject", lane=lane, detail=misrouted)
            return self.refusal(request.command_id, "unauthorized", misrouted)
        about = {"command_id": request.command_id, **self.log_context(request)}
        try:
            reply = await self.execute(key, request.command_id, request, self.digest(request))
        except (nats.errors.Error, nats.js.errors.Error, TimeoutError, OSError) as error:
            log.warning(
                f"{self.COMMAND} not answered: event store unreachable", **about, error=str(error)
            )
            self._cache.forget(key)
            return self.refusal(request.command_id, "unavailable", "the event store did not answer")
        if reply.code == "rate_limited":  # a flood's refusals would be a flood of lines
            if _level.isEnabledFor(logging.DEBUG):
                log.debug(f"{self.COMMAND} refused", **about, code=reply.code)
        elif not reply.ok:
            log.info(f"{self.COMMAND} refused", **about, code=reply.code)
        elif _level.isEnabledFor(self.ACCEPTED_LOG_LEVEL):  # asked first: a dropped call costs
            log.log(
                self.ACCEPTED_LOG_LEVEL,
                f"{self.COMMAND} accepted",
                **about,
                version=reply.version,
                events=len(reply.events),
            )
        return reply

    async def execute(self, key: str, command_id: str, request: Request, digest: str) -> Reply:
        """Decide and commit one command (or return its first answer)."""
        cold = self._cache.peek(key) is None  # then ``get`` reads its whole history now
        held = await self._cache.get(key)
        if command_id not in held.answered:  # a retry gets its first answer whatever the budget
            over = self.over_budget(held, request)
            if over is not None:
                return self.refusal(command_id, over.code, over.detail)
        async with held.lock:
            return await self._decide_and_append(held, command_id, request, digest, read=cold)

    async def _decide_and_append(
        self, held: Held, command_id: str, request: Request, digest: str, *, read: bool
    ) -> Reply:
        """Decide on the held state until an answer stands, reading the stream in between.

        An append is checked by the stream itself (optimistic concurrency): on a conflict the
        held state is caught up and the command decided again. An answer that appends nothing
        (a refusal that is not recorded, a command that changes nothing) has no such check, and
        the held state may be behind the stream: another engine's commit that this process's
        follower has not delivered yet. So such an answer stands only once the stream has been
        read for this command (``read``: the aggregate was just loaded, or caught up here);
        until then it is read once, and the command decided again only if that brought a
        commit. Refusals are rare: the accepted command pays nothing for this.
        """
        for _ in range(MAX_ATTEMPTS):
            outcome = await self._attempt(held, command_id, request, digest)
            if outcome is not None and (outcome[1] or read):
                return outcome[0]
            sequence = held.sequence
            await self._cache.catch_up(held)
            read = True
            if outcome is not None and held.sequence == sequence:
                return outcome[0]  # nothing new: the answer stands
        return self.refusal(command_id, "unavailable", f"the {self.NAME} is too busy; retry")

    async def _attempt(
        self, held: Held, command_id: str, request: Request, digest: str
    ) -> tuple[Reply, bool] | None:
        """One decision on the held state: its answer and whether the history holds it (it
        was appended, or is this command id's first answer); None when the append met a
        commit of another process."""
        barred = self.barred(held, request)
        if barred is not None:
            return self.refusal(command_id, barred.code, barred.detail), False
        first = await self._first_answer(held, command_id, request, digest)
        if first is not None:
            return first, True
        refusal: Refusal | None = None
        try:
            events = await self.decide(held, request)
        except (RuleViolation, Refused) as refused:
            if refused.code in self.UNRECORDED or not self.records_refusal(request):
                return self.refusal(command_id, refused.code, refused.detail), False
            events, refusal = [], Refusal(refused.code, refused.detail)
        if not events and refusal is None:  # nothing new to record (a second look)
            return self.nothing(command_id, held), False
        commit = self.commit(held, command_id, digest, events, refusal)
        data = self.encode(commit)
        try:
            sequence = await self._stream.append(
                held.key, data, expected=held.sequence, command_id=f"{held.key}:{command_id}"
            )
        except (AppendConflict, DuplicateCommand):
            self.conflicts += 1
            TALLY.conflicted()
            self.contested.set()
            return None
        held.apply(Stored(sequence, data, commit))
        self.appended(held, commit)
        return self.reply(request, commit, sequence), True

    async def _first_answer(
        self, held: Held, command_id: str, request: Request, digest: str
    ) -> Reply | None:
        """The answer this command id already got, if it got one."""
        answered = held.answered.get(command_id)
        if answered is None:
            return None
        if digest and answered.request and answered.request != digest:
            detail = "this command id was first used with another request"
            return self.refusal(command_id, "idempotency_key_reused", detail)
        stored = await self._stream.read_one(held.key, answered.sequence)
        return self.reply(request, stored.commit, answered.sequence)

    def barred(self, held: Held, request: Request) -> Refused | None:
        """A refusal given before this command id's first answer is looked up (never recorded);
        none unless a handler says otherwise."""
        return None

    def over_budget(self, held: Held, request: Request) -> Refused | None:
        """A refusal because the command is past its owner's budget, given before the lock is
        taken and never recorded (a retry is decided afresh); none unless a handler says
        otherwise. Asked once per command, which it may count."""
        return None

    def appended(self, held: Held, commit: C) -> None:
        """Told of each commit this handler appended, once it is in the history; nothing
        unless a handler says otherwise (it must not block: the reply waits for it)."""

    def misrouted(self, request: Request, lane: Lane) -> str | None:
        """Why ``request`` may not come on ``lane`` (None: it may); every request may come on
        the command subjects unless a handler says otherwise."""
        return None if lane == "commands" else f"nothing is answered on the {lane} subjects"

    def records_refusal(self, request: Request) -> bool:
        """Whether a refusal of this request goes into the history (so that a retry gets it);
        every request's does unless a handler says otherwise."""
        return True

    @abstractmethod
    def read(self, data: bytes) -> Request:
        """A request from its message; raises msgspec's decode or validation errors."""

    @abstractmethod
    def key_of(self, request: Request) -> str:
        """The aggregate a request is for."""

    def digest(self, request: Request) -> str:
        """SHA-256 of what the request asks (its body), however its JSON was spelled."""
        return body_digest(request.body)

    def log_context(self, request: Request) -> dict[str, Any]:
        """What every log line about the request carries, besides its command id."""
        return {f"{self.NAME}_id": self.key_of(request)}

    @abstractmethod
    async def decide(self, held: Held, request: Request) -> list[Any]:
        """The events of the command; raises RuleViolation or :class:`Refused`."""

    @abstractmethod
    def commit(
        self, held: Held, command_id: str, digest: str, events: list[Any], refusal: Refusal | None
    ) -> C:
        """The commit that records this outcome, after the held history."""

    @abstractmethod
    def encode(self, commit: C) -> bytes: ...

    @abstractmethod
    def reply(self, request: Request, commit: C, sequence: int) -> Reply:
        """A commit as the sender may see it (its refusal, or its events)."""

    @abstractmethod
    def refusal(self, command_id: str, code: str, detail: str) -> Reply: ...

    @abstractmethod
    def nothing(self, command_id: str, held: Held) -> Reply:
        """The answer to a command that changes nothing."""
