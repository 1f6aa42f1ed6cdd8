"""The outbox: deliveries waiting to be sent, written with the stream position that made them.

The ingest (:mod:`.ingest`) records a batch's deliveries and moves its stream's position in one
transaction, so a crash loses no delivery and a redelivered batch records none twice. The
delivery loop (:mod:`.delivery`) takes from here the first pending delivery of each chain (an
endpoint and one game or league), in order, and writes back what became of each try.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from services.store.database import insert_missing
from services.store.schema import webhook_deliveries, webhook_endpoints, webhook_positions

PENDING = "pending"
DELIVERED = "delivered"
FAILED = "failed"
"""Every try of the schedule failed."""
SKIPPED = "skipped"
"""Not sent: the endpoint was disabled (a replay sends it again)."""


# --------------------------------------------------------------------------- positions


@dataclass(frozen=True, slots=True)
class Position:
    position: int
    stream_created: str | None
    known: bool
    """False when the stream has no position row yet."""


def _now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


async def lock_position(conn: AsyncConnection, stream: str) -> Position:
    """The stream's position, held until the transaction ends (``FOR UPDATE`` on PostgreSQL;
    SQLite's writing transaction holds the database)."""
    result = await conn.execute(
        sa.select(webhook_positions.c.position, webhook_positions.c.stream_created)
        .where(webhook_positions.c.stream == stream)
        .with_for_update()
    )
    row = result.one_or_none()
    if row is None:
        return Position(0, None, known=False)
    return Position(row.position, row.stream_created, known=True)


async def set_position(
    conn: AsyncConnection, stream: str, position: int, stream_created: str, *, known: bool = False
) -> None:
    """Move the stream's position (``known``: its row exists, as :func:`lock_position` found
    it in this transaction, and is only updated)."""
    row = {
        "stream": stream,
        "position": position,
        "stream_created": stream_created,
        "updated_at": _now_text(),
    }
    if not known:
        await insert_missing(conn, webhook_positions, [row], keys=["stream"])
    await conn.execute(
        webhook_positions.update()
        .where(webhook_positions.c.stream == stream)
        .values(position=position, stream_created=stream_created, updated_at=row["updated_at"])
    )


# --------------------------------------------------------------------------- recording


@dataclass(frozen=True, slots=True)
class Pending:
    """A delivery to record."""

    endpoint_id: str
    message_id: str
    event_type: str
    chain: str
    body: bytes
    status: str
    """``pending``, or ``skipped`` for a disabled endpoint."""


async def record(conn: AsyncConnection, deliveries: Sequence[Pending], now: float) -> None:
    if not deliveries:
        return
    rows = [
        {
            "endpoint_id": delivery.endpoint_id,
            "message_id": delivery.message_id,
            "event_type": delivery.event_type,
            "chain": delivery.chain,
            "body": delivery.body.decode(),
            "status": delivery.status,
            "attempts": 0,
            "created_at": now,
            "next_try": now if delivery.status == PENDING else None,
        }
        for delivery in deliveries
    ]
    await conn.execute(webhook_deliveries.insert(), rows)


# --------------------------------------------------------------------------- sending


@dataclass(frozen=True, slots=True)
class Due:
    """A delivery whose turn it is: the first pending one of its chain, its time come."""

    id: int
    endpoint_id: str
    message_id: str
    chain: str
    body: bytes
    attempts: int
    created_at: float
    url: str
    secret: str


def _heads() -> Any:
    """The first pending delivery of each chain (endpoint, game or league)."""
    table = webhook_deliveries
    return (
        sa.select(sa.func.min(table.c.id).label("id"))
        .where(table.c.status == PENDING)
        .group_by(table.c.endpoint_id, table.c.chain)
        .subquery()
    )


async def due(
    conn: AsyncConnection,
    now: float,
    limit: int,
    *,
    busy_endpoints: Collection[str] = (),
    in_flight: Collection[int] = (),
) -> list[Due]:
    """Up to ``limit`` deliveries to send now, longest waiting first: each the first pending
    delivery of its chain, of an enabled endpoint not in ``busy_endpoints``, not in flight."""
    table, endpoints = webhook_deliveries, webhook_endpoints
    heads = _heads()
    query = (
        sa.select(
            table.c.id,
            table.c.endpoint_id,
            table.c.message_id,
            table.c.chain,
            table.c.body,
            table.c.attempts,
            table.c.created_at,
            endpoints.c.url,
            endpoints.c.secret,
        )
        .join(heads, heads.c.id == table.c.id)
        .join(endpoints, endpoints.c.id == table.c.endpoint_id)
        .where(endpoints.c.disabled_at.is_(None), table.c.next_try <= now)
        .order_by(table.c.next_try, table.c.id)
        .limit(limit)
    )
    if busy_endpoints:
        query = query.where(table.c.endpoint_id.not_in(list(busy_endpoints)))
    if in_flight:
        query = query.where(table.c.id.not_in(list(in_flight)))
    rows = await conn.execute(query)
    return [
        Due(
            id=row.id,
            endpoint_id=row.endpoint_id,
            message_id=row.message_id,
            chain=row.chain,
            body=row.body.encode(),
            attempts=row.attempts,
            created_at=row.created_at,
            url=row.url,
            secret=row.secret,
        )
        for row in rows
    ]


