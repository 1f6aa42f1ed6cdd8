"""The manifest of a backup: what it holds, each file with its SHA-256, and what it leaves out.

Written last, so a folder without one is no backup (an interrupted one). ``format`` goes up
when the layout changes in a way an older ``spades restore`` could not read.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

FORMAT = 1
MANIFEST_FILE = "manifest.json"
CHUNK_BYTES = 1 << 20


class BackupError(Exception):
    """A backup that cannot be taken, or restored, as asked; nothing was changed."""


class StreamCopy(msgspec.Struct, frozen=True, kw_only=True):
    """One stream's messages, in the file ``file`` (one JSON line each)."""

    name: str
    file: str
    subjects: list[str]
    messages: int
    last_sequence: int
    created: str
    """When the original stream was made (the restored one is made anew)."""
    sha256: str
    bytes: int


class KeptCopy(msgspec.Struct, frozen=True, kw_only=True):
    """One thing kept outside the streams, in the file ``file``."""

    name: str
    file: str
    sha256: str
    source: str
    """Where the backed-up deployment kept it."""


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    format: int
    made_at: str
    partitions: int = 1
    """The game stream's partitions in the deployment backed up (1 before partitions)."""
    streams: list[StreamCopy]
    outside: list[KeptCopy]
    not_kept: dict[str, str]
    """What a backup leaves out on purpose, and how the restored deployment gets it back."""


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


def read_manifest(folder: Path) -> Manifest:
    """The manifest of the backup in ``folder``, with every file it names checked against its
    digest."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        raise BackupError(f"{folder} holds no {MANIFEST_FILE}: not a backup, or an unfinished one")
    try:
        manifest = msgspec.json.decode(path.read_bytes(), type=Manifest)
    except msgspec.DecodeError as error:
        raise BackupError(f"{path} is not a manifest this version reads: {error}") from None
    if manifest.format != FORMAT:
        raise BackupError(f"{path} is format {manifest.format}; this version reads {FORMAT}")
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
    return manifest
