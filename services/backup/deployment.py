"""Taking a backup of a deployment, full or an increment, and restoring a chain of them into an
empty deployment.

The order of a backup: the audit log (what lives outside the streams but may hold nothing the
copied streams lack), then the game stream, then the league stream, each up to its last message
at the moment it is copied, then the rest of what lives outside the streams, then the manifest.
Games first: a league schedules a round before its tables' games are created, so every game in
the backup has its round in it too; a round scheduled after the games were copied comes back
with games still to create, which the platform's retry of that round's request (same
``Idempotency-Key``) finishes, as after any interrupted start of a round. The streams need not
be stopped.

An increment (``since``, another backup) copies of each stream only the messages after those its
base copied, and only from the very streams its base copied (:mod:`.chain`); what lives outside
the streams is small, and copied whole into every backup. Only the base's manifest is read: its
files may be kept elsewhere, and a restore checks them all.

The order of a restore: read every manifest of the chain and check every file against its
digest and each increment against the backup before it, check that each stream is absent or
empty and that each thing kept outside (as the last backup has it) can be put back without
overwriting anything, and only then publish the streams, each backup's messages after the one
before's, and put back the rest. Start the engines and the projection workers afterwards: a
restore refuses a stream that is being written to.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import nats.js.errors
from nats.aio.client import Client
from nats.js import api

from contracts.partitions import ONE, Partitions
from contracts.wire import ARCHIVE_STREAM, LEAGUES_STREAM
from services.backup.chain import base_of, check_extendable, check_same_stream, read_chain
from services.backup.manifest import (
    FULL,
    INCREMENT,
    Backup,
    BackupError,
    Manifest,
    StreamCopy,
    read_backup,
    write_manifest,
)
from services.backup.outside import NOT_KEPT, OUTSIDE_THE_STREAM
from services.backup.stream_copy import Progress, export_stream, import_stream, stream_created
from services.runtime.game_archive import archive_stream_config
from services.runtime.game_stream import deployed_partitions, games_stream_config
from services.runtime.league_stream import leagues_stream_config
from services.runtime.nats import ensure_stream
from services.runtime.settings import Settings


def streams_of(partitions: Partitions) -> dict[str, Callable[[int], api.StreamConfig]]:
    """Every stream a backup of a deployment of ``partitions`` copies, in order (each game
    partition, the leagues, then the archive of finished games), with its definition (given
    the replicas)."""
    streams: dict[str, Callable[[int], api.StreamConfig]] = {
        partitions.stream(p): functools.partial(_partition_config, partitions, p)
        for p in partitions.indexes
    }
    streams[LEAGUES_STREAM] = leagues_stream_config
    streams[ARCHIVE_STREAM] = archive_stream_config
    return streams


def _partition_config(partitions: Partitions, partition: int, replicas: int) -> api.StreamConfig:
    return games_stream_config(replicas, partitions=partitions, partition=partition)


STREAMS = streams_of(ONE)
"""The streams of a deployment of one partition."""

Report = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


async def take_backup(
    settings: Settings,
    client: Client,
    folder: Path,
    report: Report = _quiet,
    *,
    since: Path | None = None,
) -> Manifest:
    """Back up the deployment that ``settings`` and ``client`` reach into ``folder``, which must
    not exist or be empty: every message of its streams, or, ``since`` another backup, those
    after it (an increment of it)."""
    base = await asyncio.to_thread(read_backup, since, check_files=False) if since else None
    js = client.jetstream()
    layout = await deployed_partitions(js, settings.layout)
    names = list(streams_of(layout))
    if base is not None:  # every stream, before anything is written
        check_extendable(base, layout.count, names)
        for name in names:
            await _copied_since(js, base, name)
    await asyncio.to_thread(_empty_folder, folder)
    early = {
        kept.name: await kept.save(settings, folder)
        for kept in OUTSIDE_THE_STREAM
        if kept.before_streams
    }
    streams: list[StreamCopy] = []
    for name in names:
        info = await _stream_info(js, name)
        after = 0 if base is None else await _copied_since(js, base, name, info)
        copy = await export_stream(js, info, folder, _counting(report, name), after=after)
        report(f"{name}: {_copied(copy)}")
        streams.append(copy)
    outside = [
        early.get(kept.name) or await kept.save(settings, folder) for kept in OUTSIDE_THE_STREAM
    ]
    for item in outside:
        report(f"{item.name}: from {item.source}")
    manifest = Manifest(
        format=FULL if base is None else INCREMENT,
        made_at=datetime.now(UTC).isoformat(timespec="seconds"),
        partitions=layout.count,
        base=None if base is None else base_of(base),
        streams=streams,
        outside=outside,
        not_kept=NOT_KEPT,
    )
    write_manifest(folder, manifest)
    return manifest


async def _stream_info(js: nats.js.JetStreamContext, name: str) -> api.StreamInfo:
    try:
        return await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        raise BackupError(f"NATS has no stream {name}: has an engine ever started?") from None


async def _copied_since(
    js: nats.js.JetStreamContext, base: Backup, name: str, info: api.StreamInfo | None = None
) -> int:
    """The last sequence of stream ``name`` that ``base`` copied; refuse another stream."""
    info = info or await _stream_info(js, name)
    last = int(info.state.last_seq or 0)
    return check_same_stream(base, name, stream_created(info), last)


def _copied(copy: StreamCopy) -> str:
    if copy.first_sequence == 1:
        return f"{copy.messages} messages, up to sequence {copy.last_sequence}"
    return (
        f"{copy.messages} new messages, from sequence {copy.first_sequence} to {copy.last_sequence}"
    )


def _empty_folder(folder: Path) -> None:
    """Make ``folder``, private to its owner (it will hold the signing key), or check that it
    is empty."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BackupError(f"{folder} is not an empty folder: a backup never overwrites one")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)


