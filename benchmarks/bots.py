"""``spades bench bots``: bots against uniformly random players, in process, with fixed seeds.

Each game goes through :func:`domain.game.decide` and :func:`domain.game.evolve`, and every
player is shown :func:`domain.views.seat_view` as JSON and the events as its seat may see them
(:func:`domain.views.event_for`): the same views and events the API serves. A matchup puts bots
in some seats and :class:`~services.bots.strategy.RandomPlayer` in the others; a mirror puts
bots everywhere, where each side should win its fair share.

Figures per matchup: the bots' win rate with a Wilson 95% interval, and the mean score
difference (the bots' unit less the best other unit) with a normal 95% interval.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from domain.commands import CreateGame, TakeSeat, from_api
from domain.game import decide, evolve, seat_to_act
from domain.rules import resolve_rules
from domain.shuffle import SeededDeal
from domain.state import Game
from domain.table import Table, table_for
from domain.views import event_for, seat_view
from services.bots.strategy import Bot, Player, RandomPlayer

MAX_HANDS = 400
"""A game still going after this many hands is a bug in the rules or the players."""

PRESETS = (
    "partnership",
    "solo",
    "cutthroat",
    "three-player-house",
    "two-player",
    "six-player",
    "jokers-54",
)


class GameResult(msgspec.Struct, frozen=True):
    winners: tuple[int, ...]
    scores: tuple[int, ...]
    hands: int
    actions: int


class MatchupFigures(msgspec.Struct, frozen=True):
    """One matchup over ``games`` games."""

    preset: str
    bots: str
    """Which seats hold bots: ``team`` (unit 0: seats 0 and 2, or 0 and 3 of six), ``one``
    (seat 0) or ``all``."""
    games: int
    wins: int
    fair_share: float
    """The win rate of a player no better than the others: 1 / units."""
    win_rate: float
    win_low: float
    win_high: float
    score_difference: float
    difference_margin: float
    """Half the 95% interval of the mean score difference."""
    mean_hands: float
    seconds: float


def new_game(
    rules: dict[str, Any], rng: random.Random, scores: tuple[int, ...] | None = None
) -> tuple[Game, SeededDeal]:
    """A game with every seat taken and its first hand dealt, and the next hand's deal."""
    game: Game | None = None
    for event in decide(game, CreateGame("bench", rules, scores=scores)):
        game = evolve(game, event)
    assert game is not None
    for seat in range(game.rules.players):
        deal = SeededDeal(rng.randbytes(32))
        for event in decide(game, TakeSeat(f"player {seat}"), deal=deal):
            game = evolve(game, event)
    return game, SeededDeal(rng.randbytes(32))


def play_game(
    rules: dict[str, Any],
    players: Sequence[Player],
    seed: int,
    scores: tuple[int, ...] | None = None,
) -> GameResult:
    """Play one game to its end (from ``scores``, when given), each seat's actions chosen by its
    player from its view."""
    rng = random.Random(seed)
    game, deal = new_game(rules, rng, scores)
    actions = 0
    while game.status != "finished":
        if game.hands_played >= MAX_HANDS:
            raise RuntimeError(f"game of {rules} still going after {MAX_HANDS} hands")
        seat = seat_to_act(game)
        assert seat is not None
        action = players[seat].act(msgspec.to_builtins(seat_view(game, seat)))
        if action is None:
            raise RuntimeError(f"seat {seat} must act in {game.hand} but did not")
        played = game.hands_played
        for event in decide(game, from_api(seat, action), deal=deal):
            game = evolve(game, event)
            for reader, player in enumerate(players):
                player.observe(event_for(event, reader))
        if game.hands_played != played:
            deal = SeededDeal(rng.randbytes(32))
        actions += 1
    return GameResult(game.winners, game.scores, game.hands_played, actions)


def bot_seats(preset: str, bots: str) -> list[int]:
    """The seats that hold bots in a matchup."""
    players = table_for_preset(preset).players
    if bots == "all":
        return list(range(players))
    if bots == "team":
        return list(table_for_preset(preset).units[0])
    return [0]


def table_for_preset(preset: str) -> Table:
    return table_for(resolve_rules({"preset": preset}))


def run_matchup(
    preset: str,
    bots: str,
    games: int,
    seed: int,
    rules: dict[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
) -> MatchupFigures:
    """``games`` games of ``preset`` (with ``rules`` overrides), game ``i`` seeded ``seed + i``."""
    raw = {"preset": preset, **(rules or {})}
    seats = bot_seats(preset, bots)
    table = table_for_preset(preset)
    units = len(table.units)
    measured = table.unit_of[seats[0]]
    wins, differences, hands = 0, [], []
    start = time.perf_counter()
    for number in range(games):
        rng = random.Random(f"players {seed + number}")
        players: list[Player] = [
            Bot() if seat in seats else RandomPlayer(rng) for seat in range(table.players)
        ]
        result = play_game(raw, players, seed + number)
        wins += measured in result.winners
        best_other = max(s for unit, s in enumerate(result.scores) if unit != measured)
        differences.append(result.scores[measured] - best_other)
        hands.append(result.hands)
        if progress is not None:
            progress(number + 1)
    low, high = wilson_interval(wins, games)
    return MatchupFigures(
        preset=preset,
        bots=bots,
        games=games,
        wins=wins,
        fair_share=round(1 / units, 3),
        win_rate=round(wins / games, 3),
        win_low=round(low, 3),
        win_high=round(high, 3),
        score_difference=round(statistics.fmean(differences), 1),
        difference_margin=round(_margin(differences), 1),
        mean_hands=round(statistics.fmean(hands), 1),
        seconds=round(time.perf_counter() - start, 2),
    )


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (sound near 0 and 1, unlike the normal one)."""
    if trials == 0:
        return 0.0, 1.0
    rate = successes / trials
    denominator = 1 + z * z / trials
    centre = (rate + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _margin(values: list[int], z: float = 1.96) -> float:
    if len(values) < 2:
        return math.inf
    return z * statistics.stdev(values) / math.sqrt(len(values))


MATCHUPS: tuple[tuple[str, str], ...] = (
    ("partnership", "team"),
    ("solo", "one"),
    ("cutthroat", "one"),
    ("three-player-house", "one"),
    ("two-player", "one"),
    ("six-player", "team"),
    ("jokers-54", "team"),
    ("partnership", "all"),
    ("solo", "all"),
    ("cutthroat", "all"),
    ("two-player", "all"),
    ("six-player", "all"),
    ("jokers-54", "all"),
)
"""Bots against random players in every preset, then the mirrors."""


def run(
    games: int,
    seed: int,
    matchups: Sequence[tuple[str, str]] = MATCHUPS,
    progress: Callable[[MatchupFigures], None] | None = None,
) -> list[MatchupFigures]:
    """Every matchup, ``games`` games each."""
    figures = []
    for preset, bots in matchups:
        figures.append(run_matchup(preset, bots, games, seed))
        if progress is not None:
            progress(figures[-1])
    return figures
