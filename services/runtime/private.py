"""Files a deployment writes are its user's alone: directories 0700, files 0600.

The data directory holds the read-model database (every hand in progress, sealed, and the
webhook endpoints), the seat-token key and the embedded server's JetStream store (every
game's history, deals and seeds included). ``spades up`` and ``spades serve`` set the umask
:data:`PRIVATE_UMASK`, which their children (the services, ``nats-server``) inherit, so what
they create is private; what an earlier version left readable is made private at start
(:func:`private_dir`, :func:`private_file`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PRIVATE_UMASK = 0o077
"""Nothing for the group or others: new directories are 0700, new files 0600."""
DIRECTORY_MODE = 0o700
FILE_MODE = 0o600


def private_umask() -> None:
    """Make everything this process (and every child it starts) creates from now on private."""
    os.umask(PRIVATE_UMASK)


def private_dir(path: Path) -> Path:
    """``path`` made (with its parents) if missing, and 0700 (a directory of another user is
    left as it is: it is not ours to change)."""
    path.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    with contextlib.suppress(PermissionError):
        path.chmod(DIRECTORY_MODE)
    return path


def private_file(path: Path, *, create: bool = False) -> None:
    """Make ``path`` 0600 if it exists (created empty and 0600 first with ``create``)."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    with contextlib.suppress(FileNotFoundError, PermissionError):
        path.chmod(FILE_MODE)
