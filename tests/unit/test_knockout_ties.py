"""A knockout match's game ends a tie on top by its tie rule (:class:`domain.events.TieRule`):
the game decides as :func:`domain.knockout.decide` does for the same hands, and a real game
tied at its end is given to the better seed, or played on, as its rule says."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.commands import CreateGame, TakeSeat
from domain.errors import RuleViolation
from domain.events import GameCreated, GameEnded, HandScored, TieRule
from domain.game import decide, fold
from domain.knockout import MatchFormat
from domain.knockout import decide as decide_match
from domain.results import hand_scored, winners_after
from domain.shuffle import SeededDeal
from domain.state import Game
from tests.unit.random_play import play_at_random

RULES = {"preset": "two-player", "max_hands": 1}


def play(create: CreateGame, choices: int, hands: int | None = None) -> tuple[Game, list[Any]]:
    """The game played by seeded random choices until it ends (or ``hands`` are scored)."""
    rng = random.Random(choices)
    deal = SeededDeal(b"knockout ties")
    events: list[Any] = decide(None, create)
    game = fold(events)
    for place, name in enumerate(("better", "worse")):
        new = decide(game, TakeSeat(name, place), deal=deal)
        events += new
        game = fold(new, game)
    assert game is not None
    game, played = play_at_random(game, deal, rng, hands)
    events += played
    return game, events


def tied_at_its_end(ties: TieRule | None, choices: int = 1) -> tuple[Game, list[Any]]:
    """A one-deal match whose scores are level after its deal: the same deal and play as a
    game from zero, begun from the scores that level it."""
    plain = CreateGame("match", RULES, dealer=0)
    _, events = play(plain, choices)
    (scored,) = [event for event in events if isinstance(event, HandScored)]
    level = (scored.points[1], scored.points[0])
    create = CreateGame("match", RULES, dealer=0, scores=level, ties=ties)
    game, events = play(create, choices, hands=1)
    assert game.hands_played == 1
    assert game.scores[0] == game.scores[1]
    return game, events


@pytest.mark.parametrize("better", [0, 1])
def test_a_tie_at_a_matchs_end_goes_to_the_better_seed_at_once(better: int) -> None:
    game, events = tied_at_its_end(TieRule("higher_seed", better=better))
    assert game.status == "finished"
    assert game.winners == (better,)
    ended = events[-1]
    assert isinstance(ended, GameEnded)
    assert ended.scores[0] == ended.scores[1]


def test_without_a_tie_rule_a_tie_at_the_end_plays_on() -> None:
    game, _ = tied_at_its_end(None)
    assert game.status == "playing"
    assert game.tied_ends == 0


def test_extra_deals_are_played_for_a_tie_and_then_the_better_seed_wins() -> None:
    none_left, _ = tied_at_its_end(TieRule("extra_deal", extra_deals=0))
    assert (none_left.status, none_left.winners) == ("finished", (0,))
    one_more, _ = tied_at_its_end(TieRule("extra_deal", extra_deals=2))
    assert one_more.status == "playing"  # a second deal is dealt for the tie
    assert one_more.tied_ends == 1


def test_a_tie_rule_the_game_cannot_have_is_refused() -> None:
    for ties in (
        TieRule("coin_toss", 3),  # type: ignore[arg-type]
        TieRule("extra_deal", 101),
        TieRule("higher_seed", better=2),
    ):
        with pytest.raises(RuleViolation) as refused:
            decide(None, CreateGame("match", RULES, ties=ties))
        assert refused.value.code == "malformed"
    (made,) = decide(None, CreateGame("match", RULES, ties=TieRule("higher_seed")))
    assert isinstance(made, GameCreated)
    assert made.ties == TieRule("higher_seed")


@given(
    deals=st.integers(1, 4),
    extra_deals=st.integers(0, 3),
    tie_break=st.sampled_from(["extra_deal", "higher_seed"]),
    hands=st.lists(
        st.tuples(st.sampled_from([-20, 0, 10, 20]), st.sampled_from([0, 10])), max_size=9
    ),
)
def test_the_games_end_is_the_knockouts_decision_for_the_same_hands(
    deals: int, extra_deals: int, tie_break: Any, hands: list[tuple[int, int]]
) -> None:
    """Hand after hand, the game ends (and names its winner) exactly when the bracket's
    :func:`domain.knockout.decide` decides the match, seed 1 in the first unit."""
    ties = TieRule(tie_break, extra_deals)
    rules = {"preset": "two-player", "max_hands": deals, "target": 10**6}
    (created,) = decide(None, CreateGame("match", rules, ties=ties))
    game = fold([created])
    assert game is not None
    scores = (0, 0)
    for played, points in enumerate(hands, start=1):
        scores = (scores[0] + points[0], scores[1] + points[1])
        winners = winners_after(game.rules, scores, played, game.ties, game.tied_ends)
        outcome = decide_match(
            MatchFormat(deals=deals, tie_break=tie_break, extra_deals=extra_deals),
            (1, 2),
            hands[:played],
        )
        assert winners == (() if outcome.winner is None else (outcome.winner - 1,))
        if winners:
            return
        game = hand_scored(game, HandScored(played, (), (), points, scores, (0, 0)))
