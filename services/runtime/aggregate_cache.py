"""Aggregates in memory, folded from their commits and caught up from the stream on demand.

The engine decides against these states (optimistic concurrency catches a stale one); the
gateway renders views from them. A cold one is rebuilt by replaying its subject; the least
recently used go first when the cache is full. Games and leagues are both kept this way.

A process that follows the stream (:mod:`services.runtime.tail`) hands each commit, as it
is appended, to :meth:`AggregateCache.observe`: an aggregate held in memory takes the commit
when it is the next one of its chain, so a command that another engine's commit preceded finds
its state current instead of failing its append and reading the stream again.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from contracts.wire import GENESIS
from services.runtime.event_store import EventStore, Stored


class Versioned(Protocol):
    @property
    def version(self) -> int: ...


class CommitLike(Protocol):
    @property
    def command_id(self) -> str: ...
    @property
    def request(self) -> str: ...
    @property
    def events(self) -> Sequence[Any]: ...
    @property
    def previous(self) -> str: ...


S = TypeVar("S", bound=Versioned)
C = TypeVar("C", bound=CommitLike)


@dataclass(frozen=True, slots=True)
class Answered:
    """Where a command's first answer is, and which request body got it."""

    sequence: int
    request: str


@dataclass
class Loaded(Generic[S, C]):
    """An aggregate as a process holds it: its state, and where its history ends."""

    key: str
    state: S | None = None
    sequence: int = 0
    digest: str = GENESIS
    answered: dict[str, Answered] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    versions: list[int] = field(default_factory=list)
    """The version after each commit, in order (a refusal repeats the one before)."""
    sequences: list[int] = field(default_factory=list)
    """The stream sequence of each commit, in the same order."""

    @staticmethod
    def fold(state: S | None, event: Any) -> S:
        """The aggregate's own ``evolve``."""
        raise NotImplementedError

    @property
    def version(self) -> int:
        return self.state.version if self.state is not None else 0

    def apply(self, stored: Stored[C]) -> None:
        commit = stored.commit
        state = self.state
        for event in commit.events:
            state = self.fold(state, event)
        self.state = state
        self.sequence = stored.sequence
        self.digest = stored.digest
        self.answered[commit.command_id] = Answered(stored.sequence, commit.request)
        self.versions.append(self.version)
        self.sequences.append(stored.sequence)

    def reset(self) -> None:
        """Forget everything applied, to apply the history again from its start."""
        self.state = None
        self.sequence = 0
        self.digest = GENESIS
        self.answered = {}
        self.versions = []
        self.sequences = []

    def sequence_through(self, version: int) -> int:
        """The stream sequence of the last commit at or below ``version`` (0 for none): a
        read after it starts with the first commit that holds a later event."""
        passed = bisect.bisect_right(self.versions, version)
        return self.sequences[passed - 1] if passed else 0


L = TypeVar("L", bound="Loaded[Any, Any]")


class AggregateCache(Generic[L]):
    """Aggregates in memory by key, least recently used first out."""

    def __init__(self, stream: EventStore[Any], make: Callable[[str], L], capacity: int) -> None:
        self._stream = stream
        self._make = make
        self._capacity = capacity
        self._held: OrderedDict[str, L] = OrderedDict()

    async def get(self, key: str) -> L:
        """The aggregate, loaded by replay if it is not in memory (not caught up otherwise)."""
        held = self._held.get(key)
        if held is None:
            held = self._make(key)
            self._held[key] = held
            while len(self._held) > self._capacity:
                self._held.popitem(last=False)
            async with held.lock:
                await self.catch_up(held)
        else:
            self._held.move_to_end(key)
        return held

    def peek(self, key: str) -> L | None:
        """The aggregate if it is in memory, as it is (neither loaded nor caught up)."""
        return self._held.get(key)

    async def catch_up(self, held: L) -> None:
        """Apply the commits other processes appended since ``held.sequence``. Commits that do
        not follow the held chain (a history changed under it: a game archived meanwhile, read
        back whole) make it read the whole history again."""
        commits = await self._stream.read(held.key, after=held.sequence)
        if commits and commits[0].commit.previous != held.digest:
            held.reset()
            commits = await self._stream.read(held.key)
        for stored in commits:
            held.apply(stored)

    def observe(self, sequence: int, subject: str, data: bytes) -> bool:
        """Take a commit seen on the stream if it is the next one of an aggregate held here.

        Only an aggregate that no command holds right now, and only the commit whose
        ``previous`` is the held chain's last digest: anything else (a gap, a commit this
        process is appending itself, one it has already) is left to :meth:`catch_up`. Says
        whether the commit was applied.
        """
        key = self._stream.key_of(subject)
        held = self._held.get(key) if key is not None else None
        if held is None or held.lock.locked() or sequence <= held.sequence:
            return False
        stored = self._stream.stored(sequence, data)
        if stored.commit.previous != held.digest:
            return False
        held.apply(stored)
        return True

    def forget(self, key: str) -> None:
        self._held.pop(key, None)

    def forget_where(self, chosen: Callable[[str], bool]) -> None:
        """Forget every aggregate whose key is ``chosen`` (another process may have appended to
        them since: they are read again when next asked for)."""
        for key in [key for key in self._held if chosen(key)]:
            del self._held[key]

    async def latest(self, key: str) -> L:
        """The aggregate caught up with everything appended so far (for readers)."""
        held = await self.get(key)
        async with held.lock:
            await self.catch_up(held)
        return held
