"""Knockouts (domain.knockout): for every field of 2 to 64 entrants, the bracket seats everyone
once, gives its byes to the best seeds, keeps the best two apart until the final (the best four
until the semifinals), and played out with any results crowns one champion in ``log2`` rounds;
matches of deals or to a target end when they should, and a tie is broken by the stated rule."""

from __future__ import annotations

import doctest
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import domain.knockout
from domain.knockout import (
    KnockoutError,
    Match,
    MatchFormat,
    bracket_order,
    decide,
    first_round,
    places,
    play_out,
    seeded_by_rating,
    top_of,
)

FIELDS = range(2, 65)


def test_the_module_s_examples_hold() -> None:
    assert doctest.testmod(domain.knockout).failed == 0


@pytest.mark.parametrize("entrants", FIELDS)
def test_the_first_round_seats_everyone_once_and_gives_the_byes_to_the_best(entrants: int) -> None:
    matches = first_round(entrants)
    seated = [seed for match in matches for seed in match.seeds]
    assert sorted(seated) == list(range(1, entrants + 1))
    size = places(entrants)
    assert size // 2 < entrants <= size
    assert len(matches) == size // 2
    byes = sorted(match.seeds[0] for match in matches if match.bye)
    assert byes == list(range(1, size - entrants + 1))
    for match in matches:
        assert 1 <= len(match.seeds) <= 2
        assert list(match.seeds) == sorted(match.seeds)
    full = [match for match in matches if not match.bye]
    assert all(sum(match.seeds) == size + 1 for match in full), "1 v N, 2 v N-1, ..."


@pytest.mark.parametrize("size", [2**k for k in range(1, 8)])
def test_the_best_seeds_meet_as_late_as_they_can(size: int) -> None:
    order = bracket_order(size)
    assert sorted(order) == list(range(1, size + 1))
    for depth in range(1, int(math.log2(size)) + 1):
        parts = 2**depth  # the bracket's subtrees at this depth
        if parts > size:
            break
        width = size // parts
        tops = {min(order[i : i + width]) for i in range(0, size, width)}
        # the best `parts` seeds each lead a subtree of their own: none meets another before
        assert tops == set(range(1, parts + 1))


@pytest.mark.parametrize("entrants", FIELDS)
def test_favourites_winning_every_match_meet_as_seeded(entrants: int) -> None:
    rounds, champion = play_out(entrants, lambda match: match.seeds[0])
    assert champion == 1
    assert len(rounds) == int(math.log2(places(entrants)))
    assert rounds[-1] == [Match(len(rounds), 1, (1, 2))]
    if entrants >= 4:
        assert sorted(match.seeds for match in rounds[-2]) == [(1, 4), (2, 3)]


@given(st.integers(2, 64), st.randoms(use_true_random=False))
def test_any_results_crown_one_champion_and_knock_each_entrant_out_once(
    entrants: int, rng: random.Random
) -> None:
    rounds, champion = play_out(entrants, lambda match: rng.choice(match.seeds))
    beaten: list[int] = []
    for number, matches in enumerate(rounds, start=1):
        assert all(match.round == number for match in matches)
        assert [match.number for match in matches] == list(range(1, len(matches) + 1))
        here = [seed for match in matches for seed in match.seeds]
        assert len(here) == len(set(here)), "nobody plays twice in a round"
        assert not set(here) & set(beaten), "nobody knocked out plays again"
        nxt = rounds[number] if number < len(rounds) else None
        going_on = {seed for match in nxt for seed in match.seeds} if nxt else {champion}
        beaten += [seed for seed in here if seed not in going_on]
    assert sorted([*beaten, champion]) == list(range(1, entrants + 1))


def test_a_match_of_deals_ends_after_them_and_a_tie_plays_on_then_goes_to_the_better_seed() -> None:
    two = MatchFormat(deals=2)
    assert decide(two, (3, 6), [(50, 30)]).winner is None
    assert decide(two, (3, 6), [(50, 30), (20, 80)]) == domain.knockout.Outcome(6, "deals")
    tied = [(50, 30), (30, 50)]
    assert decide(two, (3, 6), tied).reason == "tied"
    assert decide(two, (3, 6), [*tied, (10, 40)]) == domain.knockout.Outcome(6, "extra_deal")
    still = [*tied, (20, 20), (20, 20), (20, 20)]  # three extra deals, all tied
    assert decide(two, (3, 6), still) == domain.knockout.Outcome(3, "higher_seed")
    at_once = MatchFormat(deals=2, tie_break="higher_seed")
    assert decide(at_once, (3, 6), tied) == domain.knockout.Outcome(3, "higher_seed")


def test_a_match_to_a_target_ends_on_the_hand_that_reaches_it() -> None:
    to_200 = MatchFormat(target=200)
    assert decide(to_200, (1, 2), [(120, 90)]).winner is None
    # both pass the target on one hand: the higher total wins
    assert decide(to_200, (1, 2), [(120, 90), (90, 130)]) == domain.knockout.Outcome(2, "target")
    level = [(120, 90), (80, 110)]  # 200 each
    assert decide(to_200, (1, 2), level).reason == "tied"
    assert decide(to_200, (1, 2), [*level, (-10, 30)]).winner == 2


def test_seeds_come_from_ratings_or_a_previous_stage() -> None:
    assert seeded_by_rating({"bea": 20.0, "ada": 25.5, "cy": 20.0}) == ["ada", "bea", "cy"]
    assert top_of(["ada", "bea", "cy", "di"], 2) == ["ada", "bea"]
    with pytest.raises(KnockoutError):
        top_of(["ada", "bea"], 3)
    with pytest.raises(KnockoutError):
        top_of(["ada", "ada", "bea"], 2)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"deals": 2, "target": 200},
        {"deals": 0},
        {"target": -5},
        {"deals": 3, "extra_deals": 101},
    ],
)
def test_a_match_format_says_what_is_wrong_with_it(options: dict[str, int]) -> None:
    with pytest.raises(KnockoutError) as refused:
        MatchFormat(**options)  # type: ignore[arg-type]
    assert refused.value.code == "malformed"


def test_a_bracket_needs_two_entrants_and_a_winner_for_every_match() -> None:
    with pytest.raises(KnockoutError):
        first_round(1)
    with pytest.raises(KnockoutError):
        domain.knockout.next_round(first_round(4), {1: 1})  # match 2 undecided
