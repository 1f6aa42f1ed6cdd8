"""Matchpoints of a duplicate event: each result on a board against the same seats elsewhere.

On every board, each side's result is its **score delta**: its points less its opponents'
(with more than two sides, ``(n - 1) x own - sum of the others'``, which orders the sides as
their lead over the average of the others does). A delta is compared with the deltas of the
same direction (the same partnership's seats, or the same seat of a solo or cutthroat table)
at every other table that played the board: **1 matchpoint for each result beaten, 1/2 for
each tie**, so the ``n`` results of a direction share ``n (n - 1) / 2`` matchpoints.

A board played fewer times than the most (``N``) is scaled by **Neuberg's formula**,
``(mp + 1/2) x N / n - 1/2``, as if it had been played ``N`` times; every board then has a top
of ``N - 1``, and a side's **percentage** is its matchpoints over its tops.

How a hand's sets and bags count is the event's **convention**:

- ``as_scored``: the points the table scored, sets and bags as its rules count them;
- ``transferred`` (Card Game Academy's duplicate): a set scores its points for the other
  sides rather than against the side set, and each bag is -1 to the side taking it and +1 to
  each other side.

    >>> from fractions import Fraction
    >>> matchpoints([420, 100, 100, -50])
    (Fraction(3, 1), Fraction(3, 2), Fraction(3, 2), Fraction(0, 1))
    >>> neuberg(Fraction(2), played=3, most=4)
    Fraction(17, 6)
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

import msgspec

Convention = Literal["as_scored", "transferred"]
CONVENTIONS: tuple[Convention, ...] = ("as_scored", "transferred")
HALF = Fraction(1, 2)


class ResultsError(ValueError):
    """Board results that cannot be scored: the message names the board and the table."""


class SideResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One side of a table on one board: its players, its points for the hand, and of those
    points what it lost for being set (``set``, a positive number) and its ``bags``."""

    players: tuple[str, ...]
    points: int
    set: int = 0
    bags: int = 0


class TableResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A table's result on a board: its sides in direction order (north-south first)."""

    table: str
    sides: tuple[SideResult, ...]


