"""The table a rule set describes: seats, scoring units, the pack and how its cards rank.

Everything here is fixed for a game, so it is worked out once from the rules and kept beside
them; the rules stay the only thing recorded.
"""

from __future__ import annotations

from functools import cache
from typing import TypeAlias

from domain.cards import CARDS, RANKS, SPADES, Card, CardSet, printed_suit, rank_value
from domain.rules import Rules

Seat: TypeAlias = int
"""A seat at the table, ``0..players-1`` clockwise."""
Unit: TypeAlias = int
"""A scoring unit: a team of partners, or one seat when there are none."""

TRUMP = SPADES
"""The trump suit index. Jokers, and the 2♦ under ``jokers_deuces``, belong to it."""


def trump_order(rules: Rules) -> tuple[Card, ...]:
    """The trump suit from the top down, as this rule set ranks it (each card once, however
    many copies the pack holds)."""
    spades = [Card(rank + "S") for rank in reversed(RANKS)]  # AS KS ... 2S
    jokers = [Card.BIG_JOKER, Card.LITTLE_JOKER] if rules.jokers else []
    if rules.trump_order == "jokers_deuce":
        order = [*jokers, Card("2S"), *spades[:-1]]
    elif rules.trump_order == "jokers_deuces":
        order = [*jokers, Card("2D"), Card("2S"), *spades[:-1]]
    else:
        order = [*jokers, *spades]
    gone = {card for card in rules.deck_remove if rules.deck_remove.count(card) >= rules.decks}
    return tuple(card for card in order if card not in gone)


class Table:
    """Seats, units and the ranked pack of one rule set. Build it with :func:`table_for`."""

    __slots__ = (
        "copies",
        "follow_rank",
        "hand_size",
        "pack",
        "pack_mask",
        "players",
        "power",
        "rules",
        "suit_mask",
        "suit_of",
        "trump_order",
        "unit_of",
        "units",
    )

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.players = rules.players
        if rules.partnerships:  # partners face each other: seat and seat + half the table
            half = rules.players // 2
            self.units: tuple[tuple[Seat, ...], ...] = tuple(
                (seat, seat + half) for seat in range(half)
            )
        else:
            self.units = tuple((seat,) for seat in range(rules.players))
        self.unit_of: tuple[Unit, ...] = tuple(
            next(u for u, seats in enumerate(self.units) if seat in seats)
            for seat in range(rules.players)
        )
        copies = [0 if card.is_joker and not rules.jokers else rules.decks for card in CARDS]
        for card in rules.deck_remove:
            copies[card.ordinal] -= 1
        self.copies: tuple[int, ...] = tuple(copies)
        """How many copies of each card (by ordinal) the pack holds: 0, 1, or 2 with two decks."""
        self.pack: tuple[Card, ...] = tuple(
            card for card in CARDS for _ in range(copies[card.ordinal])
        )
        """Every card of the pack in canonical order, each as often as the pack holds it."""
        self.pack_mask: CardSet = sum(card.bit for card in CARDS if copies[card.ordinal])
        self.hand_size = rules.tricks_per_hand
        self.trump_order = trump_order(rules)
        # suit_of: the suit a card counts as for following and leading (trumps are 3).
        # power: how high it ranks within that suit; a trump beats any other suit anyway.
        suit_of = [-1] * len(CARDS)
        power = [0] * len(CARDS)
        for card in set(self.pack):
            suit_of[card.ordinal] = SPADES if card.is_joker else printed_suit(card)
            power[card.ordinal] = rank_value(card)
        for depth, card in enumerate(self.trump_order):
            suit_of[card.ordinal] = TRUMP
            power[card.ordinal] = 100 - depth
        self.suit_of: tuple[int, ...] = tuple(suit_of)
        self.power: tuple[int, ...] = tuple(power)
        masks = [0, 0, 0, 0]
        for card in self.pack:
            masks[suit_of[card.ordinal]] |= card.bit
        self.suit_mask: tuple[CardSet, ...] = tuple(masks)
        # follow_rank[led][card]: how high a card ranks in a trick led in suit ``led``: its power
        # in the suit led, a trump above every card of another suit (powers of 84 and up, the
        # others' 16 at most), and any other card below the card led.
        self.follow_rank: tuple[tuple[int, ...], ...] = tuple(
            tuple(
                power[card]
                if suit_of[card] == led
                else 1000 + power[card]
                if suit_of[card] == TRUMP
                else -1
                for card in range(len(CARDS))
            )
            for led in range(4)
        )

    def partner_of(self, seat: Seat) -> Seat | None:
        """The partner's seat, facing this one (seat + 2 of four, seat + 3 of six) in a
        partnership game; else None."""
        if not self.rules.partnerships:
            return None
        return (seat + self.players // 2) % self.players

    def beats(self, card: int, winning: int) -> bool:
        """Whether ``card``, played to a trick, takes it from ``winning``, the card winning it
        so far: a higher card of the same suit, a trump on another suit, or (two decks) a copy
        of the same card, since of identical cards the one played later wins (``002``)."""
        suit_of = self.suit_of
        if suit_of[card] == suit_of[winning]:
            # Cards of one suit rank apart, so >= is "higher, or the same card again".
            return self.power[card] >= self.power[winning]
        return suit_of[card] == TRUMP

    def winning_position(self, trick: tuple[int, ...]) -> int:
        """The position, in play order, of the card winning a trick of card indexes so far:
        each card that :meth:`beats` the one winning before it takes the lead, which is the card
        ranking highest by :attr:`follow_rank` for the suit led (of equal ranks, two copies of
        one card, the later; written out here, as this runs for every trick)."""
        rank = self.follow_rank[self.suit_of[trick[0]]]
        win = 0
        top = rank[trick[0]]
        for position in range(1, len(trick)):
            card_rank = rank[trick[position]]
            if card_rank >= top:
                win, top = position, card_rank
        return win

    def trick_winner(self, leader: Seat, trick: tuple[int, ...]) -> Seat:
        """The seat that wins a finished trick of card indexes led by ``leader``."""
        return (leader + self.winning_position(trick)) % self.players


@cache
def table_for(rules: Rules) -> Table:
    """The table of a rule set (rule sets are values, so each is worked out once)."""
    return Table(rules)
