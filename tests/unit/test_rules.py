"""Rule sets (docs/rules.md, "Rules options" and "Presets"): resolved in full, refused at
creation."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from domain.commands import CreateGame
from domain.errors import CODES, RuleViolation
from domain.game import decide
from domain.rules import PRESETS, Rules, resolve_rules
from domain.table import table_for

DEFAULTS: dict[str, Any] = {
    "players": 4,
    "partnerships": True,
    "decks": 1,
    "deck_remove": [],
    "jokers": False,
    "trump_order": "standard",
    "out_of_play": 0,
    "dealer_discard": 0,
    "deal": "deal",
    "first_hand": "bid",
    "min_bid": 1,
    "team_min_bid": 0,
    "nil": True,
    "nil_value": 100,
    "blind_nil": True,
    "blind_nil_value": 200,
    "blind_nil_behind": 100,
    "blind_nil_pass": 2,
    "blind_bids": 0,
    "failed_nil_tricks": "bags_if_partner_made",
    "spades_lead": "broken",
    "first_lead": "left_of_dealer",
    "must_beat": False,
    "renege": "reject",
    "failed_bid": "bid",
    "overtrick_points": 1,
    "bag_limit": 10,
    "bag_penalty": 100,
    "ten_for_two_hundred": False,
    "boston": False,
    "blind_boston": False,
    "all_tricks_bonus": 0,
    "target": 500,
    "lose_at": None,
    "max_hands": None,
}

FORMAT_PRESETS: dict[str, dict[str, Any]] = {
    "partnership": {},
    "solo": {
        "players": 4,
        "partnerships": False,
        "blind_nil_pass": 0,
        "failed_nil_tricks": "none",
    },
    "cutthroat": {
        "players": 3,
        "partnerships": False,
        "deck_remove": ["2C"],
        "blind_nil_pass": 0,
        "failed_nil_tricks": "none",
        "renege": "reject",
    },
    "three-player-house": {
        "players": 3,
        "partnerships": False,
        "deck_remove": ["2C"],
        "nil": False,
        "blind_nil": False,
        "first_lead": "lowest_club",
        "failed_nil_tricks": "none",
    },
    "two-player": {
        "players": 2,
        "partnerships": False,
        "deal": "draw",
        "blind_nil": False,
        "first_lead": "dealer",
        "failed_nil_tricks": "none",
    },
    "six-player": {
        "players": 6,
        "partnerships": True,
        "decks": 2,
        "deck_remove": ["2C", "2C"],
    },
    "jokers-54": {
        "jokers": True,
        "trump_order": "jokers_deuce",
        "dealer_discard": 2,
    },
}

TRICKS = {
    "partnership": 13,
    "solo": 13,
    "cutthroat": 17,
    "three-player-house": 17,
    "two-player": 13,
    "six-player": 17,
    "jokers-54": 13,
}


def _as_json(rules: Rules) -> dict[str, Any]:
    """The rules as the JSON they are written in (tuples become lists)."""
    out: dict[str, Any] = json.loads(json.dumps(rules.to_json()))
    return out


def test_every_format_preset_is_known() -> None:
    assert set(PRESETS) == set(FORMAT_PRESETS)


@pytest.mark.parametrize("preset", sorted(FORMAT_PRESETS))
def test_preset_resolves_with_the_values_format_lists(preset: str) -> None:
    rules = resolve_rules({"preset": preset})
    expected = {**DEFAULTS, **FORMAT_PRESETS[preset]}
    resolved = _as_json(rules)
    assert resolved.pop("preset") == preset
    assert resolved == expected
    assert rules.tricks_per_hand == TRICKS[preset]


def test_no_preset_means_partnership() -> None:
    assert resolve_rules({}) == resolve_rules({"preset": "partnership"})


@pytest.mark.parametrize(
    ("raw", "option", "value"),
    [
        ({"preset": "cutthroat", "must_beat": True}, "must_beat", True),
        ({"preset": "cutthroat", "renege": "penalize"}, "renege", "penalize"),
        ({"preset": "two-player", "max_hands": 5}, "max_hands", 5),
        ({"preset": "solo", "target": 250, "lose_at": -250}, "lose_at", -250),
        ({"preset": "three-player-house", "nil": True}, "nil", True),
        ({"preset": "partnership", "overtrick_points": -10}, "overtrick_points", -10),
        ({"preset": "partnership", "bag_limit": None}, "bag_limit", None),
        ({"preset": "partnership", "blind_nil_behind": None}, "blind_nil_behind", None),
        ({"preset": "cutthroat", "deck_remove": [], "out_of_play": 1}, "out_of_play", 1),
    ],
)
def test_any_option_may_be_overridden(raw: dict[str, Any], option: str, value: Any) -> None:
    rules = resolve_rules(raw)
    assert getattr(rules, option) == value
    rest = {k: v for k, v in _as_json(rules).items() if k not in raw and k != "preset"}
    preset = raw.get("preset", "partnership")
    assert rest == {k: v for k, v in {**DEFAULTS, **FORMAT_PRESETS[preset]}.items() if k in rest}


def test_three_players_with_52_cards_and_one_out_of_play_hold_17() -> None:
    rules = resolve_rules({"preset": "cutthroat", "deck_remove": [], "out_of_play": 1})
    assert rules.pack_size == 52
    assert rules.tricks_per_hand == 17


def test_deck_remove_accepts_10_for_ten() -> None:
    rules = resolve_rules({"preset": "partnership", "deck_remove": ["10C", "2h", "2D", "2S"]})
    assert [str(card) for card in rules.deck_remove] == ["TC", "2H", "2D", "2S"]
    assert rules.tricks_per_hand == 12


def test_six_players_hold_17_of_two_decks_less_both_deuces_of_clubs() -> None:
    rules = resolve_rules({"preset": "six-player"})
    assert rules.pack_size == 102
    assert rules.tricks_per_hand == 17


def test_the_dealer_s_discard_comes_out_of_the_deal() -> None:
    rules = resolve_rules({"preset": "jokers-54"})
    assert (rules.pack_size, rules.dealer_discard, rules.tricks_per_hand) == (54, 2, 13)


def test_three_players_with_both_jokers_hold_18() -> None:
    rules = resolve_rules(
        {"preset": "cutthroat", "jokers": True, "deck_remove": [], "trump_order": "jokers_deuce"}
    )
    assert (rules.pack_size, rules.tricks_per_hand, rules.out_of_play) == (54, 18, 0)


@pytest.mark.parametrize("order", ["jokers", "jokers_deuce", "jokers_deuces"])
def test_every_trump_order_with_jokers(order: str) -> None:
    rules = resolve_rules(
        {"preset": "partnership", "jokers": True, "deck_remove": ["2C", "2H"], "trump_order": order}
    )
    assert rules.pack_size == 52
    assert rules.tricks_per_hand == 13


def test_a_resolved_rule_set_resolves_to_itself() -> None:
    rules = resolve_rules({"preset": "cutthroat", "must_beat": True})
    assert resolve_rules(rules) is rules
    assert resolve_rules(rules.to_json()) == rules


INVALID: list[tuple[str, Any, str]] = [
    ("unknown option", {"preset": "partnership", "jokerz": True}, "jokerz"),
    ("bool for int", {"preset": "partnership", "min_bid": True}, "min_bid"),
    ("bool for int target", {"preset": "partnership", "target": False}, "target"),
    ("str for bool", {"preset": "partnership", "nil": "yes"}, "nil"),
    ("str for bool jokers", {"preset": "partnership", "jokers": "true"}, "jokers"),
    ("str for int", {"preset": "partnership", "players": "4"}, "players"),
    ("unknown value", {"preset": "partnership", "trump_order": "aces"}, "trump_order"),
    ("unknown preset", {"preset": "bridge"}, "bridge"),
    ("preset not a string", {"preset": 4}, "preset"),
    ("not an object", ["partnership"], ""),
    ("trump_order without jokers", {"preset": "partnership", "trump_order": "jokers"}, "jokers"),
    ("jokers_deuces without jokers", {"trump_order": "jokers_deuces"}, "jokers"),
    ("pack does not divide", {"preset": "partnership", "players": 3, "partnerships": False}, ""),
    ("jokers in cutthroat", {"preset": "cutthroat", "jokers": True, "trump_order": "jokers"}, ""),
    ("jokers ranked standard", {"jokers": True, "deck_remove": ["2C", "2H"]}, "trump_order"),
    ("three decks", {"preset": "six-player", "decks": 3}, "decks"),
    ("a card out three times", {"preset": "six-player", "deck_remove": ["2C"] * 3}, "2C"),
    ("two decks do not divide", {"preset": "six-player", "deck_remove": []}, ""),
    ("partnerships with 5", {"preset": "six-player", "players": 5}, "players"),
    ("discard with draw", {"preset": "two-player", "dealer_discard": 2}, "dealer_discard"),
    ("discard does not divide", {"preset": "partnership", "dealer_discard": 1}, ""),
    ("negative discard", {"preset": "partnership", "dealer_discard": -4}, "dealer_discard"),
    ("blind_boston alone", {"boston": True, "blind_boston": True}, "blind_boston"),
    ("blind_boston, no boston", {"blind_bids": 6, "blind_boston": True}, "blind_boston"),
    ("blind_bids past the hand", {"blind_bids": 14}, "blind_bids"),
    ("first_hand unknown", {"first_hand": "nil"}, "first_hand"),
    ("one card out in four", {"preset": "solo", "deck_remove": ["2C"]}, ""),
    ("out of play too many", {"preset": "partnership", "out_of_play": 1}, ""),
    ("draw with 3 players", {"preset": "cutthroat", "deal": "draw"}, "draw"),
    ("draw with 4 players", {"preset": "partnership", "deal": "draw"}, "draw"),
    ("draw with 3 players of 2p", {"preset": "two-player", "players": 3}, "draw"),
    ("deck_remove joker", {"preset": "partnership", "deck_remove": ["BJ"]}, "deck_remove"),
    ("deck_remove not a card", {"preset": "partnership", "deck_remove": ["ZZ"]}, "deck_remove"),
    ("deck_remove twice", {"preset": "solo", "deck_remove": ["2C", "2C", "2H", "2D"]}, ""),
    ("lose_at equal to target", {"preset": "partnership", "lose_at": 500}, "lose_at"),
    ("lose_at above target", {"preset": "partnership", "target": 200, "lose_at": 300}, "lose_at"),
    ("partnerships with 3", {"preset": "cutthroat", "partnerships": True}, "partnerships"),
    ("partnerships with 2", {"preset": "two-player", "partnerships": True}, "partnerships"),
    ("5 players", {"preset": "solo", "players": 5}, "players"),
    ("target 0", {"preset": "partnership", "target": 0}, "target"),
    ("min_bid above hand", {"preset": "partnership", "min_bid": 14}, "min_bid"),
    ("negative nil_value", {"preset": "partnership", "nil_value": -100}, "nil_value"),
    ("bag_limit 0", {"preset": "partnership", "bag_limit": 0}, "bag_limit"),
    ("max_hands 0", {"preset": "partnership", "max_hands": 0}, "max_hands"),
]


@pytest.mark.parametrize(
    ("raw", "named"), [(raw, named) for _, raw, named in INVALID], ids=[i for i, _, _ in INVALID]
)
def test_an_impossible_rule_set_is_invalid_rules(raw: Any, named: str) -> None:
    with pytest.raises(RuleViolation) as raised:
        resolve_rules(raw)
    assert raised.value.code == "invalid_rules"
    assert named in raised.value.detail


@pytest.mark.parametrize(
    "raw",
    [
        {"preset": "partnership", "jokerz": True},
        {"preset": "bridge"},
        {"preset": "partnership", "trump_order": "jokers"},
        {"preset": "partnership", "lose_at": 500},
    ],
)
def test_invalid_rules_are_refused_at_game_creation(raw: dict[str, Any]) -> None:
    with pytest.raises(RuleViolation) as raised:
        decide(None, CreateGame("g", raw, dealer=0))
    assert raised.value.code == "invalid_rules"
    assert "invalid_rules" in CODES


def test_rules_are_values() -> None:
    one = resolve_rules({"preset": "cutthroat", "must_beat": True})
    two = resolve_rules({"must_beat": True, "preset": "cutthroat"})
    assert one == two
    assert hash(one) == hash(two)
    assert isinstance(one, Rules)
    assert one != resolve_rules({"preset": "cutthroat"})


def test_a_rule_set_keeps_its_table_beside_it_and_never_sends_it() -> None:
    rules = resolve_rules({"preset": "jokers-54"})
    sent = msgspec.json.encode(rules)
    assert rules.table is table_for(rules)
    assert rules.table is rules.table
    assert msgspec.json.encode(rules) == sent
    again = msgspec.json.decode(sent, type=Rules)
    assert again == rules
    assert again.table is rules.table  # equal rule sets share one table
