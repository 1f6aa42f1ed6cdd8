"""Rebuilding a read model from the stream, while the others go on serving.

A rebuild is one transaction per model: raise its generation and put its position back to 0
(the position row is locked first, so a batch in flight finishes before or aborts after), then
empty its tables and forget its parked messages. Its running worker notices the new generation
at its next batch (checked under the same lock, so it never writes into the emptied tables) or
within a second when idle, re-creates its consumer at sequence 1 and replays the stream; the
other models never stop. Until the replay catches up, the rebuilt model answers with what it has
replayed so far. With no worker running, the next start replays.
"""

from __future__ import annotations

from collections.abc import Iterable

from services.projections.read_models import read_models
from services.store import positions
from services.store.database import Store
from services.store.schema import parked


async def rebuild(store: Store, names: Iterable[str] | None = None) -> list[str]:
    """Reset the models named (all when None) to replay from the stream; return their names."""
    chosen = read_models(names)
    for model in chosen:
        async with store.writing() as conn:
            await positions.restart(conn, model.name)
            for table in model.tables:
                await conn.execute(table.delete())
            await conn.execute(parked.delete().where(parked.c.model == model.name))
    return [model.name for model in chosen]
