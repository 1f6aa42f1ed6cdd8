"""Movements of duplicate events (domain/movement.py), checked over every field size.

Each preset and style is generated once for every field size of its range (deterministically:
a movement has no randomness), and every movement is checked for the rules of a duplicate
event (whole tables, everyone seated once a round, no board played twice, byes spread) and for
the evenness bounds the generator reaches. The bounds are measured figures, stated here and in
the module's report: raising one is a regression.
"""

from __future__ import annotations

import doctest
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import domain.movement
from domain.errors import RuleViolation
from domain.movement import (
    MAX_PLAYERS,
    Movement,
    MovementError,
    MovementRound,
    Style,
    default_rounds,
    evenness,
    movement,
)
from domain.rules import Rules, resolve_rules

# preset, style, fewest players, field step, and the bounds reached over the whole range, with
# one board a round (comparisons are then counted in rounds): the most any two units' meetings
# as opponents differ, the most two players' comparisons differ, the most two players'
# partnerships differ (an individual partnership event).
SWEEP = [
    ("partnership", "pairs", 4, 2, 0, 11, None),
    ("partnership", "individual", 4, 1, 2, 13, 2),
    ("solo", "individual", 4, 1, 2, 8, None),
    ("cutthroat", "individual", 3, 1, 2, 11, None),
    ("three-player-house", "individual", 3, 1, 2, 11, None),
    ("two-player", "individual", 2, 1, 0, 20, None),
    ("six-player", "pairs", 6, 2, 2, 7, None),
    ("six-player", "individual", 6, 1, 3, 9, 1),
]


def check_legal(plan: Movement, rules: Rules) -> None:
    """Full tables, everyone seated or sitting out once a round, no board twice, byes spread
    (after every round), partners of a pairs event together and in one direction."""
    players = range(plan.players)
    boards_of: dict[int, list[int]] = {player: [] for player in players}
    byes: Counter[int] = Counter()
    seen_boards: set[int] = set()
    for number, one in enumerate(plan.rounds, start=1):
        assert one.number == number
        assert one.boards
        assert not seen_boards & set(one.boards)
        seen_boards |= set(one.boards)
        seated = [player for table in one.tables for player in table]
        assert all(len(table) == rules.players for table in one.tables)
        assert sorted(seated + list(one.byes)) == list(players)
        for player in seated:
            boards_of[player].extend(one.boards)
        byes.update(one.byes)
        counts = [byes[player] for player in players]
        assert max(counts) - min(counts) <= 1, f"round {number}: byes {counts}"
        if plan.style == "pairs":
            for table in one.tables:
                for seats in plan.directions:
                    held = sorted(table[seat] for seat in seats)
                    assert held[0] % 2 == 0
                    assert held[1] == held[0] + 1
            assert all(bye ^ 1 in one.byes for bye in one.byes)
    for player, boards in boards_of.items():
        assert len(boards) == len(set(boards)), f"player {player} plays a board twice"


@pytest.mark.parametrize(
    ("preset", "style", "fewest", "step", "meetings", "comparisons", "partners"),
    SWEEP,
    ids=[f"{preset}-{style}" for preset, style, *_ in SWEEP],
)
def test_every_field_size_moves_legally_within_the_stated_evenness_bounds(
    preset: str,
    style: Style,
    fewest: int,
    step: int,
    meetings: int,
    comparisons: int,
    partners: int | None,
) -> None:
    rules = resolve_rules({"preset": preset})
    top = MAX_PLAYERS - 1 if rules.players == 3 else MAX_PLAYERS
    for size in range(fewest, top + 1, step):
        plan = movement(size, rules, style, boards_per_round=1)
        assert len(plan.rounds) == default_rounds(size, rules, style)
        check_legal(plan, rules)
        figures = evenness(plan)
        spread = {
            "meetings": figures.meetings[1] - figures.meetings[0],
            "comparisons": figures.comparisons[1] - figures.comparisons[0],
        }
        assert spread["meetings"] <= meetings, (size, figures)
        assert spread["comparisons"] <= comparisons, (size, figures)
        assert figures.byes[1] - figures.byes[0] <= 1
        assert figures.boards[1] - figures.boards[0] <= 1  # one board a round
        if partners is None:
            assert figures.partners is None
        else:
            assert figures.partners is not None
            assert figures.partners[1] - figures.partners[0] <= partners, (size, figures)
        if size // rules.players >= 2:  # two tables or more: every result is compared
            assert figures.comparisons[1] > 0


