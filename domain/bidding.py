"""Bidding: once around the table from the left of the dealer, each seat names its tricks.

Each rule that limits a bid is written once, as a function of the table: :func:`_blind_nil`
(``blind_nil`` and its margin, and the seat not having looked), :func:`_blind_bid`
(``blind_bids``, and the seat not having looked), :func:`_bid_range` (``min_bid``, or
``blind_bids`` for a blind bid, up to the hand size) and :func:`_team_floor` (``team_min_bid``).
Both questions are answered from them: why a given bid is refused (:func:`bid_refusal`, in
docs/rules.md's order of precedence) and which bids are allowed (:func:`allowed_bids`).
"""

from __future__ import annotations

from functools import lru_cache

from msgspec.structs import replace

from domain.bids import BLIND_NIL, NIL, Bid, blind, is_blind, is_nil, tricks_bid
from domain.commands import PlaceBid
from domain.errors import RuleViolation
from domain.events import AnyEvent, BidPlaced
from domain.passing import passes_due
from domain.pickup import has_looked, look
from domain.rules import Rules
from domain.seating import seat_of
from domain.state import NO_SEAT, Game, Hand, at_seat, in_hand
from domain.table import Seat, Table
from domain.tricks import start_play


def _blind_nil(state: Game, hand: Hand, seat: Seat) -> str | None:
    """Why this seat may not bid blind nil now, or None when it may."""
    rules = state.rules
    if not rules.blind_nil:
        return "blind nil is not played at this table"
    if has_looked(hand, seat):
        return f"seat {seat} has already seen its cards"
    if rules.blind_nil_behind is not None:
        unit = rules.table.unit_of[seat]
        scores = state.scores
        best_other = max(scores[:unit] + scores[unit + 1 :])
        if scores[unit] > best_other - rules.blind_nil_behind:
            return f"blind nil needs the bidder's side {rules.blind_nil_behind} or more behind"
    return None


def _blind_bid(rules: Rules, hand: Hand, seat: Seat) -> str | None:
    """Why this seat may not bid blind (``blind_N``) now, or None when it may."""
    if not rules.blind_bids:
        return "blind bids are not played at this table"
    if has_looked(hand, seat):
        return f"seat {seat} has already seen its cards"
    return None


def _bid_range(rules: Rules, table: Table, blind: bool = False) -> range:
    """The tricks a bid may name: ``min_bid`` (``blind_bids`` for a blind bid) up to every
    trick of the hand."""
    return range(rules.blind_bids if blind else rules.min_bid, table.hand_size + 1)


def _team_floor(rules: Rules, table: Table, hand: Hand, seat: Seat) -> int:
    """The least this seat's bid must add for its team to reach ``team_min_bid`` (0 or less:
    nothing)."""
    if not rules.team_min_bid:
        return 0
    partner = table.partner_of(seat)
    if partner is None:
        return 0
    partner_bid = hand.bids[partner]
    if partner_bid is None:
        return 0
    return rules.team_min_bid - tricks_bid(partner_bid)


def bid_refusal(state: Game, hand: Hand, seat: Seat, bid: Bid) -> RuleViolation | None:
    """Why ``bid`` by the seat on turn is refused, by docs/rules.md's precedence; None when it is
    allowed."""
    rules = state.rules
    table = rules.table
    if bid == BLIND_NIL:
        why = _blind_nil(state, hand, seat)
        if why is not None:
            return RuleViolation("blind_nil_not_allowed", why)
    blind_bid = is_blind(bid)
    if blind_bid:
        why = _blind_bid(rules, hand, seat)
        if why is not None:
            return RuleViolation("blind_bid_not_allowed", why)
    if is_nil(bid):
        if not rules.nil:
            return RuleViolation("nil_not_allowed", "nil is not played at this table")
    else:
        tricks = _bid_range(rules, table, blind_bid)
        if tricks_bid(bid) not in tricks:
            kind = "a blind bid" if blind_bid else "a bid"
            return RuleViolation(
                "invalid_bid", f"{kind} is {tricks.start} to {tricks.stop - 1} tricks, not {bid}"
            )
    floor = _team_floor(rules, table, hand, seat)
    if tricks_bid(bid) < floor:
        return RuleViolation(
            "invalid_bid",
            f"the team must bid {rules.team_min_bid} together: this bid must be {floor} or more",
        )
    return None


