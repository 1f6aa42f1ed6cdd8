"""An event store in memory that behaves as the JetStream one (see
:mod:`services.runtime.event_store`).

For tests of what is built on a store (the command handlers' idempotency and conflict loop, the
caches) that need neither a server nor a wait, and for tools that replay a history without one.
One process, one event loop: every method completes without yielding, so each call is atomic as
JetStream's are. Command ids are remembered for the store's whole life (JetStream forgets them
after its duplicate window; a history never depends on that window, which is only a first
guard).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from services.runtime.event_store import AppendConflict, DuplicateCommand, History, Stored

C = TypeVar("C")


class MemoryEventStore(Generic[C]):
    """An :class:`services.runtime.event_store.EventStore` held in a list."""

    def __init__(self, history: History[C]) -> None:
        self._history = history
        self._prefix = history.subject_of("")
        self._messages: list[tuple[str, bytes]] = []
        """(subject, data) by stream sequence - 1."""
        self._by_subject: dict[str, list[int]] = {}
        self._by_command: dict[str, int] = {}
        self.appends = 0
        """Calls of :meth:`append`, stored or not (a test counts round trips with it)."""

    @property
    def name(self) -> str:
        return self._history.stream

    @property
    def subjects(self) -> str:
        return f"{self._prefix}>"

    def subject(self, key: str) -> str:
        return self._history.subject_of(key)

    def key_of(self, subject: str) -> str | None:
        return subject[len(self._prefix) :] if subject.startswith(self._prefix) else None

    def stored(self, sequence: int, data: bytes) -> Stored[C]:
        return Stored(sequence, data, self._history.decode(data))

    async def last_sequence(self, key: str) -> int:
        sequences = self._by_subject.get(self._history.subject_of(key))
        return sequences[-1] if sequences else 0

    async def read(
        self, key: str, after: int = 0, *, limit: int | None = None, until: int | None = None
    ) -> list[Stored[C]]:
        sequences = self._by_subject.get(self._history.subject_of(key), [])
        chosen = [s for s in sequences if s > after and (until is None or s <= until)]
        if limit is not None:
            chosen = chosen[:limit]
        return [self.stored(s, self._messages[s - 1][1]) for s in chosen]

    async def read_one(self, key: str, sequence: int) -> Stored[C]:
        if not 1 <= sequence <= len(self._messages):
            raise LookupError(f"no message at sequence {sequence} of {self.name}")
        return self.stored(sequence, self._messages[sequence - 1][1])

    async def append(self, key: str, data: bytes, *, expected: int, command_id: str) -> int:
        self.appends += 1
        if await self.last_sequence(key) != expected:  # checked first, as JetStream does
            raise AppendConflict(f"wrong last sequence: the subject is not at {expected}")
        first = self._by_command.get(command_id)
        if first is not None:
            raise DuplicateCommand(first)
        subject = self._history.subject_of(key)
        self._messages.append((subject, data))
        sequence = len(self._messages)
        self._by_subject.setdefault(subject, []).append(sequence)
        self._by_command[command_id] = sequence
        return sequence
