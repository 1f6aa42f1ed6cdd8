"""Parked messages: what a read model could not apply, kept with the reason for an operator.

A worker parks a message in the same transaction that moves its position past it, so it is
never lost and never blocks the messages after it. A message is named by its partition and its
sequence in that partition's stream. ``spades projections parked`` lists them;
``spades projections replay-parked`` applies them again (after a fix, or once the commit a game
was waiting for is back), oldest first, and forgets those that now apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import sqlalchemy as sa

from contracts.partitions import ONE, Partitions
from services.projections.model import Delivered, OutOfOrder, Unapplicable
from services.projections.registry import READ_MODELS
from services.store import positions
from services.store.database import Statements, Store, is_store_trouble, upsert
from services.store.schema import parked

MAX_REASON = 2000


@dataclass(frozen=True, slots=True)
class ParkedMessage:
    model: str
    partition: int
    sequence: int
    subject: str
    reason: str
    payload: bytes
    attempts: int
    parked_at: str


def describe(error: BaseException) -> str:
    """A reason an operator can read: the error's type and message, bounded in length."""
    text = str(error) if isinstance(error, Unapplicable) else f"{type(error).__name__}: {error}"
    return text[:MAX_REASON]


async def park(conn: Statements, message: ParkedMessage) -> None:
    """Keep ``message``, once per model, partition and sequence: parking it again replaces the
    reason and adds ``message.attempts`` (the attempts made this time) to the attempts stored."""
    row = {
        "model": message.model,
        "partition": message.partition,
        "sequence": message.sequence,
        "subject": message.subject,
        "reason": message.reason[:MAX_REASON],
        "payload": message.payload,
        "attempts": message.attempts,
        "parked_at": message.parked_at,
    }
    await upsert(conn, parked, [row], keys=["model", "partition", "sequence"], add=["attempts"])


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


async def parked_messages(store: Store, model: str | None = None) -> list[ParkedMessage]:
    """The parked messages, by model, partition and stream sequence."""
    query = sa.select(parked).order_by(parked.c.model, parked.c.partition, parked.c.sequence)
    if model is not None:
        query = query.where(parked.c.model == model)
    async with store.reading() as conn:
        result = await conn.execute(query)
        return [
            ParkedMessage(
                model=row.model,
                partition=row.partition,
                sequence=row.sequence,
                subject=row.subject,
                reason=row.reason,
                payload=bytes(row.payload),
                attempts=row.attempts,
                parked_at=row.parked_at,
            )
            for row in result
        ]


@dataclass(slots=True)
class ReplayOutcome:
    applied: list[ParkedMessage] = field(default_factory=list)
    still_parked: list[ParkedMessage] = field(default_factory=list)


async def replay_parked(
    store: Store, model: str | None = None, partitions: Partitions = ONE
) -> ReplayOutcome:
    """Apply the parked messages of a game stream laid out as ``partitions`` again, oldest
    first in each partition; forget those that apply.

    Each is applied in its own transaction under the model's position lock in its partition, so
    a worker running at the same time takes turns with it. A message that fails again stays
    parked with the new reason. A database that is down raises (nothing is changed).
    """
    outcome = ReplayOutcome()
    for message in await parked_messages(store, model):
        try:
            await _apply(store, message, partitions)
        except Exception as error:
            if is_store_trouble(error):
                raise
            again = replace(message, reason=describe(error), attempts=1, parked_at=now())
            async with store.writing() as conn:
                await park(conn, again)
            outcome.still_parked.append(replace(again, attempts=message.attempts + 1))
        else:
            outcome.applied.append(message)
    return outcome


async def _apply(store: Store, message: ParkedMessage, partitions: Partitions) -> None:
    read_model = READ_MODELS[message.model]
    async with store.writing() as conn:
        await positions.lock(conn, message.model, message.partition)
        delivered = Delivered.read(message.sequence, message.subject, message.payload, partitions)
        refusals = await read_model.apply(conn, [delivered])
        if refusals:
            raise OutOfOrder(refusals[message.sequence])
        await conn.execute(
            parked.delete().where(
                (parked.c.model == message.model)
                & (parked.c.partition == message.partition)
                & (parked.c.sequence == message.sequence)
            )
        )