class BoardResults(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    board: int
    tables: tuple[TableResult, ...]


class EventResults(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Every board's results, and how they are scored."""

    boards: tuple[BoardResults, ...]
    convention: Convention = "as_scored"
    overtrick_points: int = 1
    """Points a bag scored at the table (``Rules.overtrick_points``): ``transferred`` takes
    them back before it counts the bag -1."""


class CrossRow(msgspec.Struct, frozen=True):
    """One table's side on a board, as the cross-table shows it."""

    table: str
    direction: int
    players: tuple[str, ...]
    value: int
    """The side's points under the convention."""
    delta: int
    matchpoints: Fraction
    """After Neuberg, on a top of ``top``."""
    top: int


class CrossTable(msgspec.Struct, frozen=True):
    """A board across every table that played it."""

    board: int
    played: int
    rows: tuple[CrossRow, ...]


class Standing(msgspec.Struct, frozen=True):
    players: tuple[str, ...]
    boards: int
    matchpoints: Fraction
    top: int
    percentage: Fraction | None
    """``100 x matchpoints / top``; None when there was nothing to compare with."""


def matchpoints(deltas: Sequence[int]) -> tuple[Fraction, ...]:
    """Each result's matchpoints against the others: 1 per result beaten, 1/2 per tie (counted
    in halves, the result itself once as a tie, taken back)."""
    return tuple(
        Fraction(sum(2 if mine > other else 1 if mine == other else 0 for other in deltas) - 1, 2)
        for mine in deltas
    )


def neuberg(points: Fraction, *, played: int, most: int) -> Fraction:
    """Matchpoints of a board played ``played`` times scaled to a board played ``most``."""
    if played == most:
        return points
    return (points + HALF) * Fraction(most, played) - HALF


def values(sides: Sequence[SideResult], convention: Convention, overtrick: int) -> list[int]:
    """Each side's points for the hand under ``convention``."""
    if convention == "as_scored":
        return [side.points for side in sides]
    given = [side.set + side.bags for side in sides]
    total = sum(given)
    return [
        side.points + side.set - side.bags * overtrick - side.bags + (total - given[index])
        for index, side in enumerate(sides)
    ]


def deltas(points: Sequence[int]) -> list[int]:
    """Each side's score delta: ``(n - 1) x own - sum of the others'`` (own - other for two)."""
    total = sum(points)
    count = len(points)
    return [(count - 1) * own - (total - own) for own in points]


def cross_tables(results: EventResults) -> tuple[CrossTable, ...]:
    """Every board across its tables, matchpointed per direction, Neuberg where a board was
    played fewer times than the most."""
    _check(results)
    most = max(len(board.tables) for board in results.boards)
    made: list[CrossTable] = []
    for board in results.boards:
        played = len(board.tables)
        scored = [
            values(table.sides, results.convention, results.overtrick_points)
            for table in board.tables
        ]
        differences = [deltas(points) for points in scored]
        rows: list[CrossRow] = []
        for direction in range(len(board.tables[0].sides)):
            column = [difference[direction] for difference in differences]
            for index, points in enumerate(matchpoints(column)):
                table = board.tables[index]
                rows.append(
                    CrossRow(
                        table.table,
                        direction,
                        table.sides[direction].players,
                        scored[index][direction],
                        column[index],
                        neuberg(points, played=played, most=most),
                        most - 1,
                    )
                )
        made.append(CrossTable(board.board, played, tuple(rows)))
    return tuple(made)


def standings(crosses: Sequence[CrossTable]) -> tuple[Standing, ...]:
    """Each side (a fixed partnership, or a player: an individual event's player takes its
    side's matchpoints) by matchpoints over tops, best first."""
    totals: dict[tuple[str, ...], list[Fraction | int]] = {}
    for cross in crosses:
        for row in cross.rows:
            for who in _entrants(row.players, crosses):
                mine = totals.setdefault(who, [0, Fraction(), 0])
                mine[0] = int(mine[0]) + 1
                mine[1] = Fraction(mine[1]) + row.matchpoints
                mine[2] = int(mine[2]) + row.top
    made = [
        Standing(
            who,
            int(boards),
            Fraction(points),
            int(top),
            100 * Fraction(points) / int(top) if top else None,
        )
        for who, (boards, points, top) in totals.items()
    ]
    return tuple(sorted(made, key=lambda one: (-(one.percentage or 0), one.players)))


def _entrants(players: tuple[str, ...], crosses: Sequence[CrossTable]) -> list[tuple[str, ...]]:
    """A side as it is ranked: whole when its players always play together, else each alone."""
    if len(players) == 1 or _fixed(crosses):
        return [players]
    return [(player,) for player in players]


def _fixed(crosses: Sequence[CrossTable]) -> bool:
    """Whether every side keeps the same players all event long (a pairs event)."""
    partner: dict[str, tuple[str, ...]] = {}
    for cross in crosses:
        for row in cross.rows:
            for player in row.players:
                if partner.setdefault(player, row.players) != row.players:
                    return False
    return True


def _check(results: EventResults) -> None:
    if not results.boards:
        raise ResultsError("no boards to score")
    if results.convention not in CONVENTIONS:
        raise ResultsError(f"convention is one of {', '.join(CONVENTIONS)}")
    seen: set[int] = set()
    for board in results.boards:
        if board.board in seen:
            raise ResultsError(f"board {board.board} is given twice")
        seen.add(board.board)
        if not board.tables:
            raise ResultsError(f"board {board.board} has no tables")
        sides = len(board.tables[0].sides)
        names: set[str] = set()
        for table in board.tables:
            if len(table.sides) != sides or sides < 2:
                raise ResultsError(
                    f"board {board.board}, table {table.table}: every table needs the same "
                    f"number of sides, at least two"
                )
            if table.table in names:
                raise ResultsError(f"board {board.board}: table {table.table} is given twice")
            names.add(table.table)
            for side in table.sides:
                if side.set < 0 or side.bags < 0 or not side.players:
                    raise ResultsError(
                        f"board {board.board}, table {table.table}: a side needs players, "
                        f"and its set and bags are not negative"
                    )
