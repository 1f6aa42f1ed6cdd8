"""What a client holds of the audit log (:mod:`services.transparency`): the log's keys, and the
last checkpoint it verified of each partition's log, so that a newer one is trusted only once
the log proves it extends that one.

A log that showed this client one history cannot show it another later, on a reconnect or to a
restarted client given what the last one kept (:meth:`LogWatch.kept`): the consistency proof it
would need does not exist. :class:`~services.client.api.SpadesClient` does the asking (its
``log`` argument); this module is the checking, with no I/O.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from contracts.log_entries import HandEnd, read_entry
from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import ProofError, leaf_hash, verify_consistency, verify_inclusion
from services.transparency.note import NoteError, Verifier, open_note


class LogError(Exception):
    """What the service showed of its log does not verify: a checkpoint not signed by the
    log's key, a receipt whose entry is not in its tree. Not a client's error to retry: the
    service is wrong, or someone between it and the client is."""


class ForkError(LogError):
    """The log showed a checkpoint that is not an extension of the one this client verified
    before: two histories of one log (a fork, or history rewritten). Keep both notes
    (:attr:`known` and :attr:`shown`): together, signed by the log's key, they prove it."""

    def __init__(self, message: str, known: str, shown: str) -> None:
        super().__init__(message)
        self.known = known
        self.shown = shown


@dataclass(frozen=True)
class Verified:
    """A checkpoint whose note the log's key signed."""

    partition: int
    note: str
    checkpoint: Checkpoint


class LogWatch:
    """The log's keys (one per partition, as ``spades log keys`` prints them: get them from
    the operator, or ``GET /v1/log`` once, and keep them) and the last checkpoint verified of
    each partition. ``kept`` is what :meth:`kept` gave before (a restarted client): its notes
    are verified again."""

    def __init__(self, keys: Iterable[Verifier | str], kept: Mapping[int, str] | None = None):
        self.keys = [key if isinstance(key, Verifier) else Verifier.parse(key) for key in keys]
        self._latest: dict[int, Verified] = {}
        for partition, note in (kept or {}).items():
            self._latest[partition] = self.opened(partition, note)

    def latest(self, partition: int) -> Verified | None:
        """The last checkpoint verified of the partition's log (None: none yet)."""
        return self._latest.get(partition)

    def kept(self) -> dict[int, str]:
        """Each partition's last verified note: keep it, and give it back to the next
        :class:`LogWatch` so that the next session checks the log extends it."""
        return {partition: verified.note for partition, verified in self._latest.items()}

    def opened(self, partition: int, note: str) -> Verified:
        """``note`` once the log's key signed it (its origin's key); raises :class:`LogError`."""
        try:
            opened = open_note(note, self.keys)
            checkpoint = Checkpoint.parse(opened.text)
        except NoteError as error:
            raise LogError(f"log {partition}'s checkpoint does not verify: {error}") from None
        if checkpoint.origin not in opened.signed_by:
            raise LogError(
                f"log {partition}'s checkpoint of {checkpoint.origin} is not signed by that "
                "log's key"
            )
        return Verified(partition, note, checkpoint)

    def to_prove(self, shown: Verified) -> tuple[Verified, Verified] | None:
        """The two checkpoints a consistency proof must join before ``shown`` is trusted (the
        older first), or None when nothing is to prove: nothing was verified before, or the
        same tree. Raises :class:`ForkError` for another tree of the size verified before."""
        known = self._latest.get(shown.partition)
        if known is None or known.checkpoint.origin != shown.checkpoint.origin:
            return None
        if known.checkpoint.size == shown.checkpoint.size:
            if known.checkpoint.root != shown.checkpoint.root:
                raise ForkError(
                    f"{shown.checkpoint.origin} showed two different trees of size "
                    f"{shown.checkpoint.size}",
                    known.note,
                    shown.note,
                )
            return None
        return (known, shown) if known.checkpoint.size < shown.checkpoint.size else (shown, known)

    def proven(self, old: Verified, new: Verified, proof: Sequence[str]) -> None:
        """Trust ``new`` (the newer of the two, if it is) once ``proof`` (base64 hashes, as
        ``GET /v1/log/{p}/proofs/consistency`` gives them) shows its tree extends ``old``'s;
        raises :class:`ForkError` when it does not."""
        try:
            hashes = [base64.b64decode(h, validate=True) for h in proof]
            verify_consistency(
                old.checkpoint.size,
                new.checkpoint.size,
                old.checkpoint.root,
                new.checkpoint.root,
                hashes,
            )
        except (ProofError, binascii.Error) as error:
            raise ForkError(
                f"{new.checkpoint.origin}'s tree of {new.checkpoint.size} does not extend its "
                f"tree of {old.checkpoint.size}: {error}",
                old.note,
                new.note,
            ) from None
        self.trust(new)

    def trust(self, shown: Verified) -> None:
        """Keep ``shown`` as the partition's latest, when it is newer than what is kept (the
        caller proved it consistent, or nothing was kept)."""
        known = self._latest.get(shown.partition)
        if known is None or known.checkpoint.size < shown.checkpoint.size:
            self._latest[shown.partition] = shown


def included(receipt: Mapping[str, Any], shown: Verified) -> None:
    """Raise :class:`LogError` unless the receipt's entry is its hand's, at its index in the
    signed tree of ``shown`` (the receipt's checkpoint, verified)."""
    checkpoint = shown.checkpoint
    try:
        data = base64.b64decode(receipt["entry_bytes"], validate=True)
        proof = [base64.b64decode(h, validate=True) for h in receipt["inclusion_proof"]]
        index, size = int(receipt["leaf_index"]), int(receipt["tree_size"])
    except (KeyError, TypeError, ValueError) as error:
        raise LogError(f"the receipt is malformed: {error!r}") from None
    if (checkpoint.origin, checkpoint.size) != (receipt.get("origin"), size):
        raise LogError(
            f"the receipt says {receipt.get('origin')} at size {size}; its checkpoint is of "
            f"{checkpoint.origin} at size {checkpoint.size}"
        )
    try:
        verify_inclusion(leaf_hash(data), index, size, proof, checkpoint.root)
    except ProofError as error:
        raise LogError(f"the receipt's entry is not leaf {index} of its tree: {error}") from None
    try:
        entry = read_entry(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise LogError(f"leaf {index} is no log entry: {error}") from None
    said = (receipt.get("game_id"), receipt.get("hand"))
    if not isinstance(entry, HandEnd) or (entry.game_id, entry.hand) != said:
        raise LogError(f"leaf {index} is not the receipt's hand ({said[0]} hand {said[1]})")
