"""What a deployment holds outside its streams, that a backup must carry: one list, extended by
each feature that keeps such a thing.

Each :class:`Kept` saves itself into the backup folder, checks before a restore changes anything
that it can be put back without overwriting something else, and is put back: the signing key of
seat tokens, the platforms' webhook endpoints (:mod:`.webhook_endpoints`), and the audit log
(:mod:`.audit_log`), a record the workers may not recompute. Other things kept
in the database that no stream holds are added here as they come.

What a backup leaves out on purpose is :data:`NOT_KEPT`, with how the restored deployment gets
it back; the manifest repeats it for whoever reads a backup.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from pathlib import Path
from typing import Protocol

from services.backup.manifest import BackupError, KeptCopy
from services.runtime.settings import SIGNING_KEY_BYTES, SIGNING_KEY_FILENAME, Settings


class Kept(Protocol):
    """One thing a backup carries beside the streams."""

    name: str
    file: str
    """Its file in the backup folder."""
    before_streams: bool
    """Saved before the streams are copied rather than after: what must hold nothing the
    copied streams lack (the audit log)."""

    async def save(self, settings: Settings, folder: Path) -> KeptCopy:
        """Copy it from the deployment ``settings`` describe into ``folder``."""
        ...

    async def check(self, settings: Settings, folder: Path, copy: KeptCopy) -> None:
        """Raise :class:`BackupError` if it cannot be restored into the deployment ``settings``
        describe; change nothing."""
        ...

    async def restore(self, settings: Settings, folder: Path, copy: KeptCopy) -> str:
        """Put it back; say what was done."""
        ...


class SigningKey:
    """The key that signs seat tokens (``secret.key``, or ``SPADES_SECRET_KEY``). Without the
    same key, every seat token issued before the backup is refused after the restore."""

    name = "signing key"
    file = SIGNING_KEY_FILENAME
    before_streams = False

    async def save(self, settings: Settings, folder: Path) -> KeptCopy:
        if settings.secret_key is not None:
            key, source = settings.secret_key.encode(), "SPADES_SECRET_KEY"
        else:
            path = settings.data_dir / SIGNING_KEY_FILENAME
            if not path.is_file():
                raise BackupError(
                    f"no signing key at {path} and SPADES_SECRET_KEY is not set: point "
                    "SPADES_DATA_DIR (or SPADES_SECRET_KEY) at the deployment's key"
                )
            key, source = path.read_bytes(), f"{SIGNING_KEY_FILENAME} in the data directory"
        write_private(folder / self.file, key)
        return KeptCopy(
            name=self.name, file=self.file, sha256=hashlib.sha256(key).hexdigest(), source=source
        )

    async def check(self, settings: Settings, folder: Path, copy: KeptCopy) -> None:
        key = (folder / copy.file).read_bytes()
        if settings.secret_key is not None:
            if settings.secret_key.encode() != key:
                raise BackupError(
                    "SPADES_SECRET_KEY here is not the backed-up signing key: seat tokens issued "
                    f"before the backup would be refused. Set it to the key in {copy.file}"
                )
            return
        path = settings.data_dir / SIGNING_KEY_FILENAME
        if len(key) != SIGNING_KEY_BYTES:
            raise BackupError(
                f"the backed-up signing key came from {copy.source}: set SPADES_SECRET_KEY to "
                f"the contents of {folder / copy.file} for the restored deployment"
            )
        if path.exists() and path.read_bytes() != key:
            raise BackupError(
                f"{path} holds another signing key: move it away first (seat tokens signed with "
                "it would be refused after the restore)"
            )

    async def restore(self, settings: Settings, folder: Path, copy: KeptCopy) -> str:
        if settings.secret_key is not None:
            return "signing key: SPADES_SECRET_KEY holds it already"
        path = settings.data_dir / SIGNING_KEY_FILENAME
        if path.exists():
            return f"signing key: {path} holds it already"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, (folder / copy.file).read_bytes())
        return f"signing key: written to {path}"


def _outside() -> tuple[Kept, ...]:
    from services.backup.audit_log import AuditLog
    from services.backup.webhook_endpoints import WebhookEndpoints

    return (SigningKey(), WebhookEndpoints(), AuditLog())


OUTSIDE_THE_STREAM: tuple[Kept, ...] = _outside()
"""Everything a backup carries beside the streams, in the order it is restored."""

NOT_KEPT: dict[str, str] = {
    "read models": "rebuilt from the restored streams by the projection workers (all but the "
    "audit log, which the backup carries); a database kept from before refuses the new streams "
    "until `spades projections rebuild --all`",
    "the audit log's private key": "kept by the operator (SPADES_LOG_KEY or log.key in the "
    "data directory): the restored deployment needs it to sign under the same key",
    "durable consumers": "made again by the projection workers at their positions",
    "webhook deliveries": "the log of what was sent is history: the restored endpoints hear of "
    "what is committed after the restored streams",
    "broker credentials": "issued anew where the restored deployment runs: they are the "
    "broker's configuration, and a backup carrying them would spread live secrets",
    "platform keys (SPADES_API_KEYS)": "configuration, set where the deployment runs",
}
"""What a backup leaves out on purpose, and how the restored deployment gets it back."""


def write_private(path: Path, content: bytes) -> None:
    """Write ``path`` readable by its owner only, whole or not at all (never over a file)."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(content)
        os.link(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
