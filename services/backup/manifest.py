"""The manifest of a backup: what it holds, each file with its SHA-256, what it leaves out, and,
for an increment, the backup it extends.

Written last, so a folder without one is no backup (an interrupted one). ``format`` goes up
when the layout changes in a way an older ``spades restore`` could misread. A full backup is
still written in format 1, which every version reads as it always did. An increment is format 2:
a version that reads only format 1 refuses it by that number, where it would otherwise take its
streams, which start after sequence 1, for whole ones.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import msgspec

FULL = 1
"""The format of a full backup."""
INCREMENT = 2
"""The format of an increment: a backup of what is new since another (:class:`Base`)."""
READS = (FULL, INCREMENT)
MANIFEST_FILE = "manifest.json"
CHUNK_BYTES = 1 << 20


class BackupError(Exception):
    """A backup that cannot be taken, or restored, as asked; nothing was changed."""


class StreamIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """A stream at one point of its history: which stream (its name and when NATS made it: a
    stream made anew under the same name is another stream) and how far."""

    name: str
    created: str
    last_sequence: int


class StreamCopy(msgspec.Struct, frozen=True, kw_only=True):
    """One stream's messages from ``first_sequence`` to ``last_sequence``, in the file ``file``
    (one JSON line each): the whole stream in a full backup, what came after the base in an
    increment."""

    name: str
    file: str
    subjects: list[str]
    messages: int
    first_sequence: int = 1
    last_sequence: int
    created: str
    """When the original stream was made (the restored one is made anew)."""
    sha256: str
    bytes: int

    def identity(self) -> StreamIdentity:
        return StreamIdentity(
            name=self.name, created=self.created, last_sequence=self.last_sequence
        )


class KeptCopy(msgspec.Struct, frozen=True, kw_only=True):
    """One thing kept outside the streams, in the file ``file``."""

    name: str
    file: str
    sha256: str
    source: str
    """Where the backed-up deployment kept it."""


class Base(msgspec.Struct, frozen=True, kw_only=True):
    """The backup an increment extends: its manifest's SHA-256 (which covers, through the
    manifest's digests, every file of it), when it was made, and its streams as it left them."""

    manifest_sha256: str
    made_at: str
    streams: list[StreamIdentity]


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    format: int
    made_at: str
    partitions: int = 1
    """The game stream's partitions in the deployment backed up (1 before partitions)."""
    base: Base | None = None
    """None for a full backup; the backup this one extends for an increment."""
    streams: list[StreamCopy]
    outside: list[KeptCopy]
    not_kept: dict[str, str]
    """What a backup leaves out on purpose, and how the restored deployment gets it back."""


@dataclass(frozen=True)
class Backup:
    """A backup as found in its folder: the manifest, and the SHA-256 of its bytes (what an
    increment of it records)."""

    folder: Path
    manifest: Manifest
    digest: str


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(folder: Path, manifest: Manifest) -> None:
    temporary = folder / f".{MANIFEST_FILE}.partial"
    temporary.write_bytes(msgspec.json.format(msgspec.json.encode(manifest)) + b"\n")
    os.replace(temporary, folder / MANIFEST_FILE)


def read_backup(folder: Path, *, check_files: bool = True) -> Backup:
    """The backup in ``folder``, its manifest checked for sense and, with ``check_files``, every
    file it names checked against its digest."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise BackupError(f"{folder} holds no {MANIFEST_FILE}: not a backup, or an unfinished one")
    content = path.read_bytes()
    try:
        manifest = msgspec.json.decode(content, type=Manifest)
    except msgspec.DecodeError as error:
        raise BackupError(f"{path} is not a manifest this version reads: {error}") from None
    if manifest.format not in READS:
        raise BackupError(f"{path} is format {manifest.format}; this version reads {READS}")
    _check_sense(path, manifest)
    if check_files:
        _check_files(folder, manifest)
    return Backup(folder=folder, manifest=manifest, digest=hashlib.sha256(content).hexdigest())


def _check_sense(path: Path, manifest: Manifest) -> None:
    """Refuse a manifest whose numbers contradict each other (written by hand, or damaged)."""
    if (manifest.base is None) != (manifest.format == FULL):
        kind = "a full backup" if manifest.base is None else "an increment"
        raise BackupError(f"{path} is format {manifest.format} but says it is {kind}")
    for copy in manifest.streams:
        first = copy.first_sequence
        if manifest.base is None and first != 1:
            raise BackupError(f"{path}: a full backup's {copy.name} starts at {first}, not 1")
        # Fewer messages than sequences: what archiving purged (:mod:`.stream_copy`).
        if first < 1 or copy.messages < 0 or copy.messages > copy.last_sequence - first + 1:
            raise BackupError(
                f"{path}: {copy.name} cannot hold {copy.messages} messages from {first} to "
                f"{copy.last_sequence}"
            )


def _check_files(folder: Path, manifest: Manifest) -> None:
    path = folder / MANIFEST_FILE
    for name, digest in [
        *((copy.file, copy.sha256) for copy in manifest.streams),
        *((copy.file, copy.sha256) for copy in manifest.outside),
    ]:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise BackupError(f"{path} names {name!r}, outside the backup")
        file = folder / name
        if not file.is_file():
            raise BackupError(f"{file} is missing from the backup")
        if file_digest(file) != digest:
            raise BackupError(f"{file} does not match its digest in the manifest: damaged")
