"""``spades bench engine`` measures the floor of its own harness beside the two engines: the same
loop over hands of the same shape with rules that cost nothing. Its figures say how much time an
action the rules may take to match OpenSpiel, so the floor must really be the loop alone."""

from __future__ import annotations

import importlib.util

import pytest

from benchmarks.engine import hand_shape, loop_floor, run


def test_a_partnership_hands_shape_is_its_bids_then_fifty_two_cards() -> None:
    shape = hand_shape("partnership", seed=1)
    assert len(shape) >= 4 + 52  # a bid each, and a seat may first choose whether to bid blind
    assert all(size > 1 for size in shape[:4])  # a bid of 0 to 13, nil among them
    assert shape[-4:] == [1, 1, 1, 1]  # the last trick: one card each


@pytest.mark.parametrize("preset", ["solo", "two-player", "jokers-54"])
def test_every_action_of_a_hand_is_in_its_shape(preset: str) -> None:
    shape = hand_shape(preset, seed=2)
    assert shape
    assert all(size >= 1 for size in shape)
    assert shape[-1] == 1


def test_the_floor_plays_its_hands() -> None:
    assert loop_floor([3, 2, 1], hands=10, seed=1) > 0


def test_the_floor_is_faster_than_the_rules_and_leaves_them_a_budget() -> None:
    figures = run("partnership", hands=200, seed=1, rounds=2)
    assert figures.floor_hands_per_s > figures.hands_per_s
    assert figures.rules_us_per_action > 0
    if importlib.util.find_spec("pyspiel") is None:
        assert figures.budget_us_per_action is None
        assert figures.floor_ratio is None
    else:
        assert figures.budget_us_per_action is not None
        assert figures.floor_ratio is not None
        assert figures.floor_ratio > 0
