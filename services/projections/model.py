"""What a read model is to its worker: a name, the tables it owns, and how commits change them.

Every model keeps, per game, the version of the last commit it applied. A commit at or below
that version was applied before (a redelivery, a replay) and changes nothing. A commit that does
not start right after it would fold a game's events out of order, so it is refused, and the
worker parks it, rather than building a wrong state; a game's later commits are refused the same
way until the missing one is replayed. Refusals are returned, not raised, so the rest of a batch
goes on.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Generic, Protocol, TypeVar

import msgspec
import sqlalchemy as sa

from contracts.partitions import ONE, Partitions
from contracts.wire import Commit, encode_commit, read_commit
from services.store.database import Statements

Refusals = dict[int, str]
"""Commits a model would not apply: stream sequence -> the reason."""


class ReadModel(ABC):
    """One read model. Its state is in the database; anything a model keeps in memory between
    batches must be checked against the database before use (see ``hands.Recorders``)."""

    name: ClassVar[str]
    tables: ClassVar[tuple[sa.Table, ...]]
    """The tables whose rows this model writes (and a rebuild empties, unless ``kept``)."""
    kept: ClassVar[bool] = False
    """A record rather than a projection (the audit log): what it holds was published (signed,
    handed out in receipts) and may not be recomputed in another order. A rebuild never
    empties its tables: it replays the stream from the start, and the model skips what it
    already holds, so archiving games or moving partitions does not reorder it."""

    @abstractmethod
    async def apply(self, conn: Statements, batch: Sequence[Delivered]) -> Refusals:
        """Apply the commits of ``batch`` (stream order) inside the caller's transaction."""


class Unapplicable(Exception):
    """A message a model will not apply, whatever the number of attempts."""


class Unreadable(Unapplicable):
    """A message that is not a commit of the game its subject names."""


class OutOfOrder(Unapplicable):
    """A commit that does not follow the last one the model applied for its game."""


class Delivered:
    """A commit as a worker received it: its stream sequence, the decoded commit, and its
    bytes as stored (None: as :func:`~contracts.wire.encode_commit` writes it)."""

    __slots__ = ("commit", "data", "sequence")

    def __init__(self, sequence: int, commit: Commit, data: bytes | None = None) -> None:
        self.sequence = sequence
        self.commit = commit
        self.data = data

    @property
    def chain(self) -> str:
        """The commit's link in its game's hash chain: the SHA-256 of its stored bytes, which
        the game's next commit names as ``previous``."""
        data = self.data if self.data is not None else encode_commit(self.commit)
        return hashlib.sha256(data).hexdigest()

    @classmethod
    def read(
        cls, sequence: int, subject: str, data: bytes, partitions: Partitions = ONE
    ) -> Delivered:
        """Decode a message of a game stream laid out as ``partitions``; raise
        :class:`Unreadable` saying why it is no commit (of the game its subject names)."""
        try:
            commit = read_commit(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise Unreadable(f"not a commit: {error}") from None
        if partitions.game_subject(commit.game_id) != subject:
            raise Unreadable(f"a commit of game {commit.game_id!r} on subject {subject}")
        return cls(sequence, commit, data)


def out_of_order(model: str, version: int, commit: Commit) -> str | None:
    """Why ``commit`` cannot be applied by a model that holds its game at ``version``, when it
    does not start right after it (None when it does)."""
    if commit.first_version == version + 1:
        return None
    return (
        f"out of order: {model} holds game {commit.game_id} at version {version}, "
        f"this commit starts at version {commit.first_version}"
    )


class Versioned(Protocol):
    version: int


S = TypeVar("S", bound=Versioned)


class PerGameModel(ReadModel, Generic[S]):
    """A model whose state is kept per game: load the batch's games, fold, save what changed.

    One read and a few writes per batch, however many commits it holds: that is what makes a
    replay of the stream fast.
    """

    @abstractmethod
    async def load(self, conn: Statements, game_ids: Sequence[str]) -> dict[str, S]:
        """The stored state of those of ``game_ids`` that the model knows."""

    @abstractmethod
    def fold(self, state: S | None, commit: Commit) -> S:
        """The state after ``commit`` (may change ``state`` in place and return it)."""

    @abstractmethod
    async def save(self, conn: Statements, states: dict[str, S]) -> None:
        """Write the states this batch changed."""

    async def apply(self, conn: Statements, batch: Sequence[Delivered]) -> Refusals:
        game_ids = sorted({delivered.commit.game_id for delivered in batch})
        states = await self.load(conn, game_ids)
        changed: dict[str, S] = {}
        refusals: Refusals = {}
        applied: list[tuple[S, Commit]] = []
        for delivered in batch:
            commit = delivered.commit
            state = states.get(commit.game_id)
            version = state.version if state is not None else 0
            if commit.version <= version:
                continue
            refusal = out_of_order(self.name, version, commit)
            if refusal is not None:
                refusals[delivered.sequence] = refusal
                continue
            state = self.fold(state, commit)
            state.version = commit.version
            states[commit.game_id] = changed[commit.game_id] = state
            applied.append((state, commit))
        await self.save(conn, changed)
        await self.saved(conn, applied)
        return refusals

    async def saved(self, conn: Statements, applied: Sequence[tuple[S, Commit]]) -> None:
        """After the batch's states are saved: each applied commit in stream order, with the
        state of its game at the end of the batch. Nothing by default."""
