"""The bot's decisions on hand-built tables: each test sets up one moment of a hand, takes the
seat's view exactly as the API serves it, and checks the action the bot picks from ``legal``."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from domain.bids import Bid
from domain.cards import Card
from domain.rules import resolve_rules
from domain.state import NO_SEAT, Game, Hand, Phase, Player, holdings_of
from domain.views import seat_view
from services.bots.memory import HandMemory
from services.bots.situation import read_situation
from services.bots.strategy import Bot, RandomPlayer

FULL_HAND = "AS KS QS AH KH QH AD KD QD AC KC QC JC"
DEALT_15 = "BJ AS 9S 5S 4S AH KH 8H 6H 4H AD QD 9D 3C 7C"
"""A dealer's 15 cards under jokers-54: two clubs, the shortest side suit, both low."""


def cards(text: str) -> list[Card]:
    return [Card.parse(word) for word in text.split()]


def at_table(seat: int, hand: str, **setting: Any) -> dict[str, Any]:
    """The seat's view of :func:`table_at` as the API serves it (JSON)."""
    view: dict[str, Any] = msgspec.to_builtins(seat_view(table_at(seat, hand, **setting), seat))
    return view


def table_at(
    seat: int,
    hand: str,
    *,
    rules: dict[str, Any] | None = None,
    phase: Phase = "play",
    bids: list[Bid | None] | None = None,
    won: list[int] | None = None,
    trick: str = "",
    spades_broken: bool = True,
    scores: list[int] | None = None,
    looked: bool = True,
    pile: str = "",
    discards: str = "",
    passes_due: tuple[int, ...] = (),
    opening: str | None = None,
) -> Game:
    """A table set up by hand around ``seat``: its cards, the bids, the tricks won so far and
    the cards on the table (played in order by the seats before ``seat``)."""
    resolved = resolve_rules(rules or {"preset": "partnership"})
    players = resolved.players
    played = cards(trick)
    masks = [0] * players
    masks[seat] = sum(card.bit for card in cards(hand))
    units = 2 if resolved.partnerships else players
    hand_state = Hand(
        number=1,
        dealer=0,
        phase=phase,
        turn=NO_SEAT if phase == "pass" else seat,
        holdings=holdings_of(masks),
        looked=((1 << players) - 1) if looked else ((1 << players) - 1) & ~(1 << seat),
        bids=tuple(bids or [None] * players),
        won=tuple(won or [0] * players),
        trick=tuple(card.ordinal for card in played),
        tricks_played=sum(won or []),
        leader=(seat - len(played)) % players,
        spades_broken=spades_broken,
        passes_due=sum(1 << s for s in passes_due),
        passed=(None,) * players,
        pile=tuple(cards(pile)),
        discarded=sum(card.bit for card in cards(discards)),
        opening_card=Card.parse(opening).ordinal if opening else -1,
    )
    return Game(
        game_id="g",
        rules=resolved,
        status="playing",
        players=tuple(Player(f"p{s}") for s in range(players)),
        first_dealer=0,
        entropy="",
        scores=tuple(scores or [0] * units),
        bags=(0,) * units,
        hand=hand_state,
        version=40,
    )


def chosen(view: dict[str, Any], bot: Bot | None = None) -> dict[str, Any]:
    """The bot's action, checked to be one the view allows."""
    action = (bot or Bot()).act(view)
    assert action is not None
    if action["type"] in ("pass", "discard"):
        due = next(a for a in view["legal"] if a["type"] == action["type"])
        assert len(set(action["cards"])) == due["count"]
        assert set(action["cards"]) <= set(view["hand"])
    else:
        assert action in view["legal"]
    return action


def played(view: dict[str, Any], bot: Bot | None = None) -> str:
    action = chosen(view, bot)
    assert action["type"] == "play"
    card: str = action["card"]
    return card


# ---------------------------------------------------------------------------- nil


def test_the_partner_of_a_nil_plays_over_it_when_it_would_win() -> None:
    # Seat 2 (nil) is winning with the 9H; seat 0 made its 2 and would otherwise duck.
    view = at_table(
        0, "KH 2H 5C", bids=[2, 3, "nil", 3], won=[2, 1, 0, 1], trick="4H 9H 6H"
    )  # led by seat 1
    assert played(view) == "KH"


def test_without_a_nil_to_cover_a_made_contract_ducks() -> None:
    view = at_table(0, "KH 2H 5C", bids=[2, 3, 2, 3], won=[2, 1, 0, 1], trick="4H 9H 6H")
    assert played(view) == "2H"