BidLimits = tuple[int, bool, bool]
"""What limits a seat's bids now: the least its bid must add for its team to reach
``team_min_bid`` (:func:`_team_floor`), whether it may bid blind nil (:func:`_blind_nil`), and
whether it may bid blind (:func:`_blind_bid`)."""


def bid_limits(state: Game, hand: Hand, seat: Seat) -> BidLimits:
    """The limits on the bids of the seat on turn (:data:`BidLimits`)."""
    rules = state.rules
    floor = _team_floor(rules, rules.table, hand, seat)
    blind_nil = bool(rules.nil and floor <= 0 and _blind_nil(state, hand, seat) is None)
    blindly = bool(rules.blind_bids and _blind_bid(rules, hand, seat) is None)
    return floor, blind_nil, blindly


@lru_cache(maxsize=4096)
def bids_within(rules: Rules, limits: BidLimits) -> tuple[Bid, ...]:
    """Every bid these limits let through (a few per rule set, so each is worked out once)."""
    table = rules.table
    floor, blind_nil, blindly = limits
    bids: list[Bid] = []
    if rules.nil and floor <= 0:
        if blind_nil:
            bids.append(BLIND_NIL)
        bids.append(NIL)
    numeric = _bid_range(rules, table)
    bids.extend(range(max(numeric.start, floor), numeric.stop))
    if blindly:
        blind_tricks = _bid_range(rules, table, blind=True)
        bids.extend(blind(n) for n in range(max(blind_tricks.start, floor), blind_tricks.stop))
    return tuple(bids)


last_bids: list[tuple[Game | None, Seat, tuple[Bid, ...]]] = [(None, NO_SEAT, ())]
"""The bids allowed the seat on turn in the game last listed by
:func:`domain.legal.legal_actions`, as :data:`domain.tricks.last_asked` keeps its plays: the
seat's legal list and the decision on its bid ask in turn about the same state (states are
immutable). One entry, replaced whole."""

_BID_TYPES = (int, str)
"""The bids looked up in :data:`last_bids`: exactly these types (a bool or a float goes through
:func:`bid_refusal`, as equal to an int as it is)."""


def allowed_bids(state: Game, hand: Hand, seat: Seat) -> list[Bid]:
    """Every bid of the seat on turn that :func:`bid_refusal` lets through."""
    return list(bids_within(state.rules, bid_limits(state, hand, seat)))


# --------------------------------------------------------------------------- decide


def decide_bid(state: Game, command: PlaceBid) -> list[AnyEvent]:
    seat = seat_of(state, command.seat)
    hand = in_hand(state)
    if hand.phase != "bid":
        raise RuleViolation("wrong_phase", "bidding is over" if hand.bids[seat] else "not bidding")
    if seat != hand.turn:
        raise RuleViolation("not_your_turn", f"seat {hand.turn} bids now")
    last_state, last_seat, allowed = last_bids[0]
    bid = command.bid
    if not (
        last_state is state and last_seat == seat and type(bid) in _BID_TYPES and bid in allowed
    ):  # unless the seat's legal list was just worked out, and holds the bid:
        refusal = bid_refusal(state, hand, seat, bid)
        if refusal is not None:
            raise refusal
    placed = BidPlaced(seat, command.bid)
    if has_looked(hand, seat):
        return [placed]
    # Bidding picks the cards up: after a blind bid, before any other.
    blindly = command.bid == BLIND_NIL or is_blind(command.bid)
    return [placed, look(hand, seat)] if blindly else [look(hand, seat), placed]


# --------------------------------------------------------------------------- evolve


def bid_placed(state: Game, hand: Hand, event: BidPlaced) -> Hand:
    """The bid is down; after the last one, the blind nil pass or the opening lead."""
    rules = state.rules
    bids = at_seat(hand.bids, event.seat, event.bid)
    hand = replace(hand, bids=bids, turn=(event.seat + 1) % rules.players)
    if None in bids:
        return hand
    due = passes_due(rules, bids)
    if due:
        return replace(
            hand, phase="pass", turn=NO_SEAT, passes_due=due, passed=(None,) * rules.players
        )
    return start_play(rules, hand)
