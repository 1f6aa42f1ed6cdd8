"""Knockouts: brackets seeded by rating or by a previous stage, byes, and matches of a number of
deals or to a target score, their ties broken by a stated rule.

An entrant is a unit that plays as one: a fixed partnership (two of them at a four-seat table),
or a player of the two-player game. A match is head to head and its winner goes on; the bracket
has ``2 ** k`` places, the fewest that hold every entrant. (Three- and four-seat games of
single players, cutthroat and solo, have no head-to-head match: their events are Swiss or
duplicate stages, whose standings a knockout of partnerships or two-player games may follow.)

**Seeding.** Entrants are seeded in order, best first: by rating (:func:`seeded_by_rating`,
highest ordinal first, ties by name) or by the standings of a previous stage (:func:`top_of`,
a Swiss or duplicate stage's first ``n``). The places are filled in the standard order
(:func:`bracket_order`): seed ``s`` of a bracket of ``m`` places becomes, in one of ``2m``, the
pair ``s, 2m + 1 - s``. That is the familiar ``1-8, 4-5, 2-7, 3-6``: the two best can meet only
in the final, the best four only from the semifinals on, and every match of the first round
pairs seeds summing to the same total.

**Byes.** The places past the last entrant are empty; an entrant drawn against an empty place
goes on without playing (a bye). The byes go to the best seeds, as many as there are empty
places.

**Matches.** A :class:`MatchFormat` plays either ``deals`` hands (the highest total wins) or to a
``target`` (after the hand where some entrant reaches it, the highest total wins). A tie for
the lead is broken by the stated rule: ``extra_deal`` plays up to ``extra_deals`` more hands,
one at a time, until one entrant leads alone, then gives the match to the best seed of those
tied; ``higher_seed`` gives it to the best seed at once.

    >>> bracket_order(8)
    (1, 8, 4, 5, 2, 7, 3, 6)
    >>> [match.seeds for match in first_round(6)]
    [(1,), (4, 5), (2,), (3, 6)]
    >>> decide(MatchFormat(deals=2), (1, 2), [(50, 30), (-10, 40)]).winner
    2
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import msgspec

from domain.errors import RuleViolation

TieBreak = Literal["extra_deal", "higher_seed"]
TIE_BREAKS: tuple[TieBreak, ...] = ("extra_deal", "higher_seed")
MAX_EXTRA_DEALS = 100
"""The most hands a match plays past its end to break a tie."""
MAX_ENTRANTS = 4096


class KnockoutError(RuleViolation):
    """A bracket or a match that cannot be made (``malformed``): the detail says why."""

    def __init__(self, detail: str) -> None:
        super().__init__("malformed", detail)


class MatchFormat(msgspec.Struct, frozen=True, kw_only=True):
    """How a match is played: ``deals`` hands, or to a ``target`` score, and how a tie for the
    lead is broken."""

    deals: int | None = None
    target: int | None = None
    tie_break: TieBreak = "extra_deal"
    extra_deals: int = 3
    """Under ``extra_deal``: the most hands played past the end to break a tie."""

    def __post_init__(self) -> None:
        if (self.deals is None) == (self.target is None):
            raise KnockoutError("a match is of a number of deals or to a target score, one of them")
        if self.deals is not None and self.deals < 1:
            raise KnockoutError(f"a match of {self.deals} deals")
        if self.target is not None and self.target < 1:
            raise KnockoutError(f"a match to {self.target} points")
        if not 0 <= self.extra_deals <= MAX_EXTRA_DEALS:
            raise KnockoutError(f"{self.extra_deals} extra deals: 0 to {MAX_EXTRA_DEALS}")


class Match(msgspec.Struct, frozen=True):
    """One table of a knockout round: the seeds of its entrants (best first), its number in
    the round (from 1, in bracket order). A single seed is a bye."""

    round: int
    number: int
    seeds: tuple[int, ...]

    @property
    def bye(self) -> bool:
        return len(self.seeds) == 1


class Outcome(msgspec.Struct, frozen=True):
    """Where a match stands after the hands played: ``winner`` (a seed) once it is decided,
    and why (``deals``, ``target``, ``extra_deal``, ``higher_seed``); None: play on."""

    winner: int | None
    reason: str


def places(entrants: int) -> int:
    """The bracket's places: the least power of two that holds ``entrants``."""
    if not 2 <= entrants <= MAX_ENTRANTS:
        raise KnockoutError(f"{entrants} entrants: 2 to {MAX_ENTRANTS}")
    size = 2
    while size < entrants:
        size *= 2
    return size


