"""Taking a backup of a deployment, and restoring one into an empty deployment.

The order of a backup: the game stream, then the league stream, each up to its last message at
the moment it is copied, then what lives outside the streams, then the manifest. Games first:
a league schedules a round before its tables' games are created, so every game in the backup has
its round in it too; a round scheduled after the games were copied comes back with games still
to create, which the platform's retry of that round's request (same ``Idempotency-Key``)
finishes, as after any interrupted start of a round. The streams need not be stopped.

The order of a restore: read the manifest and check every file against its digest, check that
each stream is absent or empty and that each thing kept outside can be put back without
overwriting anything, and only then publish the streams and put back the rest. Start the
engines and the projection workers afterwards: a restore refuses a stream that is being
written to.
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
from contracts.wire import LEAGUES_STREAM
from services.backup.manifest import (
    FORMAT,
    BackupError,
    Manifest,
    StreamCopy,
    read_manifest,
    write_manifest,
)
from services.backup.outside import NOT_KEPT, OUTSIDE_THE_STREAM
from services.backup.stream_copy import Progress, export_stream, import_stream
from services.runtime.game_stream import deployed_partitions, games_stream_config
from services.runtime.league_stream import leagues_stream_config
from services.runtime.nats import ensure_stream
from services.runtime.settings import Settings


def streams_of(partitions: Partitions) -> dict[str, Callable[[int], api.StreamConfig]]:
    """Every stream a backup of a deployment of ``partitions`` copies, in order (each game
    partition, then the leagues), with its definition (given the replicas)."""
    streams: dict[str, Callable[[int], api.StreamConfig]] = {
        partitions.stream(p): functools.partial(_partition_config, partitions, p)
        for p in partitions.indexes
    }
    streams[LEAGUES_STREAM] = leagues_stream_config
    return streams


def _partition_config(partitions: Partitions, partition: int, replicas: int) -> api.StreamConfig:
    return games_stream_config(replicas, partitions=partitions, partition=partition)


STREAMS = streams_of(ONE)
"""The streams of a deployment of one partition."""

Report = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


async def take_backup(
    settings: Settings, client: Client, folder: Path, report: Report = _quiet
) -> Manifest:
    """Back up the deployment that ``settings`` and ``client`` reach into ``folder``, which must
    not exist or be empty."""
    await asyncio.to_thread(_empty_folder, folder)
    js = client.jetstream()
    layout = await deployed_partitions(js, settings.layout)
    streams: list[StreamCopy] = []
    for name in streams_of(layout):
        try:
            info = await js.stream_info(name)
        except nats.js.errors.NotFoundError:
            raise BackupError(f"NATS has no stream {name}: has an engine ever started?") from None
        copy = await export_stream(js, info, folder, _counting(report, name))
        report(f"{name}: {copy.messages} messages, up to sequence {copy.last_sequence}")
        streams.append(copy)
    outside = [await kept.save(settings, folder) for kept in OUTSIDE_THE_STREAM]
    for item in outside:
        report(f"{item.name}: from {item.source}")
    manifest = Manifest(
        format=FORMAT,
        made_at=datetime.now(UTC).isoformat(timespec="seconds"),
        partitions=layout.count,
        streams=streams,
        outside=outside,
        not_kept=NOT_KEPT,
    )
    write_manifest(folder, manifest)
    return manifest


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
    settings: Settings, client: Client, folder: Path, report: Report = _quiet
) -> Restored:
    """Restore the backup in ``folder`` into the deployment ``settings`` and ``client`` reach:
    streams absent or empty, nothing outside them that the backup would overwrite."""
    manifest = await asyncio.to_thread(read_manifest, folder)
    if manifest.partitions != settings.partitions:
        raise BackupError(
            f"the backup is of a deployment of {manifest.partitions} partition(s), this one has "
            f"{settings.partitions}: restore with SPADES_PARTITIONS={manifest.partitions} (then "
            "`spades partitions migrate` to change it)"
        )
    streams = streams_of(settings.layout)
    js = client.jetstream()
    for copy in manifest.streams:
        if copy.name not in streams:
            raise BackupError(f"the backup holds stream {copy.name}, which this version lacks")
        await _check_empty(js, copy.name)
    kept = {item.name: item for item in OUTSIDE_THE_STREAM}
    for outside in manifest.outside:
        if outside.name not in kept:
            raise BackupError(f"the backup holds a {outside.name}, which this version lacks")
        await kept[outside.name].check(settings, folder, outside)

    restored = Restored()
    for copy in manifest.streams:
        await ensure_stream(js, streams[copy.name](settings.stream_replicas))
        count = await import_stream(js, copy, folder, _counting(report, copy.name))
        restored.messages[copy.name] = count
        report(f"{copy.name}: {count} messages restored, up to sequence {copy.last_sequence}")
    for outside in manifest.outside:
        done = await kept[outside.name].restore(settings, folder, outside)
        restored.outside.append(done)
        report(done)
    return restored


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
