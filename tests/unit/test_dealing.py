"""Provably fair dealing (domain/shuffle.py): the shuffle, its commitment, the deal and the cut.

The known-answer check re-implements the algorithm of the module's docstring here, as plainly as
it is written there, with the standard library's ``hmac``."""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterator, Sequence

import pytest

from domain.cards import CARDS, Card
from domain.commands import CreateGame, TakeSeat
from domain.deal_phase import entropies_of
from domain.events import HandDealt
from domain.game import decide, fold
from domain.rules import resolve_rules
from domain.shuffle import (
    SeededDeal,
    _Stream,
    _swaps_from,
    commitment,
    cut_for_dealer,
    deal_out,
    entropy_bytes,
    entropy_mix,
    shuffle,
    table_entropies,
)
from domain.state import Game
from domain.table import table_for

PACK = tuple(card for card in CARDS if not card.is_joker)


def reference_shuffle(
    seed: bytes, entropies: Sequence[bytes], hand: int, pack: Sequence[Card]
) -> list[Card]:
    """Steps 1 to 3 of domain/shuffle.py's docstring, written out independently."""
    material = b"spades/deal/v1" + struct.pack(">I", hand)
    for entropy in entropies:
        material += struct.pack(">I", len(entropy)) + entropy
    mix = hashlib.sha256(material).digest()

    def words() -> Iterator[int]:
        k = 0
        while True:
            block = hmac.digest(seed, mix + struct.pack(">Q", k), "sha256")
            for offset in range(0, len(block), 4):
                yield int.from_bytes(block[offset : offset + 4], "big")
            k += 1

    stream = words()
    deck = list(pack)
    for i in range(len(deck) - 1, 0, -1):
        limit = 2**32 - 2**32 % (i + 1)
        word = next(stream)
        while word >= limit:
            word = next(stream)
        j = word % (i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def test_the_reference_shuffle_is_pinned() -> None:
    """A vector of the reference itself, so that it cannot drift along with the engine."""
    deck = reference_shuffle(b"seed", [b"table"], 1, PACK)
    assert [str(card) for card in deck[:8]] == PINNED


PINNED = ["8S", "5H", "AH", "6C", "9D", "QD", "5C", "2S"]


@pytest.mark.parametrize(
    ("seed", "entropies", "hand", "pack_rules"),
    [
        (b"seed", [b"table"], 1, {"preset": "partnership"}),
        (b"seed", [b"table"], 2, {"preset": "partnership"}),
        (b"", [], 1, {"preset": "partnership"}),
        (b"\x00" * 32, [b"", b"\x01", b"\x02\x03", b"", b"z" * 40], 7, {"preset": "solo"}),
        (b"k" * 100, [b"long key"], 3, {"preset": "cutthroat"}),
        (b"jokers", [b"a", b"b"], 12, {"preset": "jokers-54"}),
        (b"six", [b"a"] * 7, 2, {"preset": "six-player"}),
        (b"two", [b"x", b"y", b"z"], 1, {"preset": "two-player"}),
    ],
)
def test_shuffle_matches_an_independent_implementation(
    seed: bytes, entropies: list[bytes], hand: int, pack_rules: dict[str, object]
) -> None:
    pack = table_for(resolve_rules(pack_rules)).pack
    assert list(shuffle(seed, entropies, hand, pack)) == reference_shuffle(
        seed, entropies, hand, pack
    )


def test_the_swaps_draw_more_of_the_stream_wherever_its_words_run_out() -> None:
    # a shuffle takes a deck's words at once, with a few to spare for rejected ones; had
    # rejections spent those, a swap's first word would have been read past the end
    seed, entropies = b"seed", [b"table"]
    deck = list(PACK)
    stream = _Stream(seed, entropy_mix(1, entropies))
    _swaps_from(deck, len(deck) - 1, 0, stream.words(0, 1), stream, 1)  # 8 words for 51 swaps
    assert deck == reference_shuffle(seed, entropies, 1, PACK)


def test_shuffle_is_deterministic_and_a_permutation() -> None:
    one = shuffle(b"seed", [b"table", b"p1"], 1, PACK)
    two = shuffle(b"seed", [b"table", b"p1"], 1, PACK)
    assert one == two
    assert sorted(card.ordinal for card in one) == list(range(52))
    assert one != PACK


def test_shuffle_differs_with_the_seed_the_entropy_and_the_hand() -> None:
    base = shuffle(b"seed", [b"table", b"p1"], 1, PACK)
    assert shuffle(b"seee", [b"table", b"p1"], 1, PACK) != base
    assert shuffle(b"seed", [b"table", b"p2"], 1, PACK) != base
    assert shuffle(b"seed", [b"table", b"p1", b""], 1, PACK) != base
    assert shuffle(b"seed", [b"tablep1"], 1, PACK) != base
    assert shuffle(b"seed", [b"table", b"p1"], 2, PACK) != base


def test_shuffle_of_a_smaller_pack_keeps_its_cards() -> None:
    pack = table_for(resolve_rules({"preset": "cutthroat"})).pack
    deck = shuffle(b"s", [b"e"], 1, pack)
    assert sorted(deck) == sorted(pack)
    assert Card.parse("2C") not in deck
    assert len(deck) == 51


def test_commitment_is_sha256_of_the_seed() -> None:
    assert commitment(b"seed") == hashlib.sha256(b"seed").hexdigest()
    assert commitment(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert commitment(b"a") != commitment(b"b")


def test_deal_out_one_card_at_a_time_from_the_left_of_the_dealer() -> None:
    deck = PACK
    hands = deal_out(deck, 4, 1, 13)
    assert hands[2] == tuple(deck[0::4])
    assert hands[3] == tuple(deck[1::4])
    assert hands[0] == tuple(deck[2::4])
    assert hands[1] == tuple(deck[3::4])
    assert str(hands[2][0]) == "2C"
    assert str(hands[1][-1]) == "AS"


def test_deal_out_dealer_3_starts_at_seat_0() -> None:
    hands = deal_out(PACK, 4, 3, 13)
    assert [str(card) for card in hands[0][:3]] == ["2C", "6C", "TC"]
    assert [str(card) for card in hands[3][:2]] == ["5C", "9C"]


def test_deal_out_leaves_the_cards_out_of_play_undealt() -> None:
    hands = deal_out(PACK, 3, 0, 17)
    assert [len(hand) for hand in hands] == [17, 17, 17]
    dealt = {card for hand in hands for card in hand}
    assert set(PACK) - dealt == {PACK[-1]}
    assert hands[1][0] == PACK[0]
    assert hands[2][0] == PACK[1]
    assert hands[0][0] == PACK[2]


def _cards(texts: str) -> list[Card]:
    return [Card.parse(text) for text in texts.split()]


@pytest.mark.parametrize(
    ("deck", "players", "dealer"),
    [
        ("AS AH KS 2C", 4, 0),
        ("2C 3C AH 4C", 4, 2),
        ("AS LJ BJ 2C", 4, 2),
        ("AS LJ 2C 3C", 4, 1),
        ("AC AD AH 2S", 4, 2),
        ("KD KC KH", 3, 2),
        ("2D 2C", 2, 0),
        ("QS QH KD", 3, 2),
    ],
)
def test_cut_for_dealer_highest_card_deals_ties_by_suit(
    deck: str, players: int, dealer: int
) -> None:
    assert cut_for_dealer(_cards(deck), players) == dealer


def _seated(rules: dict[str, object], dealer: int | None, seed: bytes) -> tuple[Game, HandDealt]:
    state = fold(decide(None, CreateGame("g", rules, dealer=dealer, entropy="aa")))
    assert state is not None
    players = state.rules.players
    for seat in range(players):
        deal = SeededDeal(seed) if seat == players - 1 else None
        events = decide(state, TakeSeat(f"p{seat}", seat, entropy=f"{seat + 1:02x}"), deal=deal)
        state = fold(events, state)
    assert state is not None
    dealt = [event for event in events if isinstance(event, HandDealt)]
    assert len(dealt) == 1
    return state, dealt[0]


def test_a_seeded_deal_through_the_game_is_the_documented_shuffle() -> None:
    state, dealt = _seated({"preset": "partnership"}, 2, b"secret")
    entropies = [b"\xaa", b"\x01", b"\x02", b"\x03", b"\x04"]
    deck = reference_shuffle(b"secret", entropies, 1, PACK)
    assert dealt.deck is not None
    assert list(dealt.deck) == deck
    assert dealt.commitment == hashlib.sha256(b"secret").hexdigest()
    assert dealt.seed == b"secret".hex()
    assert dealt.dealer == 2
    assert dealt.hands == deal_out(deck, 4, 2, 13)
    assert state.hand is not None
    assert state.hand.commitment == dealt.commitment


def test_without_a_dealer_the_cut_of_the_first_deck_chooses_one() -> None:
    for seed in (b"a", b"b", b"c", b"d", b"e"):
        _, dealt = _seated({"preset": "cutthroat"}, None, seed)
        assert dealt.deck is not None
        assert dealt.dealer == cut_for_dealer(dealt.deck, 3)
        assert dealt.hands == deal_out(dealt.deck, 3, dealt.dealer, 17)


def test_the_shuffle_takes_the_games_entropy_then_each_seats_an_empty_seat_as_nothing() -> None:
    assert table_entropies("aa", ["01", None, "0203"]) == ["aa", "01", "", "0203"]
    assert entropy_bytes(["aa", "", "0203"]) == [b"\xaa", b"", b"\x02\x03"]
    with pytest.raises(ValueError, match="non-hexadecimal"):
        entropy_bytes(["zz"])


def test_a_games_entropies_are_read_from_its_state_as_the_deal_mixes_them() -> None:
    state, dealt = _seated({"preset": "partnership"}, 2, b"secret")
    assert entropies_of(state) == ["aa", "01", "02", "03", "04"]
    assert dealt.deck is not None
    assert tuple(dealt.deck) == shuffle(b"secret", entropy_bytes(entropies_of(state)), 1, PACK)
