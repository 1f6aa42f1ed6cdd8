"""A full backup and the increments that extend it, one after another: what an increment records
of its base, and the checks that a chain of them restores one history of each stream.

An increment names its base by the SHA-256 of the base's manifest, and that manifest names each
of the base's files by its own SHA-256: one digest pins the whole base, and each link of a chain
pins the one before, back to the full backup. The increment also records each stream as its base
left it (name, creation time, last sequence): it copies only from the very streams its base
copied, each from the sequence after the base's last. A stream made anew under the same name (a
reset, a restore, a move into partitions) is another history, which only a full backup starts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from services.backup.manifest import MANIFEST_FILE, Backup, BackupError, Base, read_backup

FULL_NEEDED = "take a full backup (without --since)"


def base_of(backup: Backup) -> Base:
    """What an increment of ``backup`` records of it."""
    return Base(
        manifest_sha256=backup.digest,
        made_at=backup.manifest.made_at,
        streams=[copy.identity() for copy in backup.manifest.streams],
    )


def check_extendable(base: Backup, partitions: int, streams: Sequence[str]) -> None:
    """Refuse an increment of ``base`` in a deployment of ``partitions`` whose streams are
    ``streams``, unless they are the ones the base copied."""
    copied = [copy.name for copy in base.manifest.streams]
    if base.manifest.partitions != partitions or copied != list(streams):
        raise BackupError(
            f"{base.folder} copied the streams {', '.join(copied)} ({base.manifest.partitions} "
            f"partition(s)); the deployment has {', '.join(streams)} ({partitions}): "
            f"{FULL_NEEDED}"
        )


def check_same_stream(base: Backup, name: str, created: str, last: int) -> int:
    """The last sequence ``base`` copied of stream ``name``, which NATS says was made at
    ``created`` and holds ``last`` messages; refuse a stream that is not the one it copied."""
    copy = next(c for c in base.manifest.streams if c.name == name)
    if not created or created != copy.created:
        raise BackupError(
            f"stream {name} was made at {created or 'an unknown time'}; {base.folder} copied the "
            f"one made at {copy.created}: it was made anew since (a reset, a restore), and "
            f"nothing in it extends that backup: {FULL_NEEDED}"
        )
    if last < copy.last_sequence:
        raise BackupError(
            f"stream {name} ends at {last}, before the {copy.last_sequence} {base.folder} "
            f"copied: it is not the stream that backup copied: {FULL_NEEDED}"
        )
    return copy.last_sequence


def read_chain(folders: Sequence[Path]) -> list[Backup]:
    """The backups in ``folders``, a full backup then its increments in the order they were
    taken, each with every file checked against its digest and each link against the one
    before."""
    if not folders:
        raise BackupError("no backup to restore")
    chain = [read_backup(folder) for folder in folders]
    first = chain[0]
    if first.manifest.base is not None:
        raise BackupError(
            f"{first.folder} is an increment: a restore starts from the full backup, then its "
            f"increments in order; {_wanted(first)}"
        )
    for before, after in pairwise(chain):
        _check_link(before, after, chain)
    return chain


def _check_link(before: Backup, after: Backup, chain: Sequence[Backup]) -> None:
    """Refuse ``after`` unless it is an increment of ``before``, stream for stream."""
    base = after.manifest.base
    if base is None:
        raise BackupError(
            f"{after.folder} is a full backup: a chain holds one, first, and increments after "
            f"it ({before.folder} is given before it)"
        )
    if base.manifest_sha256 != before.digest:
        given = next((b for b in chain if b.digest == base.manifest_sha256), None)
        if given is not None:
            raise BackupError(
                f"{after.folder} extends {given.folder}, not {before.folder}: give the backups "
                "in the order they were taken, the full backup first"
            )
        raise BackupError(
            f"{after.folder} does not extend {before.folder}: an increment is missing between "
            f"them, or it is another deployment's; {_wanted(after)}"
        )
    if after.manifest.partitions != before.manifest.partitions:
        raise BackupError(f"{after.folder} and {before.folder} differ in their partitions")
    if base.streams != [copy.identity() for copy in before.manifest.streams]:
        raise BackupError(f"{after.folder} records its base's streams unlike {before.folder}")
    if [c.name for c in after.manifest.streams] != [c.name for c in before.manifest.streams]:
        raise BackupError(f"{after.folder} holds other streams than {before.folder}")
    for earlier, later in zip(before.manifest.streams, after.manifest.streams, strict=True):
        if later.created != earlier.created or later.first_sequence != earlier.last_sequence + 1:
            raise BackupError(
                f"{after.folder}'s {later.name} (made at {later.created}, from "
                f"{later.first_sequence}) does not follow {before.folder}'s (made at "
                f"{earlier.created}, up to {earlier.last_sequence})"
            )


def _wanted(increment: Backup) -> str:
    """Which backup ``increment`` extends, and where it is if it sits beside it."""
    base = increment.manifest.base
    assert base is not None
    said = (
        f"it extends the backup made at {base.made_at}, whose {MANIFEST_FILE} has SHA-256 "
        f"{base.manifest_sha256}"
    )
    found = _beside(increment.folder, base.manifest_sha256)
    return f"{said}: {found}" if found is not None else said


def _beside(folder: Path, digest: str) -> Path | None:
    """The backup folder next to ``folder`` whose manifest has SHA-256 ``digest``, if any."""
    for candidate in sorted(folder.parent.iterdir()):
        manifest = candidate / MANIFEST_FILE
        if manifest.is_file() and hashlib.sha256(manifest.read_bytes()).hexdigest() == digest:
            return candidate
    return None
