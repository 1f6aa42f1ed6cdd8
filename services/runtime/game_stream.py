"""The game event store: K partition streams (:mod:`contracts.partitions`), one subject per game,
one :class:`Commit` per command (see :mod:`services.runtime.event_store` for the guarantees).

:class:`GameStream` is one :class:`~services.runtime.event_store.EventStore` over every
partition: each call goes to the stream of the game's partition, so its users (the engines, the
gateway's reads, the caches, the audit) need not know that there are several. A stream sequence
is a partition's own, and a game's commits are all in one partition: a sequence read with a game
means something in that game's stream. What follows a stream as it is appended follows one
partition at a time (:class:`PartitionStream`).

A finished game may have been archived (:mod:`services.runtime.game_archive`): its subject
then begins with its last commit of the time, the earlier ones being in the archive at their
own sequences. :meth:`GameStream.read` and :meth:`GameStream.read_one` put them back where they
were, so that no reader needs to know which games are archived.
"""

from __future__ import annotations

import itertools
from typing import TypeAlias

import nats.js.errors
from nats.js import JetStreamContext, api

from contracts.partitions import LEGACY_STREAM, ONE, PARTITIONS_KEY, Partitions
from contracts.wire import GENESIS, Commit, read_commit
from domain.events import GameEnded
from services.runtime.event_store import (
    AppendConflict,
    DuplicateCommand,
    EventStore,
    History,
    JetStreamEventStore,
    Stored,
    history_stream_config,
)
from services.runtime.follower import Partition
from services.runtime.game_archive import ArchiveError, GameArchive
from services.runtime.nats import ensure_stream

MIGRATE_COMMAND = "spades partitions migrate"
MOVED_KEY = "spades_moved_to"
"""Metadata of a one-partition stream whose games were moved into partitions (by the
migration), naming how many: kept, not followed, as a record of the move."""

__all__ = [
    "GAMES",
    "AppendConflict",
    "DuplicateCommand",
    "GameStore",
    "GameStream",
    "PartitionStream",
    "StoredCommit",
    "game_history",
    "games_stream_config",
    "partition_stream_configs",
]

StoredCommit: TypeAlias = Stored[Commit]
GameStore: TypeAlias = EventStore[Commit]
"""The games' histories, wherever they are kept."""


def game_history(partitions: Partitions, partition: int) -> History[Commit]:
    """One partition's histories: its stream, each game's subject in it, the commits' decoder."""
    prefix = partitions.subject_prefix(partition)
    return History(partitions.stream(partition), lambda game_id: prefix + game_id, read_commit)


GAMES = game_history(ONE, 0)
"""The histories of a deployment of one partition."""


def games_stream_config(
    replicas: int = 1,
    duplicate_window_s: float = 120.0,
    *,
    partitions: Partitions = ONE,
    partition: int = 0,
) -> api.StreamConfig:
    """The one definition of a partition's stream, used to create or check it at start-up.

    Unlike the other streams of histories, a partition's stream allows purges: archiving a
    finished game (:mod:`services.runtime.game_archive`) purges its commits, once they are in
    the archive. Only the operator's user may purge (:mod:`services.runtime.broker_users`). A
    stream made before archiving denies purges, and JetStream never lets a stream stop denying
    them: its games stay in it (``spades archive`` says so) until it is made anew, by a
    restore from a backup."""
    config = history_stream_config(
        partitions.stream(partition),
        partitions.subjects(partition),
        replicas,
        duplicate_window_s,
    )
    config.deny_purge = False
    if not partitions.legacy:
        config.metadata = partitions.metadata(partition)
    return config


def partition_stream_configs(
    partitions: Partitions, replicas: int = 1, duplicate_window_s: float = 120.0
) -> list[api.StreamConfig]:
    """Every partition's stream definition, in partition order."""
    return [
        games_stream_config(replicas, duplicate_window_s, partitions=partitions, partition=p)
        for p in partitions.indexes
    ]


