"""Tampered copies of a game's commits are caught, each at the event that was changed.

Where a tamper would otherwise show only as a broken hash chain, the copy is re-chained (and
renumbered) as a careful forger would do, so that these tests prove the replay itself catches
it; the plain copies prove the chain does.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from msgspec.structs import replace

from contracts.wire import Commit, encode_commit, read_commit
from domain.cards import Card, cards_in
from domain.events import AnyEvent, BidPlaced, CardPlayed, HandDealt, HandScored, TrickWon
from domain.game import fold
from domain.shuffle import commitment
from domain.state import held
from domain.table import table_for
from services.audit.history import Problem
from services.audit.replay import audit_game
from services.runtime.game_stream import StoredCommit
from tests.unit.test_audit_games import HonestTable, rechained

Found = Callable[[AnyEvent], bool]


@pytest.fixture(scope="module")
def honest() -> list[StoredCommit]:
    """Two hands of a partnership game, no refusals (so every commit is a command's events)."""
    table = HonestTable({"preset": "partnership", "max_hands": 2}, 11).play(refusals=0)
    assert audit_game(table.commits).ok
    return table.commits


def commits_of(stored: list[StoredCommit]) -> list[Commit]:
    return [item.commit for item in stored]


def locate(commits: list[Commit], wanted: Found, nth: int = 0) -> tuple[int, int]:
    """The commit index and event offset of the ``nth`` event that ``wanted`` picks."""
    seen = 0
    for index, commit in enumerate(commits):
        for offset, event in enumerate(commit.events):
            if wanted(event):
                if seen == nth:
                    return index, offset
                seen += 1
    raise AssertionError("no such event")


def with_event(commits: list[Commit], at: tuple[int, int], event: AnyEvent) -> list[Commit]:
    index, offset = at
    changed = list(commits)
    events = list(changed[index].events)
    events[offset] = event
    changed[index] = replace(changed[index], events=events)
    return changed


def version_at(commits: list[Commit], at: tuple[int, int]) -> int:
    return commits[at[0]].first_version + at[1]


def first_problem(stored: list[StoredCommit]) -> Problem:
    report = audit_game(stored, reveal_open_hand=True)
    assert not report.ok
    assert report.first_problem is not None
    return report.first_problem


def test_a_card_changed_to_one_the_seat_never_held(honest: list[StoredCommit]) -> None:
    commits = commits_of(honest)
    at = locate(commits, lambda e: isinstance(e, CardPlayed), nth=9)
    played = commits[at[0]].events[at[1]]
    assert isinstance(played, CardPlayed)
    state = fold(e for c in commits[: at[0]] for e in c.events)
    assert state is not None
    assert state.hand is not None
    elsewhere = next(c for c in cards_in(held(state.hand, (played.seat + 1) % 4)))
    tampered = with_event(commits, at, replace(played, card=elsewhere))
    problem = first_problem(rechained(tampered))
    assert (problem.version, problem.check, problem.rule) == (
        version_at(commits, at),
        "replay",
        "card_not_in_hand",
    )
    assert f"seat {played.seat} plays {elsewhere}" in problem.detail


def test_a_card_changed_to_a_renege(honest: list[StoredCommit]) -> None:
    """A follower holding the suit led is made to play another of its own cards."""
    commits = commits_of(honest)
    for nth in range(52):
        at = locate(commits, lambda e: isinstance(e, CardPlayed), nth=nth)
        state = fold(e for c in commits[: at[0]] for e in c.events)
        assert state is not None
        hand = state.hand
        assert hand is not None
        if not hand.trick:
            continue
        played = commits[at[0]].events[at[1]]
        assert isinstance(played, CardPlayed)
        table = table_for(state.rules)
        led = table.suit_of[hand.trick[0]]
        off_suit = [
            card for card in cards_in(held(hand, played.seat)) if table.suit_of[card.ordinal] != led
        ]
        if table.suit_of[played.card.ordinal] == led and off_suit:
            break
    else:
        raise AssertionError("no follower held the suit led and another")
    tampered = with_event(commits, at, replace(played, card=off_suit[0]))
    problem = first_problem(rechained(tampered))
    assert (problem.version, problem.rule) == (version_at(commits, at), "must_follow_suit")


def test_a_trick_given_to_the_wrong_seat(honest: list[StoredCommit]) -> None:
    commits = commits_of(honest)
    at = locate(commits, lambda e: isinstance(e, TrickWon), nth=4)
    won = commits[at[0]].events[at[1]]
    assert isinstance(won, TrickWon)
    tampered = with_event(commits, at, replace(won, seat=(won.seat + 1) % 4))
    problem = first_problem(rechained(tampered))
    assert (problem.version, problem.check) == (version_at(commits, at), "replay")
    assert "trick 5 " in problem.detail
    assert f"goes to seat {won.seat}" in problem.detail
    assert problem.rule is not None
    assert "trump_order" in problem.rule or "suit_led" in problem.rule


def test_a_score_changed(honest: list[StoredCommit]) -> None:
    commits = commits_of(honest)
    at = locate(commits, lambda e: isinstance(e, HandScored), nth=0)
    scored = commits[at[0]].events[at[1]]
    assert isinstance(scored, HandScored)
    bumped = replace(
        scored,
        points=(scored.points[0] + 10, scored.points[1]),
        scores=(scored.scores[0] + 10, scored.scores[1]),
    )
    problem = first_problem(rechained(with_event(commits, at, bumped)))
    assert (problem.version, problem.check, problem.hand) == (version_at(commits, at), "score", 1)
    assert f"the rules give points {list(scored.points)}" in problem.detail
    assert problem.arithmetic
    assert problem.arithmetic[-1].startswith("unit 0: 0 ")
    assert problem.rule


def test_a_commit_removed_breaks_the_chain_at_the_missing_version(
    honest: list[StoredCommit],
) -> None:
    at = next(k for k, s in enumerate(honest) if isinstance(s.commit.events[0], BidPlaced))
    missing = honest[at].commit.first_version
    problem = first_problem([*honest[:at], *honest[at + 1 :]])
    assert (problem.version, problem.check) == (missing, "versions")


def test_a_commit_removed_and_the_chain_forged_is_caught_by_the_replay(
    honest: list[StoredCommit],
) -> None:
    at = next(k for k, s in enumerate(honest) if isinstance(s.commit.events[0], BidPlaced))
    missing = honest[at].commit.first_version
    forged = rechained([*honest[:at], *honest[at + 1 :]], renumber=True)
    problem = first_problem(forged)
    assert (problem.version, problem.check, problem.rule) == (missing, "replay", "not_your_turn")


def test_two_commits_swapped(honest: list[StoredCommit]) -> None:
    at = next(
        k
        for k, s in enumerate(honest)
        if isinstance(s.commit.events[0], CardPlayed) and len(s.commit.events) == 1
    )
    swapped = list(honest)
    swapped[at], swapped[at + 1] = swapped[at + 1], swapped[at]
    version = honest[at].commit.first_version
    assert first_problem(swapped).version == version

    problem = first_problem(rechained(swapped, renumber=True))
    assert (problem.version, problem.check, problem.rule) == (version, "replay", "not_your_turn")


def test_a_revealed_seed_that_does_not_match_its_commitment(honest: list[StoredCommit]) -> None:
    commits = commits_of(honest)
    at = locate(commits, lambda e: isinstance(e, HandScored), nth=1)
    scored = commits[at[0]].events[at[1]]
    assert isinstance(scored, HandScored)
    forged = rechained(with_event(commits, at, replace(scored, seed="ab" * 32)))
    problem = first_problem(forged)
    assert (problem.version, problem.check, problem.hand) == (version_at(commits, at), "deal", 2)
    assert "does not hash to" in problem.detail or "hashes to" in problem.detail
    report = audit_game(forged)
    assert [hand.deal_verified for hand in report.hands] == [True, False]


def test_a_commitment_changed_at_the_deal(honest: list[StoredCommit]) -> None:
    commits = commits_of(honest)
    at = locate(commits, lambda e: isinstance(e, HandDealt), nth=1)
    dealt = commits[at[0]].events[at[1]]
    assert isinstance(dealt, HandDealt)
    forged = with_event(commits, at, replace(dealt, commitment=commitment(b"another seed")))
    problem = first_problem(rechained(forged))
    assert (problem.version, problem.check) == (version_at(commits, at), "replay")
    assert "commitment" in problem.detail


def test_a_stacked_deal_is_not_the_deal_its_seed_gives(honest: list[StoredCommit]) -> None:
    commits = commits_of(honest)
    at = locate(commits, lambda e: isinstance(e, HandDealt), nth=0)
    dealt = commits[at[0]].events[at[1]]
    assert isinstance(dealt, HandDealt)
    hands = list(dealt.hands)
    hands[0], hands[2] = hands[2], hands[0]
    forged = rechained(with_event(commits, at, replace(dealt, hands=tuple(hands))))
    problem = first_problem(forged)
    assert (problem.version, problem.check) == (version_at(commits, at), "deal")
    assert "seat(s) 0, 2" in problem.detail


def test_bytes_changed_without_forging_the_chain(honest: list[StoredCommit]) -> None:
    """A card changed in the stored bytes only: the replay names the play, the chain the next
    commit (whose ``previous`` no longer matches)."""
    at = next(
        k for k, s in enumerate(honest) if k > 20 and isinstance(s.commit.events[0], CardPlayed)
    )
    played = honest[at].commit.events[0]
    assert isinstance(played, CardPlayed)
    other = Card.ACE_OF_SPADES if played.card is not Card.ACE_OF_SPADES else Card.KING_OF_SPADES
    data = honest[at].data.replace(f'"card":"{played.card}"'.encode(), f'"card":"{other}"'.encode())
    assert data != honest[at].data
    copy = list(honest)
    copy[at] = StoredCommit(honest[at].sequence, data, read_commit(data))
    report = audit_game(copy, reveal_open_hand=True)
    version = honest[at].commit.first_version
    assert report.first_problem is not None
    assert (report.first_problem.version, report.first_problem.check) == (version, "replay")
    chain = [p for p in report.problems if p.check == "chain"]
    assert [p.version for p in chain] == [honest[at + 1].commit.first_version]
    assert not report.chain


def test_a_commit_of_another_game_is_caught(honest: list[StoredCommit]) -> None:
    commits = commits_of(honest)
    commits[5] = replace(commits[5], game_id="another")
    problem = first_problem(rechained(commits))
    assert (problem.version, problem.check) == (commits[5].first_version, "commit")


def test_an_empty_record_is_not_clean() -> None:
    report = audit_game([])
    assert not report.ok
    assert report.first_problem is not None
    assert report.first_problem.check == "commit"


def test_a_stored_commit_is_read_back_byte_for_byte(honest: list[StoredCommit]) -> None:
    """What the tampering tests rely on: re-encoding an untouched commit gives its bytes."""
    assert all(encode_commit(stored.commit) == stored.data for stored in honest)
