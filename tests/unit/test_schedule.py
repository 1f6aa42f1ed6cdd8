"""League scheduling (:mod:`domain.schedule`): round robin, Swiss pairing, byes, partners."""

from __future__ import annotations

import doctest
import itertools
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import domain.schedule
from domain.schedule import (
    Encounters,
    Pairing,
    Seating,
    choose_pairing,
    circle_round,
    rounds_to_meet_everyone,
    seat_round,
)


def names(count: int) -> list[str]:
    return [f"p{number:02d}" for number in range(count)]


def play(
    pairing: Pairing,
    players: Sequence[str],
    size: int,
    rounds: int,
    rankings: Sequence[Sequence[str]] | None = None,
) -> list[Seating]:
    """``rounds`` rounds seated one after another (Swiss with the given ranking each round)."""
    past: list[Seating] = []
    for number in range(rounds):
        ranking = rankings[number] if rankings is not None else None
        partnerships = size in (4, 6)
        past.append(
            seat_round(pairing, players, size, past, partnerships=partnerships, ranking=ranking)
        )
    return past


def meetings(players: Sequence[str], past: Sequence[Seating]) -> list[int]:
    encounters = Encounters(past, partnerships=False)
    return [encounters.met(a, b) for a, b in itertools.combinations(players, 2)]


def repeats(seating: Seating, before: Sequence[Seating]) -> int:
    encounters = Encounters(before, partnerships=False)
    return sum(
        encounters.met(a, b) > 0
        for table in seating.tables
        for a, b in itertools.combinations(table, 2)
    )


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(domain.schedule).failed == 0


# --------------------------------------------------------------------------- every round


@settings(max_examples=60, deadline=None)
@given(
    size=st.sampled_from([2, 3, 4]),
    extra=st.integers(0, 14),
    rounds=st.integers(1, 6),
    pairing=st.sampled_from(["round_robin", "swiss"]),
    data=st.data(),
)
def test_every_player_sits_once_a_round_and_byes_rotate(
    size: int, extra: int, rounds: int, pairing: Pairing, data: st.DataObject
) -> None:
    players = names(size + extra)
    rankings = [data.draw(st.permutations(players)) for _ in range(rounds)]
    past = play(pairing, players, size, rounds, rankings)
    for number, seating in enumerate(past, start=1):
        seated = [player for table in seating.tables for player in table]
        assert sorted([*seated, *seating.byes]) == players
        assert all(len(table) == size for table in seating.tables)
        assert len(seating.byes) == len(players) % size
        byes = Encounters(past[:number], partnerships=False).byes
        counts = [byes.get(player, 0) for player in players]
        assert max(counts) - min(counts) <= 1, f"round {number}: byes {counts}"


