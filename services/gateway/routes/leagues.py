"""Leagues: create one, schedule and start its rounds, read a round and the standings; for the
league's platform, withdraw a player, seat a substitute, adjust a score, void a table, and
export standings and results.
What each command does is :mod:`services.gateway.operations.leagues` (starting a round's
workflow among it); here, the HTTP.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Hashable
from typing import Annotated, Any, Literal

import msgspec
from fastapi import APIRouter, Body, Path, Query, Response

from contracts import leagues as shown
from contracts.wire import (
    AdjustScoreRequest,
    CreateLeagueRequest,
    SubstitutePlayerRequest,
    VoidTableRequest,
)
from domain.clock import Clock
from domain.errors import RuleViolation
from domain.league import (
    KnockoutStage,
    League,
)
from domain.records import HandRecord
from domain.rules import resolve_rules
from services.gateway.commands import (
    default_visibility,
)
from services.gateway.deps import (
    NO_NULL_BODY,
    CurrentLeague,
    Gateway,
    LeagueId,
    LeagueMinVersion,
    Platform,
    Services,
    unknown_league,
)
from services.gateway.league_views import (
    DUPLICATE_STANDINGS_CSV,
    RESULTS_CSV,
    STANDINGS_CSV,
    boards_answer,
    integrity_answer,
    league_answer,
    rated_again,
    results_cells,
    results_rows,
    round_answer,
    shown_ratings,
    standings_answer,
    standings_rows,
    to_csv,
    voided_table,
)
from services.gateway.models import (
    Adjustment,
    AdjustScore,
    CreateLeague,
    IntegrityReport,
    LeagueResults,
    LeagueRound,
    RoundStarted,
    ScheduleRound,
    Substitute,
    Substituted,
    VoidedTable,
    VoidTable,
    Withdraw,
    Withdrawn,
)
from services.gateway.models import League as LeagueModel
from services.gateway.models import LeagueBoards as LeagueBoardsModel
from services.gateway.models import Standings as StandingsModel
from services.gateway.openapi import OPTIONAL_CREDENTIAL, problems
from services.gateway.operations import leagues as operations
from services.gateway.problems import ProblemError
from services.gateway.quotas import check_games_quota, check_turn, leagues_quota
from services.gateway.routes.actions import IdempotencyKey
from services.gateway.views import as_json
from services.runtime.logging import get_logger
from services.store.ratings import Rating

router = APIRouter(prefix="/v1/leagues", tags=["leagues"])

log = get_logger("spades.gateway")


_LOCATION = {"description": "The URL of what was created.", "schema": {"type": "string"}}


@router.post(
    "",
    status_code=201,
    response_model=LeagueModel,
    responses={**problems(401, 409, 422, 429, 503), 201: {"headers": {"Location": _LOCATION}}},
    openapi_extra=OPTIONAL_CREDENTIAL,  # needed only when SPADES_API_KEYS is set
)
async def create_league(
    body: CreateLeague,
    services: Services,
    platform: Platform,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Create a league of the caller's platform, of these players, whose games are all played
    by these rules (a retry with the same ``Idempotency-Key`` gets the same league). Its
    ``visibility`` (`private` by default when the server has platform keys) is its games' too.
    A league may have at most so many players, and a round seat so many tables (422 naming
    the cap: `SPADES_MAX_LEAGUE_PLAYERS`, `SPADES_MAX_ROUND_TABLES`); a platform may have so
    many leagues not finished at once (429 `rate_limited` naming `SPADES_MAX_LEAGUES_GOING_ON`).
    A ``knockout`` ends the league with a bracket, after ``rounds`` rounds (or alone): 422
    `invalid_rules` unless its games are head to head (the two-player game, or a duplicate
    event's fixed pairs), its match length is a valid rule, its ``top`` is within the field
    and its ratings rate every player once; `rounds` 0 is a knockout's alone."""
    _check_caps(services, body.rules, len(body.players))
    clock = msgspec.convert(body.clock.model_dump(), Clock) if body.clock else None
    check_turn(services, clock)
    request = CreateLeagueRequest(
        name=body.name,
        rules=body.rules,
        players=body.players,
        rounds=body.rounds,
        pairing=body.pairing,
        platform=platform,
        visibility=body.visibility or default_visibility(services),
        clock=clock,
        knockout=None if body.knockout is None else KnockoutStage(**body.knockout.model_dump()),
        format=body.format,
        boards_per_round=body.boards_per_round,
        partners=body.partners,
        convention=body.convention,
    )
    async with leagues_quota(services, platform):
        league_id, league = await operations.create_league(services, request, idempotency_key)
    log.info("league created", players=len(league.players), pairing=league.pairing)
    response.headers["Location"] = f"{router.prefix}/{league_id}"
    return as_json(league_answer(league))


