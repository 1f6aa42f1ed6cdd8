"""The audit log as the read-model database keeps it: each partition's leaves, the heads of its
complete subtrees, and its checkpoints (:mod:`.schema`). The log model writes them; the gateway
reads proofs from them, never the whole log (:class:`~services.transparency.merkle.PartialTree`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from services.store.database import Statements, fetch, upsert
from services.store.schema import log_checkpoints, log_cosigned, log_games, log_leaves, log_nodes
from services.transparency.merkle import MerkleTree, Node, PartialTree, nodes_for

LOG_TABLES = (log_leaves, log_nodes, log_checkpoints, log_games)
"""Every table of the log: what the log model writes, and a backup carries."""


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    partition: int
    size: int
    root: bytes
    checkpoint: str
    """The ``tlog-checkpoint`` text."""
    note: str | None
    """The checkpoint signed by the log's key; None when the worker had no key."""
    verifier: str | None


@dataclass(frozen=True, slots=True)
class Cosigned:
    """A witness's latest cosignature of a partition's log (:data:`~.schema.log_cosigned`)."""

    partition: int
    witness: str
    """The witness's verifier key, as text."""
    size: int
    root: bytes
    note: str
    """The log's signed note with the witness's cosignature line appended."""
    cosigned_at: int


@dataclass(frozen=True, slots=True)
class StoredLeaf:
    partition: int
    index: int
    game_id: str
    hand: int | None
    entry: bytes


_LATEST = (
    sa.select(log_checkpoints)
    .where(log_checkpoints.c.partition == sa.bindparam("partition"))
    .order_by(log_checkpoints.c.size.desc())
    .limit(1)
)
_LATEST_OF_EVERY = sa.select(log_checkpoints).where(
    sa.tuple_(log_checkpoints.c.partition, log_checkpoints.c.size).in_(
        sa.select(log_checkpoints.c.partition, sa.func.max(log_checkpoints.c.size)).group_by(
            log_checkpoints.c.partition
        )
    )
)
_COSIGNED = sa.select(log_cosigned).where(log_cosigned.c.partition == sa.bindparam("partition"))
_NODES = sa.select(log_nodes.c.level, log_nodes.c.position, log_nodes.c.hash).where(
    (log_nodes.c.partition == sa.bindparam("partition"))
    & log_nodes.c.level.in_(sa.bindparam("levels", expanding=True))
    & log_nodes.c.position.in_(sa.bindparam("positions", expanding=True))
)
_LEAF_OF_HAND = sa.select(log_leaves).where(
    (log_leaves.c.game_id == sa.bindparam("game_id")) & (log_leaves.c.hand == sa.bindparam("hand"))
)
_LEAF_OF_GAME_END = sa.select(log_leaves).where(
    (log_leaves.c.game_id == sa.bindparam("game_id")) & log_leaves.c.hand.is_(None)
)
_LEAF = sa.select(log_leaves).where(
    (log_leaves.c.partition == sa.bindparam("partition"))
    & (log_leaves.c.leaf_index == sa.bindparam("index"))
)


async def latest_checkpoint(conn: Statements, partition: int) -> StoredCheckpoint | None:
    """The partition's last checkpoint (None before its first leaf)."""
    rows = await fetch(conn, _LATEST, {"partition": partition})
    return StoredCheckpoint(*rows[0]) if rows else None


async def latest_checkpoints(conn: Statements) -> list[StoredCheckpoint]:
    """Every partition's last checkpoint, by partition (those with leaves)."""
    rows = await fetch(conn, _LATEST_OF_EVERY)
    return sorted((StoredCheckpoint(*row) for row in rows), key=lambda c: c.partition)


async def nodes(conn: Statements, partition: int, wanted: Iterable[Node]) -> dict[Node, bytes]:
    """The heads of the complete subtrees ``wanted`` of a partition's log (those stored)."""
    wanted = set(wanted)
    if not wanted:
        return {}
    parameters = {
        "partition": partition,
        "levels": sorted({level for level, _ in wanted}),
        "positions": sorted({position for _, position in wanted}),
    }
    rows = await fetch(conn, _NODES, parameters)
    return {(level, position): bytes(hashed) for level, position, hashed in rows}


async def partial_tree(
    conn: Statements, partition: int, size: int, *questions: Callable[[MerkleTree], object]
) -> PartialTree:
    """The partition's tree of ``size`` leaves, holding what ``questions`` read (a proof, a
    head); raises ``IndexError`` as they would for sizes or indexes beyond it."""
    wanted: set[Node] = set()
    for question in questions:
        wanted |= nodes_for(size, question)
    return PartialTree(size, await nodes(conn, partition, wanted))


async def leaf_of(conn: Statements, game_id: str, hand: int | None) -> StoredLeaf | None:
    """The leaf of a game's hand ``hand``, or of its end (``hand`` None)."""
    if hand is None:
        rows = await fetch(conn, _LEAF_OF_GAME_END, {"game_id": game_id})
    else:
        rows = await fetch(conn, _LEAF_OF_HAND, {"game_id": game_id, "hand": hand})
    return StoredLeaf(*rows[0]) if rows else None


async def leaf_at(conn: Statements, partition: int, index: int) -> StoredLeaf | None:
    rows = await fetch(conn, _LEAF, {"partition": partition, "index": index})
    return StoredLeaf(*rows[0]) if rows else None


async def cosigned(conn: Statements, partition: int) -> list[Cosigned]:
    """Each witness's latest cosigned checkpoint of the partition's log, largest first."""
    rows = await fetch(conn, _COSIGNED, {"partition": partition})
    return sorted((Cosigned(*row) for row in rows), key=lambda c: (-c.size, c.witness))


async def keep_cosigned(conn: Statements, kept: Cosigned) -> bool:
    """Keep ``kept`` as its witness's latest cosignature of its partition's log, unless one of
    a larger tree is kept already (a process that held the partition a moment ago may answer
    late); whether it was kept."""
    for present in await cosigned(conn, kept.partition):
        if present.witness == kept.witness and present.size > kept.size:
            return False
    row = {
        "partition": kept.partition,
        "witness": kept.witness,
        "size": kept.size,
        "root": kept.root,
        "note": kept.note,
        "cosigned_at": kept.cosigned_at,
    }
    await upsert(conn, log_cosigned, [row], keys=["partition", "witness"])
    return True


def cosigned_head(
    head: StoredCheckpoint, witnessed: Sequence[Cosigned], index: int
) -> StoredCheckpoint | None:
    """The newest checkpoint of ``head``'s log that a witness cosigned and that holds leaf
    ``index`` (none is ``head`` or older: None), its note carrying the cosignature line of
    every witness that cosigned that same tree: what a receipt of the leaf shows when the log
    has witnesses."""
    covering = [c for c in witnessed if index < c.size <= head.size]
    if not covering:
        return None
    newest = max(covering, key=lambda c: c.size)
    same = [c for c in covering if (c.size, c.root) == (newest.size, newest.root)]
    note = newest.note
    for other in same:
        lines = other.note.rpartition("\n\n")[2].splitlines(keepends=True)
        note += "".join(line for line in lines if line not in note)
    text = note.partition("\n\n")[0] + "\n"
    return StoredCheckpoint(head.partition, newest.size, newest.root, text, note, head.verifier)
