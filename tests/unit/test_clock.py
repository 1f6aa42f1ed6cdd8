"""The clock's rules in the domain: who is on it, deadlines, banks, timeouts, away and back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.clock import Clock
from domain.commands import (
    AnyCommand,
    ComeBack,
    CreateGame,
    LookAtHand,
    MarkAway,
    PassCards,
    PlaceBid,
    PlayerAction,
    TakeSeat,
    TimeOut,
    from_api,
)
from domain.errors import RuleViolation
from domain.events import (
    GameEnded,
    SeatAway,
    SeatReturned,
    TimedOut,
)
from domain.game import DiscardDue, PassDue, decide, evolve, legal_actions
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held
from domain.timing import apply_commit, deadlines, on_clock

T0 = 1_800_000_000.0


class Table:
    """A game folded commit by commit with the commits' times, as the engine holds it."""

    def __init__(self, clock: Clock | None, rules: dict[str, Any] | None = None) -> None:
        self.now = T0
        self.seed = 0
        self.state: Game | None = None
        self.run(CreateGame("g", rules or {"preset": "partnership"}, dealer=3, clock=clock))
        for seat in range(self.game.rules.players):
            self.run(TakeSeat(f"p{seat}"))

    @property
    def game(self) -> Game:
        assert self.state is not None
        return self.state

    def run(self, command: AnyCommand, after: float = 0.0) -> list[Any]:
        self.now += after
        self.seed += 1
        deal = SeededDeal(self.seed.to_bytes(32, "big"))
        events = decide(self.state, command, deal=deal)
        self.state = apply_commit(self.state, events, self.now, evolve)
        return events

    def bot_action(self, seat: int) -> list[PlayerAction]:
        """What a service bot might do: look first if it must, then its first legal move."""
        game = self.game
        actions: list[PlayerAction] = []
        legal = legal_actions(game, seat)
        if legal and isinstance(legal[0], LookAtHand) and len(legal) == 1:
            actions.append(legal[0])
            game = evolve(game, decide(game, legal[0])[0])
            legal = legal_actions(game, seat)
        move = next(a for a in legal if not isinstance(a, LookAtHand))
        if isinstance(move, (PassDue, DiscardDue)):
            assert game.hand is not None
            return [*actions, move.choose(tuple(cards_held(game.hand, seat)[: move.count]))]
        return [*actions, move]

    def time_out(self, seat: int, after: float = 0.0) -> list[Any]:
        at = self.now + after
        clock = self.game.timing
        assert clock is not None
        actions = () if clock.clock.on_timeout == "forfeit" else tuple(self.bot_action(seat))
        return self.run(TimeOut(seat, at, actions), after)


def refused(code: str, table: Table, command: AnyCommand, after: float = 0.0) -> None:
    with pytest.raises(RuleViolation) as raised:
        table.run(command, after)
    assert raised.value.code == code, raised.value.detail


AUTO = Clock(turn_s=10, bank_s=30, on_timeout="auto", away_after=2)


@pytest.mark.parametrize(
    "clock",
    [
        Clock(turn_s=0),
        Clock(turn_s=-1),
        Clock(turn_s=10, bank_s=-1),
        Clock(turn_s=1e9),
        Clock(turn_s=10, away_after=-1),
        Clock(turn_s=float("nan")),
    ],
)
def test_a_clock_that_cannot_run_is_refused_at_creation(clock: Clock) -> None:
    with pytest.raises(RuleViolation) as raised:
        decide(None, CreateGame("g", {"preset": "partnership"}, clock=clock))
    assert raised.value.code == "invalid_rules"


def test_the_seat_given_the_turn_is_on_the_clock_from_that_commit() -> None:
    table = Table(AUTO)
    game = table.game
    assert on_clock(game) == (0,)
    assert deadlines(game) == {0: T0 + 10 + 30}
    assert table.game.timing is not None
    assert [seat.bank for seat in table.game.timing.seats] == [30.0] * 4


def test_a_game_without_a_clock_has_no_deadline_and_refuses_a_timeout() -> None:
    table = Table(None)
    assert deadlines(table.game) == {}
    refused("wrong_phase", table, TimeOut(0, T0 + 1e6, ()))


def test_time_past_turn_s_comes_out_of_the_bank_and_the_next_seat_starts_at_the_commit() -> None:
    table = Table(AUTO)
    table.run(LookAtHand(0), after=4)  # a look does not end the turn
    assert deadlines(table.game) == {0: T0 + 40}
    table.run(PlaceBid(0, 3), after=8)  # 12 s in all: 2 past turn_s
    timing = table.game.timing
    assert timing is not None
    assert timing.seats[0].bank == 28.0
    assert timing.seats[0].since is None
    assert deadlines(table.game) == {1: table.now + 10 + 30}


def test_a_timeout_before_the_deadline_or_for_a_seat_not_on_the_clock_is_refused() -> None:
    table = Table(AUTO)
    actions = tuple(table.bot_action(0))
    refused("wrong_phase", table, TimeOut(0, T0 + 39, actions), after=39)
    refused("not_your_turn", table, TimeOut(1, T0 + 1000, ()), after=1000)


def test_forfeit_ends_the_game_at_the_first_deadline_with_the_others_winning() -> None:
    table = Table(Clock(turn_s=5, on_timeout="forfeit"))
    events = table.time_out(0, after=5)
    assert events == [TimedOut(0), GameEnded((1,), (0, 0), forfeited=0)]
    assert table.game.status == "finished"
    assert table.game.winners == (1,)
    refused("game_over", table, TimeOut(1, table.now + 100, ()))


