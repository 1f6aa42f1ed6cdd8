"""Seed 002's variations in the domain (docs/rules.md): two decks and six players, the dealer's
discard, blind bids, blind Boston and a first hand without bidding; what each seat sees of
them, and the records and score lines they leave."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import pytest

from domain.bids import read_bid
from domain.cards import Card
from domain.commands import (
    CreateGame,
    DealHand,
    DiscardCards,
    LookAtHand,
    PlaceBid,
    PlayCard,
    TakeSeat,
    Unreadable,
    from_api,
    from_scenario,
    to_api,
)
from domain.errors import RuleViolation
from domain.events import AnyEvent, BidPlaced, CardsDiscarded, HandDealt, HandLooked
from domain.game import DiscardDue, decide, fold, legal_actions
from domain.records import hand_records
from domain.rules import resolve_rules
from domain.scoring import score_hand
from domain.shuffle import DealtHands, SeededDeal, deal_out
from domain.state import Game, cards_held, count_held
from domain.table import table_for
from domain.views import PUBLIC, LegalPlay, event_for, public_view, seat_view


def cs(texts: str) -> tuple[Card, ...]:
    return tuple(Card.parse(text) for text in texts.split())


class Table:
    """A game driven command by command, keeping every event."""

    def __init__(self, rules: dict[str, Any], dealer: int = 0, seed: bytes | None = None) -> None:
        self.events: list[AnyEvent] = []
        self.state: Game | None = None
        self.send(CreateGame("g", rules, dealer=dealer))
        deal = SeededDeal(seed) if seed is not None else None
        for seat in range(self.game.rules.players):
            self.send(TakeSeat(f"p{seat}", seat), deal)

    @property
    def game(self) -> Game:
        assert self.state is not None
        return self.state

    def send(self, command: Any, deal: SeededDeal | None = None) -> list[AnyEvent]:
        events = decide(self.state, command, deal=deal)
        self.state = fold(events, self.state)
        self.events.extend(events)
        return events

    def deal(self, hands: list[str]) -> list[AnyEvent]:
        return self.send(DealHand(DealtHands(tuple(cs(hand) for hand in hands))))

    def refusal(self, command: Any) -> str:
        with pytest.raises(RuleViolation) as raised:
            decide(self.game, command)
        return raised.value.code


def play_out(table: Table) -> None:
    """Play the hand to its end with each seat's first legal action (a discard: its first
    cards), the game kept going by fresh seeds."""
    number = table.game.hands_played
    while table.game.hands_played == number:
        hand = table.game.hand
        assert hand is not None
        seat = (
            hand.turn
            if hand.phase != "pass"
            else next(s for s in range(table.game.rules.players) if hand.passes_due >> s & 1)
        )
        action: Any = next(
            a for a in legal_actions(table.game, seat) if not isinstance(a, LookAtHand)
        )
        if isinstance(action, DiscardDue):
            action = action.choose(tuple(cards_held(hand, seat)[: action.count]))
        table.send(action, SeededDeal(b"next"))


# --------------------------------------------------------------------------- two decks


SIX = [
    "AS AS KS KS QS QS JS JS TS TS 9S 9S 8S 8S 7S 7S 6S",
    "6S 5S 5S 4S 4S 3S 3S 2S 2S AH AH KH KH QH QH JH JH",
    "TH TH 9H 9H 8H 8H 7H 7H 6H 6H 5H 5H 4H 4H 3H 3H 2H",
    "2H AD AD KD KD QD QD JD JD TD TD 9D 9D 8D 8D 7D 7D",
    "6D 6D 5D 5D 4D 4D 3D 3D 2D 2D AC AC KC KC QC QC JC",
    "JC TC TC 9C 9C 8C 8C 7C 7C 6C 6C 5C 5C 4C 4C 3C 3C",
]


def test_six_players_are_three_teams_of_partners_facing_each_other() -> None:
    table = table_for(resolve_rules({"preset": "six-player"}))
    assert table.units == ((0, 3), (1, 4), (2, 5))
    assert [table.partner_of(seat) for seat in range(6)] == [3, 4, 5, 0, 1, 2]
    assert table.hand_size == 17


def test_the_two_deck_pack_holds_every_card_twice_but_the_two_deuces_of_clubs() -> None:
    table = table_for(resolve_rules({"preset": "six-player"}))
    counts = Counter(str(card) for card in table.pack)
    assert len(table.pack) == 102
    assert counts["2C"] == 0
    assert set(counts.values()) == {2}
    assert table.copies[Card.parse("AS").ordinal] == 2


def test_a_seeded_six_player_deal_gives_17_each_and_every_copy_once() -> None:
    table = Table({"preset": "six-player"}, seed=b"six")
    dealt = next(event for event in table.events if isinstance(event, HandDealt))
    assert [len(hand) for hand in dealt.hands] == [17] * 6
    assert Counter(card for hand in dealt.hands for card in hand) == Counter(
        table_for(table.game.rules).pack
    )
    hand = table.game.hand
    assert hand is not None
    assert [count_held(hand, seat) for seat in range(6)] == [17] * 6


def test_a_seat_holding_both_copies_plays_one_and_keeps_the_other() -> None:
    table = Table({"preset": "six-player"}, dealer=5)
    table.deal(SIX)
    for seat in range(6):
        table.send(PlaceBid(seat, 2))
    table.send(PlayCard(0, Card.parse("6S")))  # spades are not broken, but seat 0 holds only them
    hand = table.game.hand
    assert hand is not None
    assert Counter(map(str, cards_held(hand, 0)))["AS"] == 2
    table.send(PlayCard(1, Card.parse("6S")))
    for seat, card in [(2, "2H"), (3, "2H"), (4, "2D"), (5, "3C")]:
        table.send(PlayCard(seat, Card.parse(card)))
    hand = table.game.hand
    assert hand is not None
    assert hand.won == (0, 1, 0, 0, 0, 0)  # of the two 6S, the later (seat 1) wins
    table.send(PlayCard(1, Card.parse("AH")))
    hand = table.game.hand
    assert hand is not None
    assert Counter(map(str, cards_held(hand, 1)))["AH"] == 1
    view = seat_view(table.game, 1)
    assert view.hand is not None
    assert [str(card) for card in view.hand].count("AH") == 1
    assert LegalPlay(Card.parse("AH")) not in view.legal  # not this seat's turn now


def test_each_of_six_seats_sees_its_own_17_cards_and_no_other() -> None:
    table = Table({"preset": "six-player"}, dealer=5)
    table.deal(SIX)
    for seat in range(6):
        table.send(LookAtHand(seat))
    for seat in range(6):
        view = seat_view(table.game, seat)
        assert view.hand is not None
        assert Counter(map(str, view.hand)) == Counter(SIX[seat].split())
        assert len(view.hand) == 17
    assert public_view(table.game).units == [[0, 3], [1, 4], [2, 5]]


# --------------------------------------------------------------------------- the dealer's discard

JOKERS_54 = [
    "AS KS QS JS AH KH QH AD KD QD AC KC QC",
    "TS 9S 8S JH TH 9H 8H JD TD 9D JC TC 9C",
    "7S 6S 5S 7H 6H 5H 8D 7D 6D 5D 8C 7C 6C",
    "4S 3S 2S 4H 3H 2H 4D 3D 2D 5C 4C 3C 2C BJ LJ",
]


def test_a_deck_deals_13_each_then_the_dealer_takes_the_next_two() -> None:
    deck = cs(" ".join(JOKERS_54[0].split() + JOKERS_54[1].split()))
    deck = deck + cs(" ".join(JOKERS_54[2].split() + JOKERS_54[3].split()))
    hands = deal_out(deck, 4, 1, 13, dealer_takes=2)
    assert [len(hand) for hand in hands] == [13, 15, 13, 13]
    assert hands[1][-2:] == deck[52:54]
    assert hands[2][:2] == (deck[0], deck[4])


def test_the_dealer_discards_then_the_bidding_starts_left_of_the_dealer() -> None:
    table = Table({"preset": "jokers-54"}, dealer=3)
    table.deal(JOKERS_54)
    hand = table.game.hand
    assert hand is not None
    assert (hand.phase, hand.turn) == ("discard", 3)
    assert legal_actions(table.game, 3) == [LookAtHand(3), DiscardDue(3, 2)]
    assert legal_actions(table.game, 0) == [LookAtHand(0)]
    events = table.send(DiscardCards(3, cs("2C 3C")))
    assert [type(event) for event in events] == [HandLooked, CardsDiscarded]
    hand = table.game.hand
    assert hand is not None
    assert (hand.phase, hand.turn) == ("bid", 0)
    assert count_held(hand, 3) == 13
    assert table.refusal(PlaceBid(3, "blind_nil")) == "not_your_turn"


def test_the_dealer_s_discard_is_seen_by_the_dealer_alone() -> None:
    table = Table({"preset": "jokers-54"}, dealer=3)
    table.deal(JOKERS_54)
    events = table.send(DiscardCards(3, cs("BJ LJ")))
    discarded = events[-1]
    assert isinstance(discarded, CardsDiscarded)
    assert event_for(discarded, 3) == discarded
    for reader in (PUBLIC, 0, 1, 2):
        seen = event_for(discarded, reader)
        assert isinstance(seen, CardsDiscarded)
        assert seen.cards is None
    public = msgspec.json.encode(public_view(table.game))
    assert b"BJ" not in public
    assert b"LJ" not in public
    for seat in (0, 1, 2):
        assert b'"BJ"' not in msgspec.json.encode(seat_view(table.game, seat))


def test_discarded_cards_are_out_of_play_and_in_the_hand_record() -> None:
    table = Table({"preset": "jokers-54", "max_hands": 1}, dealer=3)
    table.deal(JOKERS_54)
    table.send(DiscardCards(3, cs("BJ LJ")))
    for seat in (0, 1, 2, 3):
        table.send(PlaceBid(seat, 3))
    play_out(table)
    (record,) = hand_records(table.events)
    assert [(d.seat, [str(c) for c in d.cards]) for d in record.discards] == [(3, ["BJ", "LJ"])]
    assert len(record.deal.hands[3]) == 15
    played = [str(p.card) for trick in record.tricks for p in trick.cards]
    assert "BJ" not in played
    assert len(played) == 52


def test_a_discard_names_a_card_twice_to_give_up_both_copies() -> None:
    table = Table({"preset": "six-player", "deck_remove": [], "dealer_discard": 2}, dealer=5)
    table.deal([*SIX[:5], SIX[5] + " 2C 2C"])  # 104 cards: the dealer holds 19
    assert table.refusal(DiscardCards(5, cs("2C 2C 2C"))) == "invalid_discard"
    assert table.refusal(DiscardCards(5, cs("JC JC"))) == "invalid_discard"  # one JC only
    table.send(DiscardCards(5, cs("2C 2C")))
    hand = table.game.hand
    assert hand is not None
    assert "2C" not in {str(card) for card in cards_held(hand, 5)}
    assert count_held(hand, 5) == 17


# --------------------------------------------------------------------------- blind bids


def test_a_blind_bid_is_placed_before_the_seat_picks_its_cards_up() -> None:
    table = Table({"preset": "partnership", "blind_bids": 6}, dealer=3)
    table.deal([*JOKERS_54[:3], JOKERS_54[3].replace(" BJ LJ", "")])
    events = table.send(PlaceBid(0, "blind_7"))
    assert [type(event) for event in events] == [BidPlaced, HandLooked]
    legal = [action for action in legal_actions(table.game, 1) if isinstance(action, PlaceBid)]
    assert PlaceBid(1, "blind_6") in legal
    assert PlaceBid(1, "blind_13") in legal
    assert PlaceBid(1, "blind_5") not in legal
    assert public_view(table.game).bids[0] == "blind_7"


@pytest.mark.parametrize("text", ["blind_06", "blind_", "blind_six", "blind_-1", "blind_6 ", "6"])
def test_a_blind_bid_is_written_in_decimal_without_sign_or_leading_zero(text: str) -> None:
    with pytest.raises(RuleViolation) as raised:
        read_bid(text)
    assert raised.value.code == "malformed"
    assert isinstance(from_api(0, {"type": "bid", "bid": text}), Unreadable)


def test_blind_bids_and_discards_read_from_the_api_and_the_scenario_files() -> None:
    assert from_api(2, {"type": "bid", "bid": "blind_10"}) == PlaceBid(2, "blind_10")
    discard = from_api(3, {"type": "discard", "cards": ["BJ", "10h"]})
    assert discard == DiscardCards(3, cs("BJ TH"))
    assert to_api(discard) == {"type": "discard", "cards": ["BJ", "TH"]}
    assert from_scenario({"seat": 3, "discard": ["2H", "2H"]}) == DiscardCards(3, cs("2H 2H"))
    assert isinstance(from_scenario({"seat": 3, "discard": "2H"}), Unreadable)
    assert isinstance(from_api(3, {"type": "discard", "cards": "2H"}), Unreadable)


# --------------------------------------------------------------------------- scoring lines


def lines_of(rules: dict[str, Any], bids: list[Any], tricks: list[int]) -> list[str]:
    resolved = resolve_rules(rules)
    units = len(table_for(resolved).units)
    result = score_hand(resolved, bids, tricks, scores=[0] * units, bags=[0] * units)
    return [f"{line.unit} {line.rule} {line.points}" for line in result.lines]


def test_a_blind_contract_names_blind_bids_for_the_doubling() -> None:
    lines = lines_of({"blind_bids": 6}, ["blind_6", 3, 2, "nil"], [7, 3, 3, 0])
    assert lines[:3] == ["0 contract 80", "0 blind_bids 80", "0 overtrick_points 2"]


def test_a_set_blind_contract_names_blind_bids_for_the_double_loss() -> None:
    lines = lines_of({"blind_bids": 6}, ["blind_7", 2, 1, 2], [3, 4, 2, 4])
    assert lines[:2] == ["0 failed_bid -80", "0 blind_bids -80"]


def test_a_blind_boston_names_blind_boston() -> None:
    rules = {"blind_bids": 6, "boston": True, "blind_boston": True}
    assert lines_of(rules, ["blind_7", 1, 6, 1], [7, 0, 6, 0])[0] == "0 blind_boston 400"


def test_a_hand_without_bidding_names_first_hand() -> None:
    lines = lines_of({"first_hand": "no_bid"}, [None] * 4, [4, 3, 2, 4])
    assert lines == ["0 first_hand 60", "1 first_hand 70"]


# --------------------------------------------------------------------------- first_hand: no_bid


def test_a_first_hand_without_bidding_opens_with_every_seat_picking_its_cards_up() -> None:
    table = Table({"preset": "partnership", "first_hand": "no_bid"}, dealer=3, seed=b"first")
    assert [type(event).__name__ for event in table.events[-5:]] == [
        "HandDealt",
        *["HandLooked"] * 4,
    ]
    hand = table.game.hand
    assert hand is not None
    assert (hand.phase, hand.turn) == ("play", 0)
    assert table.refusal(PlaceBid(0, 3)) == "wrong_phase"
    play_out(table)
    hand = table.game.hand
    assert hand is not None
    assert (hand.number, hand.phase, hand.turn) == (2, "bid", 1)
    (record,) = hand_records(table.events)
    assert record.bids == [None] * 4
    assert table.game.bags == (0, 0)


def test_a_draw_deal_given_as_hands_has_every_seat_looked_so_no_blind_bid() -> None:
    rules = {"preset": "two-player", "blind_nil": True, "blind_nil_behind": None, "blind_bids": 6}
    table = Table(rules, dealer=0)
    table.deal([JOKERS_54[0], JOKERS_54[1]])
    assert legal_actions(table.game, 1)[0] == PlaceBid(1, "nil")  # no look: it has its cards
    assert table.refusal(PlaceBid(1, "blind_nil")) == "blind_nil_not_allowed"
    assert table.refusal(PlaceBid(1, "blind_6")) == "blind_bid_not_allowed"
