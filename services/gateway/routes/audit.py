"""The replay audit of a game."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from services.gateway.audit import audit
from services.gateway.deps import GameId, Services
from services.gateway.models import Audit
from services.gateway.openapi import problems
from services.gateway.problems import ProblemError
from services.gateway.views import as_json

router = APIRouter(prefix="/v1/games/{game_id}/audit", tags=["audit"])


@router.get("", response_model=Audit, responses=problems(404, 503))
async def game_audit(game_id: GameId, services: Services) -> Any:
    """The hash chain, every deal against its commitment, and every event replayed."""
    commits = await services.stream.read(game_id)
    if not any(stored.commit.events for stored in commits):
        raise ProblemError("game_not_found", f"no game {game_id}")
    return as_json(audit(commits))
