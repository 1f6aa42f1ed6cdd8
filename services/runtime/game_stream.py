"""The game event store on JetStream: one stream, one subject per game, one message per commit.

Appends use optimistic concurrency (``Nats-Expected-Last-Subject-Sequence``, the *stream*
sequence of the game's last message, 0 for none) and deduplication (``Nats-Msg-Id``, the
command id, within the stream's duplicate window). Reads replay one subject from a sequence on
with a short-lived, in-memory pull consumer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import nats.js.errors
from nats.js import JetStreamContext, api

from contracts.wire import (
    GAME_SUBJECTS,
    GAMES_STREAM,
    Commit,
    game_subject,
    read_commit,
)

WRONG_LAST_SEQUENCE = 10071
"""JetStream's API error code for a failed ``Nats-Expected-Last-Subject-Sequence`` check."""

FETCH_BATCH = 512
DIRECT_READS = 24
"""Commits read one request each before a read switches to a consumer."""
INACTIVE_CONSUMER_S = 2.0
"""A read's consumer is gone this long after its last fetch, so reads leave none behind."""


class AppendConflict(Exception):
    """Another commit reached the game's subject first: reload and decide again."""


class DuplicateCommand(Exception):
    """JetStream already holds a commit with this command id (within its duplicate window)."""

    def __init__(self, sequence: int) -> None:
        super().__init__(f"duplicate of stream sequence {sequence}")
        self.sequence = sequence


@dataclass(frozen=True, slots=True)
class StoredCommit:
    """A commit as stored: its stream sequence, its exact bytes and its decoded form."""

    sequence: int
    data: bytes
    commit: Commit

    @property
    def digest(self) -> str:
        """SHA-256 of the stored bytes: what the next commit names as ``previous``."""
        return hashlib.sha256(self.data).hexdigest()


def games_stream_config(replicas: int = 1, duplicate_window_s: float = 120.0) -> api.StreamConfig:
    """The one definition of the game stream, used to create or check it at start-up.

    File storage, kept forever (no limits: a game's history is its truth), no per-subject limit,
    and neither deletes nor purges, so an acknowledged commit cannot be taken back through the
    API. ``duplicate_window`` bounds ``Nats-Msg-Id`` deduplication; command ids are also kept
    in each game's history, so a retry after the window still finds its first answer.
    """
    return api.StreamConfig(
        name=GAMES_STREAM,
        subjects=[GAME_SUBJECTS],
        storage=api.StorageType.FILE,
        retention=api.RetentionPolicy.LIMITS,
        discard=api.DiscardPolicy.OLD,
        num_replicas=replicas,
        duplicate_window=duplicate_window_s,
        deny_delete=True,
        deny_purge=True,
        allow_direct=False,
        max_msg_size=1024 * 1024,
    )


class GameStream:
    """Read and append the commits of games."""

    def __init__(self, js: JetStreamContext, stream: str = GAMES_STREAM) -> None:
        self._js = js
        self._stream = stream

    async def last_sequence(self, game_id: str) -> int:
        """The stream sequence of the game's last commit, 0 when it has none."""
        try:
            message = await self._js.get_last_msg(self._stream, game_subject(game_id))
        except nats.js.errors.NotFoundError:
            return 0
        return int(message.seq or 0)

    async def read(self, game_id: str, after: int = 0) -> list[StoredCommit]:
        """The game's commits with a stream sequence above ``after``, in order.

        Catching up (a few new commits) is a few direct gets of the subject's next message; a
        long history (a cold game) is read with a short-lived consumer, one fetch per batch.
        """
        last = await self.last_sequence(game_id)
        if last <= after:
            return []
        commits: list[StoredCommit] = []
        cursor = after + 1
        for _ in range(DIRECT_READS):
            message = await self._js.get_msg(
                self._stream, seq=cursor, subject=game_subject(game_id), next=True
            )
            sequence = int(message.seq or 0)
            data = message.data or b""
            commits.append(StoredCommit(sequence, data, read_commit(data)))
            if sequence >= last:
                return commits
            cursor = sequence + 1
        commits.extend(await self._consume(game_id, cursor, last))
        return commits

    async def _consume(self, game_id: str, start: int, last: int) -> list[StoredCommit]:
        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start,
            ack_policy=api.AckPolicy.NONE,
            mem_storage=True,
            inactive_threshold=INACTIVE_CONSUMER_S,
            num_replicas=1,
        )
        subscription = await self._js.pull_subscribe(
            game_subject(game_id), stream=self._stream, config=config
        )
        commits: list[StoredCommit] = []
        try:
            while not commits or commits[-1].sequence < last:
                for message in await subscription.fetch(FETCH_BATCH, timeout=5.0):
                    sequence = message.metadata.sequence.stream
                    commits.append(StoredCommit(sequence, message.data, read_commit(message.data)))
        finally:
            await subscription.unsubscribe()
        return commits

    async def read_one(self, sequence: int) -> StoredCommit:
        """The commit at one stream sequence."""
        message = await self._js.get_msg(self._stream, sequence)
        data = message.data or b""
        return StoredCommit(sequence, data, read_commit(data))

    async def append(self, game_id: str, data: bytes, *, expected: int, command_id: str) -> int:
        """Append one commit if the game's last commit is still ``expected``; return its
        sequence. Raises :class:`AppendConflict` or :class:`DuplicateCommand`."""
        headers = {
            api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(expected),
            api.Header.MSG_ID.value: command_id,
        }
        try:
            ack = await self._js.publish(
                game_subject(game_id), data, stream=self._stream, headers=headers
            )
        except nats.js.errors.APIError as error:
            if error.err_code == WRONG_LAST_SEQUENCE:
                raise AppendConflict(str(error)) from None
            raise
        if ack.duplicate:
            raise DuplicateCommand(ack.seq)
        return ack.seq
