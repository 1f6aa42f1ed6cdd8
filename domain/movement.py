"""Movements of a duplicate event: who sits where, in which round, and which boards they play.

A duplicate event deals its boards once; every table of a round plays the same boards at once
(as online duplicate does: no board has to travel), and each seat's result on a board is
compared with the results of the same seat, or the same partnership, at the other tables. So
nobody can play a board twice: a round's boards are new, and played only in that round.

What is left to choose is the seating, round by round, generated here for any field:

- **Units.** A fixed-pairs event (``pairs``) moves partnerships, which stay together; an
  individual event (``individual``) moves players, and at a partnership table the partners
  change as well. Without partnerships (solo, cutthroat, three-player, two-player) every player
  is a unit of one.
- **Byes.** Units that do not fill a table sit out: those with the fewest byes so far, the
  round's turn of the field breaking ties, so no one sits out twice before everyone has once.
- **Tables.** Two units a table (pairs at four seats, two-player): the circle method, in which
  every two units meet exactly once in a cycle. More a table: units who have met least sit
  together (greedily, then swaps between tables while a swap helps); a pair of units that met
  ``m`` times costs ``4 ** m``, so a second meeting is taken only when every seating has one.
- **Seats.** At each table, the units' directions (the table's scoring units: north-south and
  east-west, or each seat of a solo table) and, in an individual partnership event, the
  partners: the assignment whose players were compared least with those already placed in the
  same direction this round, and partnered least before.

Everything is deterministic: the same field, rules and rounds give the same movement, and the
event's own randomness (who is player 0) is the caller's.

    >>> from domain.rules import resolve_rules
    >>> plan = movement(8, resolve_rules({"preset": "partnership"}), "pairs", boards_per_round=2)
    >>> len(plan.rounds), plan.rounds[0].boards, plan.rounds[0].tables
    (3, (1, 2), ((0, 6, 1, 7), (2, 4, 3, 5)))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from itertools import combinations, permutations
from typing import Literal

import msgspec

from domain.errors import Code, RuleViolation
from domain.rules import Rules

Style = Literal["pairs", "individual"]
STYLES: tuple[Style, ...] = ("pairs", "individual")
MAX_PLAYERS = 64
"""The largest field a movement is generated for."""
MAX_ROUNDS = 200
MAX_BOARDS_PER_ROUND = 36
MEETING_COST = 4
"""Two units that met ``m`` times cost ``MEETING_COST ** m`` to seat together again."""
SWAP_PASSES = 3
"""Passes of swaps between tables a round tries after its greedy seating."""

Player = int
"""A player by its place in the event's field, from 0."""


class MovementRound(msgspec.Struct, frozen=True):
    """One round: its boards, played at every table, each table's players by seat, and the
    players who sit out."""

    number: int
    boards: tuple[int, ...]
    tables: tuple[tuple[Player, ...], ...]
    byes: tuple[Player, ...] = ()


class Movement(msgspec.Struct, frozen=True):
    """A whole event's seating. ``directions`` are the seats of each scoring unit of a table
    (:attr:`domain.table.Table.units`): a result is compared with those of the same direction."""

    players: int
    style: Style
    directions: tuple[tuple[int, ...], ...]
    rounds: tuple[MovementRound, ...]

    def direction_of(self, seat: int) -> int:
        return next(d for d, seats in enumerate(self.directions) if seat in seats)


class MovementError(RuleViolation):
    """A movement that cannot be made (``malformed``): the detail says why."""

    def __init__(self, detail: str) -> None:
        super().__init__("malformed", detail)

    def __reduce__(self) -> tuple[type[RuleViolation], tuple[Code, str]]:  # pragma: no cover
        return (RuleViolation, (self.code, self.detail))


