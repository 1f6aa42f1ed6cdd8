"""The replay audit of a game."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from services.audit.read_models import ReadModels
from services.audit.replay import audit_game
from services.gateway.deps import GameId, Services
from services.gateway.models import Audit
from services.gateway.openapi import problems
from services.gateway.problems import ProblemError
from services.gateway.views import as_json

router = APIRouter(prefix="/v1/games/{game_id}/audit", tags=["audit"])


@router.get("", response_model=Audit, responses=problems(404, 503))
async def game_audit(game_id: GameId, services: Services) -> Any:
    """The hash chain, every deal against its commitment, every event replayed through the
    rules, every score recomputed, and the read models compared with the replay."""
    commits = await services.stream.read(game_id)
    if not any(stored.commit.events for stored in commits):
        raise ProblemError("game_not_found", f"no game {game_id}")
    scoreboard = await services.read_models.scoreboard(game_id)
    records = await services.read_models.hand_records(game_id) or []
    read_models = ReadModels(
        as_json(scoreboard) if scoreboard is not None else None,
        [as_json(record) for record in records],
    )
    return audit_game(commits, read_models).as_json()
