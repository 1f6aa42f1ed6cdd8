"""A league's operations: create it, start a round, withdraw a player, seat a substitute,
and the director's: adjust a score, void a table.

Starting a round is two steps, both safe to repeat: the engine schedules the round (a league
command), then each table's game is created and its players seated with the ordinary game
commands, under command ids fixed by the table (``league-create``, ``league-seat-<n>``). If
anything fails half-way (a 503), the same request with the same ``Idempotency-Key`` gets the
same round from the engine and finishes starting it: each game command already answered gets
its first answer, and nothing is created or seated twice.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from contracts.leagues import StartedTable
from contracts.wire import (
    AdjustScoreRequest,
    CreateGameRequest,
    CreateLeagueRequest,
    MarkAwayRequest,
    ReissueTokenRequest,
    ScheduleRoundRequest,
    SubstitutePlayerRequest,
    TakeSeatRequest,
    VoidTableRequest,
    WithdrawPlayerRequest,
)
from domain.boards import board_dealer
from domain.events import DuplicateBoards, SeatTokenReissued, TieRule
from domain.league import (
    League,
    LeagueTable,
    PlayerSubstituted,
    PlayerWithdrawn,
    RoundScheduled,
    ScoreAdjusted,
    TableVoided,
    fold,
)
from domain.platforms import FIRST_ISSUE
from domain.rules import Rules
from services.gateway.commands import keyed_command_id, league_command_id
from services.gateway.deps import Gateway
from services.gateway.operations import E, Seated, command, create, expected, seated
from services.gateway.problems import ProblemError
from services.runtime.logging import get_logger

log = get_logger("spades.gateway")

TABLES_AT_ONCE = 32
"""Tables started concurrently when a round starts."""
CREATE_COMMAND = "league-create"


async def create_league(
    services: Gateway, request: CreateLeagueRequest, idempotency_key: str | None
) -> tuple[str, League]:
    """A new league of ``request.platform`` (the same one for a retry with the same key)."""

    async def send(league_id: str, command_id: str) -> list[Any]:
        return (await services.commands.send_league(league_id, request, command_id)).events

    return await create(services, "league", request.platform, idempotency_key, send, fold)


@dataclass(frozen=True, slots=True)
class TableStarted:
    """A table of a round, created and seated: each seat with its token."""

    table: int
    game_id: str
    seats: list[Seated]

    def answer(self) -> StartedTable:
        seats = [seat.answer() for seat in self.seats]
        return StartedTable(table=self.table, game_id=self.game_id, seats=seats)


async def start_round(
    services: Gateway,
    league_id: str,
    platform: str | None,
    round_number: int | None,
    idempotency_key: str | None,
) -> tuple[League, RoundScheduled, list[TableStarted]]:
    """Schedule the league's next round (or ``round_number``) and start every table of it."""
    command_id = league_command_id(services.secret, league_id, platform, idempotency_key)
    request = ScheduleRoundRequest(round=round_number)
    with command(services, command_id):
        reply = await services.commands.send_league(league_id, request, command_id)
        scheduled = expected(reply.events, RoundScheduled, "scheduled nothing")
        league = (await services.leagues.latest(league_id)).state
        if league is None:
            raise ProblemError("unavailable", "the engine scheduled nothing; retry")
        boards = league.rounds[scheduled.round - 1].boards
        tables = await _start_tables(services, league, scheduled.round, scheduled.tables, boards)
    log.info("round started", round=scheduled.round, tables=len(tables))
    return league, scheduled, tables


async def _start_tables(
    services: Gateway,
    league: League,
    round_number: int,
    tables: tuple[LeagueTable, ...],
    boards: tuple[int, ...] = (),
) -> list[TableStarted]:
    gate = asyncio.Semaphore(TABLES_AT_ONCE)
    rules = league.rules_of_round(round_number)
    ties = league.ties_of_round(round_number)

    async def start(number: int, table: LeagueTable) -> TableStarted:
        async with gate:
            return await _start_table(services, league, rules, number, table, boards, ties)

    return list(await asyncio.gather(*(start(n, table) for n, table in enumerate(tables, start=1))))


async def _start_table(
    services: Gateway,
    league: League,
    rules: Rules,
    number: int,
    table: LeagueTable,
    boards: tuple[int, ...] = (),
    ties: TieRule | None = None,
) -> TableStarted:
    """Create the table's game in the league, by the round's ``rules``, and seat its players,
    each seat's command id fixed so that starting the table again changes nothing. A duplicate
    event's table plays the round's ``boards``, from the first board's dealer; a knockout
    match's game ends a tie by the knockout's ``ties``."""
    duplicate = (
        DuplicateBoards(league.league_id, boards[0], len(boards))
        if league.format == "duplicate" and boards
        else None
    )
    create_game = CreateGameRequest(
        rules=rules.to_json(),
        dealer=None if duplicate is None else board_dealer(league.rules, duplicate.first),
        league=league.league_id,
        platform=league.platform,
        visibility=league.visibility,
        seating="platform",
        clock=league.clock,
        duplicate=duplicate,
        ties=ties,
    )
    await services.commands.send(table.game_id, create_game, CREATE_COMMAND)
    seats = []
    for seat, player in enumerate(table.players):
        sit = TakeSeatRequest(player=player, seat=seat)
        await services.commands.send(table.game_id, sit, f"league-seat-{seat}")
        seats.append(seated(services, table.game_id, seat, player, FIRST_ISSUE))
    return TableStarted(number, table.game_id, seats)


