"""Signed notes, cosignatures and checkpoints of the audit log (services/transparency): keys
that round-trip as text, signatures that verify, and every forgery or malformed piece refused
with a reason."""

from __future__ import annotations

import pytest

from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import MerkleTree
from services.transparency.note import (
    COSIGNATURE,
    NoteError,
    Signer,
    Verifier,
    open_note,
    signed_note,
)

ORIGIN = "spades.example/log"


def checkpoint_text(entries: int = 3) -> str:
    tree = MerkleTree()
    for i in range(entries):
        tree.append(b"hand %d" % i)
    return Checkpoint(ORIGIN, tree.size, tree.root()).text()


def test_keys_round_trip_as_text() -> None:
    signer = Signer.generate(ORIGIN)
    again = Signer.parse(signer.text())
    assert again.verifier == signer.verifier
    assert Verifier.parse(signer.verifier.text()) == signer.verifier
    assert signer.text().startswith(f"PRIVATE+KEY+{ORIGIN}+")
    name, _, key = signer.verifier.text().split("+", 2)
    with pytest.raises(NoteError, match="key id"):
        Verifier.parse(f"{name}+{'0' * 8}+{key}")
    with pytest.raises(NoteError, match="name"):
        Signer.generate("two words")


def test_a_signed_checkpoint_opens_with_the_logs_key_only() -> None:
    log, other = Signer.generate(ORIGIN), Signer.generate("someone.else/log")
    text = checkpoint_text()
    note = signed_note(text, log.sign(text))
    opened = open_note(note, [log.verifier])
    assert opened.text == text
    assert opened.signed_by == (ORIGIN,)
    assert Checkpoint.parse(opened.text).size == 3
    with pytest.raises(NoteError, match="no signature of a known key"):
        open_note(note, [other.verifier])


def test_a_changed_text_or_signature_is_refused() -> None:
    log = Signer.generate(ORIGIN)
    text = checkpoint_text()
    note = signed_note(text, log.sign(text))
    forged = note.replace(text, checkpoint_text(4))
    with pytest.raises(NoteError, match="does not verify"):
        open_note(forged, [log.verifier])
    impostor = Signer(ORIGIN, log.kind, Signer.generate(ORIGIN).private)  # same name, new key
    with pytest.raises(NoteError, match="no signature of a known key"):
        open_note(signed_note(text, impostor.sign(text)), [log.verifier])
    with pytest.raises(NoteError):
        open_note(text, [log.verifier])  # no signature lines at all


def test_a_witness_cosigns_and_its_time_is_read_back() -> None:
    log, witness = Signer.generate(ORIGIN), Signer.generate("witness.example", COSIGNATURE)
    text = checkpoint_text()
    note = signed_note(text, log.sign(text), witness.cosign(text, 1_790_000_000))
    opened = open_note(note, [log.verifier, witness.verifier])
    assert opened.signed_by == (ORIGIN,)
    assert opened.cosigned_at == {"witness.example": 1_790_000_000}
    with pytest.raises(NoteError):
        witness.sign(text)  # a witness's key is for cosignatures
    tampered = note.replace(
        witness.cosign(text, 1_790_000_000), witness.cosign(checkpoint_text(4), 1_790_000_000)
    )
    with pytest.raises(NoteError, match=r"cosignature of 'witness\.example' does not verify"):
        open_note(tampered, [log.verifier, witness.verifier])


@pytest.mark.parametrize(
    "text",
    [
        "",
        f"{ORIGIN}\n3\n",
        f"{ORIGIN}\n-3\nAAAA\n",
        f"{ORIGIN}\n03\n{'A' * 44}\n",
        f"{ORIGIN}\n3\nnot base64!\n",
        f"{ORIGIN}\n3\nAAAA\n",
        f"{ORIGIN}\n3\n{'A' * 43}=\n\n",
    ],
)
def test_malformed_checkpoints_are_refused(text: str) -> None:
    with pytest.raises(NoteError):
        Checkpoint.parse(text)
