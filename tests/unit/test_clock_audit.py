"""The audit of a clocked game: timed-out moves are replayed, scored and shown like any other;
one that was illegal, or a timeout before its seat's deadline, is a finding."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts.wire import GENESIS, Commit, encode_commit, read_commit
from domain.clock import Clock
from domain.commands import AnyCommand, CreateGame, TakeSeat, TimeOut
from domain.events import AnyEvent, CardPlayed, TimedOut
from domain.game import decide, evolve
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held
from domain.timing import apply_commit, deadlines
from services.audit.render import TIMED_OUT, tell_hand
from services.audit.replay import audit_game, replay_game
from services.bots.stand_in import stand_in_actions
from services.runtime.game_stream import StoredCommit

T0 = 1_800_000_000.0


def iso(seconds: float) -> str:
    stamp = datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


class ClockedTable:
    """A game nobody touches, every move the service's, stored as the engine stores it."""

    def __init__(self, clock: Clock) -> None:
        self.state: Game | None = None
        self.commits: list[StoredCommit] = []
        self.now = T0
        self.n = 0
        self.send(CreateGame("timed", {"preset": "partnership", "max_hands": 1}, 3, clock=clock))
        for seat in range(4):
            self.send(TakeSeat(f"p{seat}", seat))

    def send(self, command: AnyCommand) -> None:
        self.n += 1
        events = decide(self.state, command, deal=SeededDeal(self.n.to_bytes(32, "big")))
        self.store(events)

    def store(self, events: list[AnyEvent], time: float | None = None) -> None:
        version = (self.state.version if self.state is not None else 0) + len(events)
        commit = Commit(
            game_id="timed",
            version=version,
            command_id=f"c{len(self.commits) + 1}",
            time=iso(self.now if time is None else time),
            previous=self.commits[-1].digest if self.commits else GENESIS,
            events=events,
        )
        data = encode_commit(commit)
        self.commits.append(StoredCommit(len(self.commits) + 1, data, read_commit(data)))
        self.state = apply_commit(self.state, events, self.now, evolve)

    def play_out(self) -> ClockedTable:
        while self.state is not None and self.state.status == "playing":
            seat, deadline = min(deadlines(self.state).items(), key=lambda item: item[1])
            self.now = deadline
            self.send(TimeOut(seat, deadline, stand_in_actions(self.state, seat)))
        return self


def test_a_game_the_service_played_out_audits_clean_and_its_rendering_marks_every_move() -> None:
    table = ClockedTable(Clock(turn_s=20, bank_s=5)).play_out()
    report = audit_game(table.commits, reveal_open_hand=True)
    assert report.ok, report.problems
    assert all(hand.replayed and hand.score_matches for hand in report.hands)
    replay = replay_game(table.commits)
    record = replay.hands[0].record
    assert record is not None
    assert len(record.timed_out) == 4 + 52
    assert {moved.move for moved in record.timed_out} == {"bid", "play"}
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(tell_hand(replay.hands[0]))
    assert TIMED_OUT in console.export_text()


def test_an_illegal_move_made_for_a_seat_is_a_finding() -> None:
    table = ClockedTable(Clock(turn_s=20))
    for _ in range(5):  # the bids, and the first card of the first trick
        state = table.state
        assert state is not None
        seat = next(iter(deadlines(state)))
        table.now = deadlines(state)[seat]
        table.send(TimeOut(seat, table.now, stand_in_actions(state, seat)))
    state = table.state
    assert state is not None
    assert state.hand is not None
    seat = next(iter(deadlines(state)))
    wrong = cards_held(state.hand, (seat + 1) % 4)[0]  # another seat's card
    table.now = deadlines(state)[seat]
    table.store([TimedOut(seat), CardPlayed(seat, wrong)])
    report = audit_game(table.commits, reveal_open_hand=True)
    assert not report.ok
    assert report.first_problem is not None
    assert report.first_problem.version == state.version + 1


def test_a_timeout_before_its_deadline_is_a_finding() -> None:
    table = ClockedTable(Clock(turn_s=20))
    state = table.state
    assert state is not None
    seat = next(iter(deadlines(state)))
    early = table.now + 5
    events = decide(state, TimeOut(seat, table.now + 20, stand_in_actions(state, seat)))
    table.store(events, time=early)
    report = audit_game(table.commits, reveal_open_hand=True)
    assert not report.ok
    assert report.first_problem is not None
    assert "wrong_phase" in (report.first_problem.rule or "") + report.first_problem.detail


def test_a_forfeit_audits_clean() -> None:
    table = ClockedTable(Clock(turn_s=20, on_timeout="forfeit"))
    state = table.state
    assert state is not None
    seat, deadline = next(iter(deadlines(state).items()))
    table.now = deadline
    table.send(TimeOut(seat, deadline))
    assert table.state is not None
    assert table.state.status == "finished"
    assert audit_game(table.commits, reveal_open_hand=True).ok
    assert table.state.winners == (1,)