@dataclass(frozen=True, slots=True)
class Withdrawal:
    """A recorded withdrawal, and the game of theirs still being played, if any."""

    left: PlayerWithdrawn
    running_game: str | None


async def withdraw(
    services: Gateway, league_id: str, platform: str | None, player: str, key: str | None
) -> Withdrawal:
    """Withdraw ``player``; a table of theirs still being played is played out by its clock."""
    command_id = keyed_command_id(services.secret, key, "withdraw", league_id, platform)
    request = WithdrawPlayerRequest(player=player)
    with command(services, command_id):
        reply = await services.commands.send_league(league_id, request, command_id)
    left = expected(reply.events, PlayerWithdrawn, "recorded nothing")
    league = (await services.leagues.latest(league_id)).state
    if league is None:
        raise ProblemError("unavailable", "the engine recorded nothing; retry")
    running = league.seat_of(left.player)
    if running is None:
        return Withdrawal(left, None)
    table, seat = running
    game = (await services.games.latest(table.game_id)).state
    if game is None or game.status == "finished":
        return Withdrawal(left, None)  # their table is over: nothing left to play out
    await play_out_withdrawn_seat(services, table.game_id, seat, command_id)
    return Withdrawal(left, table.game_id)


async def play_out_withdrawn_seat(
    services: Gateway, game_id: str, seat: int, command_id: str
) -> None:
    """Have the clock play out a withdrawn player's seat of a game still being played: the seat
    is marked away, so the service acts for it at once on every turn. The command id follows
    the withdrawal's, so a retried withdrawal marks the seat once. A table without a clock
    refuses (`wrong_phase`) and waits for its seat, or for a substitute (``POST
    .../substitutions``); that refusal does not undo the withdrawal."""
    try:
        await services.commands.send(game_id, MarkAwayRequest(seat=seat), f"{command_id}-away")
    except ProblemError as refused:
        if refused.code not in {"wrong_phase", "game_over"}:
            raise
        log.info("withdrawn seat left to its table", game_id=game_id, seat=seat, why=refused.code)
        return
    log.info("withdrawn seat played out by its clock", game_id=game_id, seat=seat)


async def substitute(
    services: Gateway,
    league_id: str,
    platform: str | None,
    request: SubstitutePlayerRequest,
    key: str | None,
) -> tuple[PlayerSubstituted, Seated]:
    """Seat a substitute in a player's seat of the round being played: the league records it,
    then the seat's token is issued again to the substitute."""
    command_id = keyed_command_id(services.secret, key, "substitute", league_id, platform)
    with command(services, command_id):
        reply = await services.commands.send_league(league_id, request, command_id)
        substituted = expected(reply.events, PlayerSubstituted, "recorded nothing")
        # One game command per substitution (the league's version names it): a retry of the
        # same substitution gets the same issue of the seat's token, a later one a new one.
        reissue = ReissueTokenRequest(seat=substituted.seat, player=substituted.substitute)
        game_reply = await services.commands.send(
            substituted.game_id, reissue, f"league-substitute-{reply.version}"
        )
    events = (record.event for record in game_reply.events)
    reissued = expected(events, SeatTokenReissued, "issued nothing")
    log.info(
        "substitute seated",
        game_id=substituted.game_id,
        seat=substituted.seat,
        issue=reissued.issue,
    )
    token = seated(services, substituted.game_id, reissued.seat, reissued.player, reissued.issue)
    return substituted, token


async def adjust_score(
    services: Gateway,
    league_id: str,
    platform: str | None,
    request: AdjustScoreRequest,
    key: str | None,
) -> ScoreAdjusted:
    """Record the director's adjusted score (once for a retry with the same key)."""
    return await _directed(services, league_id, platform, request, key, ScoreAdjusted)


async def void_table(
    services: Gateway,
    league_id: str,
    platform: str | None,
    request: VoidTableRequest,
    key: str | None,
) -> TableVoided:
    """Record the director's void of a finished table (once for a retry with the same key)."""
    return await _directed(services, league_id, platform, request, key, TableVoided)


async def _directed(
    services: Gateway,
    league_id: str,
    platform: str | None,
    request: AdjustScoreRequest | VoidTableRequest,
    key: str | None,
    recorded: type[E],
) -> E:
    """A director's command sent once for its key (the request's kind in the command id),
    and the event it recorded."""
    kind = "adjust" if isinstance(request, AdjustScoreRequest) else "void"
    command_id = keyed_command_id(services.secret, key, kind, league_id, platform)
    with command(services, command_id):
        reply = await services.commands.send_league(league_id, request, command_id)
    return expected(reply.events, recorded, "recorded nothing")