class PartitionStream(JetStreamEventStore[Commit]):
    """Read and append the commits of the games of one partition."""

    def __init__(self, js: JetStreamContext, partitions: Partitions = ONE, partition: int = 0):
        super().__init__(js, game_history(partitions, partition))
        self.partition = partition


class GameStream:
    """Read and append the commits of games on JetStream, each in its partition's stream, and
    of archived games in the archive too."""

    def __init__(self, js: JetStreamContext, partitions: Partitions = ONE) -> None:
        self.partitions = partitions
        self.parts = [PartitionStream(js, partitions, p) for p in partitions.indexes]
        self._one = self.parts[0] if partitions.legacy else None
        self.archive = GameArchive(js)

    def part(self, game_id: str) -> PartitionStream:
        """The stream of the game's partition."""
        return self._one or self.parts[self.partitions.of(game_id)]

    @property
    def name(self) -> str:
        """The partitions' streams, named together (for messages)."""
        return ", ".join(self.partitions.streams)

    def subject(self, key: str) -> str:
        return self.partitions.game_subject(key)

    def key_of(self, subject: str) -> str | None:
        """The game a subject of any partition belongs to."""
        if self._one is not None:
            return self._one.key_of(subject)
        game_id = subject[subject.rfind(".") + 1 :]
        return game_id if subject == self.partitions.game_subject(game_id) else None

    def stored(self, sequence: int, data: bytes) -> StoredCommit:
        return Stored(sequence, data, read_commit(data))

    async def last_sequence(self, key: str) -> int:
        return await self.part(key).last_sequence(key)

    async def read(
        self, key: str, after: int = 0, *, limit: int | None = None, until: int | None = None
    ) -> list[StoredCommit]:
        """As :meth:`EventStore.read`, archived commits included. A history whose chain breaks
        (the game was being archived while it was read) is read again."""
        commits = await self._read(key, after, limit, until)
        if _unbroken(commits):
            return commits
        commits = await self._read(key, after, limit, until)
        if not _unbroken(commits):
            raise ArchiveError(f"the history of game {key} read does not hold together")
        return commits

    async def _read(
        self, key: str, after: int, limit: int | None, until: int | None
    ) -> list[StoredCommit]:
        part = self.part(key)
        commits = await part.read(key, after, limit=limit, until=until)
        if not commits or not may_follow_archived(commits[0].commit):
            return commits
        first = commits[0].sequence
        if after and await part.first_sequence(key) != first:
            return commits  # the commits before ``first`` are still in the stream
        archived = [
            self.stored(commit.sequence, commit.data)
            for commit in await self.archive.through(key, first)
            if commit.sequence > after and (until is None or commit.sequence <= until)
        ]
        if until is not None:
            commits = [stored for stored in commits if stored.sequence <= until]
        merged = archived + commits
        return merged if limit is None else merged[:limit]

    async def read_one(self, key: str, sequence: int) -> StoredCommit:
        """As :meth:`EventStore.read_one`; a commit archived is read from the archive."""
        try:
            return await self.part(key).read_one(key, sequence)
        except nats.js.errors.NotFoundError:
            archived = await self.archive.commit(key, sequence)
            if archived is None:
                raise
            return self.stored(archived.sequence, archived.data)

    async def append(self, key: str, data: bytes, *, expected: int, command_id: str) -> int:
        return await self.part(key).append(key, data, expected=expected, command_id=command_id)


def may_follow_archived(commit: Commit) -> bool:
    """Whether a game's subject may begin with this commit once the game is archived: only a
    finished game is, and its last commit then holds its end or a refusal after it."""
    if commit.previous == GENESIS:
        return False
    return commit.refusal is not None or any(type(event) is GameEnded for event in commit.events)


