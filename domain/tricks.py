"""The play of the cards: the opening lead, what a seat may play, and who takes each trick.

Every rule that limits a play is written once, in :func:`play_limit`, which answers both
questions, as python-chess answers "is this move legal" and "which moves are legal" from one
generator: asked about a card, it walks the rules in docs/rules.md's order of precedence and stops
at the first that refuses the card, giving its code (``decide`` raises it, :func:`decide_play`);
asked about no card in particular, it narrows the cards allowed rule by rule and gives every
card the rules allow (:func:`domain.legal.legal_plays`). Under ``renege: penalize`` the rules of
following (``must_follow_suit``, ``must_beat``) refuse nothing: a card they would refuse is
played and marked a renege.
"""

from __future__ import annotations

from msgspec.structs import replace

from domain.cards import CARDS, CLUBS, CardSet, iter_cards, lowest
from domain.commands import PlayCard
from domain.errors import Code, RuleViolation
from domain.events import AnyEvent, CardPlayed, TrickWon
from domain.results import end_of_hand
from domain.rules import MAX_TRICKS, Rules
from domain.state import HELD, LANE, Game, Hand, held
from domain.table import TRUMP, Seat, Table

ANY_CARD: CardSet = (1 << len(CARDS)) - 1
"""Every card at once: :func:`play_limit` asked about no card in particular."""

RENEGES: frozenset[Code] = frozenset({"must_follow_suit", "must_beat"})
"""The rules of following, which ``renege: penalize`` turns from refusals into reneges."""

SEATS = 6

_PLAYED = [[CardPlayed(seat, card) for card in CARDS] for seat in range(SEATS)]
"""Shared, immutable CardPlayed events: a play is the hottest path of the engine."""
_WON = [[TrickWon(trick, seat) for seat in range(SEATS)] for trick in range(MAX_TRICKS + 1)]
"""Shared, immutable TrickWon events, by trick number and seat."""


# --------------------------------------------------------------------------- what may be played


def play_limit(
    rules: Rules, hand: Hand, seat: Seat, card: CardSet = ANY_CARD
) -> tuple[Code | None, CardSet]:
    """The rules limiting what the seat on turn may play, in docs/rules.md's order.

    Asked about ``card`` (a set of one card): the code of the first rule that refuses it, and
    that rule's cards; ``(None, ...)`` when no rule does. Asked about :data:`ANY_CARD`:
    ``(None, cards)``, every card the rules allow the seat (under ``renege: penalize``, reneges
    included).
    """
    hold = hand.holdings >> LANE * seat & HELD
    if not card & hold:
        return "card_not_in_hand", hold
    trick = hand.trick
    table = rules.table
    if trick:
        if rules.renege == "penalize" and card == ANY_CARD:
            return None, hold
        allowed = hold & table.suit_mask[table.suit_of[trick[0]]] or hold
        if not card & allowed:
            return "must_follow_suit", allowed
        if rules.must_beat:
            beaters = _beaters(table, allowed, trick[table.winning_position(trick)])
            if beaters:
                return (None, beaters) if card & beaters else ("must_beat", beaters)
        return None, allowed
    if hand.opening_card >= 0 and hand.tricks_played == 0:
        opening = 1 << hand.opening_card
        return (None, opening) if card & opening else ("wrong_opening_lead", opening)
    if not hand.spades_broken and rules.spades_lead == "broken":
        others = hold & ~table.suit_mask[TRUMP]
        if others:  # a hand of nothing but spades may lead one
            return (None, others) if card & others else ("spades_not_broken", others)
    return None, hold


last_asked: list[tuple[Rules | None, Hand | None, CardSet]] = [(None, None, 0)]
"""The cards allowed in the hand last asked about (to the seat on turn, the only seat asked):
one entry, replaced whole. A list, so that no ``global`` statement is needed; reading and
replacing its item are each atomic."""


def allowed_plays(rules: Rules, hand: Hand, seat: Seat) -> CardSet:
    """Every card the seat on turn may play: :func:`play_limit` asked about no card in
    particular. The answer for the last hand asked about is kept, since a seat's legal list
    and the decision on its play ask in turn about the same hand (hands are immutable)."""
    if seat != hand.turn:  # the entry answers for the seat on turn only
        return play_limit(rules, hand, seat)[1]
    last = last_asked[0]
    if last[1] is hand and last[0] is rules:
        return last[2]
    cards = play_limit(rules, hand, seat)[1]
    last_asked[0] = (rules, hand, cards)
    return cards


def _beaters(table: Table, allowed: CardSet, winning: int) -> CardSet:
    """The cards of ``allowed`` that would take the trick from ``winning``."""
    out = 0
    for card in iter_cards(allowed):
        if table.beats(card, winning):
            out |= 1 << card
    return out


