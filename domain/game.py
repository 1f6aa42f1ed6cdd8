"""The game aggregate: ``decide`` what a command does, ``evolve`` the state by an event.

``decide(state, command, deal=...) -> list[Event]`` checks a command against the state and
returns the events it causes, or raises :class:`~domain.errors.RuleViolation` with one
code of docs/rules.md, chosen by its precedence ("Which code wins"). ``evolve(state, event) ->
state`` applies one event and never fails on a valid history. :func:`legal_actions` lists every
action a seat may send, from the same limits ``decide`` refuses by.

Both dispatch on the type of what they are given, to the module that holds that part of the
game, each read top to bottom: :mod:`domain.seating` (creating, seats), :mod:`domain.deal_phase`,
:mod:`domain.pickup` (looking, the draw, the dealer's discard), :mod:`domain.bidding`,
:mod:`domain.passing` (the blind nil pass), :mod:`domain.tricks` and :mod:`domain.results` (the
end of a hand, a tally, the end of the game). Here alone are the game-wide checks (no such
game, ``game_over``), the next deal when one is due, and the version, one per event.

The randomness of a deal is an input: a command that completes a hand (or fills the last seat)
deals the next one from ``deal`` when it is given, and otherwise leaves the game waiting for a
:class:`~domain.commands.DealHand`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from msgspec.structs import replace

from domain.bidding import bid_placed, decide_bid
from domain.commands import (
    AnyCommand,
    ComeBack,
    CreateGame,
    DealHand,
    DiscardCards,
    Draw,
    LookAtHand,
    MarkAway,
    PassCards,
    PlaceBid,
    PlayCard,
    RecordTally,
    ReissueSeatToken,
    TakeSeat,
    TimeOut,
    Unreadable,
)
from domain.deal_phase import check_deck, check_hands, deal_hand, decide_deal, hand_dealt
from domain.errors import RuleViolation
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardsPassed,
    CardsReceived,
    GameCreated,
    GameEnded,
    HandDealt,
    HandLooked,
    HandScored,
    SeatAway,
    SeatReturned,
    SeatTaken,
    SeatTokenReissued,
    TimedOut,
    TrickWon,
)
from domain.legal import (
    Action,
    CardsDue,
    DiscardDue,
    PassDue,
    legal_actions,
    legal_bids,
    legal_plays,
    seat_to_act,
)
from domain.passing import cards_passed, cards_received, decide_pass
from domain.pickup import (
    card_drawn,
    cards_discarded,
    decide_discard,
    decide_draw,
    decide_look,
    hand_looked,
    looks_to_play,
)
from domain.results import decide_tally, game_ended, hand_scored
from domain.seating import (
    create_game,
    game_created,
    reissue_seat_token,
    seat_taken,
    seat_token_reissued,
    take_seat,
)
from domain.shuffle import DealSource
from domain.state import Game, Hand
from domain.timing import (
    decide_come_back,
    decide_mark_away,
    decide_time_out,
    returning,
    seat_away,
    seat_returned,
    timed_out,
    token_reissued,
)
from domain.tricks import card_played, decide_play, trick_won

__all__ = [
    "Action",
    "CardsDue",
    "DiscardDue",
    "PassDue",
    "check_deck",
    "check_hands",
    "decide",
    "evolve",
    "fold",
    "legal_actions",
    "legal_bids",
    "legal_plays",
    "seat_to_act",
]


# --------------------------------------------------------------------------- decide


def _unreadable(state: Game, command: Unreadable) -> list[AnyEvent]:
    raise RuleViolation("malformed", command.reason)


_DECIDE: dict[type[Any], Callable[[Game, Any], list[AnyEvent]]] = {
    PlayCard: decide_play,
    PlaceBid: decide_bid,
    LookAtHand: decide_look,
    Draw: decide_draw,
    DiscardCards: decide_discard,
    PassCards: decide_pass,
    Unreadable: _unreadable,
    TakeSeat: take_seat,
    ReissueSeatToken: reissue_seat_token,
    DealHand: decide_deal,
    RecordTally: decide_tally,
    MarkAway: decide_mark_away,
    ComeBack: decide_come_back,
    TimeOut: decide_come_back,  # replaced in _decide: a timeout needs the deal
}
"""The decision of each command on an existing game."""

_MAY_LEAVE_A_HAND_DUE = frozenset({SeatTaken, HandScored})
"""The events after which the next hand may be due to be dealt."""


_OWN_ACTIONS = frozenset({PlayCard, PlaceBid, LookAtHand, Draw, DiscardCards, PassCards})
"""The actions a seat's own token sends: accepted, they bring an away seat back."""