def test_the_partner_of_a_nil_still_to_play_puts_a_high_card_on_the_trick() -> None:
    view = at_table(0, "AD 3D 5C", bids=[2, 3, "nil", 3], won=[2, 1, 0, 1], trick="5D")
    assert played(view) == "AD"


def test_the_partner_of_a_nil_leads_high() -> None:
    view = at_table(0, "AD 3D 4C", bids=[2, 3, "nil", 3], won=[2, 1, 0, 1])
    assert played(view) == "AD"


def test_an_opponent_s_nil_that_is_winning_is_left_the_trick() -> None:
    # Seat 1 bid nil and is winning with the 9H; seat 2 needs tricks but ducks under it.
    view = at_table(2, "QH 3H 7C", bids=[3, "nil", 4, 3], won=[1, 0, 1, 1], trick="4H 9H")
    assert played(view) == "3H"


def test_an_opponent_s_nil_still_to_play_faces_a_low_card() -> None:
    view = at_table(0, "QH 3H 7C", bids=[3, "nil", 4, 3], won=[1, 0, 1, 1], trick="6H 5H")
    assert played(view) == "3H"


def test_a_made_nil_is_attacked_with_low_leads_not_with_winners() -> None:
    view = at_table(0, "AH 2C 9D", bids=[3, "nil", 4, 3], won=[1, 0, 1, 1])
    assert played(view) == "2C"


def test_the_attack_leads_a_suit_the_nil_still_holds() -> None:
    memory = HandMemory()
    memory.observe({"type": "hand_dealt", "hand": 1})
    for seat, card in enumerate(["5C", "9H", "7C", "8C"]):  # seat 1 showed out of clubs
        memory.observe({"type": "card_played", "seat": seat, "card": card})
    memory.observe({"type": "trick_won", "trick": 1, "seat": 3})
    view = at_table(0, "AH 2C 3D", bids=[3, "nil", 4, 3], won=[0, 0, 0, 1])
    assert played(view, Bot(memory)) == "3D"
    assert played(view) == "2C"  # from the view alone the void is unknown


def test_a_nil_bidder_sheds_its_highest_card_that_still_loses() -> None:
    view = at_table(1, "QH 8H 3H 2S", bids=[3, "nil", 4, 3], trick="KH")
    assert played(view) == "QH"


def test_a_nil_bidder_void_in_the_suit_throws_a_high_card_not_a_trump() -> None:
    view = at_table(1, "AD 4D 2S", bids=[3, "nil", 4, 3], trick="KH")
    assert played(view) == "AD"


def test_a_nil_bidder_leads_its_safest_low_card() -> None:
    view = at_table(1, "AD 2C 9H", bids=[3, "nil", 4, 3])
    assert played(view) == "2C"


# ---------------------------------------------------------------------------- tricks and bags


def test_a_side_that_needs_tricks_wins_as_cheaply_as_it_can_when_last() -> None:
    view = at_table(3, "AH QH 2H", bids=[3, 3, 3, 3], won=[1, 1, 1, 1], trick="9H 5H JH")
    assert played(view) == "QH"


def test_a_void_seat_that_needs_tricks_ruffs_with_its_lowest_trump() -> None:
    view = at_table(3, "AS 3S 7C", bids=[3, 3, 3, 3], won=[1, 1, 1, 1], trick="9H 5H JH")
    assert played(view) == "3S"


def test_a_seat_does_not_overtake_its_partner_s_sure_winner() -> None:
    view = at_table(3, "KH 2H 9C", bids=[3, 3, 3, 3], won=[1, 1, 1, 1], trick="9H AH 5H")
    assert played(view) == "2H"


def test_once_the_contract_is_made_the_highest_losing_card_goes() -> None:
    view = at_table(3, "AH QH 2H", bids=[3, 2, 3, 2], won=[1, 1, 1, 3], trick="9H 5H KH")
    assert played(view) == "QH"


def test_when_bags_cost_nothing_a_made_contract_keeps_winning() -> None:
    free = {"preset": "partnership", "bag_limit": None, "overtrick_points": 1}
    view = at_table(
        3, "AH QH 2H", rules=free, bids=[3, 2, 3, 2], won=[1, 1, 1, 3], trick="9H 5H KH"
    )
    assert played(view) == "AH"


