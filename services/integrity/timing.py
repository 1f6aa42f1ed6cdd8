"""``decision_times``: two opponents whose thinking moves together, hand by hand.

Players who talk out of band (a call, a chat beside the table) slow down together: one waits
while the other reads out a hand or asks what to lead. Honest opponents share slow hands too
(a hard deal, a slow network, a table's own pace), so the signal compares a pair with the
field, never with zero:

1. Each decision's time (from the commit before it at the table to the seat's own, seconds)
   is taken on a log scale, and each player's times are centred on that player's own mean and
   scaled by its spread: a slow player is not suspect for being slow.
2. A player's **pace** in a hand is the mean of its scaled times there.
3. For every two opponents who shared at least :data:`MIN_SHARED_HANDS` hands with another
   seat at the table, ``r`` is the **partial correlation** of their paces over those hands
   given the mean pace of the table's other seats: what the whole table shares (a hard deal,
   a slow link) is taken out, what the two share alone is left. Fisher's ``z = atanh(r)``
   makes the ``r`` of different sample sizes comparable.
4. The pair's effect is its ``z`` above the field's (the mean ``z`` of every pair of
   opponents), and its p-value the upper tail of ``(z - field) x sqrt(n - 3)``.

It reads only clocked play worth reading: a hand where a seat was played by the service (a
timeout, an away seat) carries no decision of that player, and is left out for that seat.
A pair flagged here has moved together more than opponents do; it is not proof of talking,
only a reason to look at the hands listed, the slowest they shared first.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Protocol

import msgspec

from services.integrity.significance import normal_greater

MIN_SHARED_HANDS = 10
"""Fewer hands shared than this say nothing about a pair: it is left out."""
SHORTEST_S = 0.05
"""Times below this are taken as this (a log scale has no zero)."""


Shared = tuple[float, float, float, tuple[str, int]]
"""A hand two opponents shared: the first's pace, the second's, the other seats' mean pace,
and the hand (game, number)."""


class TimedHand(Protocol):
    """A finished hand's decision times (:class:`~.signals.HandFacts` is one): who sat in each
    seat, which seats were partners, and each seat's own decisions in seconds (empty for a
    seat the service played, none at all where the times are not known)."""

    @property
    def game_id(self) -> str: ...
    @property
    def hand(self) -> int: ...
    @property
    def players(self) -> tuple[str, ...]: ...
    @property
    def units(self) -> tuple[tuple[int, ...], ...]: ...
    @property
    def seconds(self) -> tuple[tuple[float, ...], ...]: ...


class TimingSignal(msgspec.Struct, frozen=True, kw_only=True):
    """One pair's ``decision_times`` figures: ``observed`` is its ``r``, ``expected`` the
    field's ``r`` (back from the mean ``z``), ``effect`` the difference of the two ``z``."""

    players: tuple[str, str]
    observed: float
    expected: float
    effect: float
    count: int
    p_value: float
    evidence: list[tuple[str, int]]
    """The shared hands, both slowest first: (game, hand)."""


def decision_times(hands: Iterable[TimedHand]) -> list[TimingSignal]:
    """The signal of every two opponents who shared enough timed hands (see the module)."""
    hands = [hand for hand in hands if hand.seconds]
    scale = _scales(hands)
    paces: dict[tuple[str, str], list[Shared]] = defaultdict(list)
    for hand in hands:
        pace = {
            hand.players[seat]: statistics.fmean(scale[hand.players[seat]](t) for t in times)
            for seat, times in enumerate(hand.seconds)
            if times and hand.players[seat] in scale
        }
        for first, second in combinations(range(len(hand.players)), 2):
            if _partners(hand, first, second):
                continue
            a, b = sorted((hand.players[first], hand.players[second]))
            others = [pace[p] for p in hand.players if p not in (a, b) and p in pace]
            if a in pace and b in pace and a != b and others:
                where = (hand.game_id, hand.hand)
                paces[(a, b)].append((pace[a], pace[b], statistics.fmean(others), where))
    measured = {
        pair: (_fisher_z(shared), len(shared))
        for pair, shared in paces.items()
        if len(shared) >= MIN_SHARED_HANDS
    }
    if len(measured) < 2:
        return []
    field_z = statistics.fmean(z for z, _ in measured.values())
    signals = []
    for pair, (z, count) in sorted(measured.items()):
        slowest = sorted(paces[pair], key=lambda shared: -(shared[0] + shared[1] - 2 * shared[2]))
        signals.append(
            TimingSignal(
                players=pair,
                observed=math.tanh(z),
                expected=math.tanh(field_z),
                effect=z - field_z,
                count=count,
                p_value=normal_greater((z - field_z) * math.sqrt(count - 3)),
                evidence=[where for _, _, _, where in slowest],
            )
        )
    return signals


def _partners(hand: TimedHand, first: int, second: int) -> bool:
    return any(first in unit and second in unit for unit in hand.units)


def _scales(hands: Sequence[TimedHand]) -> dict[str, _Scale]:
    """Each player's own centring and spread of log decision times, over every hand."""
    logs: dict[str, list[float]] = defaultdict(list)
    for hand in hands:
        for seat, times in enumerate(hand.seconds):
            logs[hand.players[seat]].extend(math.log(max(t, SHORTEST_S)) for t in times)
    return {
        player: _Scale(statistics.fmean(values), statistics.pstdev(values) or 1.0)
        for player, values in logs.items()
        if len(values) >= 2
    }


class _Scale:
    __slots__ = ("centre", "spread")

    def __init__(self, centre: float, spread: float) -> None:
        self.centre = centre
        self.spread = spread

    def __call__(self, seconds: float) -> float:
        return (math.log(max(seconds, SHORTEST_S)) - self.centre) / self.spread


def _fisher_z(shared: Sequence[Shared]) -> float:
    """``atanh`` of the partial correlation of two paces over shared hands given the others'
    pace (0 where a pace does not vary), held inside ``(-1, 1)`` so that a line stays finite."""
    table = [other for _, _, other, _ in shared]
    try:
        firsts = _residuals([a for a, _, _, _ in shared], table)
        seconds = _residuals([b for _, b, _, _ in shared], table)
        r = statistics.correlation(firsts, seconds)
    except statistics.StatisticsError:
        return 0.0
    return math.atanh(max(-0.999999, min(0.999999, r)))


def _residuals(paces: Sequence[float], table: Sequence[float]) -> list[float]:
    """What of a player's paces the table's pace does not explain (a least-squares line)."""
    slope, intercept = statistics.linear_regression(table, paces)
    return [pace - (intercept + slope * other) for pace, other in zip(paces, table, strict=True)]
