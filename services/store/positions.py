"""Where each read model stands in the stream, and which generation of it is current.

``position`` is the stream sequence of the last message the model applied (or parked); it is
written in the same transaction as the rows that message changed, so the two never disagree.
``generation`` goes up by one with every rebuild: a worker that started under another generation
knows its consumer is stale (see :mod:`services.projections.rebuild`). The row also names the
stream the position belongs to, with the digest of the message at the position, and why the
worker refuses the stream it finds, if it does (see :mod:`services.runtime.stream_identity`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from services.runtime.stream_identity import Followed, StreamIdentity
from services.store.database import Statements, fetch, insert_missing, run
from services.store.schema import positions

READ_MODELS: tuple[str, ...] = ("games", "scoreboard", "hands", "players", "standings")
"""Every read model the projection workers keep, by name: each has a row here once its worker
has run, and readers (``readyz``, the lag report) count those that have not as standing at 0.
The workers' models name themselves the same (a unit test holds the two lists together)."""


@dataclass(frozen=True, slots=True)
class Position:
    position: int
    generation: int
    stream: StreamIdentity | None = None
    digest: str | None = None
    refusal: str | None = None

    @property
    def followed(self) -> Followed:
        return Followed(self.position, self.stream, self.digest)


_COLUMNS = (
    positions.c.position,
    positions.c.generation,
    positions.c.stream,
    positions.c.stream_created,
    positions.c.digest,
    positions.c.refusal,
)


def _position(row: Any) -> Position:
    """A position row (selected with :data:`_COLUMNS`, in that order) as a :class:`Position`."""
    position, generation, stream_name, stream_created, digest, refusal = row
    stream = None
    if stream_name is not None and stream_created is not None:
        stream = StreamIdentity(stream_name, stream_created)
    return Position(position, generation, stream, digest, refusal)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


async def ensure(conn: Statements, model: str) -> Position:
    """The model's position, starting it at 0 (generation 0) if it has none yet."""
    row = {"model": model, "position": 0, "generation": 0, "updated_at": _now()}
    await insert_missing(conn, positions, [row], keys=["model"])
    return await read(conn, model)


async def read(conn: Statements, model: str) -> Position:
    result = await conn.execute(sa.select(*_COLUMNS).where(positions.c.model == model))
    row = result.one_or_none()
    return Position(0, 0) if row is None else _position(row)


async def lock(conn: Statements, model: str) -> Position:
    """Read the model's position and hold it until the transaction ends.

    On PostgreSQL the row is locked (``FOR UPDATE``), so a worker, a rebuild and a replay of
    parked messages for the same model take turns; on SQLite the writing transaction already
    holds the database's write lock.
    """
    result = await conn.execute(
        sa.select(*_COLUMNS).where(positions.c.model == model).with_for_update()
    )
    row = result.one_or_none()
    if row is None:
        raise LookupError(f"read model {model!r} has no position yet")
    return _position(row)


_MODELS: sa.BindParameter[str] = sa.bindparam("models", expanding=True)
_LOCK_ALL = (
    sa.select(positions.c.model, *_COLUMNS)
    .where(positions.c.model.in_(_MODELS))
    .order_by(positions.c.model)
    .with_for_update()
)
_ADVANCE = (
    positions.update()
    .where(positions.c.model.in_(_MODELS))
    .values(
        position=sa.bindparam("to_position"),
        digest=sa.bindparam("to_digest"),
        updated_at=sa.bindparam("at"),
    )
)
"""The statements of every batch, built once."""


async def lock_all(conn: Statements, models: Sequence[str]) -> dict[str, Position]:
    """:func:`lock` for several models at once: one statement, the rows taken in name order."""
    rows = await fetch(conn, _LOCK_ALL, {"models": list(models)})
    found = {row[0]: _position(row[1:]) for row in rows}
    missing = [model for model in models if model not in found]
    if missing:
        raise LookupError(f"read models {missing} have no position yet")
    return found


async def advance(conn: Statements, models: Sequence[str], sequence: int, digest: str) -> None:
    """Move the models to ``sequence``, whose message has the SHA-256 ``digest``."""
    parameters = {"models": list(models), "to_position": sequence, "to_digest": digest}
    await run(conn, _ADVANCE, {**parameters, "at": _now()})


async def follow(conn: Statements, model: str, stream: StreamIdentity) -> None:
    """Record that the model's position belongs to ``stream``, and that it refuses nothing."""
    await conn.execute(
        positions.update()
        .where(positions.c.model == model)
        .values(stream=stream.name, stream_created=stream.created, refusal=None)
    )


async def refuse(conn: Statements, model: str, reason: str) -> None:
    """Record why the model's worker will not follow the stream it finds."""
    await conn.execute(positions.update().where(positions.c.model == model).values(refusal=reason))


async def restart(conn: Statements, model: str) -> Position:
    """Put the model back at the start of the stream under a new generation (a rebuild): it
    follows no stream until its worker starts again, and refuses none."""
    await ensure(conn, model)
    current = await lock(conn, model)
    await conn.execute(
        positions.update()
        .where(positions.c.model == model)
        .values(
            position=0,
            generation=current.generation + 1,
            updated_at=_now(),
            stream=None,
            stream_created=None,
            digest=None,
            refusal=None,
        )
    )
    return Position(0, current.generation + 1)


async def all_positions(conn: Statements) -> dict[str, Position]:
    result = await conn.execute(sa.select(positions.c.model, *_COLUMNS))
    return {row[0]: _position(row[1:]) for row in result}
