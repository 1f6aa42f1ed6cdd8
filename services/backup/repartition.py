"""Moving a deployment of one partition into K partitions (``spades partitions migrate``).

A deployment made with one partition (every deployment before partitions) keeps all its games in
the stream ``SPADES_GAMES``. To spread them over K partitions, every commit is copied, in the
stream's order, to the stream of its game's partition, byte for byte: the hash chains, the deal
commitments and the seeds are the commits' own, so every game audits as it did. Each copy is
published with the expected last sequence of its game's subject in the new stream, so a commit
can only land right after the one before it; every landing is checked (the stream and the
sequence it was meant for), and at the end each game's last commit in its new stream is compared
with its last commit in the old one.

The one-partition stream is kept, marked as moved (its metadata names the partitions), so no
process of the new layout reads it and an operator can still look at it; delete it once the new
deployment is trusted. Run the migration with the engines and workers stopped (nothing may
append meanwhile: an append to the old stream after the copy would be lost to the new layout,
and the copy refuses to finish if the old stream moved while it ran).

After it: start every process with ``SPADES_PARTITIONS=K``. Read models hold positions in the old
stream and refuse the new ones until rebuilt (the migration rebuilds them when it is given the
read-model database); the round watch and the timers start the new streams from their first
message (a table's end found again changes nothing); webhooks start each new stream at its end
(endpoints are not sent the history again).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import nats.js.errors
from nats.js import JetStreamContext, api

from contracts.partitions import LEGACY_STREAM, ONE, Partitions
from contracts.wire import ARCHIVE_STREAM
from services.backup.manifest import BackupError
from services.backup.stream_copy import stored_messages
from services.runtime.game_stream import MOVED_KEY, partition_stream_configs
from services.runtime.nats import ensure_stream

IN_FLIGHT = 512
ACK_TIMEOUT_S = 30.0

Report = Callable[[str], None]


class MigrationError(BackupError):
    """A migration that cannot be made as asked; the old stream is left as it was."""


@dataclass
class Moved:
    """What a migration copied."""

    commits: int = 0
    games: dict[str, int] = field(default_factory=dict)
    """Commits per game."""
    per_partition: list[int] = field(default_factory=list)


@dataclass
class _Target:
    """Where copies go in one partition's stream, and what has landed."""

    stream: str
    next_sequence: int = 1
    last_of_subject: dict[str, int] = field(default_factory=dict)


async def migrate_partitions(
    js: JetStreamContext,
    partitions: Partitions,
    replicas: int = 1,
    report: Report = lambda _: None,
) -> Moved:
    """Copy every game of the one-partition stream into ``partitions``' streams (see the
    module's docstring); raise :class:`MigrationError` (having changed nothing in the old
    stream) when it cannot."""
    if partitions.legacy:
        raise MigrationError("a migration moves games into more than one partition")
    try:
        old = await js.stream_info(LEGACY_STREAM)
    except nats.js.errors.NotFoundError:
        raise MigrationError(f"there is no {LEGACY_STREAM}: nothing to move") from None
    moved_to = (old.config.metadata or {}).get(MOVED_KEY)
    if moved_to:
        raise MigrationError(f"{LEGACY_STREAM} was moved into {moved_to} partitions already")
    await _check_nothing_archived(js)
    for stream in partitions.streams:
        await _check_absent_or_empty(js, stream)
    for config in partition_stream_configs(partitions, replicas):
        await ensure_stream(js, config)
    last = int(old.state.last_seq or 0)
    targets = [_Target(stream) for stream in partitions.streams]
    moved = await _copy(js, partitions, targets, last, report)
    await _verify(js, partitions, moved, last)
    after = await js.stream_info(LEGACY_STREAM)
    if int(after.state.last_seq or 0) != last:
        raise MigrationError(
            f"{LEGACY_STREAM} grew while it was copied (to {after.state.last_seq}, from {last}): "
            "stop every engine, delete the partition streams and migrate again"
        )
    config = after.config
    config.metadata = {**(config.metadata or {}), MOVED_KEY: str(partitions.count)}
    await js.update_stream(config)
    moved.per_partition = [target.next_sequence - 1 for target in targets]
    report(
        f"{moved.commits} commits of {len(moved.games)} games moved into "
        f"{partitions.count} partitions ({', '.join(map(str, moved.per_partition))})"
    )
    return moved


