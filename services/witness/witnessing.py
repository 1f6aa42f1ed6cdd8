"""What a witness decides about a checkpoint offered to it (C2SP ``tlog-witness``), apart from
HTTP and storage: the request's text in, an outcome out.

The request is ``old <size>``, the consistency proof from that size, one base64 hash a line,
a blank line, then the signed checkpoint. The witness cosigns when the log's known key signed
the checkpoint and the proof shows the new tree extends the one it last cosigned for that log
(``old`` must be that tree's size). Every refusal has the status the specification gives it:
400 a malformed request (or ``old`` past the new size), 403 no valid signature of the log's
key, 404 a log it does not witness, 409 an ``old`` that is not its latest size (the answer
carries that size: the log asks again from there), 422 a proof that does not verify, which is
a history that does not extend: a fork or a rewrite, kept as evidence.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass

from services.transparency.checkpoint import Checkpoint, add_checkpoint_request
from services.transparency.merkle import EMPTY_ROOT, ProofError, verify_consistency
from services.transparency.note import NoteError, Signer, Verifier, open_note


@dataclass(frozen=True)
class Witnessed:
    """The latest checkpoint of one log that the witness cosigned."""

    origin: str
    size: int
    root: bytes
    note: str


@dataclass(frozen=True)
class Outcome:
    status: int
    body: str
    """A cosignature line (200), the witness's latest size (409), or the reason."""
    cosigned: Witnessed | None = None
    """What the witness must keep before it answers (200 only)."""


def _refused(status: int, reason: str) -> Outcome:
    return Outcome(status, reason + "\n")


def _request(text: str) -> tuple[int, list[bytes], str]:
    head, separator, note = text.partition("\n\n")
    lines = head.split("\n")
    if not separator or not lines[0].startswith("old "):
        raise ValueError("a request is 'old <size>', the proof's lines, a blank line, the note")
    size = lines[0].removeprefix("old ")
    if not size.isdigit() or (size != "0" and size.startswith("0")):
        raise ValueError(f"'old' is a decimal size, not {size[:24]!r}")
    try:
        proof = [base64.b64decode(line, validate=True) for line in lines[1:]]
    except binascii.Error as error:
        raise ValueError("a proof line is one base64 hash") from error
    if any(len(hashed) != 32 for hashed in proof) or len(proof) > 64:
        raise ValueError("a proof is at most 64 hashes of 32 bytes")
    return int(size), proof, note


def add_checkpoint(
    text: str,
    logs: dict[str, Verifier],
    latest: dict[str, Witnessed],
    witness: Signer,
    now_s: int,
) -> Outcome:
    """The witness's answer to ``text`` (an add-checkpoint request body), given the logs it
    witnesses (origin → the log's key), what it last cosigned of each, its key and the time."""
    try:
        old, proof, note = _request(text)
    except ValueError as error:
        return _refused(400, str(error))
    origin = note.split("\n", 1)[0]
    log = logs.get(origin)
    if log is None:
        return _refused(404, f"this witness does not witness the log {origin[:80]!r}")
    try:
        opened = open_note(note, [log])
        checkpoint = Checkpoint.parse(opened.text)
    except NoteError as error:
        return _refused(403, f"not a checkpoint signed by the log's key: {error}")
    if log.name not in opened.signed_by:
        return _refused(403, "not signed by the log's key")
    if old > checkpoint.size:
        return _refused(400, f"old size {old} is past the checkpoint's size {checkpoint.size}")
    previous = latest.get(origin)
    known_size = previous.size if previous else 0
    if old != known_size:
        return Outcome(409, f"{known_size}\n")
    if checkpoint.size == 0 and not hmac.compare_digest(checkpoint.root, EMPTY_ROOT):
        return _refused(422, "a tree of size 0 has the empty tree's head")
    known_root = previous.root if previous else EMPTY_ROOT
    try:
        verify_consistency(old, checkpoint.size, known_root, checkpoint.root, proof)
    except ProofError as error:
        return _refused(422, f"the checkpoint does not extend the one cosigned: {error}")
    line = witness.cosign(opened.text, now_s)
    return Outcome(200, line, Witnessed(origin, checkpoint.size, checkpoint.root, note))


def request_text(old_size: int, proof: list[bytes], note: str) -> str:
    """An add-checkpoint request body (what a log sends its witnesses)."""
    return add_checkpoint_request(old_size, proof, note)
