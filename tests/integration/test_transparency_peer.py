"""The audit log's tree, proofs and signed notes checked by a peer that is not our code: the Go
checksum database's packages (``golang.org/x/mod/sumdb/tlog`` and ``sumdb/note``, Debian's
golang-golang-x-mod-dev, which .ci/run installs with golang-go), driven through
tests/peers/sumdb/main.go. It computes its own tree heads from the entries, checks each of our
inclusion and consistency proofs and makes its own to compare, opens our signed checkpoint
with our published key, and signs a note with our signer key for us to open."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import MerkleTree
from services.transparency.note import Signer, open_note, signed_note

pytestmark = pytest.mark.integration

GOPATH = Path("/usr/share/gocode")
PEER = Path(__file__).parent.parent / "peers" / "sumdb" / "main.go"


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if go is None or not (GOPATH / "src/golang.org/x/mod/sumdb/tlog").is_dir():
        pytest.skip("no Go toolchain with x/mod (apt install golang-go golang-golang-x-mod-dev)")
    built = tmp_path_factory.mktemp("peer") / "sumdb-peer"
    environment = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": str(GOPATH),
        "GOCACHE": str(built.parent / "cache"),
        "GOFLAGS": "",
    }
    subprocess.run(
        [go, "build", "-o", str(built), str(PEER)], check=True, env=environment, timeout=300
    )
    return built


def ask(peer: Path, document: dict[str, Any]) -> dict[str, Any]:
    answer = subprocess.run(
        [str(peer)],
        check=False,
        input=json.dumps(document),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert answer.returncode == 0, answer.stderr
    found: dict[str, Any] = json.loads(answer.stdout)
    return found


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_the_peer_agrees_with_every_head_and_proof(peer: Path) -> None:
    entries = [b"hand %d of a game" % i for i in range(37)]
    tree = MerkleTree()
    for entry in entries:
        tree.append(entry)
    sizes = range(1, len(entries) + 1)
    inclusion = [
        {"index": index, "size": size, "proof": [b64(h) for h in tree.inclusion_proof(index, size)]}
        for size in sizes
        for index in range(size)
    ]
    consistency = [
        {"old": old, "size": size, "proof": [b64(h) for h in tree.consistency_proof(old, size)]}
        for size in sizes
        for old in range(1, size)
    ]
    found = ask(
        peer,
        {
            "entries": [b64(entry) for entry in entries],
            "heads": {str(size): b64(tree.root(size)) for size in sizes},
            "inclusion": inclusion,
            "consistency": consistency,
        },
    )
    assert found["failures"] is None
    assert found["heads"] == len(entries)
    assert found["inclusion"] == len(inclusion)
    assert found["consistency"] == len(consistency)
    assert found["same_proofs"] == len(inclusion) + len(consistency)


def test_the_peer_refuses_a_proof_we_changed(peer: Path) -> None:
    entries = [b"%d" % i for i in range(9)]
    tree = MerkleTree()
    for entry in entries:
        tree.append(entry)
    proof = tree.inclusion_proof(4)
    proof[1] = bytes(32)
    found = ask(
        peer,
        {
            "entries": [b64(entry) for entry in entries],
            "heads": {},
            "inclusion": [{"index": 4, "size": 9, "proof": [b64(h) for h in proof]}],
            "consistency": [],
        },
    )
    assert found["inclusion"] == 0
    assert len(found["failures"]) == 1


def test_our_signed_checkpoint_opens_with_the_peer_and_its_note_with_ours(peer: Path) -> None:
    signer = Signer.generate("spades.example/log")
    tree = MerkleTree()
    tree.append(b"the first hand")
    checkpoint = Checkpoint("spades.example/log", tree.size, tree.root()).text()
    note = signed_note(checkpoint, signer.sign(checkpoint))
    found = ask(
        peer,
        {
            "entries": [],
            "heads": {},
            "inclusion": [],
            "consistency": [],
            "note": note,
            "verifier": signer.verifier.text(),
            "signer": signer.text(),
            "text": checkpoint,
        },
    )
    assert found["failures"] is None
    assert found["note_text"] == checkpoint
    assert found["note_signer"] == "spades.example/log"
    opened = open_note(found["go_note"], [signer.verifier])
    assert opened.text == checkpoint
    assert opened.signed_by == ("spades.example/log",)
    assert Checkpoint.parse(opened.text).root == tree.root()
