"""A finished hand's receipt from the audit log: its leaf, the latest checkpoint of its
partition's log (signed note), the leaf's inclusion proof in it, and the deal's commitment as
the game's history held it before the first bid.

When the log has witnesses (``SPADES_LOG_WITNESSES``), the checkpoint is the newest that a
witness cosigned and that holds the hand, its note carrying the witnesses' cosignature lines
after the log's signature: a reader who trusts a witness knows the log showed that tree to it
too, so it cannot show the reader another. Until a witness has cosigned a tree that holds the
hand (it is down, or the hand was just logged), the latest checkpoint, without cosignature.

One builder for every place a receipt is handed out (``GET .../hands/{n}/receipt``, the hand's
record, the ``hand.scored`` webhook), so they all say the same. A receipt exists only for a
finished hand (the log holds nothing else): its record is public to the game's readers by then,
and the receipt shows no more than that record.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

import sqlalchemy as sa

from contracts.audit_log import DealCommitment, Receipt
from contracts.log_entries import HandEnd, read_entry
from services.store.audit_log import (
    StoredCheckpoint,
    StoredLeaf,
    cosigned,
    cosigned_head,
    latest_checkpoint,
    leaf_of,
    partial_tree,
)
from services.store.database import Store
from services.store.schema import positions
from services.transparency.note import SIGNATURE_MARK


def b64(data: bytes) -> str:
    """A hash or an entry as the API shows it: base64, as a ``tlog-checkpoint`` writes its
    root."""
    return base64.b64encode(data).decode()


async def hand_receipt(store: Store, game_id: str, hand: int) -> Receipt | None:
    """The receipt of the game's finished hand ``hand``; None while the log does not hold it."""
    async with store.reading() as conn:
        leaf = await leaf_of(conn, game_id, hand)
        if leaf is None:
            return None
        latest = await latest_checkpoint(conn, leaf.partition)
        assert latest is not None  # a leaf is written with its checkpoint
        witnessed = cosigned_head(latest, await cosigned(conn, leaf.partition), leaf.index)
        head = latest if witnessed is None else witnessed
        tree = await partial_tree(
            conn, leaf.partition, head.size, lambda t: t.inclusion_proof(leaf.index, head.size)
        )
    return receipt_of(leaf, head, tree.inclusion_proof(leaf.index, head.size))


def receipt_of(leaf: StoredLeaf, head: StoredCheckpoint, proof: Sequence[bytes]) -> Receipt:
    """The receipt of a hand's ``leaf`` in the tree of ``head``, ``proof`` its audit path there:
    pure, so that what is handed out is built one way (and a test playing a dishonest operator
    builds its forged receipts exactly as the service would)."""
    entry = read_entry(leaf.entry)
    assert isinstance(entry, HandEnd)
    deal = None
    if entry.dealt_version is not None and entry.dealt_chain is not None:
        deal = DealCommitment(
            hand=entry.hand,
            version=entry.dealt_version,
            chain=entry.dealt_chain,
            commitment=entry.commitment,
        )
    return Receipt(
        game_id=leaf.game_id,
        hand=entry.hand,
        partition=leaf.partition,
        origin=head.checkpoint.split("\n", 1)[0],
        leaf_index=leaf.index,
        entry=entry,
        entry_bytes=b64(leaf.entry),
        tree_size=head.size,
        checkpoint=head.note if head.note is not None else head.checkpoint,
        signed=head.note is not None,
        verifier=head.verifier,
        inclusion_proof=[b64(h) for h in proof],
        deal=deal,
    )


def witness_cosigned(receipt: Receipt) -> bool:
    """Whether the receipt's checkpoint carries a signature besides the log's own: a
    witness's cosignature (:mod:`services.projections.witnesses`)."""
    return receipt.checkpoint.count("\n" + SIGNATURE_MARK) > 1


def ready(receipt: Receipt | None, witnessed: bool) -> bool:
    """Whether ``receipt`` is the one to hand out now, rather than wait for: it exists, and
    where the log has witnesses (``witnessed``), one has cosigned it."""
    return receipt is not None and (witness_cosigned(receipt) or not witnessed)


_LOG_KEPT = sa.select(sa.func.count()).where(
    (positions.c.model == "log") & (positions.c.position > 0)
)


async def log_kept(store: Store) -> bool:
    """Whether a projection worker keeps the audit log here (it has read some of a stream):
    whether waiting for a hand's receipt can end with one."""
    async with store.reading() as conn:
        return bool(await conn.scalar(_LOG_KEPT))