_WHY = {
    "card_not_in_hand": "{card} is not in seat {seat}'s hand",
    "wrong_opening_lead": "the hand opens with {opening}",
    "spades_not_broken": "{card} leads a spade before they broke",
    "must_follow_suit": "{card} does not follow the suit led",
    "must_beat": "seat {seat} can beat the winning card",
}


# --------------------------------------------------------------------------- decide


def decide_play(state: Game, command: PlayCard) -> list[AnyEvent]:
    seat = command.seat
    rules = state.rules
    hand = state.hand
    if hand is None or seat != hand.turn or hand.phase != "play":  # else the seat on turn
        if not 0 <= seat < rules.players:
            raise RuleViolation("malformed", f"seat {seat} is not a seat at this table")
        if hand is None or hand.phase != "play":
            raise RuleViolation("wrong_phase", "cards are not being played now")
        raise RuleViolation("not_your_turn", f"seat {hand.turn} plays now")
    card = command.card
    ordinal = card.ordinal
    renege = False
    last_rules, last_hand, allowed = last_asked[0]
    if not (
        last_hand is hand
        and last_rules is rules
        and allowed >> ordinal & 1
        and rules.renege == "reject"
    ):  # unless the seat's legal list was just worked out, and holds the card:
        refused, _ = play_limit(rules, hand, seat, 1 << ordinal)
        if refused is not None:
            if refused not in RENEGES or rules.renege == "reject":
                opening = CARDS[hand.opening_card] if hand.opening_card >= 0 else None
                why = _WHY[refused].format(card=card, seat=seat, opening=opening)
                raise RuleViolation(refused, why)
            renege = True
    played = CardPlayed(seat, card, True) if renege else _PLAYED[seat][ordinal]
    trick = hand.trick
    if len(trick) + 1 < rules.players:
        return [played]
    table = rules.table
    winner = table.trick_winner(hand.leader, (*trick, ordinal))
    events: list[AnyEvent] = [played, _WON[hand.tricks_played + 1][winner]]
    if hand.tricks_played + 1 == table.hand_size:
        won = list(hand.won)
        won[winner] += 1
        reneged = hand.reneged | (1 << table.unit_of[seat] if renege else 0)
        events.extend(end_of_hand(state, hand, won, reneged))
    return events


# --------------------------------------------------------------------------- evolve


def start_play(rules: Rules, hand: Hand) -> Hand:
    """The opening lead: left of the dealer, the dealer, or the holder of the lowest club in
    play (of two holders, two decks, the first clockwise from the dealer's left)."""
    players = rules.players
    left = (hand.dealer + 1) % players
    leader = left
    opening = -1
    if rules.first_lead == "dealer":
        leader = hand.dealer
    elif rules.first_lead == "lowest_club":
        in_play = 0
        for seat in range(players):
            in_play |= held(hand, seat)
        clubs = in_play & rules.table.suit_mask[CLUBS]
        if clubs:
            opening = lowest(clubs)
            leader = next(
                seat
                for seat in ((left + k) % players for k in range(players))
                if held(hand, seat) >> opening & 1
            )
    return replace(hand, phase="play", turn=leader, leader=leader, opening_card=opening)


_PLAYED_OUT = [
    [~(1 << ordinal << LANE * seat) for ordinal in range(len(CARDS))] for seat in range(SEATS)
]
"""Every card but one in one seat's lane of :attr:`Hand.holdings`, by seat and card:
``holdings & _PLAYED_OUT[seat][ordinal]`` is the seat's hand once that card is played."""


def card_played(state: Game, hand: Hand, event: CardPlayed) -> Hand:
    """The card leaves the seat's hand for the trick. Spades breaking and reneges, the rare
    changes, are made apart, so that the usual play replaces three fields."""
    seat = event.seat
    ordinal = event.card.ordinal
    trick = hand.trick
    twice = hand.twice
    if twice and twice >> LANE * seat + ordinal & 1:  # two decks: the seat keeps its other copy
        hand = replace(
            hand,
            twice=twice & _PLAYED_OUT[seat][ordinal],
            trick=(*trick, ordinal),
            turn=(seat + 1) % state.rules.players,
        )
    else:
        hand = replace(
            hand,
            holdings=hand.holdings & _PLAYED_OUT[seat][ordinal],
            trick=(*trick, ordinal),
            turn=(seat + 1) % state.rules.players,
        )
    if trick and not hand.spades_broken:
        suit_of = state.rules.table.suit_of
        if suit_of[ordinal] == TRUMP and suit_of[trick[0]] != TRUMP:
            hand = replace(hand, spades_broken=True)
    if event.renege:
        hand = replace(hand, reneged=hand.reneged | 1 << state.rules.table.unit_of[seat])
    return hand


def trick_won(state: Game, hand: Hand, event: TrickWon) -> Hand:
    seat = event.seat
    won = hand.won
    return replace(
        hand,
        trick=(),
        won=(*won[:seat], won[seat] + 1, *won[seat + 1 :]),
        tricks_played=hand.tricks_played + 1,
        turn=seat,
        leader=seat,
    )
