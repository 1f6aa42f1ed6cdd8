"""Every action a seat may send now, from the same limits ``decide`` refuses by.

:func:`legal_actions` is what a seat's view lists as ``legal`` and what the bots and the
benchmarks choose from; each entry would be accepted by :func:`domain.game.decide`. Plays come
from :func:`domain.tricks.play_limit`, bids from :mod:`domain.bidding`'s rules.
"""

from __future__ import annotations

import msgspec

from domain.bidding import BidLimits, allowed_bids, bid_limits, bids_within, last_bids
from domain.bids import Bid
from domain.cards import CARDS, SUIT_BITS, SUIT_CHUNKS, Card, CardSet, lowest
from domain.commands import DiscardCards, Draw, LookAtHand, PassCards, PlaceBid, PlayCard
from domain.passing import pass_is_due
from domain.pickup import discard_is_due
from domain.rules import Rules
from domain.state import Game
from domain.table import Seat
from domain.tricks import SEATS, allowed_plays, last_asked, play_limit


class PassDue(msgspec.Struct, frozen=True):
    """A pass the seat owes: ``count`` cards of its choosing (the API's ``{"type": "pass",
    "count": n}``)."""

    seat: Seat
    count: int

    def choose(self, cards: tuple[Card, ...]) -> PassCards:
        """The pass of these cards."""
        return PassCards(self.seat, cards)


class DiscardDue(msgspec.Struct, frozen=True):
    """The dealer's discard, due: ``count`` cards of its choosing (the API's
    ``{"type": "discard", "count": n}``)."""

    seat: Seat
    count: int

    def choose(self, cards: tuple[Card, ...]) -> DiscardCards:
        """The discard of these cards."""
        return DiscardCards(self.seat, cards)


CardsDue = PassDue | DiscardDue
"""An action whose cards the seat chooses."""


Action = LookAtHand | Draw | PlaceBid | PlayCard | PassDue | DiscardDue
"""What :func:`legal_actions` lists."""


def seat_to_act(state: Game) -> Seat | None:
    """The seat the game waits on: the seat on turn or, while passes are due, the first seat
    that owes one; None when no hand is being played."""
    hand = state.hand
    if hand is None:  # waiting for seats or a deal, or over
        return None
    if hand.phase == "pass":
        return lowest(hand.passes_due) if hand.passes_due else None
    return hand.turn


def legal_plays(state: Game, seat: Seat) -> CardSet:
    """The cards ``seat`` may play now (none when it may not play)."""
    hand = state.hand
    if state.status != "playing" or hand is None or hand.phase != "play" or hand.turn != seat:
        return 0
    return allowed_plays(state.rules, hand, seat)


def legal_bids(state: Game, seat: Seat) -> list[Bid]:
    """Every bid ``seat`` may make now."""
    hand = state.hand
    if state.status != "playing" or hand is None or hand.phase != "bid" or hand.turn != seat:
        return []
    return allowed_bids(state, hand, seat)


def legal_actions(state: Game, seat: Seat) -> list[Action]:
    """Every action ``seat`` may send now. A pass is given as :class:`PassDue`, the dealer's
    discard as :class:`DiscardDue` (the cards are the seat's choice)."""
    hand = state.hand  # None unless a hand is being played (none before, none once over)
    if hand is None:
        return []
    if hand.turn == seat and hand.phase == "play" and hand.looked >> seat & 1:
        # The seat on turn in the play, its cards seen: the hottest path, first.
        rules = state.rules
        last = last_asked[0]  # allowed_plays, written out: this runs for every view
        if last[1] is hand and last[0] is rules:
            cards = last[2]
        else:
            cards = play_limit(rules, hand, seat)[1]
            last_asked[0] = (rules, hand, cards)
        plays = _SUIT_PLAYS[seat].get(cards)
        if plays is None:
            return _plays_by_suit(seat, cards)
        return [*plays]
    if not 0 <= seat < state.rules.players:
        return []
    actions: list[Action] = [] if hand.looked >> seat & 1 else [_LOOKS[seat]]
    phase = hand.phase
    if phase == "play":
        if hand.turn == seat:
            actions.extend(_plays(seat, allowed_plays(state.rules, hand, seat)))
    elif phase == "bid":
        if hand.turn == seat and state.status == "playing":
            bids, placed = _placed(seat, state.rules, bid_limits(state, hand, seat))
            last_bids[0] = (state, seat, bids)
            actions.extend(placed)
    elif phase == "draw":
        if hand.turn == seat:
            actions.extend(_DRAWS[seat])
    elif pass_is_due(hand, seat):
        actions.append(PassDue(seat, state.rules.blind_nil_pass))
    elif discard_is_due(hand, seat):
        actions.append(DiscardDue(seat, state.rules.dealer_discard))
    return actions


# --------------------------------------------------------------------------- shared commands

_LOOKS = [LookAtHand(seat) for seat in range(SEATS)]
_PLACED: dict[tuple[Seat, Rules, BidLimits], tuple[tuple[Bid, ...], tuple[PlaceBid, ...]]] = {}
"""Each seat's bids and their commands, by rule set and limits, met so far: a few per rule
set, as they depend only on the rules, the team's floor and whether the seat may bid blind."""
_PLACED_KEPT = 4096
"""More lists than this (only from very many rule sets) and the ones kept are forgotten."""
_DRAWS = [(Draw(seat, True), Draw(seat, False)) for seat in range(SEATS)]
_PLAYS = [[PlayCard(seat, card) for card in CARDS] for seat in range(SEATS)]


_SUIT_PLAYS: list[dict[CardSet, tuple[PlayCard, ...]]] = [{0: ()} for _ in range(SEATS)]
"""Per seat, the plays of each set within one suit's bits (:data:`SUIT_CHUNKS`) met so far:
at most 8,192 a suit."""
_C0, _C1, _C2, _C3, _C4 = SUIT_CHUNKS


def _placed(
    seat: Seat, rules: Rules, limits: BidLimits
) -> tuple[tuple[Bid, ...], tuple[PlaceBid, ...]]:
    """The bids within these limits (:func:`domain.bidding.bids_within`), and their PlaceBid
    commands."""
    key = (seat, rules, limits)
    placed = _PLACED.get(key)
    if placed is None:
        if len(_PLACED) >= _PLACED_KEPT:
            _PLACED.clear()
        bids = bids_within(rules, limits)
        placed = _PLACED[key] = (bids, tuple([PlaceBid(seat, bid) for bid in bids]))
    return placed


def _plays(seat: Seat, cards: CardSet) -> tuple[PlayCard, ...] | list[Action]:
    """The PlayCard commands of a card set: one look-up for a set within one suit's 13 bits
    (as when following), else a look-up per suit."""
    plays = _SUIT_PLAYS[seat].get(cards)
    return plays if plays is not None else _plays_by_suit(seat, cards)


def _plays_by_suit(seat: Seat, cards: CardSet) -> list[Action]:
    """The PlayCard commands of a card set, a look-up per suit."""
    known = _SUIT_PLAYS[seat]
    try:
        return [
            *known[cards & _C0],
            *known[cards & _C1],
            *known[cards & _C2],
            *known[cards & _C3],
            *known[cards & _C4],
        ]
    except KeyError:  # a suit's plays not met before: made from its bits, and kept
        every = _PLAYS[seat]
        out: list[Action] = []
        for shift in range(0, 53, 13):
            suit = cards & 0x1FFF << shift
            plays = known.get(suit)
            if plays is None:
                bits = SUIT_BITS[suit >> shift]
                plays = known[suit] = tuple([every[shift + bit] for bit in bits])
            out += plays
        return out
