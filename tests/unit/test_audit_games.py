"""Honest games audit clean: every preset, rule overrides at random, refusals on the way.

The games are built in-process exactly as the engine stores them (one commit per command, the
events of an accepted one or the refusal of a refused one, each naming the SHA-256 of the one
before, a fresh secret seed offered to every command), so the audit reads what it would read
from the stream. :class:`HonestTable` and :func:`rechained` are shared with the tampering and
record tests.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

import msgspec
import pytest
from msgspec.structs import replace

from contracts.wire import GENESIS, Commit, Refusal, encode_commit, read_commit
from domain.cards import cards_in
from domain.commands import AnyCommand, CreateGame, PlaceBid, PlayCard, TakeSeat
from domain.errors import InvalidRules, RuleViolation
from domain.events import AnyEvent, CardPlayed, HandScored
from domain.game import DiscardDue, PassDue, decide, evolve, legal_actions
from domain.rules import resolve_rules
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held, held
from services.audit.read_model_check import ReadModels
from services.audit.replay import audit_game, replay_game
from services.projections.hands import HandsModel
from services.projections.scoreboard import ScoreboardModel
from services.runtime.game_stream import StoredCommit

PRESETS = [
    "partnership",
    "solo",
    "cutthroat",
    "three-player-house",
    "two-player",
    "six-player",
    "jokers-54",
]
OVERRIDES: dict[str, list[Any]] = {
    "must_beat": [True, False],
    "renege": ["reject", "penalize"],
    "spades_lead": ["broken", "any"],
    "first_lead": ["left_of_dealer", "lowest_club", "dealer"],
    "min_bid": [0, 1],
    "nil": [True, False],
    "blind_nil": [True, False],
    "blind_nil_behind": [None, 100],
    "failed_nil_tricks": ["bags_if_partner_made", "partner", "none"],
    "failed_bid": ["bid", "short"],
    "overtrick_points": [1, 0, -1, -10],
    "bag_limit": [None, 10, 3],
    "ten_for_two_hundred": [True, False],
    "boston": [True, False],
    "all_tricks_bonus": [0, 100],
    "team_min_bid": [0, 4],
    "blind_nil_pass": [0, 1, 2],
    "first_hand": ["bid", "no_bid"],
    "blind_bids": [0, 6],
    "blind_boston": [False, True],
}
JOKERS = {"jokers": True, "trump_order": "jokers_deuces", "deck_remove": ["2C", "2H"]}


class HonestTable:
    """A game played at random through ``decide``/``evolve``, stored as the engine stores it."""

    def __init__(self, rules: dict[str, Any], seed: int, game_id: str = "audited") -> None:
        self.rng = random.Random(seed)
        self.game_id = game_id
        self.state: Game | None = None
        self.commits: list[StoredCommit] = []
        self.send(CreateGame(game_id, rules, None, self.rng.randbytes(8).hex()))
        assert self.state is not None
        for seat in range(self.state.rules.players):
            self.send(TakeSeat(f"player {seat}", seat, self.rng.randbytes(8).hex()))

    def send(self, command: AnyCommand) -> None:
        """Decide and store one command as the engine does (a look that shows nothing new is
        not stored)."""
        deal = SeededDeal(self.rng.randbytes(32))
        try:
            events = decide(self.state, command, deal=deal)
        except RuleViolation as refusal:
            self.store([], Refusal(refusal.code, refusal.detail))
            return
        if events:
            self.store(events, None)

    def store(self, events: list[AnyEvent], refusal: Refusal | None) -> None:
        version = (self.state.version if self.state is not None else 0) + len(events)
        commit = Commit(
            game_id=self.game_id,
            version=version,
            command_id=f"command-{len(self.commits) + 1}",
            time="2024-01-01T00:00:00.000Z",
            previous=self.commits[-1].digest if self.commits else GENESIS,
            request="",
            events=events,
            refusal=refusal,
        )
        data = encode_commit(commit)
        self.commits.append(StoredCommit(len(self.commits) + 1, data, read_commit(data)))
        for event in events:
            self.state = evolve(self.state, event)

    def play(self, *, refusals: float = 0.05, stop_after: int | None = None) -> HonestTable:
        """Random legal actions until the game ends (or ``stop_after`` commands), now and then
        a refused one."""
        sent = 0
        while self.state is not None and self.state.status == "playing":
            if stop_after is not None and sent >= stop_after:
                break
            if self.rng.random() < refusals:
                self.send(self.refused_action())
            self.send(self.legal_action())
            sent += 1
        return self

    def seat_to_act(self) -> int:
        assert self.state is not None
        hand = self.state.hand
        assert hand is not None
        if hand.phase == "pass":
            return (hand.passes_due & -hand.passes_due).bit_length() - 1
        return hand.turn

    def legal_action(self) -> AnyCommand:
        assert self.state is not None
        hand = self.state.hand
        assert hand is not None
        seat = self.seat_to_act()
        action = self.rng.choice(legal_actions(self.state, seat))
        if isinstance(action, (PassDue, DiscardDue)):
            return action.choose(tuple(self.rng.sample(cards_held(hand, seat), action.count)))
        return action

    def refused_action(self) -> AnyCommand:
        """An action the rules refuse: a seat out of turn, or a bid of too many tricks."""
        assert self.state is not None
        hand = self.state.hand
        assert hand is not None
        other = (self.seat_to_act() + 1) % self.state.rules.players
        cards = cards_in(held(hand, other))
        if hand.phase == "play" and cards:
            return PlayCard(other, self.rng.choice(cards))
        return PlaceBid(self.seat_to_act(), 99)


def rechained(
    commits: Sequence[StoredCommit | Commit], *, renumber: bool = False
) -> list[StoredCommit]:
    """A copy whose hash chain (and, with ``renumber``, versions) is made good again, as a
    careful forger would, so only the replay can catch what was changed."""
    out: list[StoredCommit] = []
    version = 0
    for item in commits:
        commit = item if isinstance(item, Commit) else item.commit
        if renumber:
            commit = replace(commit, version=version + len(commit.events))
        commit = replace(commit, previous=out[-1].digest if out else GENESIS)
        data = encode_commit(commit)
        out.append(StoredCommit(len(out) + 1, data, read_commit(data)))
        version = commit.version
    return out


def random_rules(preset: str, rng: random.Random) -> dict[str, Any]:
    """A rule set of ``preset`` with a few overrides drawn at random, one the engine accepts."""
    while True:
        raw: dict[str, Any] = {"preset": preset, "max_hands": 2}
        if rng.random() < 0.3 and preset not in ("two-player", "six-player", "jokers-54"):
            raw.update(JOKERS)
            if resolve_rules({"preset": preset}).players == 3:
                raw["deck_remove"] = ["2C", "2H", "2D"]
                raw["trump_order"] = "jokers"
        for option in rng.sample(sorted(OVERRIDES), 5):
            raw[option] = rng.choice(OVERRIDES[option])
        try:
            resolve_rules(raw)
        except InvalidRules:
            continue
        return raw


def events_of(commits: Sequence[StoredCommit]) -> list[AnyEvent]:
    return [event for stored in commits for event in stored.commit.events]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("seed", [1, 2])
def test_an_honest_game_of_every_preset_audits_clean(preset: str, seed: int) -> None:
    table = HonestTable({"preset": preset, "max_hands": 3}, seed).play()
    assert table.state is not None
    assert table.state.status == "finished"
    report = audit_game(table.commits)
    assert report.first_problem is None
    assert report.ok
    assert report.chain
    assert report.events == table.state.version
    assert [hand.hand for hand in report.hands] == [1, 2, 3]
    for hand in report.hands:
        assert (hand.deal_verified, hand.replayed, hand.score_matches) == (True, True, True)
        assert hand.arithmetic


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("seed", range(6))
def test_honest_games_under_random_rules_audit_clean(preset: str, seed: int) -> None:
    rng = random.Random(seed * 31 + len(preset))
    rules = random_rules(preset, rng)
    table = HonestTable(rules, seed).play(refusals=0.1)
    report = audit_game(table.commits)
    assert report.problems == [], rules
    assert len(report.hands) >= 2  # a tie on top plays on


def test_the_games_built_here_hold_refusals_and_every_kind_of_event() -> None:
    """The honest games exercise what the audit must follow: refusals, passes, draws, looks."""
    kinds: set[str] = set()
    refusals = 0
    for preset in PRESETS:
        rules = {"preset": preset, "max_hands": 3, "blind_nil_behind": None}
        table = HonestTable(rules, 3).play(refusals=0.1)
        refusals += sum(1 for stored in table.commits if stored.commit.refusal is not None)
        kinds |= {type(event).__name__ for event in events_of(table.commits)}
        assert audit_game(table.commits).ok
    assert refusals > 10
    assert {"CardsPassed", "CardsReceived", "CardDrawn", "HandLooked", "GameEnded"} <= kinds
    assert "CardsDiscarded" in kinds


def test_a_game_still_being_played_audits_clean_and_reports_only_finished_hands() -> None:
    table = HonestTable({"preset": "partnership"}, 4).play(stop_after=70)
    report = audit_game(table.commits)
    assert report.ok
    assert [hand.hand for hand in report.hands] == [1]


def test_a_refusal_that_recorded_events_is_caught() -> None:
    table = HonestTable({"preset": "solo", "max_hands": 1}, 5).play(refusals=0)
    commits = [stored.commit for stored in table.commits]
    at = next(k for k, commit in enumerate(commits) if isinstance(commit.events[0], CardPlayed))
    commits[at] = replace(commits[at], refusal=Refusal("not_your_turn"))
    report = audit_game(rechained(commits))
    assert report.first_problem is not None
    assert report.first_problem.check == "commit"
    assert report.first_problem.version == commits[at].first_version
    assert "refused command" in report.first_problem.detail


def test_read_models_that_show_the_record_pass_and_a_wrong_one_is_named() -> None:
    table = HonestTable({"preset": "partnership", "max_hands": 2}, 6).play()
    replay = replay_game(table.commits)
    records = [msgspec.to_builtins(account.record) for account in replay.hands]
    scored = [
        (stored.commit.first_version + k, event)
        for stored in table.commits
        for k, event in enumerate(stored.commit.events)
        if isinstance(event, HandScored)
    ]
    assert replay.state is not None
    board: dict[str, Any] = {
        "game_id": "audited",
        "version": replay.events,
        "units": [[0, 2], [1, 3]],
        "hands": [
            {
                "hand": e.hand,
                "points": list(e.points),
                "scores": list(e.scores),
                "bags": list(e.bags),
            }
            for _, e in scored
        ],
        "scores": list(scored[-1][1].scores),
        "bags": list(scored[-1][1].bags),
        "game_over": replay.state.status == "finished",
        "winners": list(replay.state.winners),
    }
    assert audit_game(table.commits, ReadModels(board, records)).ok

    wrong_board = {**board, "hands": [dict(board["hands"][0], points=[0, 0]), board["hands"][1]]}
    report = audit_game(table.commits, ReadModels(wrong_board, records))
    assert [(p.check, p.version, p.hand) for p in report.problems] == [
        ("read_model", scored[0][0], 1)
    ]
    assert "hands[0].points" in report.problems[0].detail

    wrong_record = dict(records[1], bids=["nil"] * 4)
    report = audit_game(table.commits, ReadModels(board, [records[0], wrong_record]))
    assert [(p.check, p.version) for p in report.problems] == [("read_model", scored[1][0])]
    assert "the record of hand 2" in report.problems[0].detail


def test_a_read_model_still_catching_up_is_compared_on_what_it_has() -> None:
    table = HonestTable({"preset": "cutthroat", "max_hands": 2}, 7).play()
    replay = replay_game(table.commits)
    first = replay.hands[0].record
    assert first is not None
    lagging = {
        "version": 3,
        "hands": [],
        "units": [[0], [1], [2]],
        "scores": [0, 0, 0],
        "bags": [0, 0, 0],
        "game_over": False,
        "winners": [],
    }
    report = audit_game(table.commits, ReadModels(lagging, [msgspec.to_builtins(first)]))
    assert report.ok


def test_a_finding_inside_the_hand_in_play_is_sealed_unless_the_house_asks() -> None:
    table = HonestTable({"preset": "partnership"}, 8).play(refusals=0, stop_after=30)
    commits = [stored.commit for stored in table.commits]
    at = len(commits) - 1
    while not isinstance(commits[at].events[0], CardPlayed):
        at -= 1
    played = commits[at].events[0]
    assert isinstance(played, CardPlayed)
    other = next(c for c in cards_in((1 << 52) - 1) if c != played.card)
    commits[at] = replace(
        commits[at], events=[replace(played, card=other), *commits[at].events[1:]]
    )
    tampered = rechained(commits)

    sealed = audit_game(tampered)
    assert sealed.first_problem is not None
    assert sealed.first_problem.version == commits[at].first_version
    assert str(other) not in sealed.first_problem.detail
    assert "still being played" in sealed.first_problem.detail

    shown = audit_game(tampered, reveal_open_hand=True)
    assert shown.first_problem is not None
    assert str(other) in shown.first_problem.detail


def test_the_projections_own_read_models_of_an_honest_game_agree() -> None:
    """The contract with the projections: their scoreboard and hand records, folded from the
    same commits, are what the audit expects."""
    table = HonestTable({"preset": "partnership", "max_hands": 2}, 9).play()
    boards, hands = ScoreboardModel(), HandsModel()
    board = progress = None
    for stored in table.commits:
        if stored.commit.events:
            board = boards.fold(board, stored.commit)
            progress = hands.fold(progress, stored.commit)
            board.version = stored.commit.version
    assert board is not None
    assert progress is not None
    shown = ReadModels(
        dataclasses.asdict(board), [msgspec.to_builtins(r) for r in progress.records]
    )
    assert len(shown.hand_records) == 2
    assert audit_game(table.commits, shown).problems == []