@dataclass
class Restored:
    messages: dict[str, int] = field(default_factory=dict)
    outside: list[str] = field(default_factory=list)


async def restore_backup(
    settings: Settings,
    client: Client,
    base: Path,
    *increments: Path,
    report: Report = _quiet,
) -> Restored:
    """Restore the full backup in ``base``, then each of its ``increments`` in the order they
    were taken, into the deployment ``settings`` and ``client`` reach: streams absent or empty,
    nothing outside them that the backup would overwrite. Nothing is written unless the whole
    chain checks."""
    chain = await asyncio.to_thread(read_chain, [base, *increments])
    newest = chain[-1]
    if newest.manifest.partitions != settings.partitions:
        raise BackupError(
            f"the backup is of a deployment of {newest.manifest.partitions} partition(s), this "
            f"one has {settings.partitions}: restore with "
            f"SPADES_PARTITIONS={newest.manifest.partitions} (then `spades partitions migrate` "
            "to change it)"
        )
    streams = streams_of(settings.layout)
    js = client.jetstream()
    for copy in newest.manifest.streams:
        if copy.name not in streams:
            raise BackupError(f"the backup holds stream {copy.name}, which this version lacks")
        await _check_empty(js, copy.name)
    kept = {item.name: item for item in OUTSIDE_THE_STREAM}
    for outside in newest.manifest.outside:
        if outside.name not in kept:
            raise BackupError(f"the backup holds a {outside.name}, which this version lacks")
        await kept[outside.name].check(settings, newest.folder, outside)

    restored = Restored()
    for index, copy in enumerate(newest.manifest.streams):
        await ensure_stream(js, streams[copy.name](settings.stream_replicas))
        count = 0
        for backup in chain:
            count += await _import(js, backup, index, report)
        restored.messages[copy.name] = count
        report(
            f"{copy.name}: {count} messages restored from {len(chain)} backup(s), up to "
            f"sequence {copy.last_sequence}"
        )
    for outside in newest.manifest.outside:
        done = await kept[outside.name].restore(settings, newest.folder, outside)
        restored.outside.append(done)
        report(done)
    return restored


async def _import(js: nats.js.JetStreamContext, backup: Backup, index: int, report: Report) -> int:
    """Publish the messages of the ``index``-th stream of ``backup``."""
    copy = backup.manifest.streams[index]
    return await import_stream(js, copy, backup.folder, _counting(report, copy.name))


async def _check_empty(js: nats.js.JetStreamContext, name: str) -> None:
    try:
        info = await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        return
    if info.state.last_seq:
        raise BackupError(
            f"stream {name} already holds messages (up to {info.state.last_seq}): a backup is "
            "restored into an empty NATS only"
        )


PROGRESS_EVERY = 100_000
"""Messages between two progress lines of a long copy."""


def _counting(report: Report, stream: str) -> Progress:
    def progress(count: int) -> None:
        if count % PROGRESS_EVERY == 0:
            report(f"{stream}: {count} messages")

    return progress
