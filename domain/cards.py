"""Cards: rank + suit, written the way docs/rules.md writes them.

A card is a value that round-trips to text::

    >>> Card.parse("10H")
    <Card.TEN_OF_HEARTS: 'TH'>
    >>> str(Card.parse("10H"))
    'TH'
    >>> Card.parse("bj") is Card.BIG_JOKER
    True

Every card also has a small integer ``ordinal`` (0..53) and a ``bit`` (``1 << ordinal``); the
engine keeps hands as :data:`CardSet` bit sets of those, which is what makes legality checks
cheap. A set is read with :func:`iter_cards` (ordinals, lowest first) and :func:`lowest`::

    >>> spades = set_of([Card.parse("AS"), Card.parse("2S")])
    >>> [CARDS[ordinal].value for ordinal in iter_cards(spades)], CARDS[lowest(spades)].value
    (['2S', 'AS'], '2S')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import TypeAlias

from domain.errors import RuleViolation

RANKS = "23456789TJQKA"
SUITS = "CDHS"
CLUBS, DIAMONDS, HEARTS, SPADES = 0, 1, 2, 3
BIG_JOKER_INDEX = 52
LITTLE_JOKER_INDEX = 53

CardSet: TypeAlias = int
"""A set of cards: bit ``i`` is set when the card of ordinal ``i`` is in it."""


class Card(StrEnum):
    """One card of the pack. Its value is its text: ``"QH"``, ``"TS"``, ``"BJ"``, ``"LJ"``."""

    TWO_OF_CLUBS = "2C"
    THREE_OF_CLUBS = "3C"
    FOUR_OF_CLUBS = "4C"
    FIVE_OF_CLUBS = "5C"
    SIX_OF_CLUBS = "6C"
    SEVEN_OF_CLUBS = "7C"
    EIGHT_OF_CLUBS = "8C"
    NINE_OF_CLUBS = "9C"
    TEN_OF_CLUBS = "TC"
    JACK_OF_CLUBS = "JC"
    QUEEN_OF_CLUBS = "QC"
    KING_OF_CLUBS = "KC"
    ACE_OF_CLUBS = "AC"
    TWO_OF_DIAMONDS = "2D"
    THREE_OF_DIAMONDS = "3D"
    FOUR_OF_DIAMONDS = "4D"
    FIVE_OF_DIAMONDS = "5D"
    SIX_OF_DIAMONDS = "6D"
    SEVEN_OF_DIAMONDS = "7D"
    EIGHT_OF_DIAMONDS = "8D"
    NINE_OF_DIAMONDS = "9D"
    TEN_OF_DIAMONDS = "TD"
    JACK_OF_DIAMONDS = "JD"
    QUEEN_OF_DIAMONDS = "QD"
    KING_OF_DIAMONDS = "KD"
    ACE_OF_DIAMONDS = "AD"
    TWO_OF_HEARTS = "2H"
    THREE_OF_HEARTS = "3H"
    FOUR_OF_HEARTS = "4H"
    FIVE_OF_HEARTS = "5H"
    SIX_OF_HEARTS = "6H"
    SEVEN_OF_HEARTS = "7H"
    EIGHT_OF_HEARTS = "8H"
    NINE_OF_HEARTS = "9H"
    TEN_OF_HEARTS = "TH"
    JACK_OF_HEARTS = "JH"
    QUEEN_OF_HEARTS = "QH"
    KING_OF_HEARTS = "KH"
    ACE_OF_HEARTS = "AH"
    TWO_OF_SPADES = "2S"
    THREE_OF_SPADES = "3S"
    FOUR_OF_SPADES = "4S"
    FIVE_OF_SPADES = "5S"
    SIX_OF_SPADES = "6S"
    SEVEN_OF_SPADES = "7S"
    EIGHT_OF_SPADES = "8S"
    NINE_OF_SPADES = "9S"
    TEN_OF_SPADES = "TS"
    JACK_OF_SPADES = "JS"
    QUEEN_OF_SPADES = "QS"
    KING_OF_SPADES = "KS"
    ACE_OF_SPADES = "AS"
    BIG_JOKER = "BJ"
    LITTLE_JOKER = "LJ"

    ordinal: int
    bit: int

    @classmethod
    def parse(cls, text: str) -> Card:
        """Read a card from text, accepting ``10`` for ``T`` and either case.

        Raises ``RuleViolation("malformed")`` naming the text when it is not a card.
        """
        card = _BY_TEXT.get(text) if isinstance(text, str) else None
        if card is None and isinstance(text, str):
            card = _BY_TEXT.get(text.strip().upper())
        if card is None:
            raise RuleViolation("malformed", f"{text!r} is not a card")
        return card

    @property
    def rank(self) -> str:
        """The rank letter, ``"2"``..``"A"``; jokers have none (``""``)."""
        return "" if self.ordinal >= BIG_JOKER_INDEX else self.value[0]

    @property
    def suit(self) -> str:
        """The printed suit letter; jokers have none (``""``)."""
        return "" if self.ordinal >= BIG_JOKER_INDEX else self.value[1]

    @property
    def is_joker(self) -> bool:
        return self.ordinal >= BIG_JOKER_INDEX


CARDS: tuple[Card, ...] = tuple(Card)
"""Every card in canonical order: clubs, diamonds, hearts, spades (2 up to A), BJ, LJ."""

for _i, _card in enumerate(CARDS):
    _card.ordinal = _i
    _card.bit = 1 << _i

_BY_TEXT: dict[str, Card] = {card.value: card for card in CARDS}
for _card in CARDS:
    if _card.value[0] == "T":
        _BY_TEXT["10" + _card.value[1]] = _card


def card_at(index: int) -> Card:
    """The card with this index."""
    return CARDS[index]


def lowest(cards: CardSet) -> int:
    """The ordinal of the lowest card of a non-empty set."""
    return (cards & -cards).bit_length() - 1


def iter_cards(cards: CardSet) -> Iterator[int]:
    """The ordinals of a set's cards, lowest first."""
    while cards:
        low = cards & -cards
        yield low.bit_length() - 1
        cards ^= low