def units_of(players: int, rules: Rules, style: Style) -> list[tuple[Player, ...]]:
    """The field as the movement moves it: partnerships ``(0, 1), (2, 3), ...`` in a pairs
    event, else each player alone. Raises :class:`MovementError` on a field that cannot play."""
    if style not in STYLES:
        raise MovementError(f"style is one of {', '.join(STYLES)}, not {style!r}")
    if style == "pairs" and not rules.partnerships:
        raise MovementError(f"preset {rules.preset!r} has no partnerships: play it individual")
    if not rules.players <= players <= MAX_PLAYERS:
        raise MovementError(
            f"a {rules.preset} event takes {rules.players} to {MAX_PLAYERS} players, not {players}"
        )
    if style == "pairs":
        if players % 2:
            raise MovementError(f"a pairs event needs an even field, not {players} players")
        return [(2 * pair, 2 * pair + 1) for pair in range(players // 2)]
    return [(player,) for player in range(players)]


def default_rounds(players: int, rules: Rules, style: Style) -> int:
    """Rounds in which every unit could meet every other once: ``units - 1`` (one more for an
    odd count) at two units a table, else ``ceil((units - 1) / (units a table - 1))``.

    >>> from domain.rules import resolve_rules
    >>> default_rounds(16, resolve_rules({"preset": "partnership"}), "individual")
    5
    """
    units = len(units_of(players, rules, style))
    size = _units_a_table(rules, style)
    if size == 2:
        return units - 1 if units % 2 == 0 else units
    return max(1, math.ceil((units - 1) / (size - 1)))


def _units_a_table(rules: Rules, style: Style) -> int:
    return len(rules.table.units) if style == "pairs" else rules.players


def movement(
    players: int,
    rules: Rules,
    style: Style,
    *,
    rounds: int | None = None,
    boards_per_round: int = 2,
) -> Movement:
    """The movement of a field of ``players`` under ``rules`` (see the module's docstring)."""
    units = units_of(players, rules, style)
    rounds = default_rounds(players, rules, style) if rounds is None else rounds
    if not 1 <= rounds <= MAX_ROUNDS:
        raise MovementError(f"rounds must be 1 to {MAX_ROUNDS}, not {rounds}")
    if not 1 <= boards_per_round <= MAX_BOARDS_PER_ROUND:
        raise MovementError(
            f"boards per round must be 1 to {MAX_BOARDS_PER_ROUND}, not {boards_per_round}"
        )
    tally = _Tally(players, len(units))
    made: list[MovementRound] = []
    for index in range(rounds):
        groups, resting = _tables(units, _units_a_table(rules, style), index, tally)
        seated = _seat_round(groups, units, rules, tally)
        byes = tuple(player for unit in resting for player in units[unit])
        first = index * boards_per_round + 1
        boards = tuple(range(first, first + boards_per_round))
        made.append(MovementRound(index + 1, boards, seated, byes))
        tally.add(groups, resting)
    return Movement(players, style, rules.table.units, tuple(made))


class _Tally:
    """What the rounds so far add up to, by unit (meetings, byes) and by player (comparisons,
    partnerships)."""

    def __init__(self, players: int, units: int) -> None:
        self.met = [[0] * units for _ in range(units)]
        self.weight = [[1] * units for _ in range(units)]
        """``MEETING_COST ** met``, kept beside ``met``."""
        self.byes = [0] * units
        self.compared = [[0] * players for _ in range(players)]
        self.partnered = [[0] * players for _ in range(players)]

    def add(self, groups: Sequence[Sequence[int]], resting: Sequence[int]) -> None:
        for group in groups:
            for a, b in combinations(group, 2):
                self.met[a][b] += 1
                self.met[b][a] += 1
                self.weight[a][b] = self.weight[b][a] = _cost(self.met[a][b])
        for unit in resting:
            self.byes[unit] += 1


def _tables(
    units: Sequence[tuple[Player, ...]], size: int, index: int, tally: _Tally
) -> tuple[list[list[int]], list[int]]:
    """The round's tables as groups of unit indexes, and the units sitting out."""
    count = len(units)
    if size == 2:
        return _circle(count, index)
    spare = count % size
    turn = (index * max(spare, 1)) % count
    line = [*range(turn, count), *range(turn)]
    resting = sorted(line, key=lambda unit: (tally.byes[unit], -line.index(unit)))[:spare]
    playing = [unit for unit in line if unit not in resting]
    groups = _greedy(playing, size, tally.weight)
    _swap(groups, tally.met, tally.weight)
    return groups, sorted(resting)


def _circle(count: int, index: int) -> tuple[list[list[int]], list[int]]:
    """Round ``index`` of the circle method: unit 0 stays, the others turn a place a round; an
    odd count adds an empty place, whose opponent sits out."""
    ring: list[int | None] = [*range(count), *([None] if count % 2 else [])]
    turn = index % (len(ring) - 1)
    others = ring[1:]
    ring = [ring[0], *others[len(others) - turn :], *others[: len(others) - turn]]
    half = len(ring) // 2
    groups: list[list[int]] = []
    resting: list[int] = []
    for a, b in zip(ring[:half], reversed(ring[half:]), strict=True):
        if a is None or b is None:
            resting.extend(unit for unit in (a, b) if unit is not None)
        else:
            groups.append([a, b])
    return groups, resting


def _cost(met: int) -> int:
    return int(MEETING_COST**met)


def _greedy(playing: Sequence[int], size: int, weight: Sequence[Sequence[int]]) -> list[list[int]]:
    """Each table opens with the first unit left and takes, one at a time, the unit that met
    those already at it least (the earlier in the round's line among equals)."""
    left = list(playing)
    groups: list[list[int]] = []
    while left:
        group = [left.pop(0)]
        against = list(weight[group[0]])
        """What each unit would cost at the table as it stands."""
        while len(group) < size:
            best = min(left, key=against.__getitem__)
            left.remove(best)
            group.append(best)
            against = [mine + theirs for mine, theirs in zip(against, weight[best], strict=True)]
        groups.append(group)
    return groups


def _swap(
    groups: list[list[int]], met: Sequence[Sequence[int]], weight: Sequence[Sequence[int]]
) -> None:
    """Swap a unit that meets someone at its table more often than the field's fewest
    meetings with a unit of another table, whenever that lowers the round's meeting cost."""
    playing = [unit for group in groups for unit in group]
    floor = min((met[a][b] for a, b in combinations(playing, 2)), default=0)
    own = {unit: _at(unit, group, weight) for group in groups for unit in group}
    """What each unit costs where it sits."""
    for _ in range(SWAP_PASSES):
        better = False
        for t1, one in enumerate(groups):
            for i in range(len(one)):
                if any(met[one[i]][other] > floor for other in one if other != one[i]):
                    t2 = _swap_out(groups, t1, i, weight, own)
                    if t2 is not None:
                        better = True
                        for unit in (*one, *groups[t2]):
                            own[unit] = _at(unit, groups[t2] if unit in groups[t2] else one, weight)
        if not better:
            return


def _at(unit: int, group: Sequence[int], weight: Sequence[Sequence[int]]) -> int:
    row = weight[unit]
    return sum(row[other] for other in group if other != unit)


def _swap_out(
    groups: list[list[int]],
    t1: int,
    i: int,
    weight: Sequence[Sequence[int]],
    own: dict[int, int],
) -> int | None:
    """Swap unit ``i`` of table ``t1`` with the first unit elsewhere for which that lowers
    the cost (what ``a`` and ``b`` cost where they sit against what they would cost swapped);
    the other table, if a swap was made."""
    one = groups[t1]
    a = one[i]
    mates = [other for other in one if other != a]
    row = weight[a]
    here = [sum(column) for column in zip(*(weight[other] for other in mates), strict=True)]
    """What each unit would cost in ``a``'s place."""
    gain = [
        cost - mine - own.get(unit, 0)
        for unit, (cost, mine) in enumerate(zip(here, row, strict=True))
    ]
    """Per unit ``b``: what a swap with ``b`` costs, less what ``a`` costs at ``b``'s table."""
    now_a = own[a]
    for t2, two in enumerate(groups):
        if t2 == t1:
            continue
        limit = now_a - sum(row[other] for other in two)
        for j, b in enumerate(two):
            if gain[b] < limit:
                one[i], two[j] = b, a
                return t2
    return None


def _seat_round(
    groups: Sequence[Sequence[int]],
    units: Sequence[tuple[Player, ...]],
    rules: Rules,
    tally: _Tally,
) -> tuple[tuple[Player, ...], ...]:
    """Each table's players by seat, the tables taken in turn: the seating whose players were
    compared least with those already placed in their direction this round (and, first,
    partnered least before)."""
    directions = rules.table.units
    direction_of = rules.table.unit_of
    unit_size = len(units[0])
    patterns = [
        (
            pattern,
            [direction_of[seat] for seat in pattern],
            [
                (p, q)
                for p, q in combinations(range(len(pattern)), 2)
                if unit_size == 1 and direction_of[pattern[p]] == direction_of[pattern[q]]
            ],
        )
        for pattern in _patterns(directions, unit_size)
    ]
    compared, partnered = tally.compared, tally.partnered
    toward = [[0] * len(compared) for _ in directions]
    """Per direction, per player: comparisons with those placed in that direction so far."""
    seated: list[tuple[Player, ...]] = []
    for group in groups:
        players = [player for unit in group for player in units[unit]]
        toward_of = [[row[player] for row in toward] for player in players]
        """Per place, per direction: what the place's player would cost there."""
        partner_cost = {
            (p, q): _cost(partnered[players[p]][players[q]])
            for p, q in combinations(range(len(players)), 2)
        }
        best: tuple[tuple[int, int], tuple[int, ...]] | None = None
        for pattern, held, partners in patterns:
            cost = (
                sum(map(partner_cost.__getitem__, partners)),
                sum(map(list.__getitem__, toward_of, held)),
            )
            if best is None or cost < best[0]:
                best = (cost, pattern)
        assert best is not None
        seats = [0] * rules.players
        for seat, player in zip(best[1], players, strict=True):
            seats[seat] = player
            row = toward[direction_of[seat]]
            row[:] = [mine + theirs for mine, theirs in zip(row, compared[player], strict=True)]
        for where in directions:
            for a, b in combinations([seats[seat] for seat in where], 2):
                partnered[a][b] += 1
                partnered[b][a] += 1
        seated.append(tuple(seats))
    _compare(seated, directions, compared)
    return tuple(seated)


def _compare(
    tables: Sequence[tuple[Player, ...]],
    directions: Sequence[Sequence[int]],
    compared: list[list[int]],
) -> None:
    """Count the round's comparisons: two players of one direction at different tables."""
    for where in directions:
        holders = [(number, table[seat]) for number, table in enumerate(tables) for seat in where]
        for (t1, a), (t2, b) in combinations(holders, 2):
            if t1 != t2:
                compared[a][b] += 1
                compared[b][a] += 1


@cache
def _patterns(directions: tuple[tuple[int, ...], ...], unit_size: int) -> list[tuple[int, ...]]:
    """The ways to seat a table, as the seat of each place of its players (its units' players
    in order): every order of the units over the directions when units are partnerships, every
    split of the players into directions otherwise (seats within a direction in place order).
    Only who holds which direction, and who partners whom, differ between them."""
    parts, width = len(directions), len(directions[0])
    if unit_size > 1:
        return [
            tuple(seat for direction in order for seat in directions[direction])
            for order in permutations(range(parts))
        ]
    found: list[tuple[int, ...]] = []
    for split in _splits(list(range(parts * width)), width, parts):
        seat_of = [0] * (parts * width)
        for direction, places in enumerate(split):
            for place, seat in zip(places, directions[direction], strict=True):
                seat_of[place] = seat
        found.append(tuple(seat_of))
    return found


def _splits(places: Sequence[int], width: int, parts: int) -> list[tuple[tuple[int, ...], ...]]:
    """Every ordered split of ``places`` into ``parts`` groups of ``width``."""
    if parts == 0:
        return [()]
    found: list[tuple[tuple[int, ...], ...]] = []
    for first in combinations(places, width):
        rest = [place for place in places if place not in first]
        for tail in _splits(rest, width, parts - 1):
            found.append((first, *tail))
    return found


class Evenness(msgspec.Struct, frozen=True):
    """How even a movement is, each figure as (fewest, most) over the pairs of players (or
    players) it concerns.

    - ``meetings``: times two units sat at one table as opponents (in different directions;
      the partners of a pairs event are one unit);
    - ``partners``: times two players partnered (an individual partnership event; else None);
    - ``comparisons``: boards on which two players (not partners of a pairs event) held the
      same direction at different tables, so their results were compared;
    - ``byes``: rounds a player sat out; ``boards``: boards a player played.
    """

    meetings: tuple[int, int]
    partners: tuple[int, int] | None
    comparisons: tuple[int, int]
    byes: tuple[int, int]
    boards: tuple[int, int]


def evenness(plan: Movement) -> Evenness:
    """Count :class:`Evenness` from the movement itself (not from the generator's tallies)."""
    n = plan.players
    width = len(plan.directions[0])
    unit_of = [player // 2 if plan.style == "pairs" else player for player in range(n)]
    units = max(unit_of) + 1
    met = [[0] * units for _ in range(units)]
    partnered = [[0] * n for _ in range(n)]
    compared = [[0] * n for _ in range(n)]
    byes = [0] * n
    boards = [0] * n
    direction_of = [plan.direction_of(seat) for seat in range(len(plan.directions) * width)]
    for one in plan.rounds:
        for player in one.byes:
            byes[player] += 1
        by_direction: list[list[tuple[int, Player]]] = [[] for _ in plan.directions]
        for number, table in enumerate(one.tables):
            for player in table:
                boards[player] += len(one.boards)
            opposed = {
                tuple(sorted((unit_of[table[s1]], unit_of[table[s2]])))
                for s1, s2 in combinations(range(len(table)), 2)
                if direction_of[s1] != direction_of[s2]
            }
            for a, b in opposed:
                met[a][b] += 1
            for direction, seats in enumerate(plan.directions):
                side = [table[seat] for seat in seats]
                by_direction[direction].extend((number, player) for player in side)
                for a, b in combinations(sorted(side), 2):
                    partnered[a][b] += 1
        for holders in by_direction:
            for (t1, a), (t2, b) in combinations(holders, 2):
                if t1 != t2:
                    compared[min(a, b)][max(a, b)] += len(one.boards)
    pairs = [(a, b) for a, b in combinations(range(n), 2) if unit_of[a] != unit_of[b]]
    unit_pairs = list(combinations(range(units), 2))
    return Evenness(
        meetings=_span([met[a][b] for a, b in unit_pairs]),
        partners=(
            _span([partnered[a][b] for a, b in pairs])
            if plan.style == "individual" and width > 1
            else None
        ),
        comparisons=_span([compared[a][b] for a, b in pairs]),
        byes=_span(byes),
        boards=_span(boards),
    )


def _span(values: Sequence[int]) -> tuple[int, int]:
    return (min(values), max(values)) if values else (0, 0)