def _unbroken(commits: list[StoredCommit]) -> bool:
    """Whether each commit names the one before it as its previous."""
    return all(
        later.commit.previous == earlier.digest for earlier, later in itertools.pairwise(commits)
    )


def game_partitions(partitions: Partitions) -> list[Partition]:
    """Every partition, as followers follow it."""
    return [Partition(p, partitions.stream(p), partitions.subjects(p)) for p in partitions.indexes]


class LayoutError(Exception):
    """The streams found are not of the layout this process was started with: it must not
    start (it would look for games where they are not)."""


async def check_partitions(js: JetStreamContext, partitions: Partitions) -> str | None:
    """Why the deployment's game streams are not of ``partitions`` (None: they are, or are not
    made yet)."""
    other = Partitions(1) if not partitions.legacy else None
    if other is not None:
        try:
            legacy = await js.stream_info(LEGACY_STREAM)
        except nats.js.errors.NotFoundError:
            legacy = None
        if legacy is not None and legacy.state.messages and not _moved(legacy.config.metadata):
            return (
                f"the games are in one stream, {LEGACY_STREAM}, not in {partitions.count} "
                f"partitions: move them with `{MIGRATE_COMMAND} --partitions "
                f"{partitions.count}`, or start with SPADES_PARTITIONS=1"
            )
    for partition in partitions.indexes:
        try:
            info = await js.stream_info(partitions.stream(partition))
        except nats.js.errors.NotFoundError:
            if partitions.legacy:
                return await _partitioned_elsewhere(js)
            continue
        moved = (info.config.metadata or {}).get(MOVED_KEY)
        if moved:
            return (
                f"the games were moved into {moved} partitions: "
                f"start with SPADES_PARTITIONS={moved}"
            )
        reason = partitions.mismatch(partition, info.config.metadata)
        if reason is not None:
            return f"{reason}: start every process with the deployment's SPADES_PARTITIONS"
    if not partitions.legacy:
        beyond = Partitions(partitions.count + 1).stream(partitions.count)
        try:
            await js.stream_info(beyond)
        except nats.js.errors.NotFoundError:
            return None
        return f"stream {beyond} exists: the deployment has more than {partitions.count} partitions"
    return None


async def _partitioned_elsewhere(js: JetStreamContext) -> str | None:
    """Why a one-partition process must not start: the deployment's games are partitioned."""
    try:
        info = await js.stream_info(Partitions(2).stream(0))
    except nats.js.errors.NotFoundError:
        return None
    count = dict(info.config.metadata or {}).get(PARTITIONS_KEY, "several")
    return f"the deployment's games are in {count} partitions: start with SPADES_PARTITIONS={count}"


def _moved(metadata: dict[str, str] | None) -> bool:
    return bool((metadata or {}).get(MOVED_KEY))


async def ensure_partitions(
    js: JetStreamContext, partitions: Partitions, replicas: int = 1
) -> None:
    """Create every partition's stream from its definition, or bring it in line, once the
    streams found are known to be of this layout (else :class:`LayoutError`)."""
    reason = await check_partitions(js, partitions)
    if reason is not None:
        raise LayoutError(reason)
    for config in partition_stream_configs(partitions, replicas):
        await ensure_stream(js, config)


async def deployed_partitions(js: JetStreamContext, default: Partitions = ONE) -> Partitions:
    """The partitions the deployment's streams were made with, as its streams say (for the
    operator's tools, which may be run without the deployment's settings); ``default`` when no
    game stream is made yet."""
    try:
        legacy = await js.stream_info(LEGACY_STREAM)
    except nats.js.errors.NotFoundError:
        legacy = None
    if legacy is not None and not _moved(legacy.config.metadata):
        return ONE
    try:
        first = await js.stream_info(Partitions(2).stream(0))
    except nats.js.errors.NotFoundError:
        return default
    count = (first.config.metadata or {}).get(PARTITIONS_KEY, "")
    return Partitions(int(count)) if count.isdigit() else default
