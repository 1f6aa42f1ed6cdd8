"""The audit log (:mod:`services.transparency`): each partition's signed checkpoint, inclusion
and consistency proofs between its sizes, and a hand's receipt.

Hashes travel in base64, as a ``tlog-checkpoint`` writes its head. Every proof is read from the
stored complete subtrees (:func:`services.store.audit_log.partial_tree`), never from the whole
log. Every number the schema allows is answered: a size or an index beyond the log, a leaf not
below the tree's size, an old size above the new one, are a missing tree or leaf (404
``not_found``), never a 400 (which is for what the schema itself refuses) nor a 500: a client
that holds a checkpoint the log has not reached (another service's, a fork) is told so. A log
that cannot answer yet is 503 ``unavailable``: no projection worker has built it in that
partition, or (for its signed checkpoint) the service has no log key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import PlainTextResponse

from contracts.audit_log import ConsistencyProof as Consistency
from contracts.audit_log import InclusionProof as Inclusion
from contracts.audit_log import LogHead, Logs
from services.gateway.deps import GameReadOf, Gateway, Services
from services.gateway.models import ConsistencyProof, InclusionProof, Receipt
from services.gateway.models import Logs as LogsAnswer
from services.gateway.openapi import OPTIONAL_CREDENTIAL, problems
from services.gateway.problems import ProblemError
from services.gateway.routes.hands import MAX_HAND
from services.gateway.views import Answer
from services.store import positions
from services.store.audit_log import (
    StoredCheckpoint,
    latest_checkpoint,
    latest_checkpoints,
    partial_tree,
)
from services.store.receipts import b64, hand_receipt
from services.transparency.merkle import PartialTree

router = APIRouter(prefix="/v1", tags=["log"])

MAX_SIZE = 2**62
"""No log is larger than this; a larger number is malformed, not a database overflow."""
_PROBLEMS = problems(404, 429, 503)


def _partition(services: Gateway, partition: int) -> int:
    count = services.stream.partitions.count
    if not 0 <= partition < count:
        raise ProblemError("not_found", f"no log {partition}: the game stream has {count}")
    return partition


async def _head(services: Gateway, partition: int) -> StoredCheckpoint:
    """The partition's latest checkpoint: 404 while its log is empty, 503 while no worker has
    built it (the log model has no position there: it has not run, the log may be behind)."""
    async with services.store.reading() as conn:
        head = await latest_checkpoint(conn, partition)
        if head is not None:
            return head
        kept = await positions.read_all(conn, ["log"], partition)
    if kept["log"].position == 0:
        raise ProblemError(
            "unavailable", f"log {partition} is not built yet: no projection worker keeps it"
        )
    raise ProblemError("not_found", f"log {partition} has no leaf yet")


def _within(head: StoredCheckpoint, size: int) -> None:
    if size > head.size:
        raise ProblemError("not_found", f"log {head.partition} has {head.size} leaves, not {size}")


PartitionPath = Annotated[int, Path(ge=0, le=1024, description="The partition of the log.")]


@router.get(
    "/log", response_model=LogsAnswer, responses=_PROBLEMS, openapi_extra=OPTIONAL_CREDENTIAL
)
async def logs(services: Services) -> Any:
    """Every partition's log: its origin, its size and the key its checkpoints are signed
    with. A player or a platform keeps these keys to check receipts offline."""
    async with services.store.reading() as conn:
        heads = {head.partition: head for head in await latest_checkpoints(conn)}
    shown = []
    for partition in services.stream.partitions.indexes:
        head = heads.get(partition)
        origin = f"{services.log_origin}/{partition}"
        if head is not None:
            origin = head.checkpoint.split("\n", 1)[0]
        shown.append(
            LogHead(
                partition=partition,
                origin=origin,
                size=0 if head is None else head.size,
                root=None if head is None else b64(head.root),
                verifier=None if head is None else head.verifier,
            )
        )
    return Answer(Logs(shown))


@router.get(
    "/log/{partition}/checkpoint",
    response_class=PlainTextResponse,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
        **_PROBLEMS,
    },
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def checkpoint(partition: PartitionPath, services: Services) -> Any:
    """The log's latest checkpoint as a signed note (C2SP ``tlog-checkpoint`` in a
    ``signed-note``), text/plain. 404 ``not_found`` before the first leaf; 503 ``unavailable``
    while the log is not built, or signs nothing (its worker has no log key): an operator's
    fix, not the client's."""
    head = await _head(services, _partition(services, partition))
    if head.note is None:
        raise ProblemError(
            "unavailable", f"log {partition} signs no checkpoint: its worker has no log key"
        )
    return PlainTextResponse(head.note)