def test_a_made_side_takes_the_trick_that_would_set_the_other() -> None:
    # Seats 0 and 2 need both of the last 2 tricks: winning one sets them.
    view = at_table(3, "AS 2D", bids=[5, 2, 5, 1], won=[4, 3, 4, 0], trick="9H 5H KH")
    assert played(view) == "AS"
    safe = at_table(3, "AS 2D", bids=[3, 2, 5, 1], won=[4, 3, 4, 0], trick="9H 5H KH")
    assert played(safe) == "2D"


# ---------------------------------------------------------------------------- table options


def test_must_beat_is_kept_even_when_the_table_only_penalizes() -> None:
    rules = {"preset": "cutthroat", "must_beat": True, "renege": "penalize"}
    view = at_table(2, "KH 5H 2S", rules=rules, bids=[3, 3, 2], won=[1, 1, 2], trick="9H")
    assert {a["card"] for a in view["legal"]} == {"KH", "5H", "2S"}  # the table would accept any
    assert played(view) == "KH"  # it would rather duck, but must beat the 9H


def test_suit_is_followed_even_when_the_table_only_penalizes() -> None:
    rules = {"preset": "partnership", "renege": "penalize"}
    view = at_table(3, "5H AS 3S", rules=rules, bids=[3, 3, 3, 3], trick="9H JH QH")
    assert played(view) == "5H"


def test_a_ruff_must_beat_under_must_beat() -> None:
    rules = {"preset": "cutthroat", "must_beat": True}
    view = at_table(2, "AS 3S 7C", rules=rules, bids=[3, 3, 3], won=[1, 3, 1], trick="9H")
    assert {a["card"] for a in view["legal"]} == {"AS", "3S"}
    assert played(view) == "3S"  # the lower trump does it


def test_jokers_rank_above_the_ace_of_spades() -> None:
    rules = {"preset": "partnership", "jokers": True, "trump_order": "jokers",
             "deck_remove": ["2C", "2H"]}  # fmt: skip
    view = at_table(3, "LJ 3S 9C", rules=rules, bids=[3, 3, 3, 3], trick="9H 5H AS")
    assert played(view) == "LJ"


def test_the_deuce_of_diamonds_is_a_trump_under_jokers_deuces() -> None:
    rules = {"preset": "partnership", "jokers": True, "trump_order": "jokers_deuces",
             "deck_remove": ["2C", "2H"]}  # fmt: skip
    ruff = at_table(3, "2D 9C 3C", rules=rules, bids=[3, 3, 3, 3], trick="9H 5H JH")
    assert played(ruff) == "2D"
    follow = at_table(
        3, "2D 9H", rules={**rules, "renege": "penalize"}, bids=[3, 3, 3, 3], trick="5S 6S 7S"
    )
    assert played(follow) == "2D"  # a spade for following suit


def test_the_deuce_of_spades_outranks_the_ace_under_jokers_deuce() -> None:
    rules = {"preset": "partnership", "jokers": True, "trump_order": "jokers_deuce",
             "deck_remove": ["2C", "2H"]}  # fmt: skip
    view = at_table(3, "2S KS", rules=rules, bids=[3, 3, 3, 3], won=[3, 2, 3, 3], trick="AS 4S 3S")
    assert played(view) == "2S"


def test_the_lowest_club_opens_the_hand() -> None:
    rules = {"preset": "three-player-house"}
    view = at_table(
        1, "3C AS AH KH", rules=rules, bids=[4, 5, 4], spades_broken=False, opening="3C"
    )
    assert view["legal"] == [{"type": "play", "card": "3C"}]
    assert played(view) == "3C"


def test_no_spade_is_led_before_they_are_broken() -> None:
    view = at_table(0, "AS KS QS 2H", bids=[5, 3, 3, 2], spades_broken=False)
    assert played(view) == "2H"


# ---------------------------------------------------------------------------- bidding


def bid_of(view: dict[str, Any]) -> Bid:
    action = chosen(view)
    assert action["type"] == "bid"
    bid: Bid = action["bid"]
    return bid


def test_a_strong_hand_bids_its_tricks() -> None:
    view = at_table(0, FULL_HAND, phase="bid")
    bid = bid_of(view)
    assert isinstance(bid, int)
    assert 8 <= bid <= 13


def test_a_hand_without_high_cards_and_low_spades_bids_nil() -> None:
    view = at_table(
        1, "2C 3C 5C 7C 2D 4D 6D 3H 4H 6H 8H 2S 3S", phase="bid", bids=[3, None, None, None]
    )
    assert bid_of(view) == "nil"


