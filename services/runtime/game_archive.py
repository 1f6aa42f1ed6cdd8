"""The archive tier: the whole history of a finished game, moved out of its partition stream
into one compressed message of the stream ``SPADES_ARCHIVE``.

Every commit of every game stays in its partition's stream unless it is archived: about 36 kB
of commits (and 38 kB of stream) for a game of one hand, held by nats-server for ever. ``spades
archive`` (:mod:`services.archive`) moves the finished games: it writes each one's history
here, reads it back and checks it against the stream, and only then purges the game's subject
of its partition stream up to, not including, its last commit. That last commit stays where it
was, at its own sequence: what a game's subject holds is never empty once the game exists, so
the engine's append of a new game (expected last sequence 0) can never reuse an archived
game's id, a late command still appends its refusal after it, and every follower of the stream
(read models, webhooks, clocks, round watch) has already seen it.

Why a stream of one message per game and not an Object Store bucket: reading an archived game
is then one get of its subject's last message, as every other read of a history is (a direct
get on a stream of one replica), where an object is read through a consumer made for each read;
the stream is read with the same broker permissions as the partition streams, and backed up and
restored message by message as they are (:mod:`services.backup`). Its messages are limited to
the server's largest payload (1 MiB by default): a history that does not fit once compressed
(some 140 hands) stays in its partition stream. The stream keeps every message it is given
(no per-subject limit, no deletes, no purges): a game archived again (late commands appended
refusals after its archiving) gets a second, longer message, and its last one is read.

A message is :data:`FORMAT`, then the LZMA of the msgpack of an :class:`ArchivedGame`: the
game's commits, each with its original stream sequence and exact bytes, the subject and the
stream (by name and creation time) they were in, and a digest of them all. LZMA rather than
zlib: the archive is written once and read rarely; on a game of one hand (121 commits, 35.6 kB)
it writes 7.2 kB against zlib's 9.0 kB (the commits' hashes do not compress), for 26 ms of CPU
to compress (zlib 1.2) and 0.6 ms to read (zlib 0.09). JetStream's own S2 compression of the
stream would add nothing to bytes already compressed.

:class:`GameArchive` reads it; :class:`~services.runtime.game_stream.GameStream` falls back on it
by itself, so that the engine, the gateway, the audit and the workers read an archived game as
they read any other.
"""

from __future__ import annotations

import hashlib
import lzma
from collections import OrderedDict
from collections.abc import Iterable

import msgspec
import nats.js.errors
from nats.js import JetStreamContext, api

from contracts.wire import ARCHIVE_STREAM, ARCHIVE_SUBJECTS
from services.runtime.event_store import History, JetStreamEventStore, Stored, history_stream_config

FORMAT = b"spades-archive/1 lzma\n"
"""What every archive message starts with: its layout's version and its compression."""
MAX_ARCHIVE_BYTES = 1024 * 1024
"""The largest archive message: nats-server's default largest payload, which the stream's own
limit follows."""
HELD = 32
"""Archived histories a process keeps decoded (the least recently read go first)."""


def archive_subject(game_id: str) -> str:
    """The subject of a game's archived history."""
    return f"spades.archive.{game_id}"


class ArchivedCommit(msgspec.Struct, frozen=True, array_like=True):
    """A commit as its partition stream held it: its stream sequence and its exact bytes."""

    sequence: int
    data: bytes


class ArchivedGame(msgspec.Struct, frozen=True, kw_only=True):
    """A game's history as the archive keeps it."""

    game_id: str
    stream: str
    """The partition stream the commits were in, and when the server made it (its identity:
    :mod:`services.runtime.stream_identity`)."""
    stream_created: str
    subject: str
    archived_at: str
    digest: str
    """:func:`history_digest` of ``commits``."""
    commits: list[ArchivedCommit]

    @property
    def last_sequence(self) -> int:
        return self.commits[-1].sequence if self.commits else 0


class ArchiveError(nats.js.errors.Error):
    """The archive does not hold what the stream says it must (a game's commits purged from its
    partition stream, and no archived history reaching them), or holds something unreadable.
    A :class:`nats.js.errors.Error`, so that every reader answers it as it answers a store
    it cannot reach: unavailable, never as a game that does not exist."""

    def __init__(self, description: str) -> None:
        super().__init__(description=description)

    def __str__(self) -> str:
        return f"archive: {self.description}"


