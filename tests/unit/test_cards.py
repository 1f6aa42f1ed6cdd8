"""Cards as docs/rules.md writes them: rank + suit, ``T`` for ten (``10`` too), ``BJ``/``LJ``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cards import CARDS, Card, cards_in, rank_value, set_of
from domain.errors import RuleViolation


def test_ten_is_read_as_10_and_written_as_t() -> None:
    card = Card.parse("10H")
    assert card is Card.TEN_OF_HEARTS
    assert str(card) == "TH"
    assert card.value == "TH"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("th", "TH"),
        ("10h", "TH"),
        ("10S", "TS"),
        ("as", "AS"),
        ("2c", "2C"),
        ("qD", "QD"),
        ("bj", "BJ"),
        ("Lj", "LJ"),
    ],
)
def test_either_case_is_accepted(text: str, expected: str) -> None:
    assert str(Card.parse(text)) == expected


def test_every_card_round_trips_through_its_text() -> None:
    for card in CARDS:
        assert Card.parse(str(card)) is card
        assert Card.parse(str(card).lower()) is card


@pytest.mark.parametrize("text", ["ZZ", "", "1H", "11H", "AX", "A", "TEN", "HT", "10", "BJJ"])
def test_not_a_card_is_malformed(text: str) -> None:
    with pytest.raises(RuleViolation) as raised:
        Card.parse(text)
    assert raised.value.code == "malformed"
    assert repr(text) in raised.value.detail


@pytest.mark.parametrize("value", [12, None, ["AS"], b"AS"])
def test_not_a_string_is_malformed(value: Any) -> None:
    with pytest.raises(RuleViolation) as raised:
        Card.parse(value)
    assert raised.value.code == "malformed"


def test_the_pack_has_52_cards_and_two_jokers_in_canonical_order() -> None:
    assert len(CARDS) == 54
    assert len({str(card) for card in CARDS}) == 54
    assert [str(card) for card in CARDS[:13]] == [r + "C" for r in "23456789TJQKA"]
    assert [str(card) for card in CARDS[13:26]] == [r + "D" for r in "23456789TJQKA"]
    assert [str(card) for card in CARDS[26:39]] == [r + "H" for r in "23456789TJQKA"]
    assert [str(card) for card in CARDS[39:52]] == [r + "S" for r in "23456789TJQKA"]
    assert [str(card) for card in CARDS[52:]] == ["BJ", "LJ"]
    for index, card in enumerate(CARDS):
        assert card.ordinal == index
        assert card.bit == 1 << index


def test_rank_suit_and_jokers() -> None:
    queen = Card.parse("QH")
    assert (queen.rank, queen.suit, queen.is_joker) == ("Q", "H", False)
    big = Card.parse("BJ")
    assert (big.rank, big.suit, big.is_joker) == ("", "", True)
    assert rank_value(Card.parse("2S")) == 2
    assert rank_value(Card.parse("TS")) == 10
    assert rank_value(Card.parse("AS")) == 14
    assert rank_value(Card.parse("LJ")) == 15
    assert rank_value(Card.parse("BJ")) == 16


def test_bit_sets_round_trip_in_canonical_order() -> None:
    cards = [Card.parse(text) for text in ["LJ", "AS", "2C", "TH", "3D"]]
    mask = set_of(cards)
    assert mask.bit_count() == 5
    assert [str(card) for card in cards_in(mask)] == ["2C", "3D", "TH", "AS", "LJ"]
    assert cards_in(0) == []
    assert cards_in(set_of(list(CARDS))) == list(CARDS)


@given(st.integers(min_value=0, max_value=(1 << len(CARDS)) - 1))
def test_a_set_lists_exactly_its_cards_in_canonical_order_asked_once_or_again(mask: int) -> None:
    expected = [card for card in CARDS if mask & card.bit]
    assert cards_in(mask) == expected
    assert cards_in(mask) == expected  # the suits now known
    assert set_of(cards_in(mask)) == mask
