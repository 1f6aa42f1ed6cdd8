"""An audit log as its operator holds it: the entries and the signing key, and everything else
(tree, signed checkpoints, receipts, proofs) recomputed from them with the service's own code.
Honest, it hands out what the service hands out; edited, it is the operator as the attacker,
who can redo everything but what players already hold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from contracts.log_entries import HandEnd, read_entry
from services.projections.audit_log import log_origin
from services.store.audit_log import StoredCheckpoint, StoredLeaf
from services.store.receipts import b64, receipt_of
from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import MerkleTree, leaf_hash
from services.transparency.note import Signer, signed_note


class OperatorLog:
    def __init__(
        self,
        entries: Sequence[bytes],
        key: Signer,
        origin: str = "spades.test/log",
        partition: int = 0,
    ) -> None:
        self.entries = list(entries)
        self.partition = partition
        self.origin = log_origin(origin, partition)
        self.signer = Signer(self.origin, key.kind, key.private)

    @property
    def tree(self) -> MerkleTree:
        return MerkleTree(leaf_hash(entry) for entry in self.entries)

    def head(self, size: int | None = None) -> StoredCheckpoint:
        """The checkpoint of ``size`` leaves (all by default), signed as the log model signs."""
        size = len(self.entries) if size is None else size
        root = self.tree.root(size)
        text = Checkpoint(self.origin, size, root).text()
        note = signed_note(text, self.signer.sign(text))
        return StoredCheckpoint(self.partition, size, root, text, note, self.signer.verifier.text())

    def index_of(self, game_id: str, hand: int) -> int:
        for index, data in enumerate(self.entries):
            entry = read_entry(data)
            if isinstance(entry, HandEnd) and (entry.game_id, entry.hand) == (game_id, hand):
                return index
        raise LookupError(f"no hand {hand} of {game_id} in the log")

    def holds(self, game_id: str, hand: int, size: int) -> bool:
        try:
            return self.index_of(game_id, hand) < size
        except LookupError:
            return False

    def receipt(self, game_id: str, hand: int, size: int | None = None) -> dict[str, Any]:
        """The hand's receipt in the tree of ``size``, as ``GET .../receipt`` answers it."""
        index = self.index_of(game_id, hand)
        head = self.head(size)
        leaf = StoredLeaf(self.partition, index, game_id, hand, self.entries[index])
        proof = self.tree.inclusion_proof(index, head.size)
        found: dict[str, Any] = msgspec.to_builtins(receipt_of(leaf, head, proof))
        return found

    def consistency(self, old: int, new: int) -> dict[str, Any]:
        """The proof from ``old`` to ``new``, as ``GET /v1/log/{p}/proofs/consistency`` answers."""
        tree = self.tree
        return {
            "partition": self.partition,
            "old": old,
            "new": new,
            "old_root": b64(tree.root(old)),
            "new_root": b64(tree.root(new)),
            "proof": [b64(h) for h in tree.consistency_proof(old, new)],
        }