def decide(
    state: Game | None, command: AnyCommand, *, deal: DealSource | None = None
) -> list[AnyEvent]:
    """The events ``command`` causes in ``state``; raises RuleViolation when it is refused."""
    if (
        type(command) is PlayCard
        and state is not None
        and state.status == "playing"
        and state.timing is None
    ):
        # The hottest path, first: no clock, so no seat away to bring back.
        events = decide_play(state, command)
        if deal is not None and type(events[-1]) is HandScored:
            events.append(_next_deal(state, events[-1], deal))
        return events
    events = _decide(state, command, deal)
    if state is not None and state.timing is not None and type(command) in _OWN_ACTIONS:
        back = returning(state, getattr(command, "seat", -1))
        if back:
            return back + events
    return events


def _decide(state: Game | None, command: AnyCommand, deal: DealSource | None) -> list[AnyEvent]:
    if type(command) is PlayCard and state is not None and state.status == "playing":
        events = decide_play(state, command)
        if deal is not None and type(events[-1]) is HandScored:
            events.append(_next_deal(state, events[-1], deal))
        return events
    decide_command = _DECIDE.get(type(command))
    if decide_command is None or state is None or state.status != "playing":
        if type(command) is CreateGame:
            if state is not None:
                raise RuleViolation("wrong_phase", f"game {state.game_id} already exists")
            return [create_game(command)]
        if state is None:
            raise RuleViolation("wrong_phase", "no such game")
        if state.status == "finished":
            raise RuleViolation("game_over", "the game has ended")
        if decide_command is None:
            raise RuleViolation("malformed", f"unknown command {type(command).__name__}")
    if type(command) is TimeOut:
        return decide_time_out(
            state, command, lambda now, action: _decide(now, action, deal), evolve
        )
    events = decide_command(state, command)
    if deal is not None and events and type(events[-1]) in _MAY_LEAVE_A_HAND_DUE:
        after = _after(events, state)
        if after.status == "playing" and after.hand is None:
            events.append(deal_hand(after, deal))
    if events and state.hands_played == 0 and state.rules.first_hand == "no_bid":
        events.extend(looks_to_play(_after(events, state)))
    return events


def _next_deal(state: Game, scored: AnyEvent, deal: DealSource) -> HandDealt:
    """The deal after a hand's last trick: of its events only the score bears on it."""
    return deal_hand(evolve(state, scored), deal)


def _after(events: list[AnyEvent], state: Game) -> Game:
    after = fold(events, state)
    assert after is not None
    return after


# --------------------------------------------------------------------------- evolve

_HAND_STEPS: dict[type[Any], Callable[[Game, Hand, Any], Hand]] = {
    CardPlayed: card_played,
    TrickWon: trick_won,
    BidPlaced: bid_placed,
    HandLooked: hand_looked,
    CardDrawn: card_drawn,
    CardsDiscarded: cards_discarded,
    CardsPassed: cards_passed,
    CardsReceived: cards_received,
}
"""The change each event makes to the hand in progress."""

_GAME_STEPS: dict[type[Any], Callable[[Game, Any], Game]] = {
    SeatTaken: seat_taken,
    SeatTokenReissued: lambda state, event: token_reissued(
        seat_token_reissued(state, event), event, _name_in(state, event.seat)
    ),
    HandDealt: hand_dealt,
    HandScored: hand_scored,
    GameEnded: game_ended,
    TimedOut: timed_out,
    SeatAway: seat_away,
    SeatReturned: seat_returned,
}
"""The change each event makes to the game as a whole."""


def _name_in(state: Game, seat: int) -> str | None:
    player = state.players[seat] if 0 <= seat < len(state.players) else None
    return player.name if player is not None else None


def evolve(state: Game | None, event: AnyEvent) -> Game:
    """Apply one event: the game's version counts them."""
    if state is None:
        if not isinstance(event, GameCreated):
            raise ValueError(f"a game starts with game_created, not {type(event).__name__}")
        return game_created(event)
    if type(event) is CardPlayed:  # the hottest path, first
        hand = state.hand
        if hand is None:
            raise ValueError("card_played needs a hand in progress")
        return replace(state, hand=card_played(state, hand, event), version=state.version + 1)
    step = _HAND_STEPS.get(type(event))
    if step is not None:
        hand = state.hand
        if hand is None:
            raise ValueError(f"{type(event).__name__} needs a hand in progress")
        return replace(state, hand=step(state, hand, event), version=state.version + 1)
    game_step = _GAME_STEPS.get(type(event))
    if game_step is None:
        raise ValueError(f"{type(event).__name__} cannot happen to a game that exists")
    return replace(game_step(state, event), version=state.version + 1)


def fold(events: Iterable[AnyEvent], state: Game | None = None) -> Game | None:
    """The state after ``events``."""
    for event in events:
        state = evolve(state, event)
    return state
