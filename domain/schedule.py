"""Who sits at which table in a league round: round robin where it fits, Swiss pairing otherwise.

Every function here is pure and deterministic: the same players, past rounds and ranking always
give the same seating. The only randomness a league has is the seed that shuffled its players
once, when it was created (:mod:`domain.league`); here ties are broken by that order.

- **Round robin, two-player tables**: the circle method. Player 0 stays put and the others turn
  one place a round, so in ``n - 1`` rounds (``n`` when ``n`` is odd) every pair meets exactly
  once; with an odd count the player drawn against the empty place has the bye.
- **Round robin, larger tables**: no perfect schedule exists for most counts, so each round
  seats players so that those who have met least sit together (a greedy seating, then swaps
  between tables while a swap helps). A pair that met ``m`` times costs ``4 ** m``, so a third
  meeting is avoided far more than a second: the meetings stay as even as the counts allow.
- **Swiss**: players in ranking order; the top one takes the highest-ranked others they have not
  met, and so on down, backtracking when the players left cannot be seated without a repeat. If
  every seating repeats a meeting (or the search runs past :data:`SEARCH_BUDGET` tries) the
  round is seated as the larger round robin tables are, in ranking order.
- **Byes**: when the players do not divide into tables, the players with the fewest byes so
  far sit out; among them the lowest-ranked (Swiss) or the last in the round's turn of the
  league order (round robin). So byes rotate: no one has two more than anyone else.
- **Partnerships**: at a partnership table, the partners are the split of its players into
  pairs that has partnered least before (partners face each other: seats 0 and 2, 1 and 3 of
  four; 0 and 3, 1 and 4, 2 and 5 of six).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from itertools import combinations, product
from typing import Literal

import msgspec

Pairing = Literal["round_robin", "swiss"]

SEARCH_BUDGET = 20_000
"""Candidate tables a Swiss search tries before it settles for fewest repeats."""
SWAP_BUDGET = 100_000
"""Swaps between tables weighed in one round before the seating is taken as it stands."""
MEETING_COST = 4
"""A pair that met ``m`` times costs ``MEETING_COST ** m`` to seat together again."""


class Seating(msgspec.Struct, frozen=True):
    """One round: each table's players by seat, and the players who sit out."""

    tables: tuple[tuple[str, ...], ...]
    byes: tuple[str, ...] = ()


class Encounters:
    """What the past rounds add up to: who met whom, who partnered whom, who sat out."""

    def __init__(self, past: Iterable[Seating], partnerships: bool) -> None:
        self.meetings: dict[tuple[str, str], int] = {}
        self.partnerships: dict[tuple[str, str], int] = {}
        self.byes: dict[str, int] = {}
        for seating in past:
            for table in seating.tables:
                for pair in combinations(table, 2):
                    _count(self.meetings, pair)
                if partnerships:
                    for pair in _facing(table):
                        _count(self.partnerships, pair)
            for player in seating.byes:
                self.byes[player] = self.byes.get(player, 0) + 1

    def met(self, a: str, b: str) -> int:
        """How many times ``a`` and ``b`` sat at one table."""
        return self.meetings.get(_pair(a, b), 0)

    def partnered(self, a: str, b: str) -> int:
        return self.partnerships.get(_pair(a, b), 0)


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _count(counts: dict[tuple[str, str], int], pair: tuple[str, str]) -> None:
    key = _pair(*pair)
    counts[key] = counts.get(key, 0) + 1


def rounds_to_meet_everyone(players: int, size: int) -> int:
    """The fewest rounds in which every player could meet every other at a table of ``size``.

    >>> rounds_to_meet_everyone(8, 2), rounds_to_meet_everyone(7, 2), rounds_to_meet_everyone(8, 4)
    (7, 7, 3)
    """
    if size == 2:
        return players - 1 if players % 2 == 0 else players
    return math.ceil((players - 1) / (size - 1))


def choose_pairing(players: int, size: int, rounds: int | None) -> Pairing:
    """Round robin where it fits: when the league has the rounds for everyone to meet everyone
    (or no last round at all); Swiss when it has fewer, so that its few rounds pair players of
    like standing rather than whoever a partial round robin happens to bring together."""
    if rounds is None or rounds >= rounds_to_meet_everyone(players, size):
        return "round_robin"
    return "swiss"