async def _check_nothing_archived(js: JetStreamContext) -> None:
    """Refuse to move games some of which are archived: an archived game's history is kept at
    the sequences of its stream, which a move changes (archive after the move, not before)."""
    try:
        archive = await js.stream_info(ARCHIVE_STREAM)
    except nats.js.errors.NotFoundError:
        return
    if archive.state.messages:
        raise MigrationError(
            f"{archive.state.messages} games are archived ({ARCHIVE_STREAM}): their histories "
            f"are kept at {LEGACY_STREAM}'s sequences, which a move would change"
        )


async def _check_absent_or_empty(js: JetStreamContext, stream: str) -> None:
    try:
        info = await js.stream_info(stream)
    except nats.js.errors.NotFoundError:
        return
    if info.state.messages:
        raise MigrationError(
            f"{stream} already holds {info.state.messages} messages (an interrupted migration?): "
            "delete the partition streams, then migrate again"
        )


async def _copy(
    js: JetStreamContext,
    partitions: Partitions,
    targets: list[_Target],
    last: int,
    report: Report,
) -> Moved:
    moved = Moved()
    pending: deque[tuple[str, int, asyncio.Future[api.PubAck]]] = deque()
    prefix = ONE.subject_prefix(0)
    try:
        async with contextlib.aclosing(stored_messages(js, LEGACY_STREAM, last)) as messages:
            async for message in messages:
                game_id = message.subject[len(prefix) :]
                if not message.subject.startswith(prefix) or not game_id:
                    raise MigrationError(f"message {message.sequence} is on {message.subject}")
                target = targets[partitions.of(game_id)]
                pending.append(await _send(js, partitions, target, game_id, message.data))
                moved.commits += 1
                moved.games[game_id] = moved.games.get(game_id, 0) + 1
                if len(pending) >= IN_FLIGHT:
                    await _landed(*pending.popleft())
                if moved.commits % 100_000 == 0:
                    report(f"{moved.commits} of {last} commits copied")
        while pending:
            await _landed(*pending.popleft())
    finally:
        for _, _, future in pending:
            future.cancel()
    return moved


async def _send(
    js: JetStreamContext, partitions: Partitions, target: _Target, game_id: str, data: bytes
) -> tuple[str, int, asyncio.Future[api.PubAck]]:
    """Publish one commit's copy to its game's subject in ``target``, expected right after the
    game's copy before it; what it should land as, and the future of its acknowledgement."""
    subject = partitions.game_subject(game_id)
    headers = {
        api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(
            target.last_of_subject.get(subject, 0)
        ),
        api.Header.EXPECTED_STREAM.value: target.stream,
    }
    future = await js.publish_async(subject, data, headers=headers)
    sequence = target.next_sequence
    target.last_of_subject[subject] = sequence
    target.next_sequence += 1
    return target.stream, sequence, future


async def _landed(stream: str, sequence: int, future: asyncio.Future[api.PubAck]) -> None:
    try:
        async with asyncio.timeout(ACK_TIMEOUT_S):
            ack = await future
    except TimeoutError:
        raise MigrationError(f"{stream}: copy {sequence} was not acknowledged") from None
    except Exception as error:
        raise MigrationError(f"{stream} refused copy {sequence}: {error}") from None
    if ack.stream != stream or ack.seq != sequence:
        raise MigrationError(
            f"copy {sequence} of {stream} landed at {ack.stream} {ack.seq}: is something else "
            "writing to the partitions?"
        )


async def _verify(js: JetStreamContext, partitions: Partitions, moved: Moved, last: int) -> None:
    """Every game holds as many commits in its partition as it did, ending with the same."""
    for stream in partitions.streams:
        info = await js.stream_info(stream, subjects_filter=">")
        counts = info.state.subjects or {}
        for subject, count in counts.items():
            game_id = subject.rsplit(".", 1)[1]
            if moved.games.get(game_id) != count:
                raise MigrationError(
                    f"{subject} holds {count} commits, not {moved.games.get(game_id)}"
                )
    for game_id in moved.games:
        old = await js.get_last_msg(LEGACY_STREAM, ONE.game_subject(game_id))
        home = partitions.stream(partitions.of(game_id))
        new = await js.get_last_msg(home, partitions.game_subject(game_id))
        if old.data != new.data or (old.seq or 0) > last:
            raise MigrationError(f"game {game_id}'s last commit differs after the move")
