"""Cards: rank + suit, written the way FORMAT.md writes them.

A card is a value that round-trips to text::

    >>> Card.parse("10H")
    <Card.TEN_OF_HEARTS: 'TH'>
    >>> str(Card.parse("10H"))
    'TH'
    >>> Card.parse("bj") is Card.BIG_JOKER
    True

Every card also has a small integer ``ordinal`` (0..53) and a ``bit`` (``1 << ordinal``); the
engine keeps hands as bit sets of those, which is what makes legality checks cheap.
"""

from __future__ import annotations

from enum import StrEnum

from domain.errors import RuleViolation

RANKS = "23456789TJQKA"
SUITS = "CDHS"
RANK_NAMES = {
    "2": "TWO",
    "3": "THREE",
    "4": "FOUR",
    "5": "FIVE",
    "6": "SIX",
    "7": "SEVEN",
    "8": "EIGHT",
    "9": "NINE",
    "T": "TEN",
    "J": "JACK",
    "Q": "QUEEN",
    "K": "KING",
    "A": "ACE",
}
SUIT_NAMES = {"C": "CLUBS", "D": "DIAMONDS", "H": "HEARTS", "S": "SPADES"}

CLUBS, DIAMONDS, HEARTS, SPADES = 0, 1, 2, 3
BIG_JOKER_INDEX = 52
LITTLE_JOKER_INDEX = 53


class Card(StrEnum):
    """One card of the pack. Its value is its text: ``"QH"``, ``"TS"``, ``"BJ"``, ``"LJ"``."""

    _ignore_ = "_members _suit _rank"
    _members = vars()
    for _suit in SUITS:
        for _rank in RANKS:
            _members[f"{RANK_NAMES[_rank]}_OF_{SUIT_NAMES[_suit]}"] = _rank + _suit
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


def cards_in(mask: int) -> list[Card]:
    """The cards of a bit set, in canonical order."""
    out = []
    while mask:
        low = mask & -mask
        out.append(CARDS[low.bit_length() - 1])
        mask ^= low
    return out


def mask_of(cards: tuple[Card, ...] | list[Card]) -> int:
    """The bit set of some cards."""
    mask = 0
    for card in cards:
        mask |= card.bit
    return mask


def rank_value(card: Card) -> int:
    """2..14 for the printed ranks (ace high); jokers 16 (big) and 15 (little)."""
    if card.ordinal >= BIG_JOKER_INDEX:
        return 16 if card.ordinal == BIG_JOKER_INDEX else 15
    return card.ordinal % 13 + 2


def printed_suit(card: Card) -> int:
    """The printed suit (0..3) of a non-joker card."""
    return card.ordinal // 13