def seat_round(
    pairing: Pairing,
    order: Sequence[str],
    size: int,
    past: Sequence[Seating],
    *,
    partnerships: bool = False,
    ranking: Sequence[str] | None = None,
) -> Seating:
    """The seating of the round after ``past``.

    ``order`` is the league's order of its players; ``ranking`` (Swiss only) the players best
    first, by the standings so far.
    """
    if len(order) < size:
        raise ValueError(f"{len(order)} players cannot fill a table of {size}")
    if pairing == "round_robin" and size == 2:
        return circle_round(order, len(past))
    encounters = Encounters(past, partnerships)
    line = _line(pairing, order, len(past), ranking)
    byes = _byes(line, len(line) % size, encounters)
    playing = [player for player in line if player not in byes]
    tables: Sequence[Sequence[str]] | None = None
    if pairing == "swiss":
        tables = _without_repeats(playing, size, encounters)
    if tables is None:
        cost = _Cost(playing, size, encounters, swiss=pairing == "swiss")
        tables = _seat_cheaply(playing, size, cost)
    arranged = tuple(_arrange(table, encounters, partnerships) for table in tables)
    return Seating(arranged, tuple(player for player in line if player in byes))


def _line(
    pairing: Pairing, order: Sequence[str], played: int, ranking: Sequence[str] | None
) -> list[str]:
    """The players in the order the round is seated in: the ranking (Swiss), or the league's
    order turned by one place a round (round robin), so that each round starts elsewhere."""
    if pairing == "swiss":
        line = list(ranking if ranking is not None else order)
        if sorted(line) != sorted(order):
            raise ValueError("the ranking must hold every player of the league once")
        return line
    turn = played % len(order)
    return [*order[turn:], *order[:turn]]


def circle_round(order: Sequence[str], index: int) -> Seating:
    """Round ``index`` (from 0) of the circle method for two-player tables.

    >>> circle_round(["a", "b", "c", "d"], 0).tables
    (('a', 'd'), ('b', 'c'))
    >>> circle_round(["a", "b", "c"], 1)
    Seating(tables=(('a', 'c'),), byes=('b',))
    """
    ring: list[str | None] = list(order)
    if len(ring) % 2:
        ring.append(None)
    turn = index % (len(ring) - 1)
    others = ring[1:]
    ring = [ring[0], *others[len(others) - turn :], *others[: len(others) - turn]]
    half = len(ring) // 2
    tables: list[tuple[str, ...]] = []
    byes: list[str] = []
    for a, b in zip(ring[:half], reversed(ring[half:]), strict=True):
        if a is None or b is None:
            byes.extend(player for player in (a, b) if player is not None)
        else:
            tables.append((a, b))
    return Seating(tuple(tables), tuple(byes))


def _byes(line: Sequence[str], count: int, encounters: Encounters) -> set[str]:
    """The ``count`` players with the fewest byes, the last of ``line`` first among equals."""
    if not count:
        return set()
    position = {player: index for index, player in enumerate(line)}
    due = sorted(line, key=lambda player: (encounters.byes.get(player, 0), -position[player]))
    return set(due[:count])


def _without_repeats(
    ranked: Sequence[str], size: int, encounters: Encounters
) -> list[tuple[str, ...]] | None:
    """Tables in ranking order in which no two players have met before, or None if there is no
    such seating (or it was not found within :data:`SEARCH_BUDGET` tries).

    A depth-first search with its own stack (a league may have more tables than Python has
    stack frames): each table starts with the best-ranked player left and takes, in ranking
    order, players who have met no one at it yet; when a table cannot be filled, the last
    choice made is taken back and the next candidate tried.
    """
    tries = SEARCH_BUDGET
    tables: list[list[str]] = [[ranked[0]]]
    pools: list[Sequence[str]] = [ranked[1:]]
    """Per table: the players left when it was started, its first excepted."""
    chosen: list[list[int]] = [[]]
    """Per table: where in its pool each player after the first was taken."""
    candidate = 0
    while True:
        table, pool = tables[-1], pools[-1]
        if len(table) == size:
            left = [player for player in pool if player not in table]
            if not left:
                return [tuple(table) for table in tables]
            tables.append([left[0]])
            pools.append(left[1:])
            chosen.append([])
            candidate = 0
            continue
        for index in range(candidate, len(pool)):
            tries -= 1
            if tries < 0:
                return None
            if not any(encounters.met(pool[index], player) for player in table):
                table.append(pool[index])
                chosen[-1].append(index)
                candidate = index + 1
                break
        else:
            while not chosen[-1]:  # only its first player: the table before must change
                tables.pop()
                pools.pop()
                chosen.pop()
                if not tables:
                    return None
            tables[-1].pop()
            candidate = chosen[-1].pop() + 1