def test_nil_is_not_bid_with_an_ace() -> None:
    view = at_table(1, "2C 3C 5C 7C 2D 4D 6D 3H 4H 6H AH 2S 3S", phase="bid")
    bid = bid_of(view)
    assert isinstance(bid, int)
    assert bid >= 1


def test_nil_is_not_bid_where_the_table_does_not_play_it() -> None:
    view = at_table(
        1, "2C 3C 5C 7C 2D 4D 6D 3H 4H 6H 8H 2S 3S", rules={"preset": "partnership", "nil": False},
        phase="bid",
    )  # fmt: skip
    assert bid_of(view) == 1


def test_a_bot_looks_before_it_bids_when_not_far_behind() -> None:
    view = at_table(0, FULL_HAND, phase="bid", looked=False, scores=[300, 350])
    assert chosen(view) == {"type": "look"}


def test_blind_nil_far_behind_when_the_other_side_nears_the_target() -> None:
    view = at_table(0, FULL_HAND, phase="bid", looked=False, scores=[100, 420])
    assert chosen(view) == {"type": "bid", "bid": "blind_nil"}


def test_no_blind_nil_without_a_partner_to_cover_it() -> None:
    view = at_table(0, FULL_HAND, rules={"preset": "solo"}, phase="bid", looked=False,
                    scores=[0, 450, 420, 300])  # fmt: skip
    assert chosen(view) == {"type": "look"}


def test_a_blind_bid_far_behind_when_the_other_side_nears_the_target() -> None:
    rules = {"preset": "partnership", "blind_bids": 6, "blind_nil": False}
    view = at_table(0, FULL_HAND, rules=rules, phase="bid", looked=False, scores=[100, 420])
    assert chosen(view) == {"type": "bid", "bid": "blind_6"}


def test_no_blind_bid_when_not_far_behind() -> None:
    rules = {"preset": "partnership", "blind_bids": 6, "blind_nil": False}
    view = at_table(0, FULL_HAND, rules=rules, phase="bid", looked=False, scores=[300, 350])
    assert chosen(view) == {"type": "look"}


def test_no_blind_bid_the_side_could_not_hope_to_make() -> None:
    rules = {"preset": "partnership", "blind_bids": 9, "blind_nil": False}
    view = at_table(0, FULL_HAND, rules=rules, phase="bid", looked=False, scores=[100, 420])
    assert chosen(view) == {"type": "look"}


def test_the_team_minimum_is_met() -> None:
    rules = {"preset": "partnership", "team_min_bid": 4}
    view = at_table(2, "2C 3C 5C 7C 2D 4D 6D 3H 4H 6H 8H 2S 3S", rules=rules, phase="bid",
                    bids=[1, 3, None, None])  # fmt: skip
    assert bid_of(view) == 3


def test_a_seat_waits_rather_than_look_out_of_turn() -> None:
    view = at_table(0, FULL_HAND, phase="bid", looked=False)
    view["turn"] = 1
    view["legal"] = [{"type": "look"}]
    assert Bot().act(view) is None


# ---------------------------------------------------------------------------- pass, discard, draw


def test_the_dealer_looks_before_it_discards() -> None:
    view = at_table(0, DEALT_15, rules={"preset": "jokers-54"}, phase="discard", looked=False)
    assert chosen(view) == {"type": "look"}


def test_the_dealer_keeps_trumps_and_top_cards_and_empties_a_short_suit() -> None:
    view = at_table(0, DEALT_15, rules={"preset": "jokers-54"}, phase="discard")
    assert set(chosen(view)["cards"]) == {"3C", "7C"}


def test_a_dealer_with_a_nil_hand_discards_its_dangers() -> None:
    hand = "2S 3S 2H 3H 4H 5H 2D 3D 4D 5D 6D 3C 4C 5C AC"
    view = at_table(0, hand, rules={"preset": "jokers-54"}, phase="discard")
    assert set(chosen(view)["cards"]) == {"2S", "AC"}  # the 2S ranks under the jokers only


def test_the_blind_nil_bidder_passes_its_most_dangerous_cards() -> None:
    view = at_table(0, "AS 4S AH 3H 2C 5C 8C 2D 6D 9D JD 3C 7H", phase="pass",
                    bids=["blind_nil", 3, 5, 3], passes_due=(0, 2))  # fmt: skip
    assert set(chosen(view)["cards"]) == {"AS", "AH"}