async def chain_after(conn: AsyncConnection, head: Due, now: float, limit: int) -> list[Due]:
    """The pending deliveries of ``head``'s chain that come after it, in order, up to the first
    one not due by ``now`` (at most ``limit``)."""
    table = webhook_deliveries
    rows = await conn.execute(
        sa.select(
            table.c.id,
            table.c.message_id,
            table.c.body,
            table.c.attempts,
            table.c.created_at,
            table.c.next_try,
        )
        .where(
            table.c.status == PENDING,
            table.c.endpoint_id == head.endpoint_id,
            table.c.chain == head.chain,
            table.c.id > head.id,
        )
        .order_by(table.c.id)
        .limit(limit)
    )
    found: list[Due] = []
    for row in rows:
        if row.next_try is None or row.next_try > now:
            break
        found.append(
            Due(
                id=row.id,
                endpoint_id=head.endpoint_id,
                message_id=row.message_id,
                chain=head.chain,
                body=row.body.encode(),
                attempts=row.attempts,
                created_at=row.created_at,
                url=head.url,
                secret=head.secret,
            )
        )
    return found


async def next_due(conn: AsyncConnection) -> float | None:
    """When the earliest pending delivery of an enabled endpoint is due (None: none is)."""
    table, endpoints = webhook_deliveries, webhook_endpoints
    found = await conn.scalar(
        sa.select(sa.func.min(table.c.next_try))
        .join(endpoints, endpoints.c.id == table.c.endpoint_id)
        .where(table.c.status == PENDING, endpoints.c.disabled_at.is_(None))
    )
    return float(found) if found is not None else None


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """A try a receiver acknowledged: the delivery, the answer's status, when it came."""

    delivery_id: int
    status: int
    at: float


async def delivered(conn: AsyncConnection, acknowledged: Sequence[Acknowledged]) -> None:
    """Record acknowledged tries: one statement for them all, as the recorder writes what many
    chains did at once."""
    if not acknowledged:
        return
    table = webhook_deliveries
    await conn.execute(
        table.update()
        .where(table.c.id == sa.bindparam("delivery"), table.c.status == PENDING)
        .values(
            status=DELIVERED,
            attempts=table.c.attempts + 1,
            last_status=sa.bindparam("answer"),
            last_error=None,
            last_attempt_at=sa.bindparam("answered_at"),
            next_try=None,
        ),
        [
            {"delivery": a.delivery_id, "answer": a.status, "answered_at": a.at}
            for a in acknowledged
        ],
    )


async def failed_try(
    conn: AsyncConnection,
    delivery_id: int,
    status: int | None,
    error: str,
    now: float,
    next_try: float | None,
) -> None:
    """Record a failed try: tried again at ``next_try``, or failed for good (None)."""
    await conn.execute(
        webhook_deliveries.update()
        .where(webhook_deliveries.c.id == delivery_id, webhook_deliveries.c.status == PENDING)
        .values(
            status=PENDING if next_try is not None else FAILED,
            attempts=webhook_deliveries.c.attempts + 1,
            last_status=status,
            last_error=error,
            last_attempt_at=now,
            next_try=next_try,
        )
    )


async def disable(conn: AsyncConnection, endpoint_id: str, reason: str, now: float) -> None:
    """Disable the endpoint with the reason; its pending deliveries are skipped (a replay
    queues them again)."""
    await conn.execute(
        webhook_endpoints.update()
        .where(webhook_endpoints.c.id == endpoint_id, webhook_endpoints.c.disabled_at.is_(None))
        .values(disabled_at=now, disabled_reason=reason)
    )
    await conn.execute(
        webhook_deliveries.update()
        .where(
            webhook_deliveries.c.endpoint_id == endpoint_id,
            webhook_deliveries.c.status == PENDING,
        )
        .values(status=SKIPPED, next_try=None)
    )


async def prune(conn: AsyncConnection, before: float) -> int:
    """Forget finished deliveries made before ``before``, and those of deleted endpoints."""
    table = webhook_deliveries
    old = await conn.execute(
        table.delete().where(table.c.status != PENDING, table.c.created_at < before)
    )
    orphans = await conn.execute(
        table.delete().where(table.c.endpoint_id.not_in(sa.select(webhook_endpoints.c.id)))
    )
    return int(old.rowcount or 0) + int(orphans.rowcount or 0)
