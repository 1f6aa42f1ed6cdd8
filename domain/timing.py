"""The clock at the table: who is on it, when their time runs out, and what a timeout does.

The domain keeps no time of its own. Two things bring time in, both from the stream:

- :func:`stamped` charges and restarts the seats' clocks after each commit, given the commit's
  time (``at``, seconds since the epoch): a seat whose turn the commit gave is on the clock
  from then, a seat that moved has what it used past ``turn_s`` taken from its bank. Whoever
  folds commits with their times (the engine, the gateway, the timer worker, the webhooks)
  calls it through :func:`apply_commit`; a fold of bare events leaves ``since`` unknown.
- :class:`~domain.commands.TimeOut` carries the instant the engine decides it at, and is
  refused unless the seat is on the clock and its deadline has passed.

The seat on turn is on the clock in every phase: the draw, the dealer's discard, the bidding,
the play, and, while a blind nil pass is due, both seats that owe one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from msgspec.structs import replace

from domain.clock import MAX_TURN_S, Clock, SeatClock, Timing
from domain.commands import (
    ComeBack,
    LookAtHand,
    MarkAway,
    PlayerAction,
    TimeOut,
)
from domain.errors import RuleViolation
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardsPassed,
    GameEnded,
    SeatAway,
    SeatReturned,
    SeatTokenReissued,
    TimedOut,
)
from domain.state import NO_SEAT, Game
from domain.table import Seat

RESOLUTION_S = 0.001
"""Commit times are kept to the millisecond: a deadline is reached within one."""

_MOVES = (BidPlaced, CardPlayed, CardsPassed, CardDrawn, CardsDiscarded)
"""The events that end a seat's turn (a look does not: the seat still has to move)."""


# --------------------------------------------------------------------------- creation


def check_clock(clock: Clock) -> None:
    """Refuse a clock that cannot run (``invalid_rules``, as a rule set that cannot be played)."""
    if not 0 < clock.turn_s <= MAX_TURN_S:
        raise RuleViolation(
            "invalid_rules", f"clock turn_s must be above 0 and at most {MAX_TURN_S:g} seconds"
        )
    if not 0 <= clock.bank_s <= MAX_TURN_S:
        raise RuleViolation("invalid_rules", f"clock bank_s must be 0 to {MAX_TURN_S:g} seconds")
    if clock.on_timeout not in ("auto", "forfeit"):
        raise RuleViolation("invalid_rules", "clock on_timeout is auto or forfeit")
    if isinstance(clock.away_after, bool) or not 0 <= clock.away_after <= 1000:
        raise RuleViolation("invalid_rules", "clock away_after is 0 (never) to 1000 timeouts")


def timing_for(clock: Clock | None, players: int) -> Timing | None:
    """The clocks of a new game: every seat's bank full, nobody on the clock yet."""
    if clock is None:
        return None
    return Timing(clock, (SeatClock(clock.bank_s),) * players)


# --------------------------------------------------------------------------- who is on it


def on_clock(state: Game) -> tuple[Seat, ...]:
    """The seats the game waits on now: the seat on turn, or while passes are due every seat
    that owes one; none while seats are free, between hands or once over."""
    hand = state.hand
    if state.status != "playing" or hand is None:
        return ()
    if hand.phase == "pass":
        return tuple(s for s in range(state.rules.players) if hand.passes_due >> s & 1)
    if hand.phase == "discard":
        return (hand.dealer,)
    return (hand.turn,) if hand.turn != NO_SEAT else ()


def deadlines(state: Game) -> dict[Seat, float]:
    """When each seat on the clock runs out (seconds since the epoch), for a stamped state."""
    timing = state.timing
    if timing is None:
        return {}
    out: dict[Seat, float] = {}
    for seat in on_clock(state):
        deadline = timing.deadline(seat)
        if deadline is not None:
            out[seat] = deadline
    return out


# --------------------------------------------------------------------------- time passing


def stamped(before: Game | None, events: Sequence[AnyEvent], after: Game, at: float) -> Game:
    """``after`` (the state ``events`` made from ``before``) with its clocks run to ``at``, the
    time of the commit that held the events: a seat that moved, or is no longer on the clock,
    pays what it used past ``turn_s`` from its bank; a seat the commit gave a turn is on the
    clock from ``at``; a seat still waiting to move keeps its start."""
    timing = after.timing
    if timing is None or not events:
        return after
    was_on = set(on_clock(before)) if before is not None else set()
    now_on = set(on_clock(after))
    moved = {event.seat for event in events if isinstance(event, _MOVES)}
    moved |= {e.seat for e in events if isinstance(e, (TimedOut, SeatTokenReissued))}
    turn_s = timing.clock.turn_s
    seats: list[SeatClock] = []
    changed = False
    for seat, held in enumerate(timing.seats):
        running = seat in was_on and held.since is not None
        ended = running and (seat in moved or seat not in now_on)
        bank = held.bank
        if ended:
            assert held.since is not None
            over = at - held.since - turn_s
            if over > 0:
                bank = max(0.0, bank - over)
        since = (at if not running or ended else held.since) if seat in now_on else None
        if since != held.since or bank != held.bank:
            changed = True
            held = replace(held, since=since, bank=bank)
        seats.append(held)
    if not changed:
        return after
    return replace(after, timing=replace(timing, seats=tuple(seats)))


def apply_commit(
    state: Game | None,
    events: Iterable[AnyEvent],
    at: float,
    evolve: Callable[[Game | None, AnyEvent], Game],
) -> Game | None:
    """Fold one commit's events into ``state`` and run the clocks to the commit's time."""
    before = state
    applied = list(events)
    for event in applied:
        state = evolve(state, event)
    if state is None or state.timing is None:
        return state
    return stamped(before, applied, state, at)


