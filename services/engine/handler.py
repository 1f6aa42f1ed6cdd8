"""What every command handler does, for games and leagues alike: decide, then append.

:meth:`CommandHandler.execute` answers a command id seen before with its first answer (or
``idempotency_key_reused`` when it comes with another request), decides, and appends the
outcome as one commit with optimistic concurrency: the events of an accepted command, or the
refusal of a refused one, so that a retry gets the first answer however late it comes. A
conflict means another process appended first: catch up from the stream and decide again. A
command is never committed twice (its id is checked against the history and deduplicated by
JetStream) and versions never have a gap (each commit starts from the version the last one
reached). Subclasses say how to decide, how to write a commit and how to reply.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, TypeVar

import msgspec

from contracts.wire import Refusal
from domain.errors import RuleViolation
from services.runtime.aggregate_cache import AggregateCache, Loaded
from services.runtime.event_store import AppendConflict, DuplicateCommand, EventStream, Stored

MAX_ATTEMPTS = 16
"""Conflicts in a row before a command is answered ``unavailable`` (the client retries)."""

Request = TypeVar("Request")
Reply = TypeVar("Reply")
C = TypeVar("C")
Held = TypeVar("Held", bound="Loaded[Any, Any]")

_canonical = msgspec.json.Encoder(order="sorted")


def body_digest(body: Any) -> str:
    """SHA-256 of what a command asks, however its JSON was spelled (key order, spacing)."""
    return hashlib.sha256(_canonical.encode(body)).hexdigest()


def commit_time() -> str:
    """Now, as a commit records it (UTC, ISO 8601, milliseconds)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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

    def __init__(self, stream: EventStream[C], cache: AggregateCache[Held]) -> None:
        self._stream = stream
        self._cache = cache
        self.conflicts = 0
        """Appends refused because another commit got there first (each costs a re-read)."""

    async def execute(self, key: str, command_id: str, request: Request, digest: str) -> Reply:
        """Decide and commit one command (or return its first answer)."""
        held = await self._cache.get(key)
        async with held.lock:
            return await self._decide_and_append(held, command_id, request, digest)

    async def _decide_and_append(
        self, held: Held, command_id: str, request: Request, digest: str
    ) -> Reply:
        first = await self._first_answer(held, command_id, request, digest)
        if first is not None:
            return first
        for _ in range(MAX_ATTEMPTS):
            refusal: Refusal | None = None
            try:
                events = await self.decide(held, request)
            except (RuleViolation, Refused) as refused:
                if refused.code in self.UNRECORDED or not self.records_refusal(request):
                    return self.refusal(command_id, refused.code, refused.detail)
                events, refusal = [], Refusal(refused.code, refused.detail)
            if not events and refusal is None:  # nothing new to record (a second look)
                return self.nothing(command_id, held)
            commit = self.commit(held, command_id, digest, events, refusal)
            data = self.encode(commit)
            try:
                sequence = await self._stream.append(
                    held.key, data, expected=held.sequence, command_id=f"{held.key}:{command_id}"
                )
            except (AppendConflict, DuplicateCommand):
                self.conflicts += 1
                await self._cache.catch_up(held)
                first = await self._first_answer(held, command_id, request, digest)
                if first is not None:
                    return first
                continue
            held.apply(Stored(sequence, data, commit))
            return self.reply(request, commit, sequence)
        return self.refusal(command_id, "unavailable", f"the {self.NAME} is too busy; retry")

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
        stored = await self._stream.read_one(answered.sequence)
        return self.reply(request, stored.commit, answered.sequence)

    def records_refusal(self, request: Request) -> bool:
        """Whether a refusal of this request goes into the history (so that a retry gets it);
        every request's does unless a handler says otherwise."""
        return True

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
