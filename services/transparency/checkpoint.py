"""Checkpoints (C2SP ``tlog-checkpoint``): the text a log signs to commit to its tree.

::

    <origin>
    <tree size, in decimal>
    <tree head, in base64>
    [extension lines]

The origin names the log (a schema-less URL, such as ``spades.example.org/log``): a
checkpoint of one log can never pass for another's.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from services.transparency.merkle import HASH_SIZE
from services.transparency.note import NoteError

_SIZE = re.compile(r"0|[1-9][0-9]{0,19}")


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        if not self.origin or "\n" in self.origin:
            raise NoteError("an origin is one non-empty line")
        head = base64.b64encode(self.root).decode()
        return "".join(
            f"{line}\n" for line in (self.origin, str(self.size), head, *self.extensions)
        )

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        lines = text.split("\n")
        if len(lines) < 4 or lines[-1] != "" or any(not line for line in lines[:-1]):
            raise NoteError("a checkpoint is its origin, size and head, one a line")
        origin, size, head, *extensions = lines[:-1]
        if not _SIZE.fullmatch(size):
            raise NoteError(f"a checkpoint's size is a decimal number, not {size[:24]!r}")
        try:
            root = base64.b64decode(head, validate=True)
        except binascii.Error as error:
            raise NoteError("a checkpoint's head is base64") from error
        if len(root) != HASH_SIZE:
            raise NoteError(f"a checkpoint's head is {HASH_SIZE} bytes")
        return cls(origin, int(size), root, tuple(extensions))


def add_checkpoint_request(old_size: int, proof: list[bytes], note: str) -> str:
    """The body of a C2SP ``tlog-witness`` ``POST /add-checkpoint``: ``old <size>`` (the
    tree the witness last cosigned of the log), the consistency proof from it, one base64 hash
    a line, a blank line, then the signed checkpoint. What a log sends its witnesses."""
    lines = [f"old {old_size}", *(base64.b64encode(hashed).decode() for hashed in proof)]
    return "\n".join(lines) + "\n\n" + note
