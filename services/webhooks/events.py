"""Which webhooks a commit makes: pure functions of the commit and its aggregate's state.

A game's commit is folded event by event: ``game_created`` makes ``game.created``,
``hand_scored`` ``hand.scored`` (the scoreboard's line), ``game_ended`` ``game.finished``; after
the whole commit, each seat that has just come to act makes ``game.turn``. A league's
``round_scheduled`` makes ``league.round_started``; ``round_completed`` (recorded as soon as the
round's last game ends, :mod:`services.engine.round_watch`) ``league.round_finished``; and
``league_finished`` (its last planned round over) ``league.finished`` (with a knockout's
champion); the director's ``score_adjusted`` and ``table_voided`` ``league.adjusted``; a
duplicate event's ``boards_revealed`` ``league.boards_revealed``.

A present seat's clock running out (``timed_out``) makes ``game.timed_out`` (:func:`timed_out`),
and a clocked game's ``game.turn`` carries the seat's deadline (:func:`turn_deadline`). The
turns the service plays for an away seat make no webhook each (an auto-played game would send
one per move, and a platform that tells its users of each would flood them): the timeout that
leaves a seat away says so (``away``), and ``hand.scored`` and ``game.finished`` count those
turns per seat (``away_turns``).

Nothing here reads a card: every payload is built from what the public view shows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from contracts.webhooks import (
    Adjusted,
    AdjustedData,
    AnyWebhook,
    BoardsRevealed,
    BoardsRevealedData,
    GameCreated,
    GameCreatedData,
    GameFinished,
    GameFinishedData,
    GameTimedOut,
    GameTimedOutData,
    GameTurn,
    GameTurnData,
    HandScored,
    HandScoredData,
    LeagueFinished,
    LeagueFinishedData,
    LeagueTableData,
    RevealedBoardData,
    RoundFinished,
    RoundFinishedData,
    RoundStarted,
    RoundStartedData,
    TableResultData,
)
from contracts.wire import Commit, LeagueCommit, commit_seconds
from domain.clock import rfc3339
from domain.events import (
    AnyEvent,
    GameEnded,
    HandLooked,
    SeatAway,
    SeatReturned,
    SeatTokenReissued,
    TimedOut,
)
from domain.events import GameCreated as GameCreatedEvent
from domain.events import HandScored as HandScoredEvent
from domain.game import evolve
from domain.league import (
    AnyLeagueEvent,
    League,
    RoundCompleted,
    RoundScheduled,
    ScoreAdjusted,
    TableVoided,
    champion,
)
from domain.league import BoardsRevealed as BoardsRevealedEvent
from domain.league import LeagueFinished as LeagueFinishedEvent
from domain.league import evolve as evolve_league
from domain.state import NO_SEAT, Game, Phase
from domain.table import table_for
from domain.timing import stamped


@dataclass(frozen=True, slots=True)
class Made:
    """A webhook made from a commit, and the chain it is delivered in order with."""

    chain: str
    webhook: AnyWebhook


def game_chain(game_id: str) -> str:
    return f"game:{game_id}"


def league_chain(league_id: str) -> str:
    return f"league:{league_id}"


# --------------------------------------------------------------------------- games


@dataclass(frozen=True, slots=True)
class Seen:
    """A game as the webhooks know it: its state, the league whose table it is (which only its
    creation says), and the turns played for away seats, this hand's and the game's."""

    game: Game
    league: str | None
    hand_away_turns: tuple[int, ...] = ()
    game_away_turns: tuple[int, ...] = ()


def _away(game: Game | None, seat: int) -> bool:
    timing = game.timing if game is not None else None
    return timing is not None and 0 <= seat < len(timing.seats) and timing.seats[seat].away


def _counted(turns: tuple[int, ...], seat: int, seats: int) -> tuple[int, ...]:
    counts = list(turns or (0,) * seats)
    counts[seat] += 1
    return tuple(counts)


def game_webhooks(before: Seen | None, commit: Commit) -> tuple[Seen | None, list[Made]]:
    """The game after ``commit``, and the webhooks the commit makes."""
    chain = game_chain(commit.game_id)
    made: list[Made] = []
    state = before.game if before is not None else None
    seen = before
    for event in commit.events:
        played_away = isinstance(event, TimedOut) and _away(state, event.seat)
        state = evolve(state, event)
        seen = _next_seen(seen, state, event)
        if played_away and isinstance(event, TimedOut):  # counted, not sent
            seats = state.rules.players
            seen = replace(
                seen,
                hand_away_turns=_counted(seen.hand_away_turns, event.seat, seats),
                game_away_turns=_counted(seen.game_away_turns, event.seat, seats),
            )
            continue
        webhook = _of_event(seen, event, commit)
        if webhook is not None:
            made.append(Made(chain, webhook))
        if isinstance(event, HandScoredEvent):
            seen = replace(seen, hand_away_turns=())
    if state is None or seen is None:
        return None, made
    if state.timing is not None and commit.events:  # the clocks run to the commit's time
        before_game = before.game if before is not None else None
        state = stamped(before_game, commit.events, state, commit_seconds(commit.time))
    after = replace(seen, game=state)
    if commit.events:
        made += [Made(chain, turn) for turn in _turns(before, after, commit)]
    return after, made


def _next_seen(seen: Seen | None, state: Game, event: AnyEvent) -> Seen:
    if isinstance(event, GameCreatedEvent):
        return Seen(state, event.league)
    return Seen(state, None) if seen is None else replace(seen, game=state)


def _of_event(seen: Seen, event: AnyEvent, commit: Commit) -> AnyWebhook | None:
    time = commit.time
    if isinstance(event, GameCreatedEvent):
        return _created(seen, time)
    if isinstance(event, HandScoredEvent):
        return _scored(seen, event, time)
    if isinstance(event, GameEnded):
        return _finished(seen, time)
    if isinstance(event, TimedOut):
        away = any(isinstance(e, SeatAway) and e.seat == event.seat for e in commit.events)
        return timed_out(seen, event, time, away)
    return None


def timed_out(seen: Seen, event: TimedOut, time: str, away: bool) -> AnyWebhook:
    """``game.timed_out`` for the event that records a present seat's clock running out: the
    service acted for the seat (``auto``) or the game is forfeited (``forfeit``); ``away``
    when the timeout left the seat away (its commit says so)."""
    game = seen.game
    timing = game.timing
    player = game.players[event.seat] if 0 <= event.seat < len(game.players) else None
    data = GameTimedOutData(
        game_id=game.game_id,
        league=seen.league,
        seat=event.seat,
        player=player.name if player else None,
        outcome=timing.clock.on_timeout if timing is not None else "auto",
        away=away,
        version=game.version,
    )
    return GameTimedOut(timestamp=time, data=data)


def turn_deadline(game: Game, seat: int) -> str | None:
    """When ``seat``'s clock runs out (RFC 3339); None in a game without a clock, or when the
    seat is not on the clock."""
    timing = game.timing
    if timing is None or not 0 <= seat < len(timing.seats):
        return None
    deadline = timing.deadline(seat)
    return rfc3339(deadline) if deadline is not None else None


def _per_seat(counts: tuple[int, ...], game: Game) -> list[int]:
    return list(counts) if counts else [0] * game.rules.players


def _players(game: Game) -> list[str | None]:
    return [player.name if player else None for player in game.players]


def _units(game: Game) -> list[list[int]]:
    return [list(unit) for unit in table_for(game.rules).units]


def _created(seen: Seen, time: str) -> AnyWebhook:
    game = seen.game
    data = GameCreatedData(
        game_id=game.game_id,
        league=seen.league,
        rules=game.rules.to_json(),
        seats=game.rules.players,
        units=_units(game),
        visibility=game.visibility,
        seating=game.seating,
    )
    return GameCreated(timestamp=time, data=data)


def _scored(seen: Seen, event: HandScoredEvent, time: str) -> AnyWebhook:
    game = seen.game
    data = HandScoredData(
        game_id=game.game_id,
        league=seen.league,
        hand=event.hand,
        bids=list(event.bids),
        tricks=list(event.tricks),
        points=list(event.points),
        scores=list(event.scores),
        bags=list(event.bags),
        units=_units(game),
        players=_players(game),
        away_turns=_per_seat(seen.hand_away_turns, game),
        version=game.version,
    )
    return HandScored(timestamp=time, data=data)


def _finished(seen: Seen, time: str) -> AnyWebhook:
    game = seen.game
    data = GameFinishedData(
        game_id=game.game_id,
        league=seen.league,
        scores=list(game.scores),
        bags=list(game.bags),
        winners=list(game.winners),
        units=_units(game),
        players=_players(game),
        hands_played=game.hands_played,
        away_turns=_per_seat(seen.game_away_turns, game),
        version=game.version,
    )
    return GameFinished(timestamp=time, data=data)


def seats_to_act(game: Game | None) -> dict[int, Phase]:
    """The seats that must act now, and in which phase (both partners of a blind nil pass)."""
    if game is None or game.status != "playing" or game.hand is None:
        return {}
    hand = game.hand
    if hand.phase == "pass":
        return {s: "pass" for s in range(game.rules.players) if hand.passes_due >> s & 1}
    return {hand.turn: hand.phase} if hand.turn != NO_SEAT else {}


_STANDING_STILL = (HandLooked, SeatTokenReissued, SeatAway, SeatReturned)
"""Events after which the seat on turn is still to make the same move."""


def _turns(before: Seen | None, after: Seen, commit: Commit) -> Iterable[AnyWebhook]:
    """``game.turn`` for each seat that has come to act with this commit: one that was not
    to act before, or the one to act after a move (a trick's winner leads again), or one
    that another player has just taken over."""
    earlier = seats_to_act(before.game if before is not None else None)
    moved = any(not isinstance(event, _STANDING_STILL) for event in commit.events)
    for seat, phase in seats_to_act(after.game).items():
        fresh = seat not in earlier or (moved and phase != "pass")
        was = before.game.players[seat] if before is not None else None
        now = after.game.players[seat]
        taken_over = was is not None and now is not None and was.name != now.name
        if fresh or taken_over:
            yield _turn(after, seat, phase, commit.time)


def _turn(seen: Seen, seat: int, phase: Phase, time: str) -> AnyWebhook:
    game = seen.game
    player = game.players[seat]
    assert game.hand is not None
    data = GameTurnData(
        game_id=game.game_id,
        league=seen.league,
        seat=seat,
        player=player.name if player else None,
        phase=phase,
        hand=game.hand.number,
        version=game.version,
        deadline=turn_deadline(game, seat),
    )
    return GameTurn(timestamp=time, data=data)


# --------------------------------------------------------------------------- leagues


def league_webhooks(
    before: League | None, commit: LeagueCommit
) -> tuple[League | None, list[Made]]:
    """The league's state after ``commit``, and the webhooks the commit makes."""
    chain = league_chain(commit.league_id)
    made: list[Made] = []
    state = before
    for event in commit.events:
        state = evolve_league(state, event)
        for webhook in _of_league_event(state, event, commit.time):
            made.append(Made(chain, webhook))
    return state, made


def _of_league_event(league: League, event: AnyLeagueEvent, time: str) -> list[AnyWebhook]:
    made = [
        webhook
        for webhook in (round_finished(league, event, time), league_finished(league, event, time))
        if webhook is not None
    ]
    if isinstance(event, RoundScheduled):
        made.append(_round_started(league, event, time))
    director = adjusted(league, event, time)
    if director is not None:
        made.append(director)
    if isinstance(event, BoardsRevealedEvent):
        boards = [RevealedBoardData(board=board, seed=seed) for board, seed in event.boards]
        data = BoardsRevealedData(league_id=league.league_id, round=event.round, boards=boards)
        made.append(BoardsRevealed(timestamp=time, data=data))
    return made


def _round_started(league: League, event: RoundScheduled, time: str) -> AnyWebhook:
    tables = [
        LeagueTableData(table=number, game_id=table.game_id, players=list(table.players))
        for number, table in enumerate(event.tables, start=1)
    ]
    data = RoundStartedData(
        league_id=league.league_id,
        round=event.round,
        rounds=league.planned,
        tables=tables,
        byes=list(event.byes),
    )
    return RoundStarted(timestamp=time, data=data)


def round_finished(league: League, event: AnyLeagueEvent, time: str) -> AnyWebhook | None:
    """``league.round_finished`` from ``round_completed``: every game of the round is over
    (the league records it as the last one ends), with each table's result."""
    if not isinstance(event, RoundCompleted):
        return None
    results = [
        TableResultData(
            table=number,
            game_id=result.game_id,
            points=list(result.points),
            won=list(result.won),
            forfeited=list(result.forfeited),
        )
        for number, result in enumerate(event.results, start=1)
    ]
    data = RoundFinishedData(league_id=league.league_id, round=event.round, results=results)
    return RoundFinished(timestamp=time, data=data)


def league_finished(league: League, event: AnyLeagueEvent, time: str) -> AnyWebhook | None:
    """``league.finished`` from ``league_finished``: the league's last planned round is over
    (recorded with that round's ``round_completed``, so it follows ``league.round_finished``)."""
    if not isinstance(event, LeagueFinishedEvent):
        return None
    data = LeagueFinishedData(
        league_id=league.league_id, rounds=event.rounds, champion=_listed(champion(league))
    )
    return LeagueFinished(timestamp=time, data=data)


def _listed(side: tuple[str, ...] | None) -> list[str] | None:
    return None if side is None else list(side)


def adjusted(league: League, event: AnyLeagueEvent, time: str) -> AnyWebhook | None:
    """``league.adjusted`` from the director's ``score_adjusted`` and ``table_voided``: the
    standings count something else now, and why."""
    if isinstance(event, ScoreAdjusted):
        data = AdjustedData(
            league_id=league.league_id,
            kind="score_adjusted",
            reason=event.reason,
            round=event.round,
            player=event.player,
            points=event.points,
            game_id=None,
        )
    elif isinstance(event, TableVoided):
        data = AdjustedData(
            league_id=league.league_id,
            kind="table_voided",
            reason=event.reason,
            round=event.round,
            player=None,
            points=None,
            game_id=event.game_id,
            board=event.board,
        )
    else:
        return None
    return Adjusted(timestamp=time, data=data)