@router.get(
    "/log/{partition}/proofs/inclusion",
    response_model=InclusionProof,
    responses=_PROBLEMS,
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def inclusion(
    partition: PartitionPath,
    services: Services,
    index: Annotated[int, Query(ge=0, le=MAX_SIZE, description="The leaf's index.")],
    size: Annotated[int, Query(ge=1, le=MAX_SIZE, description="The tree's size.")],
) -> Any:
    """The proof that leaf ``index`` is in the tree of ``size``: 404 ``not_found`` when the
    tree has no such leaf (``index`` not below ``size``) or the log is smaller than ``size``."""
    if index >= size:
        raise ProblemError("not_found", f"a tree of {size} has no leaf {index}")
    tree = await _tree(
        services,
        partition,
        size,
        lambda t: t.inclusion_proof(index, size),
        lambda t: t.root(size),
        lambda t: t.leaf(index),
    )
    return Answer(
        Inclusion(
            partition=partition,
            index=index,
            size=size,
            leaf_hash=b64(tree.leaf(index)),
            root=b64(tree.root(size)),
            proof=[b64(h) for h in tree.inclusion_proof(index, size)],
        )
    )


@router.get(
    "/log/{partition}/proofs/consistency",
    response_model=ConsistencyProof,
    responses=_PROBLEMS,
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def consistency(
    partition: PartitionPath,
    services: Services,
    old: Annotated[int, Query(ge=0, le=MAX_SIZE, description="The smaller tree's size.")],
    new: Annotated[int, Query(ge=0, le=MAX_SIZE, description="The larger tree's size.")],
) -> Any:
    """The proof that the tree of ``new`` extends the tree of ``old``: what a client that
    holds a checkpoint of ``old`` asks for before it trusts a newer one. 404 ``not_found``
    when there is no such proof (``old`` above ``new``) or the log is smaller than ``new``."""
    if old > new:
        raise ProblemError("not_found", f"no tree of {new} extends one of {old}")
    tree = await _tree(
        services,
        partition,
        new,
        lambda t: t.consistency_proof(old, new),
        lambda t: t.root(old),
        lambda t: t.root(new),
    )
    return Answer(
        Consistency(
            partition=partition,
            old=old,
            new=new,
            old_root=b64(tree.root(old)),
            new_root=b64(tree.root(new)),
            proof=[b64(h) for h in tree.consistency_proof(old, new)],
        )
    )


async def _tree(
    services: Gateway, partition: int, size: int, *needs: Callable[[Any], object]
) -> PartialTree:
    """The stored subtrees of partition ``partition``'s tree of ``size`` that ``needs`` read
    (404 ``not_found`` when the log is smaller than ``size``)."""
    head = await _head(services, _partition(services, partition))
    _within(head, size)
    async with services.store.reading() as conn:
        return await partial_tree(conn, partition, size, *needs)


@router.get(
    "/games/{game_id}/hands/{hand}/receipt",
    response_model=Receipt,
    responses=problems(401, 403, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def receipt(
    read: GameReadOf,
    hand: Annotated[
        int, Path(ge=0, le=MAX_HAND, description="The hand's number, 1 for the first.")
    ],
    services: Services,
) -> Any:
    """A finished hand's receipt: its leaf in the log, a signed checkpoint that holds it (the
    newest a witness cosigned, with the cosignatures, where the log has witnesses; else the
    latest), the leaf's inclusion proof in it, and the deal's commitment as it was published
    before the first bid. With the log's key alone (``GET /v1/log``), a seat or the platform
    checks it offline, and later asks for a consistency proof from its size. 404
    ``hand_not_found`` until the log has the hand (it follows the stream a moment behind).
    Readable by whoever reads the game's hands."""
    game_id = read.game.game_id
    found = await hand_receipt(services.store, game_id, hand)
    if found is None:
        raise ProblemError("hand_not_found", f"the log has no finished hand {hand} of {game_id}")
    return Answer(found)
