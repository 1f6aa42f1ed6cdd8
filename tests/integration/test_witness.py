"""``spades witness serve`` as a process over HTTP (C2SP tlog-witness): it cosigns a growing
log, refuses a fork and keeps the request as evidence, and after a restart still knows what it
cosigned: a fork of the size it saw, offered to the restarted witness, is refused too."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from services.runtime.nats_server import free_port
from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import MerkleTree
from services.transparency.note import Signer, Verifier, open_note, signed_note
from services.witness.witnessing import request_text

pytestmark = pytest.mark.integration

ORIGIN = "spades.example/log/0"


class Witness:
    """The witness process, started and stopped as an operator would."""

    def __init__(self, directory: Path, log: Verifier) -> None:
        self.key_file = directory / "witness.key"
        self.state = directory / "state"
        self.log = log
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        made = subprocess.run(
            [*self.spades, "witness", "keys", "witness.example", "--out", str(self.key_file)],
            check=True,
            capture_output=True,
            text=True,
        )
        self.verifier = Verifier.parse(made.stdout)

    spades = (sys.executable, "-m", "services.cli.main")

    def start(self) -> None:
        argv = [*self.spades, "witness", "serve", "--key", str(self.key_file)]
        argv += ["--log", self.log.text(), "--state", str(self.state), "--port", str(self.port)]
        self.process = subprocess.Popen(argv)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/", timeout=1).raise_for_status()
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise TimeoutError("the witness did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def offer(self, tree: MerkleTree, key: Signer, old: int) -> httpx.Response:
        text = Checkpoint(ORIGIN, tree.size, tree.root()).text()
        note = signed_note(text, key.sign(text))
        body = request_text(old, tree.consistency_proof(old), note)
        url = f"http://127.0.0.1:{self.port}/add-checkpoint"
        return httpx.post(url, content=body.encode(), timeout=5)


@pytest.fixture
def log_key() -> Signer:
    return Signer.generate(ORIGIN)


@pytest.fixture
def witness(tmp_path: Path, log_key: Signer) -> Iterator[Witness]:
    running = Witness(tmp_path, log_key.verifier)
    running.start()
    yield running
    running.stop()


def grown(*entries: bytes) -> MerkleTree:
    tree = MerkleTree()
    for entry in entries:
        tree.append(entry)
    return tree


def test_it_cosigns_a_growing_log_and_remembers_across_a_restart(
    witness: Witness, log_key: Signer
) -> None:
    first = witness.offer(grown(b"hand 1", b"hand 2"), log_key, 0)
    assert first.status_code == 200, first.text
    tree = grown(b"hand 1", b"hand 2", b"hand 3")
    second = witness.offer(tree, log_key, 2)
    assert second.status_code == 200, second.text
    text = Checkpoint(ORIGIN, 3, tree.root()).text()
    opened = open_note(signed_note(text, log_key.sign(text)) + second.text, [witness.verifier])
    assert opened.cosigned_at.keys() == {"witness.example"}

    forked = grown(b"hand 1", b"hand 2 rewritten", b"hand 3", b"hand 4")
    refused = witness.offer(forked, log_key, 3)
    assert refused.status_code == 422
    evidence = (witness.state / "evidence.log").read_text()
    assert "does not extend" in evidence

    witness.stop()
    witness.start()
    same_size = grown(b"hand 1", b"hand 2", b"hand 3 rewritten")
    assert witness.offer(same_size, log_key, 3).status_code == 422
    stale = witness.offer(grown(b"hand 1", b"hand 2", b"hand 3", b"hand 4"), log_key, 2)
    assert (stale.status_code, stale.text) == (409, "3\n")
    assert stale.headers["content-type"].startswith("text/x.tlog.size")
    for kept in witness.state.iterdir():
        assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600, kept
    assert stat.S_IMODE(os.stat(witness.key_file).st_mode) == 0o600
