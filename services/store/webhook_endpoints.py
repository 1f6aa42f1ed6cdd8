"""Webhook endpoints in the read-model database: registered, listed, deleted, replayed.

An endpoint belongs to a platform (``""`` stands for the one platform of a server without
platform keys). It receives the event types it names, for the games and leagues of its
platform committed after it was registered: its ``starts`` hold, per stream (each partition of
the games, and the leagues), the stream's last sequence at that moment. Its secret is shown
once, when it is registered.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from services.store.schema import webhook_deliveries, webhook_endpoints

LOCAL_PLATFORM = ""
"""The platform column of endpoints registered on a server without platform keys."""

ENDPOINT_ID_BYTES = 12


def rfc3339(unix_seconds: float) -> str:
    """A time of an endpoint or a delivery as the API shows it (UTC, milliseconds)."""
    moment = datetime.fromtimestamp(unix_seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def platform_key(platform: str | None) -> str:
    """How a platform is stored (None, the platform of local development, as ``""``)."""
    return platform if platform is not None else LOCAL_PLATFORM


def new_endpoint_id() -> str:
    return f"ep_{secrets.token_hex(ENDPOINT_ID_BYTES)}"


@dataclass(frozen=True, slots=True)
class Endpoint:
    id: str
    platform: str
    url: str
    events: tuple[str, ...]
    secret: str
    created_at: float
    starts: Mapping[str, int]
    """Per stream, by name: the sequence it hears of what comes after."""
    disabled_at: float | None = None
    disabled_reason: str | None = None

    @property
    def enabled(self) -> bool:
        return self.disabled_at is None

    def after(self, stream: str) -> int | None:
        """The sequence of ``stream`` it hears of what comes after; None when it has no starting
        point there yet (a stream made after it was registered: the webhooks worker gives it
        one when it finds it, :mod:`services.webhooks.ingest`)."""
        return self.starts.get(stream)

    def row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "platform": self.platform,
            "url": self.url,
            "events": list(self.events),
            "secret": self.secret,
            "created_at": self.created_at,
            "starts": dict(self.starts),
            "disabled_at": self.disabled_at,
            "disabled_reason": self.disabled_reason,
        }


def _endpoint(row: Any) -> Endpoint:
    return Endpoint(
        id=row.id,
        platform=row.platform,
        url=row.url,
        events=tuple(row.events),
        secret=row.secret,
        created_at=row.created_at,
        starts=dict(row.starts),
        disabled_at=row.disabled_at,
        disabled_reason=row.disabled_reason,
    )


async def add(conn: AsyncConnection, endpoint: Endpoint) -> None:
    await conn.execute(webhook_endpoints.insert().values(**endpoint.row()))


async def count_of(conn: AsyncConnection, platform: str) -> int:
    counted = await conn.scalar(
        sa.select(sa.func.count())
        .select_from(webhook_endpoints)
        .where(webhook_endpoints.c.platform == platform)
    )
    return int(counted or 0)


async def endpoints_of(conn: AsyncConnection, platform: str) -> list[Endpoint]:
    """A platform's endpoints, oldest first."""
    result = await conn.execute(
        sa.select(webhook_endpoints)
        .where(webhook_endpoints.c.platform == platform)
        .order_by(webhook_endpoints.c.created_at, webhook_endpoints.c.id)
    )
    return [_endpoint(row) for row in result]


async def every_endpoint(conn: AsyncConnection, *, hold: bool = False) -> list[Endpoint]:
    """Every endpoint of every platform. With ``hold`` (in a writing transaction), none can be
    deleted until the transaction ends (PostgreSQL; SQLite's writer holds the database)."""
    query = sa.select(webhook_endpoints).order_by(webhook_endpoints.c.id)
    if hold:
        query = query.with_for_update(read=True)
    return [_endpoint(row) for row in await conn.execute(query)]


async def set_starts(conn: AsyncConnection, endpoint_id: str, starts: Mapping[str, int]) -> None:
    """Give the endpoint these starting points (every stream's: the map replaces the old)."""
    await conn.execute(
        webhook_endpoints.update()
        .where(webhook_endpoints.c.id == endpoint_id)
        .values(starts=dict(starts))
    )


