"""Where each read model stands in the stream, and which generation of it is current.

``position`` is the stream sequence of the last message the model applied (or parked); it is
written in the same transaction as the rows that message changed, so the two never disagree.
``generation`` goes up by one with every rebuild: a worker that started under another generation
knows its consumer is stale (see :mod:`.rebuild`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from services.projections.schema import positions
from services.projections.store import insert_missing


@dataclass(frozen=True, slots=True)
class Position:
    position: int
    generation: int


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


async def ensure(conn: AsyncConnection, model: str) -> Position:
    """The model's position, starting it at 0 (generation 0) if it has none yet."""
    row = {"model": model, "position": 0, "generation": 0, "updated_at": _now()}
    await insert_missing(conn, positions, [row], keys=["model"])
    return await read(conn, model)


async def read(conn: AsyncConnection, model: str) -> Position:
    result = await conn.execute(
        sa.select(positions.c.position, positions.c.generation).where(positions.c.model == model)
    )
    row = result.one_or_none()
    return Position(0, 0) if row is None else Position(row.position, row.generation)


async def lock(conn: AsyncConnection, model: str) -> Position:
    """Read the model's position and hold it until the transaction ends.

    On PostgreSQL the row is locked (``FOR UPDATE``), so a worker, a rebuild and a replay of
    parked messages for the same model take turns; on SQLite the writing transaction already
    holds the database's write lock.
    """
    result = await conn.execute(
        sa.select(positions.c.position, positions.c.generation)
        .where(positions.c.model == model)
        .with_for_update()
    )
    row = result.one_or_none()
    if row is None:
        raise LookupError(f"read model {model!r} has no position yet")
    return Position(row.position, row.generation)


async def advance(conn: AsyncConnection, model: str, sequence: int) -> None:
    await conn.execute(
        positions.update()
        .where(positions.c.model == model)
        .values(position=sequence, updated_at=_now())
    )


async def restart(conn: AsyncConnection, model: str) -> Position:
    """Put the model back at the start of the stream under a new generation (a rebuild)."""
    await ensure(conn, model)
    current = await lock(conn, model)
    await conn.execute(
        positions.update()
        .where(positions.c.model == model)
        .values(position=0, generation=current.generation + 1, updated_at=_now())
    )
    return Position(0, current.generation + 1)


async def all_positions(conn: AsyncConnection) -> dict[str, Position]:
    result = await conn.execute(
        sa.select(positions.c.model, positions.c.position, positions.c.generation)
    )
    return {row.model: Position(row.position, row.generation) for row in result}
