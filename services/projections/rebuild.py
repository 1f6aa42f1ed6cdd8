"""Rebuilding a read model from the stream, while the others go on serving.

A rebuild is one transaction per model: raise its generation and put its position back to 0 in
every partition (the position rows are locked first, so a batch in flight finishes before or
aborts after), then empty its tables and forget its parked messages. The model's tables hold
every partition's games together, so a rebuild is of every partition at once. Each worker that
follows a partition notices the new generation at its next batch there (checked under the same
lock, so it never writes into the emptied tables) or within a second when idle, and the model
replays that partition's stream on a consumer of its own while the other models never stop
(:mod:`.worker`). Until the replay catches up, the rebuilt model answers with what it has
replayed so far. With no worker running, the next start replays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from contracts.partitions import ONE, Partitions
from services.projections.read_models import read_models
from services.store import positions
from services.store.database import Store
from services.store.schema import parked


async def rebuild(
    store: Store,
    names: Iterable[str] | None = None,
    partitions: Partitions = ONE,
    *,
    unless_rebuilt_since: Mapping[str, tuple[int, int]] | None = None,
) -> list[str]:
    """Reset the models named (all when None) to replay every partition of ``partitions``
    from its stream; return the names of those reset.

    ``unless_rebuilt_since`` maps a model to a (partition, generation) its worker read: a model
    whose position there has another generation by now was rebuilt meanwhile (by another
    worker that found the same fault) and is left as it is.
    """
    chosen = read_models(names)
    done = []
    for model in chosen:
        async with store.writing() as conn:
            seen = (unless_rebuilt_since or {}).get(model.name)
            if seen is not None:
                partition, generation = seen
                if (await positions.lock(conn, model.name, partition)).generation != generation:
                    continue
            await positions.restart(conn, model.name, partitions.indexes)
            for table in model.tables:
                await conn.execute(table.delete())
            await conn.execute(parked.delete().where(parked.c.model == model.name))
        done.append(model.name)
    return done
