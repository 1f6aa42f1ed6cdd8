"""What a partition's clocks hold: the running clocked games, learnt from their commits, and
nothing of any other game, however many come and go (their commits are skipped by a look at the
bytes, not decoded); and what its checkpoint needs to hold them again."""

from __future__ import annotations

import random
from datetime import timedelta

from structlog.testing import capture_logs

from benchmarks.projections import EPOCH, GameWriter, play_game
from contracts.wire import read_commit
from domain.clock import Clock
from domain.commands import CreateGame, TakeSeat
from domain.game import decide
from domain.shuffle import SeededDeal
from domain.timing import deadlines
from services.timers.clocks import UNANSWERED_S, Clocks


def clocked(game_id: str, seats: int) -> list[bytes]:
    """A partnership game's first commits under a clock, ``seats`` of its seats taken."""
    rng = random.Random(game_id)
    writer = GameWriter(game_id)
    rules = {"preset": "partnership"}
    game = writer.commit(decide(None, CreateGame(game_id, rules, clock=Clock(turn_s=30))))
    for seat in range(seats):
        deal = SeededDeal(rng.randbytes(32))
        game = writer.commit(decide(game, TakeSeat(f"player-{seat}"), deal=deal))
    return writer.log.payloads


def learnt(clocks: Clocks, game_id: str, payloads: list[bytes], first: int = 1) -> None:
    """Learn the payloads as if stored at sequences ``first``, ``first + 1``, ..."""
    for sequence, data in enumerate(payloads, start=first):
        clocks.learn(game_id, sequence, data)


def test_a_clocked_game_is_held_from_its_first_commit_on() -> None:
    clocks = Clocks()
    first, *seated = clocked("timed", seats=4)
    clocks.learn("timed", 1, first)
    assert len(clocks) == 1
    learnt(clocks, "timed", seated, first=2)
    assert len(clocks) == 1


def test_games_without_a_clock_leave_nothing_held_and_their_commits_are_not_decoded() -> None:
    clocks = Clocks()
    for number in range(3):
        log = play_game(random.Random(number), f"plain-{number}")
        learnt(clocks, log.game_id, log.payloads)
    with capture_logs() as logged:
        clocks.learn("never-seen", 1, b"not a commit, and never decoded")
    assert logged == []
    assert len(clocks) == 0


def test_a_clocked_game_whose_first_commit_was_missed_is_not_taken_up_midway() -> None:
    clocks = Clocks()
    payloads = clocked("midway", seats=4)
    learnt(clocks, "midway", payloads[1:])
    assert len(clocks) == 0


def test_a_game_resumed_from_its_history_is_held_as_one_learnt_commit_by_commit() -> None:
    """What a new holder of the partition does with a checkpoint: the games it names, read up
    to their last commit then, give the same clocks and the same deadline."""
    payloads = clocked("resumed", seats=4)
    followed = Clocks()
    learnt(followed, "resumed", payloads, first=10)
    assert followed.running().games == {"resumed": 10 + len(payloads) - 1}
    history = [(10 + n, read_commit(data)) for n, data in enumerate(payloads)]
    resumed = Clocks()
    resumed.resume("resumed", history)
    assert resumed.running() == followed.running()
    assert resumed.games["resumed"].state == followed.games["resumed"].state
    assert resumed.earliest() == followed.earliest() is not None


def test_a_due_timeout_is_taken_once_and_is_overdue_until_sent_and_while_unanswered() -> None:
    clocks = Clocks()
    learnt(clocks, "due", clocked("due", seats=4))
    deadline = clocks.earliest()
    assert deadline is not None
    assert clocks.next_due(deadline - 0.001) is None
    assert clocks.overdue(deadline - 0.001) == 0
    assert clocks.overdue(deadline) == 1  # due, still in the heap
    entry = clocks.next_due(deadline)
    assert entry is not None
    assert entry[0] == deadline
    assert clocks.next_due(deadline + 60) is None  # firing: not taken twice
    assert clocks.overdue(deadline) == 0  # just sent
    assert clocks.overdue(deadline + UNANSWERED_S) == 1  # sent, and no answer since
    clocks.answered(entry[1:])
    assert clocks.overdue(deadline + 60) == 0


def test_a_commit_learnt_again_changes_nothing() -> None:
    """A batch delivered again (after a restart of its follower) is passed over, commit by
    commit: folding a commit twice would break the game's clocks."""
    clocks = Clocks()
    payloads = clocked("twice", seats=4)
    learnt(clocks, "twice", payloads)
    held = clocks.games["twice"].state
    learnt(clocks, "twice", payloads[2:], first=3)
    assert clocks.games["twice"].state == held


def test_overdue_counts_the_turns_due_by_a_time_without_looking_past_them() -> None:
    """The heap is walked only below entries due; the count is every standing turn due."""
    clocks = Clocks()
    for number in (3, 0, 6, 1, 5, 2, 4):  # not in deadline order: the heap is no sorted list
        writer = GameWriter(f"spread-{number}", EPOCH + timedelta(seconds=10 * number))
        rules = {"preset": "partnership"}
        game = writer.commit(
            decide(None, CreateGame(writer.log.game_id, rules, clock=Clock(turn_s=30)))
        )
        for seat in range(4):
            deal = SeededDeal(random.Random(number * 4 + seat).randbytes(32))
            game = writer.commit(decide(game, TakeSeat(f"player-{seat}"), deal=deal))
        learnt(clocks, writer.log.game_id, writer.log.payloads)
    due = sorted(d for held in clocks.games.values() for d in deadlines(held.state).values())
    assert len(due) == 7
    for now in (due[0] - 1, due[0], due[3], due[3] + 5, due[-1], due[-1] + 60):
        assert clocks.overdue(now) == sum(deadline <= now for deadline in due)