def test_pairs_at_four_seats_meet_every_other_pair_exactly_once() -> None:
    rules = resolve_rules({"preset": "partnership"})
    for size in (4, 6, 8, 14, 64):
        figures = evenness(movement(size, rules, "pairs"))
        assert figures.meetings == (1, 1)


def test_a_two_player_event_meets_everyone_once_in_its_rounds() -> None:
    rules = resolve_rules({"preset": "two-player"})
    for size in (2, 3, 10, 11):
        plan = movement(size, rules, "individual")
        assert evenness(plan).meetings == (1, 1)
        assert len(plan.rounds) == (size - 1 if size % 2 == 0 else size)


PRESETS = st.sampled_from(
    [(preset, style) for preset, style, *_ in SWEEP] + [("jokers-54", "pairs")]
)


@settings(max_examples=40, deadline=None)
@given(PRESETS, st.integers(2, 28), st.integers(1, 9), st.integers(1, 4))
def test_any_rounds_and_boards_per_round_make_a_legal_movement(
    preset_style: tuple[str, Style], size: int, rounds: int, boards: int
) -> None:
    preset, style = preset_style
    rules = resolve_rules({"preset": preset})
    if size < rules.players or (style == "pairs" and size % 2):
        with pytest.raises(MovementError):
            movement(size, rules, style, rounds=rounds, boards_per_round=boards)
        return
    plan = movement(size, rules, style, rounds=rounds, boards_per_round=boards)
    assert len(plan.rounds) == rounds
    assert plan.rounds[-1].boards[-1] == rounds * boards
    check_legal(plan, rules)


def test_the_same_field_gives_the_same_movement() -> None:
    rules = resolve_rules({"preset": "solo"})
    assert movement(13, rules, "individual") == movement(13, rules, "individual")


@pytest.mark.parametrize(
    ("preset", "size", "style", "words"),
    [
        ("partnership", 7, "pairs", "even field"),
        ("solo", 8, "pairs", "no partnerships"),
        ("cutthroat", 2, "individual", "3 to 64 players"),
        ("partnership", 65, "individual", "not 65"),
        ("partnership", 8, "mitchell", "style is one of"),
    ],
)
def test_a_field_that_cannot_play_is_refused_as_malformed(
    preset: str, size: int, style: str, words: str
) -> None:
    with pytest.raises(RuleViolation) as refused:
        movement(size, resolve_rules({"preset": preset}), style)  # type: ignore[arg-type]
    assert refused.value.code == "malformed"
    assert words in refused.value.detail


def test_rounds_and_boards_per_round_are_bounded() -> None:
    rules = resolve_rules({"preset": "partnership"})
    with pytest.raises(MovementError, match="rounds"):
        movement(8, rules, "pairs", rounds=0)
    with pytest.raises(MovementError, match="boards per round"):
        movement(8, rules, "pairs", boards_per_round=0)


def test_evenness_counts_a_small_movement_by_hand() -> None:
    """Two rounds of eight solo players: meetings, comparisons and boards counted by hand."""
    plan = Movement(
        players=8,
        style="individual",
        directions=((0,), (1,), (2,), (3,)),
        rounds=(
            MovementRound(1, (1, 2), ((0, 1, 2, 3), (4, 5, 6, 7))),
            MovementRound(2, (3, 4), ((0, 5, 2, 7), (4, 1, 6, 3))),
        ),
    )
    figures = evenness(plan)
    # 0 meets 2 twice (rounds 1 and 2), 0 and 4 never; 0 is compared with 4 on all four boards
    # (seat 0 both rounds), with 1 on none; 1 with 5 on boards 1-2 (seat 1), with 1... none.
    assert figures.meetings == (0, 2)
    assert figures.comparisons == (0, 4)
    assert figures.partners is None
    assert figures.byes == (0, 0)
    assert figures.boards == (4, 4)


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(domain.movement).failed == 0
