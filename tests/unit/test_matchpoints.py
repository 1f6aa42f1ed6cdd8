"""Matchpoints of duplicate events (domain/matchpoints.py): hand-computed boards, Neuberg,
the set-and-bag conventions, standings, and the properties every board's matchpoints keep."""

from __future__ import annotations

import doctest
import itertools
from fractions import Fraction

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import domain.matchpoints
from domain.matchpoints import (
    BoardResults,
    EventResults,
    ResultsError,
    SideResult,
    TableResult,
    cross_tables,
    deltas,
    matchpoints,
    neuberg,
    standings,
    values,
)

F = Fraction


def table(name: str, *sides: tuple[str, int] | tuple[str, int, int, int]) -> TableResult:
    """``(players "a+c", points[, set, bags])`` per side, north-south first."""
    return TableResult(
        name,
        tuple(SideResult(tuple(side[0].split("+")), side[1], *side[2:]) for side in sides),
    )


def test_a_board_at_four_tables_by_hand() -> None:
    """NS deltas 160, 60, 60, -150: 3, 1.5, 1.5, 0; EW the mirror: 0, 1.5, 1.5, 3."""
    board = BoardResults(
        1,
        (
            table("1", ("a+b", 120), ("c+d", -40)),
            table("2", ("e+f", 80), ("g+h", 20)),
            table("3", ("i+j", 80), ("k+l", 20)),
            table("4", ("m+n", -50), ("o+p", 100)),
        ),
    )
    (cross,) = cross_tables(EventResults((board,)))
    got = {(row.table, row.direction): (row.delta, row.matchpoints) for row in cross.rows}
    assert got == {
        ("1", 0): (160, F(3)),
        ("2", 0): (60, F(3, 2)),
        ("3", 0): (60, F(3, 2)),
        ("4", 0): (-150, F(0)),
        ("1", 1): (-160, F(0)),
        ("2", 1): (-60, F(3, 2)),
        ("3", 1): (-60, F(3, 2)),
        ("4", 1): (150, F(3)),
    }
    assert {row.top for row in cross.rows} == {3}


def test_neuberg_scales_a_board_played_three_times_where_the_most_is_four() -> None:
    """Raw 2, 1, 0 on a top of 2 become (mp + 1/2) x 4/3 - 1/2: 17/6, 3/2, 1/6 on a top of 3."""
    full = BoardResults(1, tuple(table(str(t), (f"n{t}", 10 * t), (f"e{t}", 0)) for t in range(4)))
    short = BoardResults(
        2,
        (
            table("0", ("n0", 100), ("e0", 0)),
            table("1", ("n1", 50), ("e1", 0)),
            table("2", ("n2", -20), ("e2", 0)),
        ),
    )
    crosses = cross_tables(EventResults((full, short)))
    assert crosses[1].played == 3
    north = [row.matchpoints for row in crosses[1].rows if row.direction == 0]
    assert north == [F(17, 6), F(3, 2), F(1, 6)]
    assert sum(north) == F(3 * (4 - 1), 2)
    assert {row.top for cross in crosses for row in cross.rows} == {3}
    assert neuberg(F(0), played=1, most=4) == F(3, 2)  # a board played once: the average


def test_the_transferred_convention_gives_sets_and_bags_to_the_other_side() -> None:
    """NS bid 4, took 6: 42 (2 bags); EW bid 8, took 7: set, -80. As scored the delta is 122;
    transferred, NS have 40 - 2 + 80 = 118 and EW 0 + 2 = 2: a delta of 116."""
    sides = (SideResult(("n", "s"), 42, 0, 2), SideResult(("e", "w"), -80, 80, 0))
    assert values(sides, "as_scored", 1) == [42, -80]
    assert values(sides, "transferred", 1) == [118, 2]
    assert deltas(values(sides, "transferred", 1)) == [116, -116]


def test_the_conventions_can_order_two_tables_differently() -> None:
    """Bags cost the taker under ``transferred``: 51 with 1 bag beats 53 with 3 bags."""
    board = BoardResults(
        1,
        (
            table("1", ("a+b", 53, 0, 3), ("c+d", 40)),
            table("2", ("e+f", 51, 0, 1), ("g+h", 40)),
        ),
    )
    for convention, winner in (("as_scored", "1"), ("transferred", "2")):
        (cross,) = cross_tables(EventResults((board,), convention=convention))  # type: ignore[arg-type]
        best = max((row for row in cross.rows if row.direction == 0), key=lambda r: r.matchpoints)
        assert best.table == winner


