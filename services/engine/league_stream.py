"""The league event store on JetStream: the stream ``SPADES_LEAGUES``, one subject per league,
one message per league commit, with the game store's guarantees (see
:mod:`services.runtime.game_stream`): optimistic concurrency on the league's subject
(``Nats-Expected-Last-Subject-Sequence``) and deduplication by command id (``Nats-Msg-Id``).

A league's history is short (its creation, then a commit a round), so it is always read with
direct gets of the subject's next message; there is no long history to stream.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import nats.js.errors
from nats.js import JetStreamContext, api

from contracts.wire import (
    LEAGUE_SUBJECTS,
    LEAGUES_STREAM,
    LeagueCommit,
    league_subject,
    read_league_commit,
)
from services.runtime.game_stream import WRONG_LAST_SEQUENCE, AppendConflict, DuplicateCommand


@dataclass(frozen=True, slots=True)
class StoredLeagueCommit:
    """A league commit as stored: its stream sequence, its exact bytes and its decoded form."""

    sequence: int
    data: bytes
    commit: LeagueCommit

    @property
    def digest(self) -> str:
        """SHA-256 of the stored bytes: what the next commit names as ``previous``."""
        return hashlib.sha256(self.data).hexdigest()


def leagues_stream_config(replicas: int = 1, duplicate_window_s: float = 120.0) -> api.StreamConfig:
    """The one definition of the league stream: kept forever, no deletes or purges, exactly as
    the game stream is (:func:`services.runtime.game_stream.games_stream_config`)."""
    return api.StreamConfig(
        name=LEAGUES_STREAM,
        subjects=[LEAGUE_SUBJECTS],
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


class LeagueStream:
    """Read and append the commits of leagues."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js

    async def last_sequence(self, league_id: str) -> int:
        """The stream sequence of the league's last commit, 0 when it has none (or when the
        stream itself is not there yet: then no league exists)."""
        try:
            message = await self._js.get_last_msg(LEAGUES_STREAM, league_subject(league_id))
        except nats.js.errors.NotFoundError:
            return 0
        return int(message.seq or 0)

    async def read(self, league_id: str, after: int = 0) -> list[StoredLeagueCommit]:
        """The league's commits with a stream sequence above ``after``, in order."""
        last = await self.last_sequence(league_id)
        commits: list[StoredLeagueCommit] = []
        cursor = after + 1
        while cursor <= last:
            message = await self._js.get_msg(
                LEAGUES_STREAM, seq=cursor, subject=league_subject(league_id), next=True
            )
            data = message.data or b""
            stored = StoredLeagueCommit(int(message.seq or 0), data, read_league_commit(data))
            commits.append(stored)
            cursor = stored.sequence + 1
        return commits

    async def read_one(self, sequence: int) -> StoredLeagueCommit:
        message = await self._js.get_msg(LEAGUES_STREAM, sequence)
        data = message.data or b""
        return StoredLeagueCommit(sequence, data, read_league_commit(data))

    async def append(self, league_id: str, data: bytes, *, expected: int, command_id: str) -> int:
        """Append one commit if the league's last commit is still ``expected``; return its
        sequence. Raises :class:`AppendConflict` or :class:`DuplicateCommand`."""
        headers = {
            api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(expected),
            api.Header.MSG_ID.value: command_id,
        }
        try:
            ack = await self._js.publish(
                league_subject(league_id), data, stream=LEAGUES_STREAM, headers=headers
            )
        except nats.js.errors.APIError as error:
            if error.err_code == WRONG_LAST_SEQUENCE:
                raise AppendConflict(str(error)) from None
            raise
        if ack.duplicate:
            raise DuplicateCommand(ack.seq)
        return ack.seq
