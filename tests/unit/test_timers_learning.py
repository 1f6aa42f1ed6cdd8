"""What a timer worker holds: the running clocked games, learnt from their commits, and nothing
of any other game, however many come and go (their commits are skipped by a look at the bytes,
not decoded)."""

from __future__ import annotations

import random

from nats.aio.client import Client
from structlog.testing import capture_logs

from benchmarks.projections import GameWriter, play_game
from domain.clock import Clock
from domain.commands import CreateGame, TakeSeat
from domain.dealing import SeededDeal
from domain.game import decide
from services.timers.worker import Timers


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


def learnt(timers: Timers, game_id: str, payloads: list[bytes]) -> None:
    for data in payloads:
        timers.learn(game_id, data)


def test_a_clocked_game_is_held_from_its_first_commit_on() -> None:
    timers = Timers(Client())
    first, *seated = clocked("timed", seats=4)
    timers.learn("timed", first)
    assert timers.clocks == 1
    learnt(timers, "timed", seated)
    assert timers.clocks == 1


def test_games_without_a_clock_leave_nothing_held_and_their_commits_are_not_decoded() -> None:
    timers = Timers(Client())
    for number in range(3):
        log = play_game(random.Random(number), f"plain-{number}")
        learnt(timers, log.game_id, log.payloads)
    with capture_logs() as logged:
        timers.learn("never-seen", b"not a commit, and never decoded")
    assert logged == []
    assert timers.clocks == 0


def test_a_clocked_game_whose_first_commit_was_missed_is_not_taken_up_midway() -> None:
    timers = Timers(Client())
    payloads = clocked("midway", seats=4)
    learnt(timers, "midway", payloads[1:])
    assert timers.clocks == 0
