"""The outbox: deliveries waiting to be sent, written with the stream position that made them.

The ingest (:mod:`.ingest`) records a batch's deliveries and moves its stream's position in one
transaction, so a crash loses no delivery and a redelivered batch records none twice. The
delivery loop (:mod:`.delivery`) of each webhooks process claims from here the first pending
deliveries of chains (an endpoint and one game or league) that no other process has claimed, in
order, and writes back what became of each try.

A claim is a token and a time (``claim``, ``claimed_until``): a delivery is claimable while it
has none or its time has passed, and only the head of its chain (its first pending delivery)
is: so a chain is sent by one process at a time, in order, and the deliveries of a process that
ended are claimed by another once their claims run out. A claim is taken by one ``UPDATE`` on
rows its transaction has locked (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so two processes
claiming at once take different chains; SQLite's writer holds the whole database).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
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


def claimable(now: float) -> Any:
    """A delivery no process holds now: never claimed, released, or its claim run out."""
    table = webhook_deliveries
    return sa.or_(table.c.claim.is_(None), table.c.claimed_until < now)


def _is_head() -> Any:
    """The delivery is the first pending one of its chain."""
    table = webhook_deliveries
    earlier = table.alias("earlier")
    return ~sa.exists().where(
        earlier.c.status == PENDING,
        earlier.c.endpoint_id == table.c.endpoint_id,
        earlier.c.chain == table.c.chain,
        earlier.c.id < table.c.id,
    )


@dataclass(frozen=True, slots=True)
class Claimed:
    """What one claim took: runs of chains (each a chain's first pending deliveries, in order,
    due now), and whether due chains were left out for their endpoints' limits."""

    runs: list[list[Due]]
    left_out: bool


async def claim(
    conn: AsyncConnection,
    token: str,
    now: float,
    until: float,
    *,
    chains: int,
    room: Mapping[str, int],
    per_endpoint: int,
    run_length: int,
    sending: Collection[tuple[str, str]] = (),
) -> Claimed:
    """Claim, for ``token`` until ``until``, up to ``chains`` chains whose head is due and
    claimable, longest waiting first: each chain's deliveries from its head on, while they are
    due and claimable (at most ``run_length``). An endpoint gets at most ``room[endpoint]``
    chains (``per_endpoint`` if it is not named). Chains ``sending`` (endpoint, chain) are the
    caller's in flight: never claimed again, even if their claim ran out meanwhile."""
    table, endpoints = webhook_deliveries, webhook_endpoints
    full = [endpoint for endpoint, left in room.items() if left <= 0]
    query = (
        sa.select(
            table.c.id, table.c.endpoint_id, table.c.chain, endpoints.c.url, endpoints.c.secret
        )
        .join(endpoints, endpoints.c.id == table.c.endpoint_id)
        .where(
            table.c.status == PENDING,
            table.c.next_try <= now,
            endpoints.c.disabled_at.is_(None),
            claimable(now),
            _is_head(),
        )
        .order_by(table.c.next_try, table.c.id)
        .limit(chains + per_endpoint + len(sending))
        .with_for_update(of=table, skip_locked=True)
    )
    if full:
        query = query.where(table.c.endpoint_id.not_in(full))
    left = dict(room)
    heads: list[Any] = []
    left_out = False
    for head in await conn.execute(query):
        if len(heads) == chains:
            break
        if (head.endpoint_id, head.chain) in sending:
            continue
        if left.get(head.endpoint_id, per_endpoint) <= 0:
            left_out = True
            continue
        left[head.endpoint_id] = left.get(head.endpoint_id, per_endpoint) - 1
        heads.append(head)
    if not heads:
        return Claimed([], left_out)
    runs = await _runs(conn, heads, now, run_length)
    taken = await conn.execute(
        table.update()
        .where(
            table.c.id.in_([due.id for run in runs for due in run]),
            table.c.status == PENDING,
            claimable(now),
        )
        .values(claim=token, claimed_until=until)
        .returning(table.c.id)
    )
    ids = set(taken.scalars())
    held = [_while_taken(run, ids) for run in runs]
    return Claimed([run for run in held if run], left_out)