def history_digest(commits: Iterable[ArchivedCommit]) -> str:
    """SHA-256 over every commit's sequence, length and bytes, in order."""
    digest = hashlib.sha256()
    for commit in commits:
        digest.update(commit.sequence.to_bytes(8, "big"))
        digest.update(len(commit.data).to_bytes(4, "big"))
        digest.update(commit.data)
    return digest.hexdigest()


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(ArchivedGame).decode


def pack(game: ArchivedGame) -> bytes:
    """An archive message."""
    return FORMAT + lzma.compress(_encode(game))


def unpack(data: bytes) -> ArchivedGame:
    """An archive message read back, its digest checked (:class:`ArchiveError` if it is not
    one, or does not match)."""
    if not data.startswith(FORMAT):
        raise ArchiveError(f"not an archive message: {data[:32]!r}")
    try:
        game = _decode(lzma.decompress(data[len(FORMAT) :]))
    except (lzma.LZMAError, msgspec.DecodeError, msgspec.ValidationError) as error:
        raise ArchiveError(f"an unreadable archive message: {error}") from None
    if history_digest(game.commits) != game.digest:
        raise ArchiveError(f"the archived history of {game.game_id} does not match its digest")
    return game


ARCHIVE = History(ARCHIVE_STREAM, archive_subject, unpack)


def archive_stream_config(replicas: int = 1) -> api.StreamConfig:
    """The one definition of the archive stream: a stream of histories, as the game streams
    were before archiving (no deletes, no purges, no limits)."""
    config = history_stream_config(ARCHIVE_STREAM, ARCHIVE_SUBJECTS, replicas)
    config.max_msg_size = MAX_ARCHIVE_BYTES
    return config


class GameArchive:
    """The archived histories, read on demand; the last few read are kept decoded."""

    def __init__(self, js: JetStreamContext, held: int = HELD) -> None:
        self.store = JetStreamEventStore(js, ARCHIVE)
        self._capacity = held
        self._held: OrderedDict[str, ArchivedGame] = OrderedDict()

    async def find(self, game_id: str) -> Stored[ArchivedGame] | None:
        """The game's last archived history, with its sequence in the archive; None when it
        has none (or no game has been archived yet)."""
        try:
            found = await self.store.last(game_id)
        except nats.js.errors.NotFoundError:  # the stream itself: nothing archived yet
            return None
        if found is not None:
            self._keep(found.commit)
        return found

    async def through(self, game_id: str, sequence: int) -> list[ArchivedCommit]:
        """The archived commits of a game up to, and not including, the one at ``sequence``,
        which its archived history must hold (the first commit its partition stream still
        holds); :class:`ArchiveError` when it does not."""
        held = self._held.get(game_id)
        if held is None or not _holds(held, sequence):
            found = await self.find(game_id)
            if found is None:
                raise ArchiveError(
                    f"game {game_id} begins at stream sequence {sequence}: its earlier commits "
                    "were archived, and the archive has none of them"
                )
            held = found.commit
            if not _holds(held, sequence):
                raise ArchiveError(
                    f"game {game_id} begins at stream sequence {sequence} in its stream, which "
                    f"its archived history (up to {held.last_sequence}) does not hold"
                )
        self._held.move_to_end(game_id)
        return [commit for commit in held.commits if commit.sequence < sequence]

    async def before(self, game_id: str, sequence: int) -> list[ArchivedCommit]:
        """The archived commits of a game before the one at ``sequence``, when its archived
        history holds that one (it is the first its stream kept); none otherwise."""
        held = self._held.get(game_id)
        if held is None or not _holds(held, sequence):
            found = await self.find(game_id)
            if found is None or not _holds(found.commit, sequence):
                return []
            held = found.commit
        return [commit for commit in held.commits if commit.sequence < sequence]

    async def commit(self, game_id: str, sequence: int) -> ArchivedCommit | None:
        """One archived commit of a game, by its stream sequence (None: not archived)."""
        held = self._held.get(game_id)
        if held is None or held.last_sequence < sequence:
            found = await self.find(game_id)
            held = found.commit if found is not None else None
        if held is None:
            return None
        return next((commit for commit in held.commits if commit.sequence == sequence), None)

    def _keep(self, game: ArchivedGame) -> None:
        self._held[game.game_id] = game
        self._held.move_to_end(game.game_id)
        while len(self._held) > self._capacity:
            self._held.popitem(last=False)


def _holds(game: ArchivedGame, sequence: int) -> bool:
    return any(commit.sequence == sequence for commit in reversed(game.commits))
