"""The collusion signals: each on small hands built by hand with known answers, the tests they
rest on against figures worked out on paper, and bots: a pair that plays as partners in a game
without partners is flagged, an honest table is not."""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import pytest

from benchmarks.integrity import COLLUDERS, allied_table, play_league
from domain.bids import Bid
from domain.cards import Card
from domain.records import Deal, Discarded, HandRecord, Played, TimedOutMove, Trick
from domain.rules import resolve_rules
from domain.table import table_for
from services.integrity.signals import (
    Chance,
    HandFacts,
    HandRef,
    SeatedHand,
    card_signals,
    chances_to_take,
    co_seating,
    flagged_pairs,
    hand_facts,
    pair_signals,
    report,
    shared_table_lift,
    who_sets_whom,
)
from services.integrity.significance import (
    benjamini_hochberg,
    binomial_greater,
    fisher_greater,
    mean_above_zero,
)

CUTTHROAT = resolve_rules({"preset": "cutthroat"})
TABLE = table_for(CUTTHROAT)


def cards(*texts: str) -> list[Card]:
    return [Card.parse(text) for text in texts]


def record(
    hands: Sequence[Sequence[str]],
    bids: Sequence[Bid],
    tricks: Sequence[tuple[int, Sequence[str]]],
    points: Sequence[int] = (0, 0, 0),
    number: int = 1,
) -> HandRecord:
    """A hand of three seats: each trick as (its leader, the cards in play order)."""
    played: list[Trick] = []
    for leader, trick in tricks:
        seats = [(leader + k) % 3 for k in range(len(trick))]
        plays = [Played(seat, Card.parse(card)) for seat, card in zip(seats, trick, strict=True)]
        winner = TABLE.trick_winner(leader, tuple(play.card.ordinal for play in plays))
        played.append(Trick(leader, plays, winner))
    won = [sum(1 for trick in played if trick.winner == seat) for seat in range(3)]
    return HandRecord(
        hand=number,
        dealer=2,
        deal=Deal(deck=None, hands=[cards(*hand) for hand in hands], seed=None, commitment=None),
        draws=[],
        bids=list(bids),
        passes=[],
        tricks=played,
        tricks_won=won,
        points=list(points),
        scores=list(points),
        bags=[0, 0, 0],
    )


def seated(
    hand: HandRecord, players: tuple[str, ...] = ("a", "b", "c"), game: str = "g"
) -> SeatedHand:
    return SeatedHand(game_id=game, rules=CUTTHROAT, players=players, record=hand)


# ---------------------------------------------------------------------------- the tests


def test_fisher_matches_the_lady_tasting_tea() -> None:
    # Fisher's own table, three of four cups right: 1 + 16 of the 70 ways are as good or better.
    assert fisher_greater(3, 1, 1, 3) == pytest.approx(17 / 70)
    assert fisher_greater(4, 0, 0, 4) == pytest.approx(1 / 70)
    assert fisher_greater(0, 4, 4, 0) == pytest.approx(1.0)
    assert fisher_greater(0, 0, 3, 3) == 1.0  # no chance within: nothing to test


def test_the_binomial_tail_counts_every_outcome_as_extreme() -> None:
    assert binomial_greater(8, 10, 0.5) == pytest.approx((45 + 10 + 1) / 1024)
    assert binomial_greater(0, 10, 0.3) == 1.0
    assert binomial_greater(3, 3, 0.0) == 0.0


def test_the_mean_test_is_a_z_test_on_the_sample_spread() -> None:
    mean, p = mean_above_zero([1.0, 3.0, 2.0, 2.0])
    z = 2.0 / math.sqrt((1 + 1 + 0 + 0) / 3 / 4)
    assert mean == 2.0
    assert p == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)))
    assert mean_above_zero([-1.0, -2.0, -1.5])[1] > 0.5


