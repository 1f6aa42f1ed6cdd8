"""League standings arithmetic: points, wins and an openskill rating per player.

- **A point** is a point of the game's score: a player's points are the final scores of their
  unit (their partnership, or themselves) summed over the league games they played. Partners
  both get their partnership's score.
- **A win** is a game the player's unit won; every unit the game names as a winner (several,
  when they tie for it) counts a win.
- **A forfeit** is a game the player's unit lost by running out of time under a ``forfeit``
  clock (``GameEnded.forfeited``): a loss for that unit, a win for every other unit (the game
  names them its winners), at the scores as they stood; counted in ``forfeits`` too.
- **The rating** is openskill's Plackett-Luce model: a partnership game rates the two
  partnerships as teams of two, an individual game is a free-for-all of one-player teams. A
  game's ranks come from its end: the winners first (tied with each other), then the other
  units by final score, equal scores tied. ``ordinal`` (``mu - 3 sigma``) is the conservative
  figure to rank by.

The model is deterministic arithmetic on floats: the same games rated in the same order give
the same numbers to the last bit. The standings rate a league's games in the league's own order
(round, then table; :mod:`services.projections.standings`), whatever order their ends are read
in, so a rebuild of the read model gives exactly the numbers it had.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from openskill.models import PlackettLuce

MODEL = PlackettLuce()

Rating = tuple[float, float]
"""A player's rating: ``mu, sigma``."""


@dataclass(slots=True)
class Standing:
    """One player's record in one league."""

    points: int = 0
    wins: int = 0
    games: int = 0
    forfeits: int = 0
    mu: float = MODEL.mu
    sigma: float = MODEL.sigma
    ordinal: float = MODEL.rating().ordinal()


def unit_ranks(scores: Sequence[int], winners: Sequence[int]) -> list[int]:
    """Each unit's place in a finished game (1 is first; equal units share a place).

    >>> unit_ranks([350, 510, 120], [1])
    [2, 1, 3]
    >>> unit_ranks([500, 500], [0, 1])
    [1, 1]
    """
    keys = [(unit not in winners, -score) for unit, score in enumerate(scores)]
    return [1 + sum(other < key for other in keys) for key in keys]


def record_game(
    standings: Mapping[str, Standing],
    units: Sequence[Sequence[str]],
    scores: Sequence[int],
    winners: Sequence[int],
    forfeited: int | None = None,
) -> None:
    """Add one finished game to the standings of its players (``units``: each unit's players,
    ``scores``: each unit's final score, ``winners``: the units that won, ``forfeited``: the
    unit that lost on time, if one did)."""
    before = [[(standings[p].mu, standings[p].sigma) for p in unit] for unit in units]
    after = rate(before, scores, winners)
    for unit, players in enumerate(units):
        for player, (mu, sigma) in zip(players, after[unit], strict=True):
            standing = standings[player]
            standing.points += scores[unit]
            standing.wins += unit in winners
            standing.games += 1
            standing.forfeits += unit == forfeited
            standing.mu, standing.sigma = mu, sigma
            standing.ordinal = MODEL.rating(mu, sigma).ordinal()


def rate(
    before: Sequence[Sequence[Rating]], scores: Sequence[int], winners: Sequence[int]
) -> list[list[Rating]]:
    """The ratings of a finished game's players after it, from those they came with (each
    unit's players', ``before``), its units' final ``scores`` and the ``winners``."""
    teams = [[MODEL.rating(mu, sigma) for mu, sigma in unit] for unit in before]
    rated = MODEL.rate(teams, ranks=[float(rank) for rank in unit_ranks(scores, winners)])
    return [[(rating.mu, rating.sigma) for rating in unit] for unit in rated]


RatedGame = tuple[Sequence[Sequence[str]], Sequence[int], Sequence[int]]
"""A finished game as the ratings see it: each unit's players, each unit's final score, and
the units that won."""


def rate_in_order(games: Iterable[RatedGame]) -> dict[str, Rating]:
    """Every player's rating after ``games``, rated one after another from the start (what
    the standings projection arrives at for the same games in the same order)."""
    ratings: dict[str, Rating] = {}
    start = (MODEL.mu, MODEL.sigma)
    for units, scores, winners in games:
        before = [[ratings.get(player, start) for player in unit] for unit in units]
        after = rate(before, scores, winners)
        for players, rated in zip(units, after, strict=True):
            ratings.update(zip(players, rated, strict=True))
    return ratings
