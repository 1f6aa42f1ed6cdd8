"""Signed notes (C2SP ``signed-note``) with Ed25519 keys, and witnesses' cosignatures (C2SP
``tlog-cosignature``): the envelope of the audit log's checkpoints.

A note is UTF-8 text ending in a newline, a blank line, then one line per signature::

    — <key name> <base64(key id || signature)>

The key id is the first four bytes of ``SHA-256(name || "\\n" || type || public key)``, with
type 0x01 for a signature of the note's text (Ed25519) and 0x04 for a cosignature, which signs
``"cosignature/v1\\ntime <seconds>\\n"`` followed by the checkpoint and carries the seconds
before the signature. Keys travel as text, in the forms the Go checksum database's ``note``
package reads: ``<name>+<key id in hex>+<base64(type || key)>`` for a verifier, and
``PRIVATE+KEY+<name>+<key id>+<base64(type || seed)>`` for a signer. A reader ignores the
signatures of keys it does not know: a note may gather many.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ED25519 = 0x01
COSIGNATURE = 0x04
SIGNATURE_MARK = "\u2014 "
"""An em dash and a space begin each signature line."""
_PRIVATE = "PRIVATE+KEY+"


class NoteError(ValueError):
    """A note, key or signature that is malformed or does not verify: the message says which."""


def _check_name(name: str) -> None:
    if not name or "+" in name or any(c.isspace() for c in name):
        raise NoteError(f"a key name is not empty and has no '+' or space: {name!r}")


def key_id(name: str, kind: int, public: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + bytes([kind]) + public).digest()[:4]


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw)


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as error:
        raise NoteError(f"{what} is not base64") from error


@dataclass(frozen=True)
class Verifier:
    """The public half of a key: what a player, a platform or a witness holds."""

    name: str
    kind: int
    public: bytes

    @property
    def key_id(self) -> bytes:
        return key_id(self.name, self.kind, self.public)

    def text(self) -> str:
        """The key as text (``<name>+<id>+<base64>``), to publish."""
        encoded = base64.b64encode(bytes([self.kind]) + self.public).decode()
        return f"{self.name}+{self.key_id.hex()}+{encoded}"

    @classmethod
    def parse(cls, text: str) -> Verifier:
        parts = text.strip().split("+", 2)  # base64 has '+' too
        if len(parts) != 3:
            raise NoteError("a verifier key is <name>+<key id>+<base64 key>")
        name, hex_id, encoded = parts
        _check_name(name)
        raw = _b64decode(encoded, "a verifier key")
        if len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE):
            raise NoteError("a verifier key is an Ed25519 key: a type byte and 32 bytes")
        verifier = cls(name, raw[0], raw[1:])
        if verifier.key_id.hex() != hex_id.lower():
            raise NoteError(f"the key id of {name!r} does not match its key")
        return verifier

    def verifies(self, message: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True)
class Signer:
    """A named Ed25519 key: the log's (type 0x01) or a witness's (type 0x04)."""

    name: str
    kind: int
    private: Ed25519PrivateKey

    @classmethod
    def generate(cls, name: str, kind: int = ED25519) -> Signer:
        _check_name(name)
        return cls(name, kind, Ed25519PrivateKey.generate())

    @property
    def verifier(self) -> Verifier:
        return Verifier(self.name, self.kind, _raw(self.private.public_key()))

    def text(self) -> str:
        """The key as text (``PRIVATE+KEY+<name>+<id>+<base64>``), to keep secret."""
        seed = self.private.private_bytes_raw()
        encoded = base64.b64encode(bytes([self.kind]) + seed).decode()
        return f"{_PRIVATE}{self.name}+{self.verifier.key_id.hex()}+{encoded}"

    @classmethod
    def parse(cls, text: str) -> Signer:
        if not text.startswith(_PRIVATE):
            raise NoteError("a signer key begins PRIVATE+KEY+")
        parts = text.strip().removeprefix(_PRIVATE).split("+", 2)
        if len(parts) != 3:
            raise NoteError("a signer key is PRIVATE+KEY+<name>+<key id>+<base64 key>")
        name, hex_id, encoded = parts
        _check_name(name)
        raw = _b64decode(encoded, "a signer key")
        if len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE):
            raise NoteError("a signer key is an Ed25519 seed: a type byte and 32 bytes")
        signer = cls(name, raw[0], Ed25519PrivateKey.from_private_bytes(raw[1:]))
        if signer.verifier.key_id.hex() != hex_id.lower():
            raise NoteError(f"the key id of {name!r} does not match its key")
        return signer

    def sign(self, text: str) -> str:
        """The signature line of this (type 0x01) key over a note's ``text``."""
        if self.kind != ED25519:
            raise NoteError("a witness's key cosigns checkpoints (cosign), it signs no note")
        signature = self.private.sign(_note_text(text).encode())
        return _line(self.name, self.verifier.key_id + signature)

    def cosign(self, checkpoint: str, seconds: int) -> str:
        """The cosignature line of this (type 0x04) key over a checkpoint's text, at
        ``seconds`` since the epoch."""
        if self.kind != COSIGNATURE:
            raise NoteError("the log's key signs notes (sign); a witness's key cosigns")
        signature = self.private.sign(cosigned_message(checkpoint, seconds))
        payload = self.verifier.key_id + struct.pack(">Q", seconds) + signature
        return _line(self.name, payload)