# --------------------------------------------------------------------------- decide


def _clocked(state: Game) -> Timing:
    if state.timing is None:
        raise RuleViolation("wrong_phase", "this game has no clock")
    return state.timing


def _seat(state: Game, seat: int) -> Seat:
    if isinstance(seat, bool) or not 0 <= seat < state.rules.players:
        raise RuleViolation("malformed", f"seat {seat} is not a seat at this table")
    return seat


def decide_time_out(
    state: Game,
    command: TimeOut,
    decide_action: Callable[[Game, PlayerAction], list[AnyEvent]],
    evolve: Callable[[Game | None, AnyEvent], Game],
) -> list[AnyEvent]:
    """A seat's clock has run out: refused unless the seat is on the clock and its deadline
    has passed at ``command.at``. Under ``forfeit`` the seat's unit loses the game; under
    ``auto`` the seat's ``actions`` (legal, by that seat, ending its turn) are taken for it,
    after a :class:`TimedOut` that marks them; the seat goes away after ``away_after`` in a
    row."""
    timing = _clocked(state)
    seat = _seat(state, command.seat)
    if seat not in on_clock(state):
        raise RuleViolation("not_your_turn", f"seat {seat} is not on the clock")
    deadline = timing.deadline(seat)
    if deadline is None:
        raise RuleViolation("wrong_phase", f"when seat {seat}'s turn was given is not known")
    if command.at + RESOLUTION_S < deadline:
        raise RuleViolation(
            "wrong_phase", f"seat {seat}'s clock has {deadline - command.at:.3f} s left"
        )
    events: list[AnyEvent] = [TimedOut(seat)]
    if timing.clock.on_timeout == "forfeit":
        if command.actions:
            raise RuleViolation("malformed", "a forfeit takes no action for the seat")
        table = state.rules.table
        unit = table.unit_of[seat]
        winners = tuple(u for u in range(len(table.units)) if u != unit)
        events.append(GameEnded(winners, state.scores, forfeited=unit))
        return events
    held = timing.seats[seat]
    away_after = timing.clock.away_after
    if not held.away and away_after and held.timeouts + 1 >= away_after:
        events.append(SeatAway(seat, "timeouts"))
    if not command.actions:
        raise RuleViolation("malformed", "an auto timeout takes the action made for the seat")
    current: Game | None = state
    for event in events:
        current = evolve(current, event)
    for action in command.actions:
        assert current is not None
        if getattr(action, "seat", None) != seat or isinstance(action, ComeBack):
            raise RuleViolation("malformed", f"an action for seat {seat} only")
        if seat not in on_clock(current):
            raise RuleViolation("not_your_turn", f"seat {seat}'s turn is over")
        made = decide_action(current, action)
        events.extend(made)
        for event in made:
            current = evolve(current, event)
    assert current is not None
    if seat in on_clock(current) and isinstance(command.actions[-1], LookAtHand):
        raise RuleViolation("malformed", "the actions taken for a seat end its turn")
    return events


def decide_mark_away(state: Game, command: MarkAway) -> list[AnyEvent]:
    """The seat is away from now on (already away: nothing new)."""
    timing = _clocked(state)
    seat = _seat(state, command.seat)
    if state.players[seat] is None:
        raise RuleViolation("wrong_phase", f"seat {seat} is free")
    if timing.seats[seat].away:
        return []
    return [SeatAway(seat, "marked")]


def decide_come_back(state: Game, command: ComeBack) -> list[AnyEvent]:
    """An away seat's player is back."""
    seat = _seat(state, command.seat)
    timing = state.timing
    if timing is None or not timing.seats[seat].away:
        raise RuleViolation("wrong_phase", f"seat {seat} is not away")
    return [SeatReturned(seat)]


def returning(state: Game, seat: int) -> list[AnyEvent]:
    """What a seat's own accepted action says first: that it is back, when it was away or had
    timed out (its timeouts in a row start over)."""
    timing = state.timing
    if timing is None or not 0 <= seat < len(timing.seats):
        return []
    held = timing.seats[seat]
    return [SeatReturned(seat)] if held.away or held.timeouts else []


# --------------------------------------------------------------------------- evolve


def _with_seat(state: Game, seat: Seat, **changes: object) -> Game:
    timing = state.timing
    if timing is None:
        raise ValueError("a clock event needs a game with a clock")
    held = replace(timing.seats[seat], **changes)
    seats = (*timing.seats[:seat], held, *timing.seats[seat + 1 :])
    return replace(state, timing=replace(timing, seats=seats))


def timed_out(state: Game, event: TimedOut) -> Game:
    assert state.timing is not None
    held = state.timing.seats[event.seat]
    bank = held.bank if held.away else 0.0  # an away seat is acted for at once: no bank used
    return _with_seat(state, event.seat, timeouts=held.timeouts + 1, bank=bank)


def seat_away(state: Game, event: SeatAway) -> Game:
    return _with_seat(state, event.seat, away=True)


def seat_returned(state: Game, event: SeatReturned) -> Game:
    return _with_seat(state, event.seat, away=False, timeouts=0)


def token_reissued(state: Game, event: SeatTokenReissued, before: str | None) -> Game:
    """A substitute in the seat starts with a clean record (same bank)."""
    if state.timing is None or before == event.player:
        return state
    return _with_seat(state, event.seat, away=False, timeouts=0)