def test_solo_compares_each_seat_with_the_same_seat_elsewhere() -> None:
    """Three cutthroat seats: deltas are 2 x own - the others'. Seat 0 scored 50, 30 at two
    tables (deltas 2x50-(10+20)=70 and 2x30-(40+0)=20): 1 and 0."""
    board = BoardResults(
        1,
        (
            table("1", ("a", 50), ("b", 10), ("c", 20)),
            table("2", ("d", 30), ("e", 40), ("f", 0)),
        ),
    )
    (cross,) = cross_tables(EventResults((board,)))
    seat0 = {row.players: (row.delta, row.matchpoints) for row in cross.rows if row.direction == 0}
    assert seat0 == {("a",): (70, F(1)), ("d",): (20, F(0))}
    seat1 = {row.players: row.matchpoints for row in cross.rows if row.direction == 1}
    assert seat1 == {("b",): F(0), ("e",): F(1)}


def test_standings_rank_pairs_by_percentage_and_split_rotating_partners() -> None:
    pairs = EventResults(
        (
            BoardResults(
                1, (table("1", ("a+b", 100), ("c+d", 0)), table("2", ("e+f", 50), ("g+h", 0)))
            ),
            BoardResults(
                2, (table("1", ("a+b", 0), ("c+d", 10)), table("2", ("e+f", 0), ("g+h", 10)))
            ),
        )
    )
    ranked = standings(cross_tables(pairs))
    assert [one.players for one in ranked][:1] == [("a", "b")]
    first = ranked[0]
    assert (first.boards, first.matchpoints, first.top, first.percentage) == (2, F(3, 2), 2, F(75))
    individual = EventResults(
        (
            BoardResults(
                1, (table("1", ("a+b", 100), ("c+d", 0)), table("2", ("e+f", 50), ("g+h", 0)))
            ),
            BoardResults(
                2, (table("1", ("a+c", 0), ("b+d", 10)), table("2", ("e+g", 0), ("f+h", 10)))
            ),
        )
    )
    players = {one.players: one.percentage for one in standings(cross_tables(individual))}
    assert players[("a",)] == F(75)
    assert players[("b",)] == F(75)
    assert len(players) == 8


def test_a_single_table_has_nothing_to_compare_with() -> None:
    event = EventResults((BoardResults(1, (table("1", ("a+b", 100), ("c+d", 0)),)),))
    assert all(one.percentage is None for one in standings(cross_tables(event)))


@pytest.mark.parametrize(
    ("event", "words"),
    [
        ({"boards": []}, "no boards"),
        ({"boards": [{"board": 1, "tables": []}]}, "no tables"),
        (
            {
                "boards": [
                    {
                        "board": 1,
                        "tables": [{"table": "1", "sides": [{"players": ["a"], "points": 1}]}],
                    }
                ]
            },
            "at least two",
        ),
        (
            {
                "boards": [
                    {
                        "board": 1,
                        "tables": [
                            {
                                "table": "1",
                                "sides": [
                                    {"players": ["a"], "points": 1},
                                    {"players": ["b"], "points": 1},
                                ],
                            }
                        ],
                    },
                    {
                        "board": 1,
                        "tables": [
                            {
                                "table": "1",
                                "sides": [
                                    {"players": ["a"], "points": 1},
                                    {"players": ["b"], "points": 1},
                                ],
                            }
                        ],
                    },
                ]
            },
            "twice",
        ),
        (
            {
                "boards": [
                    {
                        "board": 1,
                        "tables": [
                            {
                                "table": "1",
                                "sides": [
                                    {"players": ["a"], "points": 1, "bags": -1},
                                    {"players": ["b"], "points": 1},
                                ],
                            }
                        ],
                    }
                ]
            },
            "not negative",
        ),
    ],
)
def test_results_that_cannot_be_scored_are_refused_by_name(
    event: dict[str, object], words: str
) -> None:
    with pytest.raises(ResultsError, match=words):
        cross_tables(msgspec.convert(event, EventResults))


@given(st.lists(st.integers(-500, 500), min_size=1, max_size=30))
def test_a_directions_matchpoints_sum_to_n_n_minus_1_over_2(found: list[int]) -> None:
    points = matchpoints(found)
    n = len(found)
    assert sum(points) == F(n * (n - 1), 2)
    for mine, theirs in zip(found, points, strict=True):
        assert theirs == sum(F(1) if mine > o else F(1, 2) for o in found if o <= mine) - F(1, 2)
    ranked = sorted(zip(found, points, strict=True))
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(ranked))


@given(st.lists(st.integers(-500, 500), min_size=1, max_size=12), st.integers(0, 12))
def test_neuberg_keeps_the_sum_of_a_board_played_n_times_at_n_times_the_average(
    found: list[int], more: int
) -> None:
    n = len(found)
    most = n + more
    scaled = [neuberg(points, played=n, most=most) for points in matchpoints(found)]
    assert sum(scaled) == F(n * (most - 1), 2)
    assert all(0 <= one <= most - 1 for one in scaled)


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(domain.matchpoints).failed == 0