def cosigned_message(checkpoint: str, seconds: int) -> bytes:
    return f"cosignature/v1\ntime {seconds}\n{_note_text(checkpoint)}".encode()


def _line(name: str, payload: bytes) -> str:
    return f"{SIGNATURE_MARK}{name} {base64.b64encode(payload).decode()}\n"


def _note_text(text: str) -> str:
    if not text.endswith("\n"):
        raise NoteError("a note's text ends in a newline")
    return text


def signed_note(text: str, *lines: str) -> str:
    """A note of ``text`` and its signature ``lines``."""
    return _note_text(text) + "\n" + "".join(lines)


@dataclass(frozen=True)
class Opened:
    """A note whose text is verified, and by whom."""

    text: str
    signed_by: tuple[str, ...]
    cosigned_at: dict[str, int]
    """Each witness's name whose cosignature verified, and the time it gives (seconds)."""


def open_note(note: str, verifiers: list[Verifier]) -> Opened:
    """The note's text, once at least one of ``verifiers`` has a valid signature on it.

    A signature line naming a known key whose signature does not verify is an error (someone
    forged or changed it); lines of unknown keys are ignored."""
    text, separator, signatures = note.rpartition("\n\n")
    if not separator or not signatures.endswith("\n"):
        raise NoteError("a note is its text, a blank line, and signature lines")
    text += "\n"
    known = {(v.name, v.key_id): v for v in verifiers}
    signed_by: list[str] = []
    cosigned_at: dict[str, int] = {}
    for line in signatures.splitlines():
        if not line.startswith(SIGNATURE_MARK):
            raise NoteError(f"not a signature line: {line[:40]!r}")
        name, _, encoded = line.removeprefix(SIGNATURE_MARK).partition(" ")
        payload = _b64decode(encoded, f"the signature of {name!r}")
        verifier = known.get((name, payload[:4]))
        if verifier is None:
            continue
        if verifier.kind == ED25519:
            if not verifier.verifies(text.encode(), payload[4:]):
                raise NoteError(f"the signature of {name!r} does not verify")
            signed_by.append(name)
        else:
            if len(payload) != 4 + 8 + 64:
                raise NoteError(f"the cosignature of {name!r} is not 76 bytes")
            (seconds,) = struct.unpack(">Q", payload[4:12])
            if not verifier.verifies(cosigned_message(text, seconds), payload[12:]):
                raise NoteError(f"the cosignature of {name!r} does not verify")
            cosigned_at[name] = seconds
    if not signed_by and not cosigned_at:
        raise NoteError("no signature of a known key on the note")
    return Opened(text, tuple(signed_by), cosigned_at)
