"""The audit of a duplicate event's boards: clean for an event played as dealt, and each kind
of tampering named by its finding."""

from __future__ import annotations

import random
from typing import Any

import pytest
from msgspec.structs import replace

from contracts.wire import Refusal
from domain.boards import BoardSeeds
from domain.commands import AnyCommand, CreateGame, TakeSeat
from domain.errors import RuleViolation
from domain.events import DuplicateBoards, HandDealt, HandScored
from domain.game import decide as decide_game
from domain.league import (
    FinishRound,
    League,
    ScheduleRound,
    decide,
    table_result,
)
from domain.records import HandRecorder
from services.audit.boards import (
    DuplicateEvent,
    TableHand,
    audit_boards,
    event_of,
    hands_of_records,
)
from services.audit.history import deal_checks
from services.audit.replay import audit_game
from tests.unit.test_audit_games import HonestTable, rechained
from tests.unit.test_league_duplicate import created, play_table, seed_of, seeds, then


def played_event(rounds: int = 2, per_round: int = 2) -> tuple[League, dict[str, list[Any]]]:
    """A duplicate league played through the domain; each table's events."""
    league = created(rounds=rounds, boards_per_round=per_round)
    all_seeds = seeds(rounds * per_round)
    rng = random.Random(7)
    tables: dict[str, list[Any]] = {}
    for number in range(1, rounds + 1):
        league = then(decide(league, ScheduleRound(number), board_seeds=all_seeds), league)
        played = league.rounds[-1]
        results = {}
        for table in played.tables:
            game, events = play_table(league, table, played.boards, rng, keep=True)
            tables[table.game_id] = events
            results[table.game_id] = table_result(game)
        league = then(
            decide(league, FinishRound(number), results=results, board_seeds=all_seeds), league
        )
    return league, tables


@pytest.fixture(scope="module")
def event() -> tuple[DuplicateEvent, dict[str, list[TableHand]]]:
    league, tables = played_event()
    hands = {
        game_id: [TableHand(dealt=e) for e in events if isinstance(e, HandDealt)]
        for game_id, events in tables.items()
    }
    return event_of(league), hands


Audited = tuple[DuplicateEvent, dict[str, list[TableHand]]]


def findings(event: DuplicateEvent, tables: dict[str, list[TableHand]]) -> set[str]:
    return {finding.finding for finding in audit_boards(event, tables)}


def test_an_event_played_as_dealt_is_clean(event: Audited) -> None:
    published, tables = event
    assert len(tables) == 4
    assert audit_boards(published, tables) == []


def test_hand_records_give_the_same_deals() -> None:
    league, tables = played_event(rounds=1, per_round=2)
    hands = {}
    for game_id, events in tables.items():
        recorder = HandRecorder()
        records = [r for e in events if (r := recorder.feed(e)) is not None]
        hands[game_id] = hands_of_records(records, league.rules)
    assert audit_boards(event_of(league), hands) == []


def _with(tables: dict[str, list[TableHand]], game_id: str, k: int, **changes: Any) -> Any:
    changed = {g: list(h) for g, h in tables.items()}
    hand = changed[game_id][k]
    changed[game_id][k] = replace(hand, dealt=replace(hand.dealt, **changes))
    return changed


def test_each_tampering_is_named(event: Audited) -> None:
    published, tables = event
    first = published.rounds[0].games[0]
    second_round_table = published.rounds[1].games[0]
    # a commitment of no board
    assert findings(published, _with(tables, first, 0, commitment="00" * 32)) == {
        "board_commitment"
    }
    # another hand held at one table: the deal no longer is the board's
    dealt = tables[first][0].dealt
    swapped = (dealt.hands[1], dealt.hands[0], *dealt.hands[2:])
    assert findings(published, _with(tables, first, 0, hands=swapped)) == {"deal"}
    # the board of the other hand of the round
    other = tables[first][1].dealt.commitment
    assert findings(published, _with(tables, first, 0, commitment=other)) == {"wrong_board"}
    # a board of round 1, revealed with its end, dealt again in round 2
    old = tables[first][0].dealt.commitment
    late = _with(tables, second_round_table, 0, commitment=old)
    assert findings(published, late) == {"wrong_board", "late"}
    # a deal committed after the reveal (when times are known)
    timed_rounds = tuple(
        replace(r, revealed_at="2026-01-01T00:00:01.000Z") for r in published.rounds
    )
    timed = replace(published, rounds=timed_rounds)
    hand = tables[first][0]
    after = {**tables, first: [replace(hand, at="2026-01-01T00:00:02.000Z"), *tables[first][1:]]}
    assert findings(timed, after) == {"late"}
    # a revealed seed that is not the board's
    wrong_seed = {**published.revealed, 1: "11" * 32}
    assert "seed" in findings(replace(published, revealed=wrong_seed), tables)
    # a round over with a board not revealed
    hidden = {b: s for b, s in published.revealed.items() if b != 3}
    assert findings(replace(published, revealed=hidden), tables) == {"unrevealed"}
    # a table of a finished round with no deals
    missing = {g: h for g, h in tables.items() if g != first}
    assert findings(published, missing) == {"table_missing"}
    # a table that played one board of two
    short = {**tables, first: tables[first][:1]}
    assert findings(published, short) == {"wrong_board"}
    # a published commitment changed after the event: the root no longer holds it
    forged = (("ab" * 32), *published.commitments[1:])
    assert "board_commitment" in findings(replace(published, commitments=forged), tables)


class DuplicateTable(HonestTable):
    """A duplicate event's table (boards 3 and 4), stored as the engine stores it."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.game_id = "dup-2-1"
        self.state = None
        self.commits = []
        boards = DuplicateBoards("dup", 3, 2)
        self.send(CreateGame(self.game_id, {"preset": "partnership"}, 2, duplicate=boards))
        for seat in range(4):
            self.send(TakeSeat(f"player {seat}", seat, self.rng.randbytes(8).hex()))

    def send(self, command: AnyCommand) -> None:
        try:
            events = decide_game(self.state, command, deal=BoardSeeds(b"", seed_of))
        except RuleViolation as refusal:
            self.store([], Refusal(refusal.code, refusal.detail))
            return
        if events:
            self.store(events, None)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_duplicate_tables_own_audit_replays_its_boards(seed: int) -> None:
    table = DuplicateTable(seed).play()
    assert table.state is not None
    assert table.state.hands_played == 2
    report = audit_game(table.commits)
    assert report.ok, report.problems
    assert all(hand.deal_verified for hand in report.hands)
    assert deal_checks(table.commits) == []


def test_a_duplicate_table_reveals_no_seed_with_its_scores() -> None:
    """A board's seed at one table's score would deal it to anyone reading the game (or the
    audit log, which keeps each score's seed) while the other tables still play it."""
    table = DuplicateTable(3).play()
    scored = [
        event
        for stored in table.commits
        for event in stored.commit.events
        if isinstance(event, HandScored)
    ]
    assert len(scored) == 2
    assert all(event.seed is None for event in scored)
    # a forged history that reveals a board's seed with its score is caught
    forged = []
    for stored in table.commits:
        events = [
            replace(e, seed=seed_of(3).hex()) if isinstance(e, HandScored) and e.hand == 1 else e
            for e in stored.commit.events
        ]
        forged.append(replace(stored.commit, events=events))
    report = audit_game(rechained(forged))
    assert not report.ok
    assert any("revealed its board's seed" in problem.detail for problem in report.problems)
