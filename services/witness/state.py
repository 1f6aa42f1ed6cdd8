"""What a witness keeps on disk: the latest checkpoint it cosigned of each log, and the
requests it refused as forks (its evidence).

The state is written whole to a temporary file, flushed to the disk and renamed over the old
one before the witness answers with a cosignature: a witness that cosigned must never forget
it did, or a restart would let it cosign a fork of the same size. Files are the witness's user's
only (mode 0600).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from services.witness.witnessing import Witnessed


class WitnessState:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._latest = self.directory / "latest.json"
        self._evidence = self.directory / "evidence.log"

    def load(self) -> dict[str, Witnessed]:
        if not self._latest.exists():
            return {}
        kept = json.loads(self._latest.read_text())
        return {
            origin: Witnessed(origin, entry["size"], base64.b64decode(entry["root"]), entry["note"])
            for origin, entry in kept.items()
        }

    def save(self, latest: dict[str, Witnessed]) -> None:
        document = {
            origin: {
                "size": witnessed.size,
                "root": base64.b64encode(witnessed.root).decode(),
                "note": witnessed.note,
            }
            for origin, witnessed in sorted(latest.items())
        }
        written = self._latest.with_suffix(".tmp")
        descriptor = os.open(written, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump(document, file, indent=1)
            file.flush()
            os.fsync(file.fileno())
        os.replace(written, self._latest)
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def keep_evidence(self, request: str, reason: str) -> None:
        """A refused request that a log signed (a fork or a rewrite), with the reason."""
        descriptor = os.open(self._evidence, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "a") as file:
            file.write(json.dumps({"reason": reason.strip(), "request": request}) + "\n")
