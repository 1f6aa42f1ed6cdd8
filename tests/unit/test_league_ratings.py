"""Standings arithmetic (:mod:`services.store.ratings`): points, wins and openskill
ratings of partnership (team) and individual (free-for-all) games."""

from __future__ import annotations

import doctest
import random

import pytest
from openskill.models import PlackettLuce

import services.store.ratings
from services.store.ratings import (
    MODEL,
    RatedGame,
    Standing,
    rate_in_order,
    record_game,
    unit_ranks,
)


def fresh(*players: str) -> dict[str, Standing]:
    return {player: Standing() for player in players}


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(services.store.ratings).failed == 0


@pytest.mark.parametrize(
    ("scores", "winners", "ranks"),
    [
        ([520, 310], [0], [1, 2]),
        ([310, 520], [1], [2, 1]),
        ([500, 120, 120, -40], [0], [1, 2, 2, 4]),
        ([480, 510, 300], [0], [1, 2, 3]),  # the winner by the rules ranks first
        ([500, 500, 90], [0, 1], [1, 1, 3]),
    ],
)
def test_units_rank_winners_first_then_by_score(
    scores: list[int], winners: list[int], ranks: list[int]
) -> None:
    assert unit_ranks(scores, winners) == ranks


def test_a_partnership_game_rates_the_partners_as_a_team() -> None:
    standings = fresh("ann", "bob", "cat", "dan")
    record_game(standings, [["ann", "cat"], ["bob", "dan"]], [520, 310], [0])
    expected = PlackettLuce().rate(
        [[MODEL.rating(), MODEL.rating()], [MODEL.rating(), MODEL.rating()]], ranks=[1.0, 2.0]
    )
    for player, rating in zip(
        ["ann", "cat", "bob", "dan"], [*expected[0], *expected[1]], strict=True
    ):
        assert (standings[player].mu, standings[player].sigma) == (rating.mu, rating.sigma)
    assert standings["ann"].mu == standings["cat"].mu > 25 > standings["bob"].mu
    assert [standings[p].points for p in ("ann", "cat", "bob", "dan")] == [520, 520, 310, 310]
    assert [standings[p].wins for p in ("ann", "cat", "bob", "dan")] == [1, 1, 0, 0]
    assert all(standing.games == 1 for standing in standings.values())


def test_an_individual_game_is_a_free_for_all() -> None:
    standings = fresh("ann", "bob", "cat")
    record_game(standings, [["ann"], ["bob"], ["cat"]], [300, 510, 120], [1])
    expected = PlackettLuce().rate(
        [[MODEL.rating()], [MODEL.rating()], [MODEL.rating()]], ranks=[2.0, 1.0, 3.0]
    )
    assert [(standings[p].mu, standings[p].sigma) for p in ("ann", "bob", "cat")] == [
        (team[0].mu, team[0].sigma) for team in expected
    ]
    assert standings["bob"].mu > standings["ann"].mu > 25 > standings["cat"].mu
    bob = standings["bob"]
    assert bob.ordinal == pytest.approx(bob.mu - 3 * bob.sigma)


def test_a_shared_win_counts_for_every_winner() -> None:
    standings = fresh("ann", "bob")
    record_game(standings, [["ann"], ["bob"]], [500, 500], [0, 1])
    assert (standings["ann"].wins, standings["bob"].wins) == (1, 1)
    assert standings["ann"].mu == standings["bob"].mu == pytest.approx(25.0)


def test_ratings_start_where_the_model_starts() -> None:
    start = Standing()
    assert (start.mu, start.sigma, start.ordinal) == (25.0, 25.0 / 3, 0.0)


def partnership_games(rng: random.Random, players: list[str], count: int) -> list[RatedGame]:
    """``count`` partnership games among ``players`` at random, each won by the higher score."""
    games: list[RatedGame] = []
    for _ in range(count):
        seated = rng.sample(players, 4)
        scores = [rng.randrange(-200, 600, 10) for _ in range(2)]
        games.append(([seated[0::2], seated[1::2]], scores, [scores.index(max(scores))]))
    return games


def test_the_same_games_in_the_same_order_give_the_same_numbers_to_the_bit() -> None:
    """Rebuilding standings replays the games in the order they ended: the numbers must not
    depend on anything else (a fresh model, fresh objects)."""
    players = [f"p{n}" for n in range(6)]
    games = partnership_games(random.Random(3), players, 40)

    def replay() -> dict[str, tuple[float, float, float, int]]:
        standings = fresh(*players)
        for units, scores, winners in games:
            record_game(standings, units, scores, winners)
        return {p: (s.mu, s.sigma, s.ordinal, s.points) for p, s in standings.items()}

    first = replay()
    assert replay() == first
    standings = fresh(*players)
    for units, scores, winners in reversed(games):
        record_game(standings, units, scores, winners)
    assert {p: s.mu for p, s in standings.items()} != {p: v[0] for p, v in first.items()}


def test_rating_a_leagues_games_again_in_order_gives_what_the_standings_gave() -> None:
    """The standings that rate a league again from its history (a duplicate event's, a league
    with a voided table) reach the figures the read model reached for the same games."""
    players = [f"p{n}" for n in range(7)]
    games = partnership_games(random.Random(8), players, 30)
    standings = fresh(*players)
    for units, scores, winners in games:
        record_game(standings, units, scores, winners)
    again = rate_in_order(games)
    assert again == {p: (s.mu, s.sigma) for p, s in standings.items() if s.games}
    assert rate_in_order(games[1:]) != again
