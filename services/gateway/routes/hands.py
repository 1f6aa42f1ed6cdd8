"""Finished hands and the scoreboard, from the read models."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from msgspec import structs

from contracts.answers import HandRecords as HandRecordsAnswer
from contracts.answers import HandRecordWithReceipt as HandRecordWithReceiptAnswer
from contracts.answers import ScoredHandRecord
from domain.events import GameCreated
from domain.records import HandRecord
from services.gateway.deps import GameReadOf, Gateway, MinVersion, Services
from services.gateway.models import HandRecords, HandRecordWithReceipt, Scoreboard
from services.gateway.openapi import OPTIONAL_CREDENTIAL, problems
from services.gateway.problems import ProblemError
from services.gateway.score_lines import score_lines
from services.gateway.views import Answer, as_json
from services.store.receipts import hand_receipt

router = APIRouter(prefix="/v1/games/{game_id}", tags=["hands"])

MAX_HAND = 1_000_000
"""No game has more hands than this; a larger number is malformed, not a database overflow."""


_PROBLEMS = problems(401, 403, 404, 409, 429, 503)


@router.get(
    "/hands", response_model=HandRecords, responses=_PROBLEMS, openapi_extra=OPTIONAL_CREDENTIAL
)
async def hands(read: GameReadOf, _visible: MinVersion, services: Services) -> Any:
    """Every finished hand's record: deal, draws, bids, passes, tricks and score, with the
    score's lines, each naming the rule that decided it."""
    game_id = read.game.game_id
    # The game exists (its stream says so): one the read model has not seen yet has no
    # finished hand there.
    records = await services.read_models.hand_records(game_id) or []
    return Answer(HandRecordsAnswer(await _with_score_lines(services, game_id, records)))


@router.get(
    "/hands/{hand}",
    response_model=HandRecordWithReceipt,
    responses=_PROBLEMS,
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def hand(
    read: GameReadOf,
    hand: Annotated[
        int, Path(ge=0, le=MAX_HAND, description="The hand's number, 1 for the first.")
    ],
    _visible: MinVersion,
    services: Services,
) -> Any:
    """One finished hand's record, with its score's lines and its receipt from the audit log
    (null until the log holds it); a hand still being played has none."""
    game_id = read.game.game_id
    record = await services.read_models.hand_record(game_id, hand)
    if record is None:
        # The game exists (its stream says so, above): a read model that has not seen it yet
        # has no finished hand of it either.
        raise ProblemError("hand_not_found", f"game {game_id} has no finished hand {hand}")
    # The lines of a hand need the bags before it: the hand before's, or the game's start.
    before = await services.read_models.hand_record(game_id, hand - 1) if hand > 1 else None
    shown = await _with_score_lines(services, game_id, [r for r in (before, record) if r])
    receipt = await hand_receipt(services.store, game_id, hand)
    return Answer(HandRecordWithReceiptAnswer(**structs.asdict(shown[-1]), receipt=receipt))


async def _with_score_lines(
    services: Gateway, game_id: str, records: list[HandRecord]
) -> list[ScoredHandRecord]:
    """The records, each with ``score_lines`` (the game's rules and its starting bags come
    from its first event)."""
    first = await services.stream.read(game_id, limit=1)
    created = next(iter(first[0].commit.events), None) if first else None
    if not isinstance(created, GameCreated):
        raise ProblemError("game_not_found", f"no game {game_id}")
    lines = score_lines(created, records)
    return [
        ScoredHandRecord(**structs.asdict(record), score_lines=score)
        for record, score in zip(records, lines, strict=True)
    ]


@router.get(
    "/scoreboard", response_model=Scoreboard, responses=_PROBLEMS, openapi_extra=OPTIONAL_CREDENTIAL
)
async def scoreboard(read: GameReadOf, _visible: MinVersion, services: Services) -> Any:
    """Each hand's points and the running totals per unit."""
    game_id = read.game.game_id
    board = await services.read_models.scoreboard(game_id)
    if board is None:
        raise ProblemError("game_not_found", f"no game {game_id}")
    return as_json(board)
