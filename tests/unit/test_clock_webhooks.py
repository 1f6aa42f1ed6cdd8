"""The clock's webhooks: ``game.timed_out`` when a seat's clock runs out (auto or forfeit), and
the deadline in ``game.turn``, reckoned from the commit that gave the turn; no card in them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from contracts.webhooks import type_of
from contracts.wire import Commit
from domain.clock import Clock
from domain.commands import AnyCommand, CreateGame, TakeSeat, TimeOut
from domain.game import decide, evolve
from domain.shuffle import SeededDeal
from domain.state import Game
from domain.timing import apply_commit, on_clock
from services.bots.stand_in import stand_in_actions
from services.webhooks.events import Made, Seen, game_webhooks
from tests.unit.test_webhook_events import CARD, strings_in

T0 = 1_800_000_000.0


def iso(seconds: float) -> str:
    return (
        datetime.fromtimestamp(seconds, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


class Run:
    """Commands decided and committed at given times; the webhooks of each commit."""

    def __init__(self, clock: Clock, rules: dict[str, Any] | None = None) -> None:
        self.state: Game | None = None
        self.seen: Seen | None = None
        self.version = 0
        self.made: list[Made] = []
        rules = rules or {"preset": "partnership"}
        self.commit(CreateGame("g", rules, dealer=3, clock=clock), T0)
        for seat in range(4):
            self.commit(TakeSeat(f"p{seat}", seat), T0)

    def commit(self, command: AnyCommand, at: float) -> list[Made]:
        events = decide(self.state, command, deal=SeededDeal(b"w" * 32))
        self.version += len(events)
        commit = Commit(
            game_id="g", version=self.version, command_id=f"c{self.version}", time=iso(at),
            previous="0" * 64, events=events,
        )  # fmt: skip
        self.state = apply_commit(self.state, events, at, evolve)
        self.seen, made = game_webhooks(self.seen, commit)
        self.made += made
        return made

    def time_out(self, seat: int, at: float) -> list[Made]:
        assert self.state is not None
        assert self.state.timing is not None
        auto = self.state.timing.clock.on_timeout == "auto"
        actions = stand_in_actions(self.state, seat) if auto else ()
        return self.commit(TimeOut(seat, at, actions), at)


def data(made: Made) -> dict[str, Any]:
    payload: dict[str, Any] = msgspec.to_builtins(made.webhook)["data"]
    return payload


def test_a_turn_carries_its_deadline_and_a_timeout_is_told_without_a_card() -> None:
    run = Run(Clock(turn_s=20, bank_s=10, on_timeout="auto"))
    turns = [m for m in run.made if type_of(m.webhook) == "game.turn"]
    assert [data(m)["seat"] for m in turns] == [0]
    assert data(turns[0])["deadline"] == iso(T0 + 30)
    made = run.time_out(0, T0 + 30)
    kinds = [type_of(m.webhook) for m in made]
    assert kinds == ["game.timed_out", "game.turn"]
    timed_out = data(made[0])
    assert {k: timed_out[k] for k in ("seat", "player", "outcome")} == {
        "seat": 0,
        "player": "p0",
        "outcome": "auto",
    }
    assert data(made[1])["seat"] == 1
    assert data(made[1])["deadline"] == iso(T0 + 30 + 30)
    for m in run.made:
        assert not [s for s in strings_in(data(m)) if CARD.match(s)]


def test_a_forfeit_is_told_then_the_end() -> None:
    run = Run(Clock(turn_s=5, on_timeout="forfeit"))
    made = run.time_out(0, T0 + 5)
    assert [type_of(m.webhook) for m in made] == ["game.timed_out", "game.finished"]
    assert data(made[0])["outcome"] == "forfeit"
    assert data(made[1])["winners"] == [1]


def test_a_game_without_a_clock_has_no_deadline() -> None:
    from tests.unit.test_audit_games import HonestTable

    table = HonestTable({"preset": "partnership", "max_hands": 1}, seed=1, game_id="g").play()
    seen: Seen | None = None
    for stored in table.commits:
        seen, made = game_webhooks(seen, stored.commit)
        for m in made:
            if type_of(m.webhook) == "game.turn":
                assert data(m)["deadline"] is None
            assert type_of(m.webhook) != "game.timed_out"


def test_an_auto_played_game_tells_each_present_seats_timeout_once_and_counts_the_rest() -> None:
    run = Run(Clock(turn_s=5, on_timeout="auto", away_after=2), {"preset": "partnership"})
    at, timeouts = T0, 0
    while run.state is not None and run.state.status == "playing":
        at += 100
        run.time_out(min(on_clock(run.state)), at)
        timeouts += 1
    told = [data(m) for m in run.made if type_of(m.webhook) == "game.timed_out"]
    # Two timeouts in a row of each present seat, the second leaving it away; no more.
    assert sorted((t["seat"], t["away"]) for t in told) == [
        (seat, away) for seat in range(4) for away in (False, True)
    ]
    scored = [data(m) for m in run.made if type_of(m.webhook) == "hand.scored"]
    finished = [data(m) for m in run.made if type_of(m.webhook) == "game.finished"]
    assert len(finished) == 1
    assert len(scored) > 1
    by_hands = [sum(turns) for turns in zip(*(s["away_turns"] for s in scored), strict=True)]
    assert finished[0]["away_turns"] == by_hands
    assert len(told) + sum(by_hands) == timeouts  # every timeout: told once, or counted
    assert timeouts > 100  # a whole game played by the service, not one webhook a move