def test_benjamini_hochberg_adjusts_by_rank_and_keeps_order() -> None:
    # p * m / rank, then the running minimum from the largest down.
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.2]) == pytest.approx(
        [0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2]
    )
    assert benjamini_hochberg([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert benjamini_hochberg([]) == []


# ---------------------------------------------------------------------------- chances


def test_a_chance_to_take_is_a_legal_card_that_beats_an_opponents_winning_card() -> None:
    hand = record(
        hands=[["5H", "2C"], ["KH", "3H"], ["AH", "4H"]],
        bids=[1, 1, 1],
        tricks=[(0, ["5H", "3H", "AH"]), (2, ["4H", "2C", "KH"])],
    )
    where = HandRef("g", 1)
    assert chances_to_take(seated(hand)) == [
        # b held the KH and let a's 5H stand; a, bidding one, took none: it ended set
        Chance("b", "a", "set", False, where, target_set=True, actor_short=True),
        Chance("c", "a", "set", True, where, target_set=True, actor_short=True),
        # c had made its one trick: the 4H it led is a bag to it; a, void, has no trump
        Chance("b", "c", "bag", True, where, actor_short=True),
    ]


def test_a_trump_counts_only_when_the_seat_cannot_follow() -> None:
    hand = record(
        hands=[["9D"], ["2D", "AS"], ["3C", "2S"]],
        bids=[1, 1, 1],
        tricks=[(0, ["9D", "2D", "2S"])],
    )
    # b must follow with the 2D: its AS is no choice. c, void, could ruff and did.
    assert [(c.actor, c.took) for c in chances_to_take(seated(hand))] == [("c", True)]


def test_a_live_nil_is_its_own_moment() -> None:
    hand = record(
        hands=[["KD", "2C"], ["QD", "3C"], ["AD", "4C"]],
        bids=["nil", 2, 2],
        tricks=[(0, ["KD", "QD", "AD"]), (2, ["4C", "2C", "3C"])],
    )
    moments = [(c.actor, c.target, c.moment, c.took) for c in chances_to_take(seated(hand))]
    # c covers a's nil with the AD (b's QD cannot); no one can beat c's 4C after
    assert moments == [("c", "a", "nil", True)]


# ---------------------------------------------------------------------------- signals


def chances(actor: str, target: str, acts: int, of: int, short: bool = True) -> list[Chance]:
    """``of`` set chances of ``actor`` against ``target``, ``acts`` of them declined."""
    where = f"{actor}{target}"
    return [
        Chance(actor, target, "set", k >= acts, HandRef(where, k), actor_short=short)
        for k in range(of)
    ]


def test_a_pair_that_declines_sets_against_each_other_stands_out() -> None:
    field = (
        chances("a", "b", 9, 10)
        + chances("b", "a", 8, 10)
        + chances("a", "c", 2, 10)
        + chances("b", "c", 1, 10)
        + chances("c", "a", 2, 10)
        + chances("c", "b", 2, 10)
    )
    by_pair = {(s.players, s.signal): s for s in card_signals(field)}
    pair = by_pair[(("a", "b"), "free_sets_declined")]
    assert (pair.observed, pair.expected, pair.count) == (0.85, 0.15, 20)
    assert pair.effect == pytest.approx(0.7)
    assert pair.p_value == pytest.approx(fisher_greater(17, 3, 3, 17))
    assert pair.evidence[0] == HandRef("ab", 0)
    assert by_pair[(("a", "c"), "free_sets_declined")].p_value > 0.5


def test_letting_a_trick_go_counts_only_while_the_actor_needs_tricks_itself() -> None:
    # a and b, their own contracts made, duck each other: ordinary play against bags
    made = chances("a", "b", 10, 10, short=False) + chances("b", "a", 10, 10, short=False)
    field = made + chances("a", "c", 1, 10) + chances("b", "c", 1, 10)
    by_pair = {(s.players, s.signal): s for s in card_signals(field)}
    assert (("a", "b"), "free_sets_declined") not in by_pair
    assert by_pair[(("a", "c"), "free_sets_declined")].observed == 0.1


def test_too_few_chances_are_left_untested() -> None:
    few = chances("a", "b", 3, 3) + chances("a", "c", 0, 10) + chances("b", "c", 0, 10)
    pair = next(s for s in card_signals(few) if s.players == ("a", "b"))
    assert pair.observed == 1.0
    assert pair.p_value == 1.0


def test_shared_table_lift_compares_with_each_players_hands_without_the_other() -> None:
    hands = []
    for k in range(12):  # a and b together: 30 points each
        hands.append(
            seated(record([[]] * 3, [1, 1, 1], [], (30 + k % 2, 30, 0), k), ("a", "b", "c"), "ab")
        )
    for k in range(12):  # apart: 10 points each
        hands.append(
            seated(record([[]] * 3, [1, 1, 1], [], (10, 10, 10), k), ("a", "c", "d"), "ac")
        )
        hands.append(
            seated(record([[]] * 3, [1, 1, 1], [], (10, 10, 10), k), ("b", "c", "d"), "bc")
        )
    lift = {s.players: s for s in shared_table_lift([hand_facts(hand) for hand in hands])}
    pair = lift[("a", "b")]
    assert (pair.expected, pair.count) == (20.0, 12)
    assert pair.effect == pytest.approx(40.5)
    assert pair.p_value < 1e-6
    assert lift[("b", "d")].p_value > 0.5  # worse together than apart
    assert ("c", "d") not in lift  # never apart: nothing to compare with


def test_co_seating_counts_games_shared_against_the_draw() -> None:
    hands = []
    rest = ["c", "d", "e", "f"]
    for round_ in range(12):  # two tables a round; a and b always at the first
        third = rest[round_ % 4]
        others = tuple(p for p in rest if p != third)
        hands.append(seated(record([[]] * 3, [1, 1, 1], []), ("a", "b", third), f"r{round_}a"))
        hands.append(seated(record([[]] * 3, [1, 1, 1], []), others, f"r{round_}b"))
    pairs = {s.players: s for s in co_seating([hand_facts(hand) for hand in hands])}
    # each game of a's has two other seats, each b's by 12 of the 60 other seats: 0.4 a game
    assert (pairs[("a", "b")].observed, pairs[("a", "b")].expected) == (12.0, 4.8)
    assert pairs[("a", "b")].p_value == pytest.approx(0.4**12)
    assert pairs[("c", "d")].observed == 6.0
    assert pairs[("c", "d")].p_value > 0.05
    facts = [hand_facts(hand) for hand in hands]
    given = {s.players: s for s in co_seating(facts, expected={("a", "b"): 12.0})}
    assert given[("a", "b")].p_value == 1.0  # the schedule put them together: no signal


# ---------------------------------------------------------------------------- bots


def test_colluders_see_a_cutthroat_table_with_the_pair_as_one_unit() -> None:
    allied = allied_table(TABLE, 2, 0)
    assert allied.units == ((0, 2), (1,))
    assert allied.unit_of == (0, 1, 0)
    assert (allied.partner_of(0), allied.partner_of(2), allied.partner_of(1)) == (2, 0, None)
    assert allied.beats(Card.parse("AS").ordinal, Card.parse("KS").ordinal)
    assert TABLE.units == ((0,), (1,), (2,))  # the table everyone else sees is untouched
    assert allied_table(TABLE, 0, 2) is allied


def test_a_pair_playing_as_partners_is_flagged_and_an_honest_table_is_not() -> None:
    hands = play_league(3, 40, seed=7, strength=1.0)
    colluding = pair_signals(hands)
    assert COLLUDERS in flagged_pairs(colluding)
    # the facts, through their storage encoding, give the same report, and name no card
    stored = [msgspec.json.encode(hand_facts(hand)) for hand in hands]
    assert report(msgspec.json.decode(f, type=HandFacts) for f in stored) == colluding
    cards = {card.value for hand in hands for cards in hand.record.deal.hands for card in cards}
    assert not any(f'"{card}"'.encode() in f for f in stored for card in cards)
    flagged = [s for s in colluding if s.flagged]
    assert all(s.evidence for s in flagged)
    honest = pair_signals(play_league(3, 40, seed=7, strength=None))
    assert flagged_pairs(honest) == set()


def test_who_sets_whom_counts_hands_where_the_setter_took_and_the_victim_fell_short() -> None:
    hand = record(
        hands=[["KH", "2C"], ["AH", "3C"], ["4H", "5C"]],
        bids=[2, 1, 1],
        tricks=[(0, ["KH", "AH", "4H"]), (1, ["3C", "5C", "2C"])],
    )
    found = chances_to_take(seated(hand))
    # b took a's KH with the AH and a, bidding two, took none: a was set, by b among others
    assert [(c.actor, c.target, c.took, c.target_set) for c in found] == [
        ("b", "a", True, True),
        ("c", "b", True, False),
    ]
    victim = [Chance("a", "c", "set", True, HandRef("v", k), target_set=True) for k in range(8)]
    others = [Chance("a", "b", "set", k < 1, HandRef("o", k), target_set=True) for k in range(8)]
    sets = {s.players: s for s in who_sets_whom(victim + others)}
    assert (sets[("a", "c")].observed, sets[("a", "c")].expected) == (1.0, 0.125)
    assert sets[("a", "c")].p_value == pytest.approx(fisher_greater(8, 0, 1, 7))
    assert sets[("a", "b")].p_value > 0.5


def test_partners_are_not_read_for_co_seating() -> None:
    partnership = resolve_rules({"preset": "partnership"})
    hands = [
        SeatedHand(
            game_id=f"g{game}",
            rules=partnership,
            players=("a", "x", "b", "y") if game % 2 else ("a", "y", "b", "x"),
            record=record([[]] * 4, [1, 1, 1, 1], [], (0, 0)),
        )
        for game in range(10)
    ]
    pairs = {s.players for s in co_seating([hand_facts(hand) for hand in hands])}
    assert ("a", "b") not in pairs  # seats 0 and 2: a team
    assert ("a", "x") in pairs


def test_a_play_the_service_made_or_the_rules_forced_is_no_chance() -> None:
    hand = record(
        hands=[["5H"], ["KH"], ["AH"]],
        bids=[1, 1, 1],
        tricks=[(0, ["5H", "KH", "AH"])],
    )
    assert [c.actor for c in chances_to_take(seated(hand))] == ["b", "c"]
    timed_out = msgspec.structs.replace(
        hand, timed_out=[TimedOutMove(seat=1, move="play", trick=1)]
    )
    assert [c.actor for c in chances_to_take(seated(timed_out))] == ["c"]
    must_beat = resolve_rules({"preset": "cutthroat", "must_beat": True})
    forced = SeatedHand(game_id="g", rules=must_beat, players=("a", "b", "c"), record=hand)
    assert chances_to_take(forced) == []


def test_the_dealers_discard_is_not_held() -> None:
    hand = msgspec.structs.replace(
        record(
            hands=[["5H"], ["3H", "KH"], ["2H"]], bids=[1, 1, 1], tricks=[(0, ["5H", "3H", "2H"])]
        ),
        discards=[Discarded(1, cards("KH"))],
    )
    assert chances_to_take(seated(hand)) == []
