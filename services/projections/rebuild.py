"""Rebuilding a read model from the stream, while the others go on serving.

A rebuild is one transaction per model: raise its generation and put its position back to 0 in
every partition rebuilt (the position rows are locked first, so a batch in flight finishes
before or aborts after), marked as rebuilding since now; then empty its tables of those
partitions' games and forget its parked messages there. Each worker that follows a partition
notices the new generation at its next batch there (checked under the same lock, so it never
writes into the emptied rows) or within a second when idle, and the model replays that
partition's stream on a consumer of its own while the other models never stop
(:mod:`.worker`): the partitions replay at once, each where it is followed. Until a partition's
replay catches up, the rebuilt model answers with what it has replayed so far, and ``/readyz``
counts it as rebuilding there, not as behind (:mod:`services.store.lag`); the worker that
reaches the end of the stream says the rebuild is over. With no worker running, the next start
replays.

A model ``kept`` (the audit log, a record: see :attr:`ReadModel.kept`) keeps its rows: its
replay only adds what it lacks.

Every partition is rebuilt unless some are named. Only the models whose rows each belong to one
game or one partition (games, scoreboard, hands, integrity: a ``game_id`` in every table; the
log: a ``partition`` or a ``game_id``) can be rebuilt in some partitions alone: their rows of
the other partitions stay as they are. The players' counters and the leagues' standings gather
games of every partition in one row (a player's, a league's); they are rebuilt whole, and a
rebuild of some partitions refuses them (:class:`AcrossPartitions`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import sqlalchemy as sa

from contracts.partitions import ONE, Partitions
from services.projections.model import ReadModel
from services.projections.registry import read_models
from services.store import positions
from services.store.database import Statements, Store
from services.store.schema import parked

DELETE_CHUNK = 500
"""Games whose rows one statement deletes, in a rebuild of some partitions."""


class AcrossPartitions(ValueError):
    """A rebuild of some partitions named a model whose rows gather games of every partition."""


def per_game(model: ReadModel) -> bool:
    """Whether every row of the model belongs to one game or to one partition (the audit
    log's), so that the rows of a partition can be rebuilt alone."""
    return all("game_id" in table.c or "partition" in table.c for table in model.tables)


async def rebuild(
    store: Store,
    names: Iterable[str] | None = None,
    partitions: Partitions = ONE,
    *,
    only: Iterable[int] | None = None,
    unless_rebuilt_since: Mapping[str, tuple[int, int]] | None = None,
) -> list[str]:
    """Reset the models named (all when None) to replay every partition of ``partitions``
    from its stream, or only the partitions in ``only``; return the names of those reset.

    ``only`` raises :class:`AcrossPartitions` (and resets nothing) when a model named cannot be
    rebuilt in some partitions alone, and ``ValueError`` for a partition ``partitions`` has not.

    ``unless_rebuilt_since`` maps a model to a (partition, generation) its worker read: a model
    whose position there has another generation by now was rebuilt meanwhile (by another
    worker that found the same fault) and is left as it is.
    """
    chosen = read_models(names)
    some = None if only is None else sorted(set(only))
    if some is not None:
        _check(chosen, partitions, some)
    done = []
    for model in chosen:
        async with store.writing() as conn:
            seen = (unless_rebuilt_since or {}).get(model.name)
            if seen is not None:
                partition, generation = seen
                if (await positions.lock(conn, model.name, partition)).generation != generation:
                    continue
            if some is None:
                await positions.restart(conn, model.name, partitions.indexes)
                for table in () if model.kept else model.tables:
                    await conn.execute(table.delete())
                await conn.execute(parked.delete().where(parked.c.model == model.name))
            else:
                await positions.restart(conn, model.name, some, elsewhere=False)
                for table in () if model.kept else model.tables:
                    if "partition" in table.c:
                        await conn.execute(table.delete().where(table.c.partition.in_(some)))
                    else:
                        await _delete_games(conn, table, partitions, some)
                await conn.execute(
                    parked.delete().where(
                        (parked.c.model == model.name) & parked.c.partition.in_(some)
                    )
                )
        done.append(model.name)
    return done


def _check(chosen: Sequence[ReadModel], partitions: Partitions, some: Sequence[int]) -> None:
    if not some:
        raise ValueError("name at least one partition to rebuild")
    outside = [partition for partition in some if partition not in partitions.indexes]
    if outside:
        raise ValueError(
            f"no partition {', '.join(map(str, outside))}: the game stream has "
            f"{partitions.count} (0 to {partitions.count - 1})"
        )
    whole = [model.name for model in chosen if not per_game(model)]
    if whole:
        apart = [model.name for model in read_models() if per_game(model)]
        raise AcrossPartitions(
            f"{', '.join(whole)} cannot be rebuilt in some partitions alone: "
            f"{'their rows gather' if len(whole) > 1 else 'its rows gather'} games of every "
            f"partition (a player's counters, a league's standings). Rebuild "
            f"{'them' if len(whole) > 1 else 'it'} whole (leave out --partition); "
            f"{', '.join(apart)} can be rebuilt per partition"
        )


async def _delete_games(
    conn: Statements, table: sa.Table, partitions: Partitions, some: Sequence[int]
) -> None:
    """Delete the rows of ``table`` that belong to games of the partitions ``some``.

    A game's partition is a hash of its id (:meth:`Partitions.of`) that the database cannot
    compute: the table's games are read and sorted here, and their rows deleted by id."""
    column = table.c.game_id
    game_ids = (await conn.execute(sa.select(column).distinct())).scalars().all()
    rebuilt = set(some)
    doomed = [game_id for game_id in game_ids if partitions.of(game_id) in rebuilt]
    for start in range(0, len(doomed), DELETE_CHUNK):
        await conn.execute(table.delete().where(column.in_(doomed[start : start + DELETE_CHUNK])))