def bracket_order(size: int) -> tuple[int, ...]:
    """The seeds in the order they sit in a bracket of ``size`` places: consecutive pairs are
    the first round's matches."""
    order = [1]
    while len(order) < size:
        m = len(order)
        order = [paired for seed in order for paired in (seed, 2 * m + 1 - seed)]
    if len(order) != size:
        raise KnockoutError(f"{size} places are not a power of two")
    return tuple(order)


def first_round(entrants: int) -> list[Match]:
    """The first round of a bracket of ``entrants`` seeds (1 the best): each pair of the
    bracket order without its empty place, best seed first; a pair of one is a bye."""
    order = bracket_order(places(entrants))
    pairs = [order[i : i + 2] for i in range(0, len(order), 2)]
    return [
        Match(1, number, tuple(sorted(seed for seed in pair if seed <= entrants)))
        for number, pair in enumerate(pairs, start=1)
    ]


def next_round(previous: Sequence[Match], winners: Mapping[int, int]) -> list[Match]:
    """The round after ``previous``: its matches' winners (by match number; a bye's is its
    seed), each two consecutive matches making one match of the next round."""
    if len(previous) < 2:
        raise KnockoutError("the final has no round after it")
    going_on = []
    for match in previous:
        winner = match.seeds[0] if match.bye else winners.get(match.number)
        if winner is None or winner not in match.seeds:
            raise KnockoutError(f"match {match.number} of round {match.round} has no winner")
        going_on.append(winner)
    number = previous[0].round + 1
    return [
        Match(number, index // 2 + 1, tuple(sorted(going_on[index : index + 2])))
        for index in range(0, len(going_on), 2)
    ]


def play_out(entrants: int, winner_of: Callable[[Match], int]) -> tuple[list[list[Match]], int]:
    """Every round of a bracket, each match won as ``winner_of`` says; and the champion."""
    rounds = [first_round(entrants)]
    while True:
        last = rounds[-1]
        winners = {match.number: winner_of(match) for match in last if not match.bye}
        if len(last) == 1:
            return rounds, winners.get(1, last[0].seeds[0])
        rounds.append(next_round(last, winners))


def decide(format: MatchFormat, seeds: Sequence[int], hands: Sequence[Sequence[int]]) -> Outcome:
    """The match's outcome after ``hands`` (each hand's points per entrant, in ``seeds``'
    order)."""
    if any(len(points) != len(seeds) for points in hands):
        raise KnockoutError(f"each hand scores {len(seeds)} entrants")
    totals = [sum(points[index] for points in hands) for index in range(len(seeds))]
    played = len(hands)
    if format.deals is not None:
        over, extra, reason = played >= format.deals, played - format.deals, "deals"
    else:
        assert format.target is not None
        reached = _first_reaching(hands, len(seeds), format.target)
        over = reached is not None
        extra, reason = (played - reached if reached is not None else 0), "target"
    if not over:
        return Outcome(None, "playing")
    best = max(totals)
    leaders = [seed for seed, total in zip(seeds, totals, strict=True) if total == best]
    if len(leaders) == 1:
        return Outcome(leaders[0], reason if extra == 0 else "extra_deal")
    if format.tie_break == "extra_deal" and extra < format.extra_deals:
        return Outcome(None, "tied")
    return Outcome(min(leaders), "higher_seed")


def _first_reaching(hands: Sequence[Sequence[int]], entrants: int, target: int) -> int | None:
    """How many hands had been played when some entrant's total first reached ``target``."""
    totals = [0] * entrants
    for played, points in enumerate(hands, start=1):
        totals = [total + gained for total, gained in zip(totals, points, strict=True)]
        if max(totals) >= target:
            return played
    return None


def seeded_by_rating(ratings: Mapping[str, float]) -> list[str]:
    """Entrants best first: the highest rating (an openskill ordinal), then by name."""
    return sorted(ratings, key=lambda name: (-ratings[name], name))


def top_of(standings: Sequence[str], top: int) -> list[str]:
    """The first ``top`` of a previous stage's standings (Swiss or duplicate), in order: the
    knockout's seeds."""
    if not 2 <= top <= len(standings):
        raise KnockoutError(f"the top {top} of {len(standings)} entrants")
    if len(set(standings)) != len(standings):
        raise KnockoutError("an entrant stands twice in the standings")
    return list(standings[:top])