def test_the_same_inputs_give_the_same_seating_in_any_process() -> None:
    """Nothing depends on hash order (sets, dicts of strings): another interpreter, with
    another hash seed, seats the same rounds."""
    script = (
        "from domain.schedule import seat_round\n"
        "players = [f'p{n}' for n in range(13)]\n"
        "past = []\n"
        "for pairing in ['round_robin', 'swiss', 'round_robin', 'swiss']:\n"
        "    past.append(seat_round(pairing, players, 4, past, partnerships=True,\n"
        "                           ranking=players[::-1]))\n"
        "print(past)\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outputs) == 1


# --------------------------------------------------------------------------- round robin


@given(st.integers(2, 24))
def test_the_circle_method_meets_everyone_exactly_once(count: int) -> None:
    players = names(count)
    cycle = rounds_to_meet_everyone(count, 2)
    past = play("round_robin", players, 2, cycle)
    assert meetings(players, past) == [1] * (count * (count - 1) // 2)
    byes = Counter(player for seating in past for player in seating.byes)
    assert byes == (dict.fromkeys(players, 1) if count % 2 else {})


def test_the_circle_method_starts_again_after_a_cycle() -> None:
    assert circle_round(names(6), 5) == circle_round(names(6), 0)
    assert circle_round(names(5), 5) == circle_round(names(5), 0)


@pytest.mark.parametrize(
    ("count", "size", "rounds", "each_pair"),
    [
        (9, 3, 4, 1),  # the affine plane of order 3: every pair once in four rounds
        (8, 4, 7, 3),  # the affine space AG(3, 2): every pair three times in seven rounds
    ],
)
def test_larger_tables_meet_perfectly_where_a_perfect_schedule_exists(
    count: int, size: int, rounds: int, each_pair: int
) -> None:
    players = names(count)
    assert set(meetings(players, play("round_robin", players, size, rounds))) == {each_pair}


@given(size=st.sampled_from([3, 4]), tables=st.integers(0, 12), left=st.integers(0, 3))
def test_a_second_round_meets_no_one_again_when_the_tables_allow_it(
    size: int, tables: int, left: int
) -> None:
    """With at least ``size`` tables, every table of round 2 can take its players from
    different tables of round 1, and the seating finds such a round."""
    players = names(size * (size + tables) + min(left, size - 1))
    first, second = play("round_robin", players, size, 2)
    assert repeats(second, [first]) == 0


@settings(max_examples=25, deadline=None)
@given(size=st.sampled_from([3, 4]), count=st.integers(4, 20))
def test_larger_tables_keep_meetings_even(size: int, count: int) -> None:
    """Seating round by round, without lookahead, is not a perfect schedule, but no two pairs'
    meetings ever differ by more than three; with three or more full tables of three, by two."""
    players = names(max(count, size))
    past: list[Seating] = []
    bound = 2 if size == 3 and len(players) % 3 == 0 and len(players) >= 9 else 3
    for _ in range(2 * rounds_to_meet_everyone(len(players), size) + 2):
        past.append(seat_round("round_robin", players, size, past, partnerships=size == 4))
        counts = meetings(players, past)
        assert max(counts) - min(counts) <= bound, (len(past), Counter(counts))


def test_partners_change_before_any_pair_partners_twice() -> None:
    """Four players at one table: the three ways to pair them come in turn."""
    players = names(4)
    past = play("round_robin", players, 4, 3)
    encounters = Encounters(past, partnerships=True)
    assert sorted(encounters.partnerships.values()) == [1] * 6


def test_six_players_change_partners_round_by_round() -> None:
    """Six at one table (six-player), partners facing each other (seats 0 and 3, 1 and 4, 2 and
    5): three rounds give nine different partnerships; five, none more than twice."""
    players = names(6)
    past = play("round_robin", players, 6, 5)
    assert sorted(Encounters(past[:3], partnerships=True).partnerships.values()) == [1] * 9
    assert max(Encounters(past, partnerships=True).partnerships.values()) <= 2
    for seating in past:
        (table,) = seating.tables
        assert sorted(table) == players


# --------------------------------------------------------------------------- Swiss


def test_swiss_seats_neighbours_in_the_ranking() -> None:
    players = names(12)
    ranking = players[::-1]
    (seating,) = play("swiss", players, 3, 1, [ranking])
    assert seating.tables == tuple(tuple(ranking[n : n + 3]) for n in range(0, 12, 3))


def test_swiss_gives_the_bye_to_the_lowest_ranked_who_had_fewest() -> None:
    players = names(5)
    ranking = ["p03", "p00", "p04", "p01", "p02"]
    first, second = play("swiss", players, 2, 2, [ranking, ranking])
    assert first.byes == ("p02",)
    assert second.byes == ("p01",)


def _repeat_free_seating_exists(playing: Sequence[str], size: int, before: Encounters) -> bool:
    if not playing:
        return True
    first, rest = playing[0], playing[1:]
    for others in itertools.combinations(rest, size - 1):
        table = (first, *others)
        if any(before.met(a, b) for a, b in itertools.combinations(table, 2)):
            continue
        if _repeat_free_seating_exists([p for p in rest if p not in others], size, before):
            return True
    return False


@settings(max_examples=80, deadline=None)
@given(
    shape=st.sampled_from([(2, 4), (2, 6), (2, 7), (2, 8), (2, 10), (3, 6), (3, 9), (4, 8)]),
    rounds=st.integers(1, 6),
    data=st.data(),
)
def test_swiss_repeats_no_meeting_while_one_can_be_avoided(
    shape: tuple[int, int], rounds: int, data: st.DataObject
) -> None:
    size, count = shape
    players = names(count)
    rankings = [data.draw(st.permutations(players)) for _ in range(rounds + 1)]
    past = play("swiss", players, size, rounds, rankings)
    seating = seat_round("swiss", players, size, past, ranking=rankings[-1])
    playing = sorted(player for table in seating.tables for player in table)
    if _repeat_free_seating_exists(playing, size, Encounters(past, partnerships=False)):
        assert repeats(seating, past) == 0


@pytest.mark.parametrize(("count", "size"), [(40, 4), (100, 4), (99, 3), (64, 2)])
def test_swiss_avoids_repeats_in_large_fields_too(count: int, size: int) -> None:
    """Past the exhaustive search's budget, the cheapest seating still avoids every repeat
    that the field leaves room to avoid (four rounds, the same ranking every time: the
    hardest case, where neighbours in the ranking have all met)."""
    players = names(count)
    past = play("swiss", players, size, 4, [players] * 4)
    assert [repeats(seating, past[:n]) for n, seating in enumerate(past)] == [0, 0, 0, 0]


# --------------------------------------------------------------------------- which pairing


@pytest.mark.parametrize(
    ("players", "size", "rounds", "expected"),
    [
        (8, 2, 7, "round_robin"),
        (8, 2, 6, "swiss"),
        (7, 2, 7, "round_robin"),
        (8, 4, 3, "round_robin"),
        (8, 4, 2, "swiss"),
        (30, 3, None, "round_robin"),
    ],
)
def test_round_robin_where_it_fits_swiss_otherwise(
    players: int, size: int, rounds: int | None, expected: Pairing
) -> None:
    assert choose_pairing(players, size, rounds) == expected


def test_a_round_needs_a_full_table() -> None:
    with pytest.raises(ValueError, match="cannot fill a table"):
        seat_round("round_robin", names(3), 4, [])


def test_a_ranking_names_every_player() -> None:
    with pytest.raises(ValueError, match="every player"):
        seat_round("swiss", names(4), 2, [], ranking=names(3))
