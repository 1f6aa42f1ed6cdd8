"""Hands played elsewhere, given as hand records or tallies, audited under the table's rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from domain.cards import Card
from domain.rules import resolve_rules
from domain.table import Table, table_for
from services.audit.hand_record import audit_hand_records, exported_records
from services.audit.record_file import UnreadableRecord
from services.audit.replay import replay_game
from tests.unit.test_audit_games import PRESETS, HonestTable

WORKED_TALLY = {"bids": [3, "nil", 2, 6], "tricks": [5, 1, 3, 4]}
"""The example of docs/rules.md, "Outcomes": partnership, points [53, -160]."""


def exported(rules: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    table = HonestTable(rules, seed).play(refusals=0)
    return exported_records(replay_game(table.commits))


@pytest.fixture(scope="module")
def partnership_records() -> list[dict[str, Any]]:
    return exported({"preset": "partnership", "max_hands": 2}, 21)


@pytest.mark.parametrize("preset", PRESETS)
def test_exported_records_of_honest_games_import_clean(preset: str) -> None:
    records = exported({"preset": preset, "max_hands": 2, "blind_nil_behind": None}, 22)
    audited = audit_hand_records({"hands": records})
    assert audited.report.problems == []
    for hand in audited.report.hands:
        assert (hand.deal_verified, hand.replayed, hand.score_matches) == (True, True, True)
    one = audit_hand_records(records[-1])
    assert one.report.ok
    assert one.hands[0].number == records[-1]["hand"]


def test_a_record_without_seed_or_start_is_audited_from_its_own_figures(
    partnership_records: list[dict[str, Any]],
) -> None:
    bare = copy.deepcopy(partnership_records[1])
    for key in ("start", "entropies", "rules"):
        del bare[key]
    bare["deal"] = {"hands": bare["deal"]["hands"]}
    audited = audit_hand_records(bare, {"preset": "partnership"})
    assert audited.report.ok
    hand = audited.report.hands[0]
    assert (hand.deal_verified, hand.replayed, hand.score_matches) == (False, True, True)


def renege(record: dict[str, Any]) -> tuple[int, int, str]:
    """Make a follower who held the suit led play another card of its own; the card is played
    later in its place. Returns the trick, the position in it and the card now played."""
    rules = table_for_record(record)
    tricks = record["tricks"]
    for t, trick in enumerate(tricks):
        led = rules.suit_of[card_index(trick["cards"][0]["card"])]
        for position, played in enumerate(trick["cards"][1:], start=1):
            if rules.suit_of[card_index(played["card"])] != led:
                continue
            for later in tricks[t + 1 :]:
                for other in later["cards"]:
                    off = rules.suit_of[card_index(other["card"])] != led
                    if other["seat"] == played["seat"] and off:
                        other["card"], played["card"] = played["card"], other["card"]
                        return t + 1, position + 1, played["card"]
    raise AssertionError("no renege can be made in this record")


def table_for_record(record: dict[str, Any]) -> Table:
    return table_for(resolve_rules(record["rules"]))


def card_index(text: str) -> int:
    return Card(text).ordinal


def test_a_renege_is_the_first_illegal_play(partnership_records: list[dict[str, Any]]) -> None:
    record = copy.deepcopy(partnership_records[0])
    trick, position, card = renege(record)
    audited = audit_hand_records(record)
    problem = audited.report.first_problem
    assert problem is not None
    assert (problem.check, problem.rule, problem.hand) == ("replay", "must_follow_suit", 1)
    assert problem.detail.startswith(f"trick {trick}, card {position}: ")
    assert f"plays {card}" in problem.detail
    assert not audited.report.hands[0].replayed


def test_a_wrong_trick_winner(partnership_records: list[dict[str, Any]]) -> None:
    record = copy.deepcopy(partnership_records[0])
    right = record["tricks"][6]["winner"]
    record["tricks"][6]["winner"] = (right + 1) % 4
    problem = audit_hand_records(record).report.first_problem
    assert problem is not None
    assert problem.check == "replay"
    assert "trick 7 " in problem.detail
    assert f"goes to seat {right}" in problem.detail
    assert f"the record gives it to seat {(right + 1) % 4}" in problem.detail


def test_a_mis_added_score(partnership_records: list[dict[str, Any]]) -> None:
    record = copy.deepcopy(partnership_records[1])
    right = list(record["points"])
    record["points"][1] += 20
    record["scores"][1] += 20
    audited = audit_hand_records(record)
    problem = audited.report.first_problem
    assert problem is not None
    assert (problem.check, problem.hand) == ("score", 2)
    assert f"the rules give points {right}" in problem.detail
    assert problem.arithmetic
    assert all(line.startswith("unit 1:") for line in problem.arithmetic)
    assert audited.report.hands[0].replayed
    assert not audited.report.hands[0].score_matches


def test_a_miscounted_trick_total(partnership_records: list[dict[str, Any]]) -> None:
    record = copy.deepcopy(partnership_records[0])
    counted = record["tricks_won"]
    giver = next(seat for seat, won in enumerate(counted) if won)
    counted[giver] -= 1
    counted[(giver + 1) % 4] += 1
    problems = audit_hand_records(record).report.problems
    assert [problem.rule for problem in problems if problem.check == "replay"] == ["the tricks won"]


def test_the_worked_tally_of_format_md() -> None:
    audited = audit_hand_records({**WORKED_TALLY, "points": [53, -160]})
    assert audited.report.ok
    assert audited.hands[0].score is not None
    assert audited.hands[0].score.points == (53, -160)


def test_a_mis_added_tally_names_the_rules_arithmetic() -> None:
    audited = audit_hand_records({**WORKED_TALLY, "points": [63, -160], "scores": [63, -160]})
    problem = audited.report.first_problem
    assert problem is not None
    assert problem.check == "score"
    assert problem.rule == "contract, overtrick_points"
    assert problem.arithmetic == [
        "unit 0: contract +50 (bid 5, took 8: 10 x 5)",
        "unit 0: overtrick_points +3 (3 overtrick(s) x 1)",
        "unit 0: 0 +53 = 53; bags 0 -> 3",
    ]


def test_a_tally_under_other_rules_scores_by_those_rules() -> None:
    rules = {"preset": "partnership", "failed_bid": "short", "nil_value": 50}
    audited = audit_hand_records({**WORKED_TALLY, "points": [53, -70]}, rules)
    assert audited.report.ok


def test_a_tally_that_cannot_have_happened() -> None:
    audited = audit_hand_records({"bids": [3, "nil", 2, 6], "tricks": [5, 1, 3, 3]})
    problem = audited.report.first_problem
    assert problem is not None
    assert (problem.check, problem.rule) == ("replay", "malformed")


def test_a_tally_bid_the_rules_refuse() -> None:
    audited = audit_hand_records(
        {"bids": [3, "nil", 2, 6], "tricks": [5, 1, 3, 4]},
        {"preset": "partnership", "nil": False},
    )
    problem = audited.report.first_problem
    assert problem is not None
    assert problem.rule == "nil_not_allowed"


def test_records_with_a_discard_and_a_first_hand_without_bids_import_clean() -> None:
    rules = {"preset": "jokers-54", "first_hand": "no_bid", "blind_bids": 6, "max_hands": 2}
    records = exported(rules, 23)
    assert records[0]["bids"] == [None] * 4
    assert all(len(record["discards"]) == 1 for record in records)
    audited = audit_hand_records({"hands": records})
    assert audited.report.problems == []
    for hand in audited.report.hands:
        assert (hand.deal_verified, hand.replayed, hand.score_matches) == (True, True, True)
    second = audit_hand_records(records[1])  # a later hand alone is bid, whatever first_hand says
    assert second.report.ok


def test_a_record_that_leaves_out_the_dealer_s_discard_is_caught() -> None:
    (record,) = exported({"preset": "jokers-54", "max_hands": 1, "target": 10}, 24)
    record["discards"] = []
    problem = audit_hand_records(record).report.first_problem
    assert problem is not None
    assert (problem.check, problem.rule) == ("replay", "wrong_phase")


def test_a_tally_of_a_first_hand_without_bidding_scores_ten_a_trick() -> None:
    rules = {"preset": "partnership", "first_hand": "no_bid"}
    tally = {"bids": [None] * 4, "tricks": [4, 3, 2, 4], "points": [60, 70]}
    assert audit_hand_records(tally, rules).report.ok
    assert audit_hand_records({"tricks": [4, 3, 2, 4], "points": [60, 70]}, rules).report.ok
    with pytest.raises(UnreadableRecord):
        audit_hand_records({"bids": [3, 3, 3, 3], "tricks": [4, 3, 2, 4]}, rules)


def test_a_tally_with_blind_bids_under_jokers_54() -> None:
    rules = {"preset": "jokers-54", "blind_bids": 6}
    tally = {"bids": [2, "blind_6", 1, 2], "tricks": [3, 5, 1, 4], "points": [31, 161]}
    assert audit_hand_records(tally, rules).report.ok
    # The dealer (seat 0) discarded, and so has looked: it cannot have bid blind.
    dealer_blind = {"bids": ["blind_6", 2, 3, 1], "tricks": [4, 3, 3, 3]}
    problem = audit_hand_records(dealer_blind, rules).report.first_problem
    assert problem is not None
    assert problem.rule == "blind_bid_not_allowed"


def test_a_tally_with_start_scores_checks_the_totals() -> None:
    start = {"scores": [480, 300], "bags": [9, 0]}
    right = {**WORKED_TALLY, "start": start, "points": [-47, -160], "scores": [433, 140]}
    audited = audit_hand_records(right)
    assert audited.report.ok, audited.report.problems
    wrong = {**right, "scores": [533, 140]}
    problem = audit_hand_records(wrong).report.first_problem
    assert problem is not None
    assert "bag_limit" in (problem.rule or "")


def test_a_renege_under_penalize_is_scored_as_a_set(
    partnership_records: list[dict[str, Any]],
) -> None:
    """The table gives only the plays; the audit finds the renege and scores it as docs/rules.md
    says (the reneging unit's contract set, its nils failed)."""
    record = copy.deepcopy(partnership_records[0])
    record["rules"] = {**record["rules"], "renege": "penalize"}
    renege(record)
    for trick in record["tricks"]:
        del trick["winner"]
    for figure in ("tricks_won", "points", "scores", "bags", "reneged"):
        del record[figure]
    audited = audit_hand_records(record)
    assert audited.report.ok, audited.report.problems
    scored = audited.hands[0].score
    assert scored is not None
    assert any(line.rule == "renege" or "(renege)" in line.text for line in scored.lines)


def test_a_record_whose_seed_breaks_its_commitment(
    partnership_records: list[dict[str, Any]],
) -> None:
    record = copy.deepcopy(partnership_records[0])
    record["deal"]["seed"] = "cd" * 32
    problem = audit_hand_records(record).report.first_problem
    assert problem is not None
    assert problem.check == "deal"


def test_cards_are_read_as_format_md_reads_them(
    partnership_records: list[dict[str, Any]],
) -> None:
    record = copy.deepcopy(partnership_records[0])
    record["tricks"][0]["cards"] = [
        {**played, "card": played["card"].lower().replace("t", "10")}
        for played in record["tricks"][0]["cards"]
    ]
    assert audit_hand_records(record).report.ok


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r["tricks"][0]["cards"][0].update(card="ZZ"), "hands[0]"),
        (lambda r: r.update(bids=[1, 2]), "hands[0].bids"),
        (lambda r: r.update(dealer=7), "hands[0].dealer"),
        (lambda r: r.update(rules={"preset": "bridge"}), "rules"),
        (lambda r: r["deal"].update(deck=None, hands=None, seed=None), "hands[0].deal"),
    ],
)
def test_a_record_that_cannot_be_audited_names_the_field(
    partnership_records: list[dict[str, Any]], change: Any, field: str
) -> None:
    record = copy.deepcopy(partnership_records[0])
    change(record)
    with pytest.raises(UnreadableRecord) as raised:
        audit_hand_records(record)
    assert raised.value.where == field


def test_a_record_dealt_from_its_seed_alone(partnership_records: list[dict[str, Any]]) -> None:
    """With the seed and the entropies, the deck need not be written down."""
    record = copy.deepcopy(partnership_records[1])
    record["deal"] = {"seed": record["deal"]["seed"], "commitment": record["deal"]["commitment"]}
    audited = audit_hand_records(record)
    assert audited.report.ok
    assert audited.report.hands[0].deal_verified


def test_hands_must_carry_their_totals_over(partnership_records: list[dict[str, Any]]) -> None:
    first, second = copy.deepcopy(partnership_records)
    assert audit_hand_records([first, second]).report.ok
    second["start"]["scores"][0] += 100
    second["scores"][0] += 100
    problems = audit_hand_records([first, second]).report.problems
    assert [(p.check, p.hand, p.rule) for p in problems] == [
        ("score", 2, "scores and bags carry over from hand to hand")
    ]
