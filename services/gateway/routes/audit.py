"""The replay audit of a game (computed as :mod:`services.gateway.audits` says)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter

from services.audit.read_model_check import ReadModels
from services.audit.replay import audit_game
from services.gateway.audits import Report
from services.gateway.deps import GameReadOf, Services
from services.gateway.models import Audit
from services.gateway.openapi import OPTIONAL_CREDENTIAL, problems
from services.gateway.views import as_json

router = APIRouter(prefix="/v1/games/{game_id}/audit", tags=["audit"])


@router.get(
    "",
    response_model=Audit,
    responses=problems(401, 403, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def game_audit(read: GameReadOf, services: Services) -> Any:
    """The hash chain, every deal against its commitment, every event replayed through the
    rules, every score recomputed, and the read models compared with the replay (once they
    have caught up with the game, or after a bounded wait). Audits draw on a budget of their
    own (429 past it); a report is kept for the game's version."""
    game_id, version, through = read.game.game_id, read.loaded.version, read.loaded.sequence

    async def compute(gate: asyncio.Semaphore) -> tuple[Report, bool]:
        # The read models compared with the replay follow the stream a moment behind.
        caught_up = await services.read_models.wait_for_version(
            game_id, version, services.min_version_wait_s
        )
        async with gate:
            commits = await services.stream.read(game_id, until=through)
            scoreboard = await services.read_models.scoreboard(game_id)
            records = await services.read_models.hand_records(game_id) or []
            read_models = ReadModels(
                as_json(scoreboard) if scoreboard is not None else None,
                [as_json(record) for record in records],
            )
            report = await asyncio.to_thread(lambda: audit_game(commits, read_models).as_json())
        return report, caught_up

    return await services.audits.report(game_id, version, compute)
