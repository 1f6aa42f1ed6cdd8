"""Watch links' revocations in the read-model database: the generation a game's or a league's
links are issued at now (:mod:`services.gateway.auth` signs it into each link).

Revoking moves the generation on, which refuses every link issued before at once, on every
gateway (each reads the generation as it checks a link); no link is stored.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from services.store.schema import watch_links


def subject_of(kind: str, key: str) -> str:
    return f"{kind}:{key}"


async def generation(conn: AsyncConnection, kind: str, key: str) -> int:
    """The generation links of this game or league are issued at (0 until one is revoked)."""
    found = await conn.scalar(
        sa.select(watch_links.c.generation).where(watch_links.c.subject == subject_of(kind, key))
    )
    return int(found) if found is not None else 0


async def revoke(conn: AsyncConnection, kind: str, key: str, now: float) -> int:
    """Refuse every link issued so far; the new generation."""
    subject = subject_of(kind, key)
    moved = await conn.execute(
        watch_links.update()
        .where(watch_links.c.subject == subject)
        .values(generation=watch_links.c.generation + 1, revoked_at=now)
    )
    if not moved.rowcount:
        await conn.execute(
            watch_links.insert().values(subject=subject, generation=1, revoked_at=now)
        )
    return await generation(conn, kind, key)