async def _runs(
    conn: AsyncConnection, heads: Sequence[Any], now: float, length: int
) -> list[list[Due]]:
    """Each head's chain from the head on, while due and claimable (at most ``length``)."""
    table = webhook_deliveries
    numbered = (
        sa.select(
            table.c.id,
            table.c.endpoint_id,
            table.c.chain,
            table.c.message_id,
            table.c.body,
            table.c.attempts,
            table.c.created_at,
            table.c.next_try,
            table.c.claim,
            table.c.claimed_until,
            sa.func.row_number()
            .over(partition_by=(table.c.endpoint_id, table.c.chain), order_by=table.c.id)
            .label("place"),
        )
        .where(
            table.c.status == PENDING,
            sa.tuple_(table.c.endpoint_id, table.c.chain).in_(
                [(head.endpoint_id, head.chain) for head in heads]
            ),
        )
        .subquery()
    )
    rows = await conn.execute(
        sa.select(numbered)
        .where(numbered.c.place <= length)
        .order_by(numbered.c.endpoint_id, numbered.c.chain, numbered.c.id)
    )
    by_chain: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        by_chain.setdefault((row.endpoint_id, row.chain), []).append(row)
    runs: list[list[Due]] = []
    for head in heads:
        run: list[Due] = []
        for row in by_chain.get((head.endpoint_id, head.chain), []):
            if not run and row.id != head.id:
                break  # another delivery came first meanwhile: the chain waits for a round
            due = row.next_try is not None and row.next_try <= now
            free = row.claim is None or row.claimed_until < now
            if not (due and free):
                break
            run.append(
                Due(
                    id=row.id,
                    endpoint_id=row.endpoint_id,
                    message_id=row.message_id,
                    chain=row.chain,
                    body=row.body.encode(),
                    attempts=row.attempts,
                    created_at=row.created_at,
                    url=head.url,
                    secret=head.secret,
                )
            )
        if run:
            runs.append(run)
    return runs


def _while_taken(run: list[Due], taken: Collection[int]) -> list[Due]:
    """The run up to its first delivery the claim did not take."""
    held: list[Due] = []
    for due in run:
        if due.id not in taken:
            break
        held.append(due)
    return held


async def renew(conn: AsyncConnection, tokens: Collection[str], until: float) -> int:
    """Extend the claims of ``tokens`` on deliveries still pending to ``until``; how many."""
    table = webhook_deliveries
    renewed = await conn.execute(
        table.update()
        .where(table.c.claim.in_(list(tokens)), table.c.status == PENDING)
        .values(claimed_until=until)
    )
    return int(renewed.rowcount or 0)


async def release(conn: AsyncConnection, token: str, endpoint_id: str, chain: str) -> None:
    """Give up ``token``'s claims on the chain's deliveries still pending (its run ended before
    them): another round, of any process, may claim them as soon as they are due."""
    table = webhook_deliveries
    await conn.execute(
        table.update()
        .where(
            table.c.claim == token,
            table.c.endpoint_id == endpoint_id,
            table.c.chain == chain,
            table.c.status == PENDING,
        )
        .values(claim=None, claimed_until=None)
    )


async def pending_count(conn: AsyncConnection) -> int:
    """Deliveries waiting to be sent (or being sent), over every endpoint."""
    table = webhook_deliveries
    counted = await conn.scalar(
        sa.select(sa.func.count()).select_from(table).where(table.c.status == PENDING)
    )
    return int(counted or 0)


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
    chains did at once. A receiver's acknowledgement is the truth whoever holds the claim: a
    pending delivery is delivered (a try made after its claim ran out is recorded too)."""
    if not acknowledged:
        return
    table = webhook_deliveries
    pending = table.c.status == PENDING
    await conn.execute(
        table.update()
        .where(table.c.id == sa.bindparam("delivery"))
        .values(
            status=sa.case((pending, DELIVERED), else_=table.c.status),
            attempts=table.c.attempts + 1,
            last_status=sa.bindparam("answer"),
            last_error=None,
            last_attempt_at=sa.bindparam("answered_at"),
            next_try=sa.case((pending, None), else_=table.c.next_try),
            claim=None,
            claimed_until=None,
        ),
        [
            {"delivery": a.delivery_id, "answer": a.status, "answered_at": a.at}
            for a in acknowledged
        ],
    )


async def failed_try(
    conn: AsyncConnection,
    delivery_id: int,
    token: str,
    status: int | None,
    error: str,
    now: float,
    next_try: float | None,
) -> bool:
    """Record a failed try under ``token``'s claim: tried again at ``next_try``, or failed for
    good (None); the claim is given up. False when the claim is another's now (it ran out):
    the try is counted in the delivery's log, and what comes next is the new holder's."""
    table = webhook_deliveries
    tried = {
        "attempts": table.c.attempts + 1,
        "last_status": status,
        "last_error": error,
        "last_attempt_at": now,
    }
    held = await conn.execute(
        table.update()
        .where(table.c.id == delivery_id, table.c.claim == token, table.c.status == PENDING)
        .values(
            status=PENDING if next_try is not None else FAILED,
            next_try=next_try,
            claim=None,
            claimed_until=None,
            **tried,
        )
    )
    if held.rowcount:
        return True
    await conn.execute(table.update().where(table.c.id == delivery_id).values(**tried))
    return False


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
        .values(status=SKIPPED, next_try=None, claim=None, claimed_until=None)
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
