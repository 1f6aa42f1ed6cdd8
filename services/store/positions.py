"""Where each read model stands in each partition of the game stream, and which generation of
it is current.

A row per model and partition (:mod:`contracts.partitions`): ``position`` is the sequence, in
that partition's stream, of the last message the model applied (or parked); it is written in
the same transaction as the rows that message changed, so the two never disagree. The positions
of one model in different partitions are independent: each partition is its own stream, followed
by whichever process holds it. ``generation`` goes up by one with every rebuild, in every
partition at once: a worker that started under another generation knows its consumer is stale
(see :mod:`services.projections.rebuild`). The row also names the stream the position belongs
to, with the digest of the message at the position, and why the worker refuses the stream it
finds, if it does (see :mod:`services.runtime.stream_identity`); and, while a rebuild replays
the partition, when the rebuild began: set by the rebuild, cleared by the worker that has
replayed the partition to its end (``readyz`` tells a rebuild under way from a lag by it).

A position moves only forward and only in order: whoever writes it holds the row's lock
(:func:`lock_all`) and applies only the messages that come right after it, so two processes that
hold the same partition for a moment (a lease handed over) neither apply a message twice nor skip
one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from services.runtime.stream_identity import Followed, StreamIdentity
from services.store.database import Statements, fetch, insert_missing, run
from services.store.schema import positions

READ_MODELS: tuple[str, ...] = (
    "games",
    "scoreboard",
    "hands",
    "players",
    "standings",
    "log",
    "integrity",
)
"""Every read model the projection workers keep, by name: each has a row here per partition
once its worker has run there, and readers (``readyz``, the lag report) count those that have
not as standing at 0. The workers' models name themselves the same (a unit test holds the two
lists together)."""


@dataclass(frozen=True, slots=True)
class Position:
    position: int
    generation: int
    stream: StreamIdentity | None = None
    digest: str | None = None
    refusal: str | None = None
    rebuilding_since: str | None = None
    """When the rebuild that replays the partition began (None: none is under way)."""
    updated_at: str = ""
    """When the position last moved (or was reset), as :func:`now` writes it."""

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
    positions.c.rebuilding_since,
    positions.c.updated_at,
)


def _position(row: Any) -> Position:
    """A position row (selected with :data:`_COLUMNS`, in that order) as a :class:`Position`."""
    position, generation, stream_name, stream_created, digest, refusal, since, updated = row
    stream = None
    if stream_name is not None and stream_created is not None:
        stream = StreamIdentity(stream_name, stream_created)
    return Position(position, generation, stream, digest, refusal, since, updated)


def now() -> str:
    """The time as position rows record it (``updated_at``, ``rebuilding_since``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def written_at(stamp: str) -> datetime | None:
    """A time :func:`now` wrote (None for what it did not: the rows of schema 6 and before)."""
    try:
        return datetime.fromisoformat(stamp)
    except ValueError:
        return None


def _of(model: str, partition: int) -> sa.ColumnElement[bool]:
    return (positions.c.model == model) & (positions.c.partition == partition)


async def ensure(conn: Statements, models: Sequence[str], partition: int) -> dict[str, Position]:
    """The models' positions in ``partition``, starting each at 0 (generation 0) if it has
    none there yet."""
    at = now()
    rows = [
        {"model": model, "partition": partition, "position": 0, "generation": 0, "updated_at": at}
        for model in models
    ]
    await insert_missing(conn, positions, rows, keys=["model", "partition"])
    return await read_all(conn, models, partition)


async def read_all(conn: Statements, models: Sequence[str], partition: int) -> dict[str, Position]:
    """The models' positions in ``partition`` (0, generation 0, for a model without one)."""
    result = await conn.execute(
        sa.select(positions.c.model, *_COLUMNS).where(
            positions.c.model.in_(list(models)) & (positions.c.partition == partition)
        )
    )
    found = {row[0]: _position(row[1:]) for row in result}
    return {model: found.get(model, Position(0, 0)) for model in models}


async def lock(conn: Statements, model: str, partition: int) -> Position:
    """Read the model's position in ``partition`` and hold it until the transaction ends.

    On PostgreSQL the row is locked (``FOR UPDATE``), so a worker, a rebuild and a replay of
    parked messages for the same model take turns; on SQLite the writing transaction already
    holds the database's write lock.
    """
    result = await conn.execute(sa.select(*_COLUMNS).where(_of(model, partition)).with_for_update())
    row = result.one_or_none()
    if row is None:
        raise LookupError(f"read model {model!r} has no position in partition {partition} yet")
    return _position(row)


_MODELS: sa.BindParameter[str] = sa.bindparam("models", expanding=True)
_PARTITION: sa.BindParameter[int] = sa.bindparam("in_partition")
_LOCK_ALL = (
    sa.select(positions.c.model, *_COLUMNS)
    .where(positions.c.model.in_(_MODELS) & (positions.c.partition == _PARTITION))
    .order_by(positions.c.model)
    .with_for_update()
)
_ADVANCE = (
    positions.update()
    .where(positions.c.model.in_(_MODELS) & (positions.c.partition == _PARTITION))
    .values(
        position=sa.bindparam("to_position"),
        digest=sa.bindparam("to_digest"),
        updated_at=sa.bindparam("at"),
    )
)
"""The statements of every batch, built once."""


async def lock_all(conn: Statements, models: Sequence[str], partition: int) -> dict[str, Position]:
    """:func:`lock` for several models at once: one statement, the rows taken in name order."""
    rows = await fetch(conn, _LOCK_ALL, {"models": list(models), "in_partition": partition})
    found = {row[0]: _position(row[1:]) for row in rows}
    missing = [model for model in models if model not in found]
    if missing:
        raise LookupError(f"read models {missing} have no position in partition {partition} yet")
    return found


async def advance(
    conn: Statements, models: Sequence[str], partition: int, sequence: int, digest: str
) -> None:
    """Move the models to ``sequence`` of ``partition``'s stream, whose message has the SHA-256
    ``digest``. The caller holds the rows (:func:`lock_all`) and has applied everything up to
    ``sequence``."""
    parameters = {
        "models": list(models),
        "in_partition": partition,
        "to_position": sequence,
        "to_digest": digest,
    }
    await run(conn, _ADVANCE, {**parameters, "at": now()})


async def follow(conn: Statements, model: str, partition: int, stream: StreamIdentity) -> None:
    """Record that the model's position in ``partition`` belongs to ``stream``, and that it
    refuses nothing."""
    await conn.execute(
        positions.update()
        .where(_of(model, partition))
        .values(stream=stream.name, stream_created=stream.created, refusal=None)
    )


async def refuse(conn: Statements, model: str, partition: int, reason: str) -> None:
    """Record why the model's worker will not follow the stream it finds in ``partition``."""
    await conn.execute(positions.update().where(_of(model, partition)).values(refusal=reason))


async def restart(
    conn: Statements, model: str, partitions: Iterable[int], *, elsewhere: bool = True
) -> None:
    """Put the model back at the start of each of ``partitions``' streams (and, with
    ``elsewhere``, of any other partition it has a position in) under a new generation, as
    rebuilding since now (a rebuild): it follows no stream there until its workers start
    again, and refuses none."""
    chosen = sorted(set(partitions))
    for partition in chosen:
        await ensure(conn, [model], partition)
    query = sa.select(positions.c.partition, positions.c.generation).where(
        positions.c.model == model
    )
    if not elsewhere:
        query = query.where(positions.c.partition.in_(chosen))
    result = await conn.execute(query.order_by(positions.c.partition).with_for_update())
    rows: list[tuple[Any, ...]] = [tuple(row) for row in result]
    began = now()
    for partition, generation in rows:
        await conn.execute(
            positions.update()
            .where(_of(model, partition))
            .values(
                position=0,
                generation=generation + 1,
                updated_at=began,
                stream=None,
                stream_created=None,
                digest=None,
                refusal=None,
                rebuilding_since=began,
            )
        )


async def rebuilt(conn: Statements, model: str, partition: int, generation: int) -> bool:
    """Record that the model has replayed ``partition`` to the end of its stream under
    ``generation``: the rebuild is over there (whether one was under way). False when another
    rebuild has begun since."""
    result = await conn.execute(
        positions.update()
        .where(_of(model, partition) & (positions.c.generation == generation))
        .values(rebuilding_since=None)
    )
    return bool(result.rowcount)


async def all_positions(conn: Statements) -> dict[str, dict[int, Position]]:
    """Every stored position, by model and partition."""
    result = await conn.execute(sa.select(positions.c.model, positions.c.partition, *_COLUMNS))
    stored: dict[str, dict[int, Position]] = {}
    for row in result:
        values: tuple[Any, ...] = tuple(row)
        stored.setdefault(values[0], {})[values[1]] = _position(values[2:])
    return stored