def test_the_partner_of_a_blind_nil_passes_its_lowest_side_cards() -> None:
    view = at_table(2, "AS 2S AH 3H 2C 5C 8C 4D 6D 9D JD KC 7H", phase="pass",
                    bids=["blind_nil", 3, 5, 3], passes_due=(0, 2))  # fmt: skip
    assert set(chosen(view)["cards"]) == {"2C", "3H"}


TWO = {"preset": "two-player"}


def test_the_draw_keeps_a_high_spade() -> None:
    view = at_table(1, "2H 7D 9C", rules=TWO, phase="draw", pile="AS 4C", discards="3D 8H")
    assert chosen(view) == {"type": "draw", "keep": True}


def test_the_draw_lets_a_low_card_go_for_the_unknown_one() -> None:
    view = at_table(1, "AH KH 9S 8D", rules=TWO, phase="draw", pile="3C 4C", discards="3D 8H")
    assert chosen(view) == {"type": "draw", "keep": False}


def test_a_hand_heading_for_nil_keeps_low_cards_and_lets_honours_go() -> None:
    low = "2C 3C 2D 4D 3H 5H"
    keep = at_table(0, low, rules=TWO, phase="draw", pile="4C 8S", discards="9D")
    assert chosen(keep) == {"type": "draw", "keep": True}
    drop = at_table(0, low, rules=TWO, phase="draw", pile="AD 8S", discards="9D")
    assert chosen(drop) == {"type": "draw", "keep": False}


# ---------------------------------------------------------------------------- views and memory


def test_with_two_decks_the_other_copy_of_a_card_can_beat_it() -> None:
    six = {"preset": "six-player"}
    lead = at_table(0, "AH 2C 3C", rules=six, phase="play", bids=[3] * 6, won=[0] * 6)
    sit = read_situation(lead)
    assert not sit.holds(Card.parse("AH").ordinal, [1, 2, 3, 4, 5])
    single = at_table(0, "AH 2C 3C", phase="play", bids=[3] * 4, won=[0] * 4)
    assert read_situation(single).holds(Card.parse("AH").ordinal, [1, 2, 3])


def test_the_bot_takes_the_domain_s_view_struct_as_well() -> None:
    game = table_at(3, "AH QH 2H", bids=[3, 3, 3, 3], won=[1, 1, 1, 1], trick="9H 5H JH")
    assert Bot().act(seat_view(game, 3)) == {"type": "play", "card": "QH"}


def test_memory_forgets_the_last_hand_and_counts_each_event_once() -> None:
    memory = HandMemory()
    memory.observe({"type": "hand_dealt", "hand": 1}, position=5)
    memory.observe({"type": "card_played", "seat": 0, "card": "AH"}, position=6)
    memory.observe({"type": "card_played", "seat": 0, "card": "AH"}, position=6)
    assert memory.played() == [Card.ACE_OF_HEARTS]
    memory.observe({"type": "hand_dealt", "hand": 2}, position=9)
    assert (memory.hand_number, memory.played()) == (2, [])


def test_a_card_counted_from_memory_makes_a_king_the_top_card() -> None:
    memory = HandMemory()
    memory.observe({"type": "hand_dealt", "hand": 1})
    for seat, card in enumerate(["AH", "3H", "4H", "5H"]):
        memory.observe({"type": "card_played", "seat": seat, "card": card})
    memory.observe({"type": "trick_won", "trick": 1, "seat": 0})
    view = at_table(0, "KH 2C 9D", bids=[3, 3, 3, 3], won=[1, 0, 0, 0])
    assert played(view, Bot(memory)) == "KH"  # cash the winner
    assert played(view) != "KH"  # from the view alone the AH may be out against it


def test_a_random_player_passes_cards_of_its_hand() -> None:
    import random

    view = at_table(2, "AS 2S AH 3H 2C 5C 8C 4D 6D 9D JD KC 7H", phase="pass",
                    bids=["blind_nil", 3, 5, 3], passes_due=(0, 2))  # fmt: skip
    action = RandomPlayer(random.Random(3)).act(view)
    assert action is not None
    assert len(action["cards"]) == 2
    assert set(action["cards"]) <= set(view["hand"])


@pytest.mark.parametrize("phase", ["bid", "play"])
def test_a_seat_with_nothing_legal_waits(phase: Phase) -> None:
    view = at_table(0, FULL_HAND, phase=phase)
    view["legal"] = []
    assert Bot().act(view) is None
