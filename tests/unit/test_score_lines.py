"""A hand record's score lines: the rules' own account of each unit's points, given the bags
each unit carried into the hand."""

from __future__ import annotations

from domain.events import GameCreated
from domain.records import Deal, HandRecord
from domain.rules import resolve_rules
from services.gateway.score_lines import score_lines


def record(
    number: int,
    bids: list[object],
    tricks: list[int],
    points: list[int],
    scores: list[int],
    bags: list[int],
) -> HandRecord:
    return HandRecord(
        hand=number,
        dealer=0,
        deal=Deal(deck=None, hands=[], seed=None, commitment=None),
        draws=[],
        bids=bids,  # type: ignore[arg-type]
        passes=[],
        tricks=[],
        tricks_won=tricks,
        points=points,
        scores=scores,
        bags=bags,
    )


CREATED = GameCreated("g", resolve_rules({"preset": "partnership"}), 0)


def test_each_line_names_the_rule_that_decided_it() -> None:
    (lines,) = score_lines(
        CREATED, [record(1, [3, "nil", 2, 6], [5, 1, 3, 4], [53, -160], [53, -160], [3, 0])]
    )
    assert [(line.unit, line.rule, line.points) for line in lines] == [
        (0, "contract", 50),
        (0, "overtrick_points", 3),
        (1, "failed_bid", -60),
        (1, "nil_value", -100),
    ]
    assert lines[0].text == "bid 5, took 8: 10 x 5"


def test_the_bags_a_unit_carries_into_a_hand_come_from_the_hand_before() -> None:
    first = record(1, [3, 3, 3, 3], [5, 3, 4, 1], [48, -20], [48, -20], [8, 0])
    second = record(2, [3, 3, 3, 3], [5, 3, 4, 1], [-52, -20], [-4, -40], [1, 0])
    one, two = score_lines(CREATED, [first, second])
    assert "bag_limit" not in {line.rule for line in one}
    penalty = [line for line in two if line.rule == "bag_limit"]
    assert [(line.unit, line.points) for line in penalty] == [(0, -100)]
    assert penalty[0].text == "bags reach 10: -100, 1 carried over"


def test_a_game_that_started_with_bags_counts_them_in_its_first_hand() -> None:
    created = GameCreated("g", CREATED.rules, 0, scores=(0, 0), bags=(9, 0))
    (lines,) = score_lines(
        created, [record(1, [3, 3, 3, 3], [5, 3, 4, 1], [-52, -20], [-52, -20], [7, 0])]
    )
    assert [line.rule for line in lines if line.unit == 0][-1] == "bag_limit"