SUIT_BITS = tuple(tuple(bit for bit in range(13) if chunk >> bit & 1) for chunk in range(1 << 13))
"""The set bits of every 13-bit number: the cards of one suit's 13 bits of a card set."""

SUIT_CHUNKS = tuple(0x1FFF << shift for shift in range(0, 53, 13))
"""The bits of each suit's 13 ordinals in a card set, the jokers' last: a set is read a suit
at a time, as a seat's cards are listed at every look and every view."""
_C0, _C1, _C2, _C3, _C4 = SUIT_CHUNKS

_IN_SUIT: dict[CardSet, tuple[Card, ...]] = {0: ()}
"""The cards of each set within one suit's bits (:data:`SUIT_CHUNKS`) met so far: at most
8,192 a suit."""


def cards_in(cards: CardSet) -> list[Card]:
    """The cards of a set, in canonical order: read a suit at a time (:data:`SUIT_CHUNKS`)."""
    known = _IN_SUIT
    try:
        return [
            *known[cards & _C0],
            *known[cards & _C1],
            *known[cards & _C2],
            *known[cards & _C3],
            *known[cards & _C4],
        ]
    except KeyError:  # a suit's cards not met before: read it from its bits, and keep it
        out: list[Card] = []
        for shift in range(0, 53, 13):
            suit = cards & 0x1FFF << shift
            found = known.get(suit)
            if found is None:
                bits = SUIT_BITS[suit >> shift]
                found = known[suit] = tuple([CARDS[shift + bit] for bit in bits])
            out += found
        return out


def set_of(cards: Iterable[Card]) -> CardSet:
    """The set of some cards."""
    found = 0
    for card in cards:
        found |= card.bit
    return found


def rank_value(card: Card) -> int:
    """2..14 for the printed ranks (ace high); jokers 16 (big) and 15 (little)."""
    if card.ordinal >= BIG_JOKER_INDEX:
        return 16 if card.ordinal == BIG_JOKER_INDEX else 15
    return card.ordinal % 13 + 2


def printed_suit(card: Card) -> int:
    """The printed suit (0..3) of a non-joker card."""
    return card.ordinal // 13