class _Cost:
    """What seating two players together costs: ``MEETING_COST ** m`` for a pair that met ``m``
    times and, in a Swiss round, the distance between their places in the ranking, scaled so
    that one meeting fewer always outweighs any change of distance."""

    def __init__(
        self, line: Sequence[str], size: int, encounters: Encounters, *, swiss: bool
    ) -> None:
        self.encounters = encounters
        self.place = {player: index for index, player in enumerate(line)} if swiss else None
        self.scale = 2 * size * len(line) if swiss else 1

    def pair(self, a: str, b: str) -> int:
        cost: int = MEETING_COST ** self.encounters.met(a, b) * self.scale
        if self.place is not None:
            cost += abs(self.place[a] - self.place[b])
        return cost

    def has_repeat(self, table: Sequence[str]) -> bool:
        return any(self.encounters.met(a, b) for a, b in combinations(table, 2))

    def joining(self, player: str, others: Iterable[str]) -> int:
        return sum(self.pair(player, other) for other in others)

    def swap_gain(self, one: Sequence[str], other: Sequence[str], a: int, b: int) -> int:
        """How much the cost falls if ``one[a]`` and ``other[b]`` change tables."""
        x, y = one[a], other[b]
        stay_one = [player for k, player in enumerate(one) if k != a]
        stay_other = [player for k, player in enumerate(other) if k != b]
        before = self.joining(x, stay_one) + self.joining(y, stay_other)
        after = self.joining(y, stay_one) + self.joining(x, stay_other)
        return before - after


def _seat_cheaply(line: Sequence[str], size: int, cost: _Cost) -> list[list[str]]:
    """Tables of low cost: each starts with the first player left in ``line`` and takes, one at a
    time, the player who adds the least cost (the earliest in ``line`` among equals); then two
    players of different tables change places while that lowers the cost (within
    :data:`SWAP_BUDGET` swaps weighed)."""
    left = list(line)
    tables: list[list[str]] = []
    while left:
        table = [left.pop(0)]
        while len(table) < size:
            best = min(range(len(left)), key=lambda i: cost.joining(left[i], table))
            table.append(left.pop(best))
        tables.append(table)
    _swap_while_it_helps(tables, cost)
    return tables


def _swap_while_it_helps(tables: list[list[str]], cost: _Cost) -> None:
    """Move players between tables while that lowers the cost. Only a table where two players
    have met before gives up a player: elsewhere the greedy seating already did its best."""
    budget = SWAP_BUDGET
    improved = True
    while improved:
        improved = False
        for one in [table for table in tables if cost.has_repeat(table)]:
            for other in tables:
                if other is one:
                    continue
                for a, b in product(range(len(one)), range(len(other))):
                    if cost.swap_gain(one, other, a, b) > 0:
                        one[a], other[b] = other[b], one[a]
                        improved = True
                budget -= len(one) * len(other)
                if budget <= 0:
                    return


def _arrange(table: Sequence[str], encounters: Encounters, partnerships: bool) -> tuple[str, ...]:
    """Seat a table: at a partnership table, the split into partners that has partnered least
    (partners facing each other; the split as chosen first among equals); otherwise in the order
    chosen."""
    if not partnerships:
        return tuple(table)
    as_chosen = _facing(table)
    splits = [as_chosen, *(split for split in _pairings(table) if split != as_chosen)]
    best = min(splits, key=lambda split: sum(encounters.partnered(*pair) for pair in split))
    return tuple(pair[0] for pair in best) + tuple(pair[1] for pair in best)


def _facing(table: Sequence[str]) -> list[tuple[str, str]]:
    """The partners of a partnership table as seated: each seat and the one facing it."""
    half = len(table) // 2
    return [(table[seat], table[seat + half]) for seat in range(half)]


def _pairings(players: Sequence[str]) -> Iterator[list[tuple[str, str]]]:
    """Every split of ``players`` into pairs, each pair and the split in the players' order."""
    if not players:
        yield []
        return
    first, rest = players[0], players[1:]
    for k, other in enumerate(rest):
        for split in _pairings([*rest[:k], *rest[k + 1 :]]):
            yield [(first, other), *split]
