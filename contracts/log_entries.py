"""The entries of the audit log: what a leaf says about a hand's end or a game's end.

An entry is canonical JSON (msgspec encodes a struct's fields in their declared order, with no
spaces): its bytes, hashed as RFC 6962 hashes a leaf, are what the tree commits to, and a
client that holds them checks a receipt without asking us to decode anything.

Each entry binds the game's whole history up to it: ``chain`` is the SHA-256 of the commit
that carried the event (the hash the next commit names as ``previous``, see
:class:`contracts.wire.Commit`), and ``version`` its version. A hand's entry also names its
deal as it was committed before the first bid (``dealt_version``, ``dealt_chain`` and the
``commitment`` of :class:`~domain.events.HandDealt`) and the ``seed`` :class:`~domain.events.
HandScored` reveals, so anyone can check that the deal came from the committed seed. Nothing
else of the hand's cards is in an entry, and no player's name: a private game's entry names its
game id only.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.bids import Bid


class Dealt(msgspec.Struct, frozen=True, kw_only=True):
    """A hand's deal as the game's history committed it, before the first bid."""

    hand: int
    version: int
    chain: str
    commitment: str | None


class HandEnd(msgspec.Struct, frozen=True, kw_only=True, tag="hand", tag_field="kind"):
    """A hand's end: its score per unit, the deal's commitment and the seed revealed."""

    game_id: str
    hand: int
    version: int
    chain: str
    dealt_version: int | None
    dealt_chain: str | None
    commitment: str | None
    seed: str | None
    bids: tuple[Bid | None, ...]
    tricks: tuple[int, ...]
    points: tuple[int, ...]
    scores: tuple[int, ...]
    bags: tuple[int, ...]


class GameEnd(msgspec.Struct, frozen=True, kw_only=True, tag="game", tag_field="kind"):
    """A game's end: its result, and how many hands were played."""

    game_id: str
    hands: int
    version: int
    chain: str
    winners: tuple[int, ...]
    scores: tuple[int, ...]
    forfeited: int | None


LogEntry = HandEnd | GameEnd
EntryKind = Literal["hand", "game"]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(LogEntry).decode


def entry_bytes(entry: LogEntry) -> bytes:
    """The entry as the log stores and hashes it."""
    return _encode(entry)


def read_entry(data: bytes) -> LogEntry:
    """An entry from its bytes; raises ``msgspec.DecodeError``/``ValidationError``."""
    return _decode(data)
