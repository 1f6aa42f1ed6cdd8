"""Scoring a hand (docs/rules.md, "Scoring a hand"): every option, its edge cases, and the lines
that name the rule behind each step. Expected values are worked out by hand from docs/rules.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from domain.bids import Bid
from domain.rules import Rules, resolve_rules
from domain.scoring import HandScore, score_hand


def rules_of(**overrides: Any) -> Rules:
    return resolve_rules({"preset": "partnership", **overrides})


def score(
    rules: Rules,
    bids: Sequence[Bid],
    tricks: Sequence[int],
    scores: Sequence[int] | None = None,
    bags: Sequence[int] | None = None,
    reneged: int = 0,
) -> HandScore:
    units = 2 if rules.partnerships else rules.players
    return score_hand(
        rules,
        bids,
        tricks,
        scores=scores or [0] * units,
        bags=bags or [0] * units,
        reneged=reneged,
    )


def rules_for(result: HandScore, unit: int) -> list[str]:
    return [line.rule for line in result.lines if line.unit == unit]


def test_the_002_worked_hand() -> None:
    result = score(rules_of(), [3, "nil", 2, 6], [5, 1, 3, 4])
    assert result.points == (53, -160)
    assert result.scores == (53, -160)
    assert result.bags == (3, 0)
    assert rules_for(result, 0) == ["contract", "overtrick_points"]
    assert rules_for(result, 1) == ["failed_bid", "nil_value"]


def test_each_unit_s_lines_add_up_to_its_points() -> None:
    result = score(rules_of(), [3, "nil", 2, 6], [5, 1, 3, 4], scores=[100, -20], bags=[9, 0])
    for unit in (0, 1):
        assert (
            sum(line.points for line in result.lines if line.unit == unit) == (result.points[unit])
        )
    assert result.scores == (100 + result.points[0], -20 + result.points[1])
    assert all(line.text for line in result.lines)


def test_made_exactly_is_ten_times_the_bid() -> None:
    result = score(rules_of(), [4, 3, 2, 4], [4, 3, 2, 4])
    assert result.points == (60, 70)
    assert result.bags == (0, 0)
    assert rules_for(result, 0) == ["contract"]


@pytest.mark.parametrize(("value", "points"), [(1, 63), (0, 60), (-1, 57), (-10, 30)])
def test_overtrick_points_and_a_bag_per_overtrick(value: int, points: int) -> None:
    result = score(rules_of(overtrick_points=value), [3, 3, 3, 3], [5, 1, 4, 3])
    assert result.points[0] == points
    assert result.bags == (3, 0)
    assert result.points[1] == -60


@pytest.mark.parametrize(("mode", "points"), [("bid", -80), ("short", -30)])
def test_failed_bid_bid_or_short(mode: str, points: int) -> None:
    result = score(rules_of(failed_bid=mode), [4, 2, 4, 2], [3, 4, 2, 4])
    assert result.points == (points, 44)
    assert result.bags == (0, 4)
    assert rules_for(result, 0) == ["failed_bid"]


def test_the_bag_penalty_when_the_count_reaches_the_limit() -> None:
    result = score(rules_of(), [3, 3, 3, 3], [5, 1, 4, 3], scores=[200, 0], bags=[8, 0])
    assert result.points == (63 - 100, -60)
    assert result.bags == (1, 0)
    assert rules_for(result, 0) == ["contract", "overtrick_points", "bag_limit"]


def test_the_bag_penalty_reaching_the_limit_exactly_leaves_zero() -> None:
    result = score(rules_of(), [3, 3, 3, 3], [4, 3, 3, 3], bags=[9, 0])
    assert result.points == (61 - 100, 60)
    assert result.bags == (0, 0)


def test_the_bag_penalty_as_many_times_as_the_limit_is_passed() -> None:
    rules = rules_of(bag_limit=3, bag_penalty=50)
    result = score(rules, [2, 3, 2, 3], [6, 0, 7, 0], bags=[2, 0])
    # 4 made with 13: 40 + 9, 2 + 9 = 11 bags: three penalties, 2 carried over.
    assert result.points == (49 - 150, -60)
    assert result.bags == (2, 0)
    assert rules_for(result, 0).count("bag_limit") == 3


def test_bag_limit_null_counts_no_bags() -> None:
    result = score(rules_of(bag_limit=None), [3, 3, 3, 3], [5, 1, 4, 3], bags=[9, 4])
    assert result.points == (63, -60)
    assert result.bags == (9, 4)
    assert "bag_limit" not in rules_for(result, 0)


def test_ten_for_two_hundred_made() -> None:
    result = score(rules_of(ten_for_two_hundred=True), [6, 1, 4, 1], [6, 1, 4, 2])
    assert result.points == (200, 21)
    assert rules_for(result, 0) == ["ten_for_two_hundred"]
    assert result.bags == (0, 1)


@pytest.mark.parametrize("taken", [11, 9, 13])
def test_ten_for_two_hundred_any_other_result_is_minus_200_with_no_bags(taken: int) -> None:
    tricks = [taken - 4, 0, 4, 13 - taken]
    result = score(rules_of(ten_for_two_hundred=True), [6, 1, 4, 1], tricks, bags=[9, 0])
    assert result.points[0] == -200
    assert result.bags[0] == 9
    assert rules_for(result, 0) == ["ten_for_two_hundred"]


def test_ten_for_two_hundred_in_an_individual_game() -> None:
    rules = resolve_rules({"preset": "cutthroat", "ten_for_two_hundred": True})
    result = score(rules, [10, 3, 4], [10, 3, 4])
    assert result.points == (200, 30, 40)


def test_ten_for_two_hundred_off_is_an_ordinary_contract() -> None:
    result = score(rules_of(), [6, 1, 4, 1], [6, 1, 5, 1])
    assert result.points == (101, 20)


def test_a_contract_of_ten_with_a_nil_partner_is_the_partner_s_bid_alone() -> None:
    result = score(rules_of(ten_for_two_hundred=True), [10, 1, "nil", 1], [10, 1, 0, 2])
    assert result.points == (300, 21)


def test_ten_for_two_hundred_and_nil_lines_follow_format_order() -> None:
    """docs/rules.md: contract points, nil results, special bids, bonuses, bag penalty."""
    result = score(rules_of(ten_for_two_hundred=True), [10, 1, "nil", 1], [10, 1, 0, 2])
    assert rules_for(result, 0) == ["nil_value", "ten_for_two_hundred"]


@pytest.mark.parametrize(("tricks", "points"), [([7, 0, 6, 0], 200), ([7, 1, 5, 0], -200)])
def test_boston(tricks: list[int], points: int) -> None:
    result = score(rules_of(boston=True), [7, 1, 6, 1], tricks)
    assert result.points[0] == points
    assert result.bags == (0, 0)
    assert rules_for(result, 0) == ["boston"]


def test_boston_in_an_individual_game_is_every_one_of_17() -> None:
    rules = resolve_rules({"preset": "cutthroat", "boston": True})
    assert score(rules, [17, 1, 1], [17, 0, 0]).points == (200, -10, -10)
    assert score(rules, [17, 1, 1], [16, 1, 0]).points == (-200, 10, -10)


def test_boston_off_a_contract_of_13_is_130() -> None:
    assert score(rules_of(), [7, 1, 6, 1], [7, 0, 6, 0]).points == (130, -20)


def test_all_tricks_bonus_on_top_of_the_bid() -> None:
    result = score(rules_of(all_tricks_bonus=100), [4, 1, 4, 1], [7, 0, 6, 0])
    assert result.points == (185, -20)
    assert result.bags == (5, 0)
    assert rules_for(result, 0) == ["contract", "overtrick_points", "all_tricks_bonus"]


def test_all_tricks_bonus_not_for_12_of_13() -> None:
    result = score(rules_of(all_tricks_bonus=100), [4, 1, 4, 1], [7, 1, 5, 0])
    assert result.points[0] == 84
    assert "all_tricks_bonus" not in rules_for(result, 0)


def test_all_tricks_bonus_with_boston() -> None:
    result = score(rules_of(all_tricks_bonus=100, boston=True), [7, 1, 6, 1], [7, 0, 6, 0])
    assert result.points == (300, -20)
    assert rules_for(result, 0) == ["boston", "all_tricks_bonus"]


def test_all_tricks_bonus_in_cutthroat() -> None:
    rules = resolve_rules({"preset": "cutthroat", "all_tricks_bonus": 100})
    assert score(rules, [12, 2, 2], [17, 0, 0]).points == (225, -20, -20)


@pytest.mark.parametrize(("value", "tricks", "points"), [(100, 0, 100), (50, 0, 50), (50, 2, -50)])
def test_nil_value(value: int, tricks: int, points: int) -> None:
    rules = resolve_rules({"preset": "cutthroat", "nil_value": value})
    result = score(rules, ["nil", 8, 7], [tricks, 10 - tricks, 7])
    assert result.points[0] == points
    assert result.bags[0] == 0
    assert rules_for(result, 0) == ["nil_value"]


@pytest.mark.parametrize(
    ("value", "tricks", "points"), [(200, 0, 200), (100, 0, 100), (100, 1, -100)]
)
def test_blind_nil_value(value: int, tricks: int, points: int) -> None:
    rules = resolve_rules({"preset": "solo", "blind_nil_value": value})
    result = score(rules, ["blind_nil", 4, 4, 4], [tricks, 5 - tricks, 4, 4])
    assert result.points[0] == points
    assert rules_for(result, 0) == ["blind_nil_value"]


def test_failed_nil_tricks_partner_count_toward_the_contract() -> None:
    result = score(rules_of(failed_nil_tricks="partner"), ["nil", 3, 4, 3], [2, 3, 3, 5])
    assert result.points == (40 + 1 - 100, 62)
    assert result.bags == (1, 2)


def test_failed_nil_tricks_none_count_for_nothing() -> None:
    result = score(rules_of(failed_nil_tricks="none"), ["nil", 3, 4, 3], [2, 3, 3, 5])
    assert result.points == (-40 - 100, 62)
    assert result.bags == (0, 2)
    made = score(rules_of(failed_nil_tricks="none"), ["nil", 3, 2, 3], [2, 3, 3, 5])
    assert made.points[0] == 21 - 100
    assert made.bags[0] == 1


def test_bags_if_partner_made_with_the_partner_set() -> None:
    result = score(rules_of(), ["nil", 3, 4, 3], [2, 3, 3, 5])
    assert result.points == (-140, 62)
    assert result.bags == (0, 2)


def test_bags_if_partner_made_with_the_partner_made() -> None:
    result = score(rules_of(), ["nil", 3, 2, 3], [2, 3, 3, 5])
    assert result.points == (20 + 1 + 2 - 100, 62)
    assert result.bags == (3, 2)
    assert "failed_nil_tricks" in rules_for(result, 0)


def test_bags_if_partner_made_with_both_partners_nil_counts_no_bags() -> None:
    result = score(rules_of(), ["nil", 3, "nil", 3], [1, 5, 2, 5], bags=[8, 0])
    assert result.points == (-200, 64)
    assert result.bags == (8, 4)


def test_partner_with_both_partners_nil_is_a_contract_of_zero() -> None:
    result = score(rules_of(failed_nil_tricks="partner"), ["nil", 3, "nil", 3], [1, 5, 2, 5])
    assert result.points == (3 - 200, 64)
    assert result.bags == (3, 4)


def test_both_partners_nil_made() -> None:
    result = score(rules_of(), ["nil", 3, "blind_nil", 3], [0, 7, 0, 6])
    assert result.points == (300, 67)
    assert result.bags == (0, 7)


def test_individual_games_treat_bags_if_partner_made_as_none() -> None:
    rules = resolve_rules({"preset": "solo", "failed_nil_tricks": "bags_if_partner_made"})
    result = score(rules, ["nil", 4, 4, 4], [1, 4, 4, 4])
    assert result.points == (-100, 40, 40, 40)
    assert result.bags == (0, 0, 0, 0)
    rules = resolve_rules({"preset": "solo", "failed_nil_tricks": "partner"})
    assert score(rules, ["nil", 4, 4, 4], [1, 4, 4, 4]).bags == (0, 0, 0, 0)


def test_zero_bid_with_min_bid_zero_is_a_contract_of_zero() -> None:
    rules = resolve_rules({"preset": "cutthroat", "min_bid": 0})
    result = score(rules, [0, 9, 7], [1, 9, 7])
    assert result.points == (1, 90, 70)
    assert result.bags == (1, 0, 0)
    assert score(rules, [0, 9, 7], [0, 10, 7]).points == (0, 91, 70)


def test_a_renege_sets_the_contract_and_fails_the_nils_of_its_unit() -> None:
    rules = rules_of(renege="penalize")
    honest = score(rules, [10, 1, 2, "nil"], [12, 1, 0, 0])
    assert honest.points == (120, 110)
    result = score(rules, [10, 1, 2, "nil"], [12, 1, 0, 0], reneged=0b10)
    assert result.points == (120, -10 - 100)
    assert result.bags == (0, 0)
    assert rules_for(result, 1) == ["renege", "nil_value"]
    assert rules_for(result, 0) == ["contract"]


def test_a_renege_by_both_units() -> None:
    result = score(rules_of(renege="penalize"), [3, 3, 3, 3], [4, 3, 3, 3], reneged=0b11)
    assert result.points == (-60, -60)
    assert result.bags == (0, 0)


def test_a_renege_in_an_individual_game_is_that_seat_alone() -> None:
    rules = resolve_rules({"preset": "cutthroat", "renege": "penalize"})
    result = score(rules, [6, "nil", 3], [6, 0, 11], reneged=0b010)
    assert result.points == (60, -100, 38)


def test_a_renege_fails_a_ten_for_two_hundred() -> None:
    rules = rules_of(renege="penalize", ten_for_two_hundred=True)
    result = score(rules, [6, 1, 4, 1], [6, 1, 4, 2], reneged=0b01)
    assert result.points == (-200, 21)


def test_previous_scores_and_bags_carry() -> None:
    result = score(rules_of(), [3, 3, 3, 3], [4, 3, 3, 3], scores=[-50, 480], bags=[2, 7])
    assert result.points == (61, 60)
    assert result.scores == (11, 540)
    assert result.bags == (3, 7)