async def find(conn: AsyncConnection, platform: str, endpoint_id: str) -> Endpoint | None:
    """The endpoint, if it is this platform's: another platform's is as good as none."""
    result = await conn.execute(
        sa.select(webhook_endpoints).where(
            webhook_endpoints.c.id == endpoint_id, webhook_endpoints.c.platform == platform
        )
    )
    row = result.one_or_none()
    return _endpoint(row) if row is not None else None


async def remove(conn: AsyncConnection, platform: str, endpoint_id: str) -> bool:
    """Delete the endpoint and its deliveries; False if the platform has no such endpoint.

    The endpoint goes first: a worker recording deliveries for it holds its row until it
    commits, so the deliveries deleted next include whatever it recorded."""
    deleted = await conn.execute(
        webhook_endpoints.delete().where(
            webhook_endpoints.c.id == endpoint_id, webhook_endpoints.c.platform == platform
        )
    )
    if not deleted.rowcount:
        return False
    await conn.execute(
        webhook_deliveries.delete().where(webhook_deliveries.c.endpoint_id == endpoint_id)
    )
    return True


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event sent (or to send) to one endpoint, as its log shows it."""

    id: int
    message_id: str
    event_type: str
    chain: str
    status: str
    attempts: int
    last_status: int | None
    last_error: str | None
    created_at: float
    next_try: float | None
    last_attempt_at: float | None


async def deliveries_of(
    conn: AsyncConnection, endpoint_id: str, *, limit: int, before: int | None = None
) -> list[Delivery]:
    """The endpoint's deliveries, newest first; with ``before``, those older than that one."""
    table = webhook_deliveries
    query = (
        sa.select(
            table.c.id,
            table.c.message_id,
            table.c.event_type,
            table.c.chain,
            table.c.status,
            table.c.attempts,
            table.c.last_status,
            table.c.last_error,
            table.c.created_at,
            table.c.next_try,
            table.c.last_attempt_at,
        )
        .where(table.c.endpoint_id == endpoint_id)
        .order_by(table.c.id.desc())
        .limit(limit)
    )
    if before is not None:
        query = query.where(table.c.id < before)
    return [Delivery(**row._mapping) for row in await conn.execute(query)]


async def replay(conn: AsyncConnection, endpoint: Endpoint, since: float, now: float) -> int:
    """Queue again what was sent to ``endpoint`` since ``since``: each event delivered (or
    tried, or skipped while the endpoint was disabled) at or after then, once, as a new pending
    delivery with the same ``webhook-id`` and body, after everything already queued; an event
    still pending is left as it is. The endpoint is enabled if it was disabled. Returns how
    many deliveries were queued."""
    table = webhook_deliveries
    if endpoint.disabled_at is not None:
        await conn.execute(
            webhook_endpoints.update()
            .where(webhook_endpoints.c.id == endpoint.id)
            .values(disabled_at=None, disabled_reason=None)
        )
    mine = table.c.endpoint_id == endpoint.id
    firsts = (
        sa.select(sa.func.min(table.c.id))
        .where(mine, table.c.created_at >= since)
        .group_by(table.c.message_id)
    )
    queued = sa.select(table.c.message_id).where(mine, table.c.status == "pending")
    copied = (
        sa.select(
            table.c.endpoint_id,
            table.c.message_id,
            table.c.event_type,
            table.c.chain,
            table.c.body,
            sa.literal("pending").label("status"),
            sa.literal(0).label("attempts"),
            sa.literal(now, sa.Double).label("created_at"),
            sa.literal(now, sa.Double).label("next_try"),
        )
        .where(table.c.id.in_(firsts), table.c.message_id.not_in(queued))
        .order_by(table.c.id)
    )
    columns = [
        "endpoint_id",
        "message_id",
        "event_type",
        "chain",
        "body",
        "status",
        "attempts",
        "created_at",
        "next_try",
    ]
    result = await conn.execute(table.insert().from_select(columns, copied))
    return int(result.rowcount or 0)
