"""What the audit log answers (docs/api.md, "The audit log"), as the structs the gateway encodes
and the Python client decodes: each partition's log head, a hand's receipt, and the proofs.

Hashes travel in base64, as a ``tlog-checkpoint`` writes its head. The entries themselves are
:mod:`contracts.log_entries`' (a receipt carries its entry's exact bytes and, decoded,
the entry). ``contracts/openapi.json`` takes the JSON Schemas from here.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from contracts.log_entries import HandEnd


class DealCommitment(msgspec.Struct, frozen=True, kw_only=True):
    """A hand's deal as the game's history committed it before the first bid."""

    hand: int
    version: Annotated[int, msgspec.Meta(description="The game's version after the deal's commit.")]
    chain: Annotated[
        str, msgspec.Meta(description="The SHA-256 of the deal's commit (its hash-chain link).")
    ]
    commitment: Annotated[
        str | None, msgspec.Meta(description="`sha256(seed)`, published before the first bid.")
    ]


class Receipt(msgspec.Struct, frozen=True, kw_only=True):
    """A finished hand's receipt: its leaf in the log, a checkpoint of the log that holds it,
    the leaf's inclusion proof in that tree, and the deal's commitment as signed before the
    first bid. A player or a platform keeps it and checks it offline (``spades verify``)."""

    game_id: str
    hand: int
    partition: int
    origin: Annotated[
        str, msgspec.Meta(description="The log's origin: its checkpoints' first line.")
    ]
    leaf_index: int
    entry: Annotated[HandEnd, msgspec.Meta(description="The leaf's entry, decoded.")]
    entry_bytes: Annotated[
        str, msgspec.Meta(description="The leaf's entry exactly as hashed (base64).")
    ]
    tree_size: int
    checkpoint: Annotated[
        str,
        msgspec.Meta(
            description="The signed note of the checkpoint of `tree_size`, with any witness's "
            "cosignature (the bare checkpoint text while the log has no key: check `signed`)."
        ),
    ]
    signed: bool
    verifier: Annotated[
        str | None,
        msgspec.Meta(
            description="The log's signed-note verifier key; null: the log signs nothing."
        ),
    ]
    inclusion_proof: Annotated[
        list[str], msgspec.Meta(description="The leaf's audit path (base64 hashes).")
    ]
    deal: Annotated[
        DealCommitment | None,
        msgspec.Meta(
            description="The deal's commitment as the game's history held it before the first "
            "bid (null for a hand dealt without one)."
        ),
    ]


class LogHead(msgspec.Struct, frozen=True, kw_only=True):
    """One partition's log as it stands."""

    partition: int
    origin: Annotated[
        str, msgspec.Meta(description="The log's origin: its checkpoints' first line.")
    ]
    size: Annotated[
        int, msgspec.Meta(description="Leaves in the log: the size of its last checkpoint.")
    ]
    root: Annotated[
        str | None, msgspec.Meta(description="The head of the tree of that size (base64).")
    ]
    verifier: Annotated[
        str | None,
        msgspec.Meta(
            description="The public key that signs the log's checkpoints, as a signed-note "
            "verifier key (`<name>+<key id>+<base64>`); null while the log signs nothing (no key)."
        ),
    ]


class Logs(msgspec.Struct, frozen=True):
    logs: Annotated[
        list[LogHead], msgspec.Meta(description="One log per partition of the game stream.")
    ]


class InclusionProof(msgspec.Struct, frozen=True, kw_only=True):
    partition: int
    index: int
    size: int
    leaf_hash: Annotated[str, msgspec.Meta(description="The leaf's hash, RFC 6962 (base64).")]
    root: Annotated[str, msgspec.Meta(description="The head of the tree of `size` (base64).")]
    proof: Annotated[
        list[str], msgspec.Meta(description="The audit path, RFC 9162 §2.1.3 (base64 hashes).")
    ]


class ConsistencyProof(msgspec.Struct, frozen=True, kw_only=True):
    partition: int
    old: int
    new: int
    old_root: str
    new_root: str
    proof: Annotated[
        list[str], msgspec.Meta(description="RFC 9162 §2.1.4's proof (base64 hashes).")
    ]
