"""What a scored hand adds to each player's counters (the ``players`` read model), for the
hands seed 002's variations score: without bidding, blind, a blind Boston, six players."""

from __future__ import annotations

from domain.bids import Bid
from domain.events import HandScored
from domain.rules import resolve_rules
from services.projections.players import Tally, hand_tallies


def scored(bids: list[Bid | None], tricks: list[int], units: int) -> HandScored:
    zero = (0,) * units
    return HandScored(1, tuple(bids), tuple(tricks), zero, zero, zero)


def test_a_hand_without_bidding_counts_as_a_hand_and_no_bid() -> None:
    rules = resolve_rules({"preset": "partnership", "first_hand": "no_bid"})
    tallies = hand_tallies(rules, scored([None] * 4, [4, 3, 2, 4], 2))
    assert tallies == [Tally(hands=1)] * 4


def test_a_blind_boston_made_is_a_bid_made() -> None:
    rules = resolve_rules({"blind_bids": 6, "boston": True, "blind_boston": True})
    tallies = hand_tallies(rules, scored(["blind_7", 1, 6, 1], [7, 0, 6, 0], 2))
    assert [(t.bids_made, t.bids_set) for t in tallies] == [(1, 0), (0, 1), (1, 0), (0, 1)]


def test_six_players_count_by_their_team_of_facing_partners() -> None:
    rules = resolve_rules({"preset": "six-player"})
    tallies = hand_tallies(rules, scored(["nil", 4, 3, 5, 2, 3], [1, 3, 3, 6, 1, 3], 3))
    assert (tallies[0].nils_failed, tallies[3].bids_made) == (1, 1)
    assert (tallies[1].bids_set, tallies[4].bids_set) == (1, 1)
    assert tallies[0].bags == tallies[3].bags == 2
