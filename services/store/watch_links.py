"""Watch links' revocations in the read-model database: the generation a game's or a league's
links are issued at now (:mod:`services.gateway.auth` signs it into each link).

Revoking moves the generation on, which refuses every link issued before at once, on every
gateway (each reads the generation as it checks a link); no link is stored.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from services.store.database import upsert
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
    """Refuse every link issued so far; the new generation. One statement (an upsert), so two
    revocations at once each move it on, and neither fails."""
    row = {"subject": subject_of(kind, key), "generation": 1, "revoked_at": now}
    await upsert(conn, watch_links, [row], keys=["subject"], add=["generation"])
    return await generation(conn, kind, key)