def test_forfeit_of_a_seat_in_a_solo_game_makes_every_other_seat_a_winner() -> None:
    table = Table(Clock(turn_s=5, on_timeout="forfeit"), {"preset": "solo"})
    seat = on_clock(table.game)[0]
    events = table.time_out(seat, after=5)
    assert events[-1] == GameEnded(
        tuple(s for s in range(4) if s != seat), (0, 0, 0, 0), forfeited=seat
    )


def test_auto_takes_the_bots_action_marked_as_timed_out_and_away_after_two_in_a_row() -> None:
    table = Table(AUTO)
    first = table.time_out(0, after=40)
    assert first[0] == TimedOut(0)
    assert [type(e).__name__ for e in first[1:]] == ["HandLooked", "BidPlaced"]
    timing = table.game.timing
    assert timing is not None
    assert timing.seats[0].timeouts == 1
    assert timing.seats[0].bank == 0.0
    assert not timing.seats[0].away
    # Round the table, each seat acting for itself (bids by hand).
    for seat in (1, 2, 3):
        table.run(PlaceBid(seat, 3), after=1)
    while 0 not in on_clock(table.game):
        seat = on_clock(table.game)[0]
        table.run(table.bot_action(seat)[-1], after=1)
    second = table.time_out(0, after=10)  # bank spent: turn_s alone
    assert second[:2] == [TimedOut(0), SeatAway(0, "timeouts")]
    assert table.game.timing is not None
    assert table.game.timing.seats[0].away
    while 0 not in on_clock(table.game):
        seat = on_clock(table.game)[0]
        table.run(table.bot_action(seat)[-1], after=1)
    assert deadlines(table.game) == {0: table.now}  # away: at once
    table.time_out(0)


def test_an_auto_action_that_is_illegal_or_not_the_seats_is_refused() -> None:
    table = Table(AUTO)
    refused("malformed", table, TimeOut(0, T0 + 40, ()), after=40)
    refused("malformed", table, TimeOut(0, table.now, (PlaceBid(1, 3),)))
    refused("invalid_bid", table, TimeOut(0, table.now, (LookAtHand(0), PlaceBid(0, 99))))
    refused("malformed", table, TimeOut(0, table.now, (LookAtHand(0),)))


def test_a_seats_own_action_brings_it_back_and_its_timeouts_start_over() -> None:
    table = Table(AUTO)
    table.time_out(0, after=40)
    while 0 not in on_clock(table.game):
        seat = on_clock(table.game)[0]
        table.run(table.bot_action(seat)[-1], after=1)
    action = table.bot_action(0)[-1]
    events = table.run(action, after=1)
    assert events[0] == SeatReturned(0)
    timing = table.game.timing
    assert timing is not None
    assert timing.seats[0].timeouts == 0


def test_mark_away_then_come_back() -> None:
    table = Table(AUTO)
    assert table.run(MarkAway(2)) == [SeatAway(2, "marked")]
    assert table.run(MarkAway(2)) == []
    assert table.game.timing is not None
    assert table.game.timing.seats[2].away
    assert table.run(ComeBack(2)) == [SeatReturned(2)]
    refused("wrong_phase", table, ComeBack(2))
    assert from_api(2, {"type": "back"}) == ComeBack(2)


def test_mark_away_makes_the_seat_on_turn_due_at_once() -> None:
    table = Table(AUTO)
    table.run(MarkAway(0), after=1)
    assert deadlines(table.game)[0] <= table.now  # away: due at once
    events = table.time_out(0)
    assert events[0] == TimedOut(0)


def test_both_seats_owing_a_blind_nil_pass_are_on_the_clock() -> None:
    table = Table(AUTO, {"preset": "partnership", "blind_nil_behind": None})
    table.run(PlaceBid(0, "blind_nil"), after=1)
    for seat in (1, 2, 3):
        table.run(LookAtHand(seat))
        table.run(PlaceBid(seat, 3), after=1)
    assert table.game.hand is not None
    assert table.game.hand.phase == "pass"
    assert set(on_clock(table.game)) == {0, 2}
    passed = table.time_out(2, after=40)
    assert passed[0] == TimedOut(2)
    assert on_clock(table.game) == (0,)
    hand = table.game.hand
    assert hand is not None
    table.run(PassCards(0, tuple(cards_held(hand, 0)[:2])), after=1)
    after = table.game.hand
    assert after is not None
    assert after.phase == "play"


@settings(max_examples=10, deadline=None)
@given(
    waits=st.lists(st.floats(min_value=0, max_value=25), min_size=1, max_size=40),
    away_after=st.integers(min_value=0, max_value=3),
)
def test_a_table_nobody_touches_finishes_and_banks_never_go_negative(
    waits: list[float], away_after: int
) -> None:
    table = Table(
        Clock(turn_s=10, bank_s=15, on_timeout="auto", away_after=away_after),
        {"preset": "partnership", "max_hands": 2},
    )
    steps = 0
    while table.game.status == "playing":
        seat, deadline = min(deadlines(table.game).items(), key=lambda item: item[1])
        wait = waits[steps % len(waits)]
        if seat == 1 and table.now + wait < deadline:
            for k, action in enumerate(table.bot_action(1)):
                table.run(action, after=wait if k == 0 else 0.0)
        else:
            table.time_out(seat, after=max(0.0, deadline - table.now))
        steps += 1
        timing = table.game.timing
        assert timing is not None
        assert all(0 <= clock.bank <= 15 for clock in timing.seats)
        assert steps < 1000
    assert table.game.winners