@router.get(
    "/{league_id}",
    response_model=LeagueModel,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def league(league: CurrentLeague) -> Any:
    """The league: its rules, players, pairing and how many rounds are scheduled."""
    return as_json(league_answer(league))


@router.post(
    "/{league_id}/rounds",
    status_code=201,
    dependencies=[NO_NULL_BODY],
    response_model=RoundStarted,
    responses={
        **problems(401, 404, 409, 422, 429, 503),
        201: {"headers": {"Location": _LOCATION}},
    },
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def start_round(
    league_id: LeagueId,
    services: Services,
    platform: Platform,
    response: Response,
    body: Annotated[ScheduleRound | None, Body()] = None,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Schedule the next round and start its games: every table's game is created and every
    player seated; the answer holds each seat's token (only the league's platform ever sees
    them: anyone else gets 404 `league_not_found`, whatever key it replays). Refused with 409
    `wrong_phase` while a game of the round before is still being played, and once every
    round of the league is scheduled."""
    owned = await _owned(services, league_id, platform)
    _check_caps(services, owned.rules.to_json(), len(owned.players))
    table_size = max(1, owned.rules.players)
    await check_games_quota(services, platform, max(1, len(owned.players) // table_size))
    round_number = body.round if body is not None else None
    league, scheduled, tables = await operations.start_round(
        services, league_id, platform, round_number, idempotency_key
    )
    response.headers["Location"] = f"{router.prefix}/{league_id}/rounds/{scheduled.round}"
    started = shown.RoundStarted(
        league_id=league_id,
        round=scheduled.round,
        pairing=league.pairing,
        tables=[table.answer() for table in tables],
        byes=list(scheduled.byes),
        boards=list(league.rounds[scheduled.round - 1].boards),
    )
    return as_json(started)


async def _owned(services: Services, league_id: str, platform: str | None) -> League:
    """The league, for its own platform; 404 for anyone else, as for no league at all."""
    owned = (await services.leagues.latest(league_id)).state
    # ``platform`` is None only without platform keys, where anyone speaks for the platform.
    if owned is None or (platform is not None and owned.platform != platform):
        raise unknown_league(league_id)
    return owned


async def _standings(services: Services, league: League) -> shown.Standings:
    """The league's standings: the read model's records, with the director's adjustments and
    voided tables (from the league's history) applied."""
    voided = [void.game_id for void in league.voided]
    counted = await services.read_models.league_standings(league.league_id, voided)
    ratings = await _rated_again(services, league) if rated_again(league) else None
    return standings_answer(league, counted, await _table_hands(services, league), ratings)


_RATED: OrderedDict[Hashable, dict[str, Rating]] = OrderedDict()
"""The ratings :func:`_rated_again` worked out last, by what they were worked out from."""
RATED_KEPT = 64


async def _rated_again(services: Gateway, league: League) -> dict[str, Rating]:
    """:func:`shown_ratings`, worked out once for a league's version and its running round's
    ended games (64 players over 200 rounds rate 3,200 games: about 0.12 s here, off the loop)."""
    # a duplicate event's ratings count only the rounds every table has finished
    running = league.format != "duplicate" and bool(league.rounds)
    under_way = [t.game_id for t in league.rounds[-1].tables] if running else []
    ended = await services.read_models.game_summaries(under_way) if under_way else {}
    key = (
        league.league_id,
        league.version,
        tuple(sorted((g.game_id, g.version) for g in ended.values() if g.status == "finished")),
    )
    rated = _RATED.get(key)
    if rated is None:
        rated = await asyncio.to_thread(shown_ratings, league, ended)
        _RATED[key] = rated
        while len(_RATED) > RATED_KEPT:
            _RATED.popitem(last=False)
    _RATED.move_to_end(key)
    return rated


def _of_the_league(league: League, player: str) -> None:
    """404 for a name the league does not have: the player named, like a seat a table does
    not have, is not there to act on."""
    if player not in league.players:
        raise ProblemError("not_found", f"the league has no player {player!r}")


def _check_caps(services: Services, rules: dict[str, Any], players: int) -> None:
    """422 for a league over the server's caps: its size, and the tables of one round."""
    caps = services.caps
    if players > caps.league_players:
        raise ProblemError(
            "invalid_rules",
            f"a league has at most {caps.league_players} players here "
            f"(SPADES_MAX_LEAGUE_PLAYERS), not {players}",
        )
    try:
        table_size = resolve_rules(rules).players
    except RuleViolation:
        return  # the engine refuses the rules themselves, with their own reason
    if players // table_size > caps.round_tables:
        raise ProblemError(
            "invalid_rules",
            f"a round seats at most {caps.round_tables} tables here (SPADES_MAX_ROUND_TABLES); "
            f"{players} players at tables of {table_size} need {players // table_size}",
        )


@router.get(
    "/{league_id}/rounds/{round_number}",
    response_model=LeagueRound,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def league_round(
    league: CurrentLeague,
    round_number: Annotated[int, Path(ge=1, le=1_000_000, description="1 for the first.")],
    services: Services,
) -> Any:
    """A scheduled round: its tables, each with its game's status and scores (from the game
    list, a moment behind the games), and its byes."""
    if round_number > len(league.rounds):
        detail = f"league {league.league_id} has no round {round_number}"
        raise ProblemError("round_not_found", detail)
    game_ids = [table.game_id for table in league.rounds[round_number - 1].tables]
    games = await services.read_models.game_summaries(game_ids)
    return as_json(round_answer(league, round_number, games))


@router.get(
    "/{league_id}/standings",
    response_model=StandingsModel,
    responses=problems(401, 404, 409, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def standings(league: CurrentLeague, _visible: LeagueMinVersion, services: Services) -> Any:
    """Every player's points, wins, games, byes and rating, ranked. The standings follow the
    games a moment behind: ``min_version`` waits until they count that many finished games."""
    return as_json(await _standings(services, league))


@router.get(
    "/{league_id}/boards",
    response_model=LeagueBoardsModel,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def boards(league: CurrentLeague, _visible: LeagueMinVersion, services: Services) -> Any:
    """A duplicate league's cross-table: each board of the rounds every table has finished,
    across every table that played it (each side's points, score delta and matchpoints against
    the same direction elsewhere), with its revealed seed. A board of a round still being
    played is not shown anywhere. 404 `not_found` for a league that is not a duplicate event."""
    hands = await _table_hands(services, league)
    if hands is None:
        raise ProblemError("not_found", "the league is not a duplicate event: it has no boards")
    return as_json(boards_answer(league, hands))


async def _table_hands(services: Gateway, league: League) -> dict[str, list[HandRecord]] | None:
    """A duplicate league's tables' finished hands (what its matchpoints are counted from);
    None for a standard league."""
    if league.format != "duplicate":
        return None
    game_ids = [table.game_id for played in league.rounds for table in played.tables]
    return await services.read_models.hands_of(game_ids)


# --------------------------------------------------------------------------- the platform's


@router.post(
    "/{league_id}/withdrawals",
    status_code=201,
    response_model=Withdrawn,
    responses=problems(400, 401, 404, 409, 422, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def withdraw(
    league_id: LeagueId,
    body: Withdraw,
    services: Services,
    platform: Platform,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Withdraw a player, for the league's platform: recorded in the league's history, no
    round scheduled from now on seats them, and the standings keep their record, marked
    withdrawn. A table of theirs still being played is played out by its clock (their seat is
    marked away). 404 `not_found` for a name that is not the league's; 409 `wrong_phase` when
    they have withdrawn already, the league is finished, or too few players would be left for
    a table."""
    _of_the_league(await _owned(services, league_id, platform), body.player)
    withdrawal = await operations.withdraw(
        services, league_id, platform, body.player, idempotency_key
    )
    log.info("player withdrawn", after_round=withdrawal.left.after_round)
    withdrawn = shown.Withdrawn(
        league_id=league_id,
        player=withdrawal.left.player,
        after_round=withdrawal.left.after_round,
        running_game=withdrawal.running_game,
    )
    return as_json(withdrawn)


@router.post(
    "/{league_id}/substitutions",
    status_code=201,
    response_model=Substituted,
    responses=problems(400, 401, 404, 409, 422, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def substitute(
    league_id: LeagueId,
    body: Substitute,
    services: Services,
    platform: Platform,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Seat a substitute in a player's seat at their table of the round being played, for the
    league's platform: recorded in the league's history, the seat's token issued again to the
    substitute (every earlier token of the seat is revoked) and returned here, once, to the
    platform. The substitute plays for the original player's record: the standings credit the
    game to the player, never to the substitute. A retry with the same ``Idempotency-Key``
    gets the same token. 409 `wrong_phase` when the player has no table being played,
    `game_over` when that game is over, `seat_taken` when the substitute plays a seat of the
    round already; 404 `not_found` when the player is not the league's."""
    _of_the_league(await _owned(services, league_id, platform), body.player)
    request = SubstitutePlayerRequest(player=body.player, substitute=body.substitute)
    substituted, seated = await operations.substitute(
        services, league_id, platform, request, idempotency_key
    )
    answer = shown.Substituted(
        league_id=league_id,
        round=substituted.round,
        game_id=substituted.game_id,
        seat=substituted.seat,
        player=substituted.player,
        substitute=substituted.substitute,
        token=seated.issued.token,
        expires_at=seated.issued.expires_at,
    )
    return as_json(answer)


@router.post(
    "/{league_id}/adjustments",
    status_code=201,
    response_model=Adjustment,
    responses=problems(400, 401, 404, 409, 422, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def adjust_score(
    league_id: LeagueId,
    body: AdjustScore,
    services: Services,
    platform: Platform,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """The director's adjusted score, for the league's platform: ``points`` added to the
    player's total (negative: taken off), for ``reason``, recorded in the league's history.
    The standings count it in the player's points (``adjusted`` says how much) and list every
    adjustment with its reason; Swiss pairing ranks by it. A retry with the same
    ``Idempotency-Key`` records it once. 404 `not_found` for a name that is not the league's;
    400 `malformed` for 0 points or a reason of a control character; 409 `wrong_phase` for a
    round not scheduled yet."""
    _of_the_league(await _owned(services, league_id, platform), body.player)
    request = AdjustScoreRequest(
        player=body.player, points=body.points, reason=body.reason, round=body.round
    )
    made = await operations.adjust_score(services, league_id, platform, request, idempotency_key)
    log.info("score adjusted", number=made.number, points=made.points)
    answer = shown.Adjustment(
        number=made.number,
        player=made.player,
        points=made.points,
        reason=made.reason,
        round=made.round,
    )
    return as_json(answer)


@router.post(
    "/{league_id}/voids",
    status_code=201,
    response_model=VoidedTable,
    responses=problems(400, 401, 404, 409, 422, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def void_table(
    league_id: LeagueId,
    body: VoidTable,
    services: Services,
    platform: Platform,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """The director voids a table, for the league's platform: its game's result counts in no
    player's wins, points, games or forfeits, in the standings, the results export (marked
    ``voided``) and Swiss pairing; the reason is recorded in the league's history. 404
    `not_found` for a game that is not a table of the league, or a board it does not play; 409
    `wrong_phase` while the table is still being played, or when it (or the board) is void
    already."""
    league = await _owned(services, league_id, platform)
    found = league.table_named(body.game_id)
    if found is None:
        raise ProblemError("not_found", f"the league has no table {body.game_id!r}")
    if body.board is not None and body.board not in found[0].boards:
        raise ProblemError("not_found", f"{body.game_id} plays no board {body.board}")
    request = VoidTableRequest(game_id=body.game_id, reason=body.reason, board=body.board)
    void = await operations.void_table(services, league_id, platform, request, idempotency_key)
    log.info("table voided", game_id=void.game_id)
    return as_json(voided_table(league, void))


@router.get(
    "/{league_id}/integrity",
    response_model=IntegrityReport,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def integrity(league_id: LeagueId, services: Services, platform: Platform) -> Any:
    """Collusion signals per pair of the league's players (README, "Integrity signals"), for
    the league's platform alone: anyone else gets 404 `league_not_found`, as for no league.
    Each is an effect against the field with a one-sided p-value, adjusted over every pair
    and signal (Benjamini-Hochberg) and flagged at the report's `fdr`; a flagged one lists
    the hands that carry it, with their replay pages. It shows no card: the read model it
    comes from keeps none. It follows the games a moment behind, like the standings."""
    await _owned(services, league_id, platform)
    facts = await services.read_models.league_hand_facts(league_id)

    async def compute(gate: asyncio.Semaphore) -> tuple[dict[str, Any], bool]:
        async with gate:  # pure arithmetic over every hand of the league: off the event loop
            report = await asyncio.to_thread(integrity_answer, league_id, facts)
            return as_json(report), True

    # The costly reads' own runner: a few at a time, one per league and count of hands (a
    # burst of asks joins the report being made), the report kept until a hand is added.
    return await services.audits.report(f"league:{league_id}", len(facts), compute)


ExportFormat = Annotated[
    Literal["json", "csv"],
    Query(alias="format", description="`json` (the default) or `csv` (RFC 4180, a header line)."),
]


@router.get(
    "/{league_id}/exports/standings",
    responses={
        **problems(401, 404, 429, 503),
        200: {
            "description": "The standings as `GET .../standings` has them, or as CSV.",
            "model": StandingsModel,
            "content": {"text/csv": {"schema": {"type": "string"}}},
        },
    },
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def export_standings(
    league_id: LeagueId,
    services: Services,
    platform: Platform,
    export_format: ExportFormat = "json",
) -> Response:
    """The standings to keep, for the league's platform: JSON as ``GET .../standings`` (one
    object per player, ranked), or CSV, one row per player (columns: rank, player, wins,
    points, games, byes, forfeits, withdrawn, adjusted, mu, sigma, ordinal)."""
    league = await _owned(services, league_id, platform)
    standings = await _standings(services, league)
    if export_format == "csv":
        columns = DUPLICATE_STANDINGS_CSV if league.format == "duplicate" else STANDINGS_CSV
        return _csv(f"{league_id}-standings.csv", to_csv(columns, standings_rows(standings)))
    return Response(msgspec.json.encode(standings), media_type="application/json")


@router.get(
    "/{league_id}/exports/results",
    responses={
        **problems(401, 404, 429, 503),
        200: {
            "description": "Every seat's result of the finished rounds, and every bye.",
            "model": LeagueResults,
            "content": {"text/csv": {"schema": {"type": "string"}}},
        },
    },
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def export_results(
    league_id: LeagueId,
    services: Services,
    platform: Platform,
    export_format: ExportFormat = "json",
) -> Response:
    """The results the league recorded, for its platform: one row per seat of every table of
    its finished rounds (round, table, game_id, seat, player, played_by: a substitute if one
    finished the seat, points, result: `win`, `loss` or `forfeit`) and one per bye (result
    `bye`, no table). JSON ``{"league_id", "results": [row, ...]}`` or CSV."""
    league = await _owned(services, league_id, platform)
    rows = results_rows(league)
    if export_format == "csv":
        return _csv(f"{league_id}-results.csv", to_csv(RESULTS_CSV, results_cells(rows)))
    body = shown.LeagueResults(league_id=league_id, results=rows)
    return Response(msgspec.json.encode(body), media_type="application/json")


def _csv(filename: str, text: str) -> Response:
    return Response(
        text,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
