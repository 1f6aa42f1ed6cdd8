"""Duplicate leagues in the domain: boards committed at creation, rounds seated by the movement,
every table of a round dealt the round's boards, a table over after its boards, the round's seeds
revealed with its end, and what makes no sense for a duplicate event refused."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import msgspec
import pytest

from contracts.wire import LeagueCommit
from domain.boards import BoardSeeds, board_proof, check_seed, check_table_deal
from domain.commands import CreateGame, TakeSeat
from domain.duplicate_standings import duplicate_results, duplicate_scores, seeding
from domain.errors import RuleViolation
from domain.events import DuplicateBoards, GameCreated, HandDealt
from domain.game import decide as decide_game
from domain.game import fold as fold_game
from domain.league import (
    BoardsRevealed,
    CreateLeague,
    FinishRound,
    KnockoutSeeded,
    KnockoutStage,
    League,
    LeagueCreated,
    LeagueFinished,
    RoundCompleted,
    RoundScheduled,
    ScheduleRound,
    SubstitutePlayer,
    TableResult,
    WithdrawPlayer,
    champion,
    decide,
    duplicate_boards,
    duplicate_pairs,
    fold,
    table_result,
)
from domain.legal import legal_actions, seat_to_act
from domain.movement import movement
from domain.records import hand_records
from domain.rules import resolve_rules
from services.webhooks.events import league_webhooks
from tests.unit.random_play import play_at_random

PLAYERS = tuple(f"p{n}" for n in range(8))
RULES = {"preset": "partnership"}


def then(events: Any, league: League) -> League:
    after = fold(events, league)
    assert after is not None
    return after


def seed_of(board: int) -> bytes:
    return hashlib.sha256(f"secret:{board}".encode()).digest()


def seeds(count: int) -> dict[int, bytes]:
    return {board: seed_of(board) for board in range(1, count + 1)}


def created(**options: Any) -> League:
    command = CreateLeague("dup", "Dup", RULES, PLAYERS, **{"format": "duplicate", **options})
    events = decide(None, command, seed="00", board_seeds=seeds(duplicate_boards(command)))
    league = fold(events)
    assert league is not None
    return league


def play_table(
    league: League, table: Any, boards: tuple[int, ...], rng: random.Random, *, keep: bool = False
) -> Any:
    """A table's game played at random through the domain, dealt as the engine deals it (with
    its events, when ``keep``)."""
    first = boards[0]
    create = CreateGame(
        table.game_id,
        league.rules.to_json(),
        dealer=(first - 1) % league.rules.players,
        league=league.league_id,
        duplicate=DuplicateBoards(league.league_id, first, len(boards)),
    )
    deal = BoardSeeds(b"", seed_of)
    kept: list[Any] = decide_game(None, create)
    game = fold_game(kept)
    for place, name in enumerate(table.players):
        new = decide_game(game, TakeSeat(name, place), deal=deal)
        kept += new
        game = fold_game(new, game)
    assert game is not None
    game, played = play_at_random(game, deal, rng)
    kept += played
    return (game, kept) if keep else game


def deals(game_events: list[Any]) -> list[HandDealt]:
    return [event for event in game_events if isinstance(event, HandDealt)]


def test_a_duplicate_league_commits_to_every_board_of_its_movement() -> None:
    league = created(rounds=2, boards_per_round=2)
    assert (league.format, league.boards_per_round, league.planned) == ("duplicate", 2, 2)
    assert league.boards is not None
    assert len(league.boards.commitments) == 4
    for board in range(1, 5):
        proof = board_proof(league.boards.commitments, board)
        check_seed(seed_of(board), board, proof, league.boards.root, 4)
    # rounds default to the movement's
    rules = resolve_rules(RULES)
    assert created().planned == len(movement(8, rules, "pairs").rounds) == 3


def test_rounds_follow_the_movement_and_tables_deal_the_rounds_boards() -> None:
    league = created(rounds=2, boards_per_round=2)
    plan = movement(8, league.rules, "pairs", rounds=2, boards_per_round=2)
    rng = random.Random(5)
    for number in (1, 2):
        events = decide(league, ScheduleRound(number), results={}, board_seeds=seeds(4))
        scheduled = events[-1]
        assert isinstance(scheduled, RoundScheduled)
        expected = plan.rounds[number - 1]
        assert scheduled.boards == expected.boards
        assert [t.players for t in scheduled.tables] == [
            tuple(PLAYERS[p] for p in seats) for seats in expected.tables
        ]
        league = then(events, league)
        games = [play_table(league, table, scheduled.boards, rng) for table in scheduled.tables]
        assert all(game.hands_played == 2 for game in games)
        results = {game.game_id: table_result(game) for game in games}
        # one table over: nothing yet; every table: completed, revealed (finished after the last)
        one = {games[0].game_id: results[games[0].game_id]}
        assert decide(league, FinishRound(number), results=one, board_seeds=seeds(4)) == []
        ended = decide(league, FinishRound(number), results=results, board_seeds=seeds(4))
        kinds = [type(event) for event in ended]
        assert kinds == [RoundCompleted, BoardsRevealed] + ([LeagueFinished] if number == 2 else [])
        revealed = ended[1]
        assert isinstance(revealed, BoardsRevealed)
        assert revealed.boards == tuple((b, seed_of(b).hex()) for b in scheduled.boards)
        # the platform hears of it: league.boards_revealed, after league.round_finished
        commit = LeagueCommit(
            league_id="dup", version=9, command_id="c", time="t", previous="", events=ended
        )
        made = [msgspec.to_builtins(m.webhook) for m in league_webhooks(league, commit)[1]]
        told = [m for m in made if m["type"] == "league.boards_revealed"]
        assert [m["type"] for m in made][:2] == ["league.round_finished", "league.boards_revealed"]
        assert told[0]["data"] == {
            "league_id": "dup",
            "round": number,
            "boards": [{"board": b, "seed": seed_of(b).hex()} for b in scheduled.boards],
        }
        league = then(ended, league)
    assert league.finished
    assert [board for board, _ in league.revealed] == [1, 2, 3, 4]


def test_every_table_holds_the_boards_cards_and_ends_after_its_boards() -> None:
    league = created(rounds=1, boards_per_round=3)
    league = then(decide(league, ScheduleRound(1), board_seeds=seeds(3)), league)
    (played,) = league.rounds
    rng = random.Random(1)
    for table in played.tables:
        first = played.boards[0]
        create = CreateGame(
            table.game_id,
            league.rules.to_json(),
            dealer=(first - 1) % 4,
            duplicate=DuplicateBoards("dup", first, 3),
        )
        events: list[Any] = decide_game(None, create)
        game = fold_game(events)
        deal = BoardSeeds(b"", seed_of)
        for place, name in enumerate(table.players):
            new = decide_game(game, TakeSeat(name, place), deal=deal)
            events += new
            game = fold_game(new, game)
        assert game is not None
        while game.status != "finished":
            seat = seat_to_act(game)
            assert seat is not None
            action: Any = rng.choice(legal_actions(game, seat))
            new = decide_game(game, action, deal=deal)
            events += new
            game = fold_game(new, game)
            assert game is not None
        dealt = deals(events)
        assert [d.hand for d in dealt] == [1, 2, 3]
        for hand, board in zip(dealt, played.boards, strict=True):
            check_table_deal(league.rules, seed_of(board), board, replace_hand(hand, board))
        assert game.hands_played == 3
        assert game.winners


def replace_hand(dealt: HandDealt, board: int) -> HandDealt:
    return msgspec.structs.replace(dealt, hand=board)


def test_a_game_of_no_duplicate_is_recorded_as_before() -> None:
    (event,) = decide_game(None, CreateGame("g1", RULES))
    data = msgspec.json.encode(event)
    assert b"duplicate" not in data
    old = data  # what a game recorded before duplicate events reads as
    assert msgspec.json.decode(old, type=GameCreated) == event
    (table,) = decide_game(
        None, CreateGame("g2", RULES, dealer=2, duplicate=DuplicateBoards("dup", 3, 2))
    )
    assert b'"duplicate":{"event":"dup","first":3,"count":2}' in msgspec.json.encode(table)


def test_a_duplicate_table_must_be_dealt_by_its_first_boards_dealer() -> None:
    with pytest.raises(RuleViolation) as refused:
        decide_game(None, CreateGame("g", RULES, duplicate=DuplicateBoards("dup", 3, 2)))
    assert refused.value.code == "malformed"


def test_a_standard_league_is_as_before() -> None:
    command = CreateLeague("std", "Std", RULES, PLAYERS, 2)
    (event,) = decide(None, command, seed="00")
    assert isinstance(event, LeagueCreated)
    data = msgspec.json.encode(event)
    assert b"format" not in data
    assert b"boards" not in data
    league = then([event], None)  # type: ignore[arg-type]
    assert (league.format, league.boards, league.boards_per_round) == ("standard", None, None)
    (scheduled,) = decide(league, ScheduleRound(1))
    assert b"boards" not in msgspec.json.encode(scheduled)
    old = (
        b'{"type":"league_created","league_id":"std","name":"Std","rules":%s,'
        % (msgspec.json.encode(event.rules))
        + b'"players":["a","b","c","d"],"rounds":2,"pairing":"round_robin","seed":"00"}'
    )
    decoded = msgspec.json.decode(old, type=LeagueCreated)
    assert then([decoded], None).format == "standard"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"pairing": "swiss"}, "invalid_rules"),
        ({"format": "standard", "boards_per_round": 2}, "invalid_rules"),
        ({"format": "triplicate"}, "malformed"),
        ({"boards_per_round": 0}, "invalid_rules"),
        ({"rounds": 500}, "invalid_rules"),
    ],
)
def test_what_makes_no_sense_for_a_duplicate_event_is_refused(
    options: dict[str, Any], code: str
) -> None:
    command = CreateLeague("dup", "Dup", RULES, PLAYERS, **{"format": "duplicate", **options})
    with pytest.raises(RuleViolation) as refused:
        decide(None, command, seed="00", board_seeds=seeds(1000))
    assert refused.value.code == code


def test_a_player_cannot_withdraw_from_a_duplicate_event_but_may_be_substituted() -> None:
    league = created(rounds=2)
    with pytest.raises(RuleViolation) as refused:
        decide(league, WithdrawPlayer("p0"))
    assert refused.value.code == "wrong_phase"
    league = then(decide(league, ScheduleRound(1), board_seeds=seeds(4)), league)
    (substituted,) = decide(league, SubstitutePlayer("p0", "sub"), results={})
    assert substituted.substitute == "sub"  # type: ignore[union-attr]


def test_a_seed_that_does_not_open_its_commitment_is_not_revealed() -> None:
    league = created(rounds=1, boards_per_round=1)
    league = then(decide(league, ScheduleRound(1), board_seeds=seeds(1)), league)
    tables = league.rounds[0].tables
    results = {t.game_id: TableResult(t.game_id, (0, 0, 0, 0), (True,) * 4) for t in tables}
    with pytest.raises(RuleViolation) as refused:
        decide(league, FinishRound(1), results=results, board_seeds={1: b"another"})
    assert refused.value.code == "invalid_rules"


@pytest.mark.parametrize(("preset", "players"), [("solo", 8), ("two-player", 4), ("cutthroat", 6)])
def test_without_partnerships_each_player_is_a_unit_and_every_table_gets_the_boards(
    preset: str, players: int
) -> None:
    names = tuple(f"p{n}" for n in range(players))
    command = CreateLeague(
        "dup", "Dup", {"preset": preset}, names, 1, format="duplicate", boards_per_round=2
    )
    league = then(decide(None, command, seed="00", board_seeds=seeds(2)), None)  # type: ignore[arg-type]
    league = then(decide(league, ScheduleRound(1), board_seeds=seeds(2)), league)
    (played,) = league.rounds
    assert len(played.tables) == players // league.rules.players
    rng = random.Random(3)
    for table in played.tables:
        game, events = play_table(league, table, played.boards, rng, keep=True)
        dealt = deals(events)
        assert game.hands_played == 2
        for hand, board in zip(dealt, played.boards, strict=True):
            check_table_deal(league.rules, seed_of(board), board, replace_hand(hand, board))


def test_an_odd_number_of_pairs_sits_one_out_each_round_in_turn() -> None:
    names = tuple(f"p{n}" for n in range(10))
    command = CreateLeague("dup", "Dup", RULES, names, format="duplicate", boards_per_round=1)
    count = duplicate_boards(command)
    league = then(decide(None, command, seed="00", board_seeds=seeds(count)), None)  # type: ignore[arg-type]
    assert league.planned == 5  # five pairs: every pair meets every other once
    resting = []
    results: dict[str, TableResult] = {}
    for number in range(1, 6):
        league = then(
            decide(league, ScheduleRound(number), results=results, board_seeds=seeds(count)),
            league,
        )
        played = league.rounds[-1]
        assert len(played.tables) == 2
        assert len(played.byes) == 2
        assert played.byes[0] == names[names.index(played.byes[0]) // 2 * 2]  # a whole pair
        resting.append(played.byes)
        results = {
            t.game_id: TableResult(t.game_id, (0, 0, 0, 0), (True,) * 4) for t in played.tables
        }
    assert len(set(resting)) == 5  # each pair sits out once


def test_an_individual_event_rotates_partners_and_ranks_each_player_alone() -> None:
    league = created(rounds=3, boards_per_round=1, partners="rotating")
    assert league.partners == "rotating"
    partners: dict[str, set[str]] = {player: set() for player in PLAYERS}
    rng = random.Random(9)
    hands: dict[str, list[Any]] = {}
    for number in (1, 2, 3):
        events = decide(league, ScheduleRound(number), results={}, board_seeds=seeds(3))
        league = then(events, league)
        played = league.rounds[-1]
        games = []
        for table in played.tables:
            for seat, player in enumerate(table.players):
                partners[player].add(table.players[(seat + 2) % 4])
            game, kept = play_table(league, table, played.boards, rng, keep=True)
            games.append(game)
            hands[table.game_id] = hand_records(kept)
        results = {game.game_id: table_result(game) for game in games}
        league = then(
            decide(league, FinishRound(number), results=results, board_seeds=seeds(3)), league
        )
    # three rounds, three different partners each (a fixed pairs event would give one)
    assert all(len(theirs) == 3 for theirs in partners.values())
    scored = duplicate_scores(league, hands)
    assert set(scored) == set(PLAYERS)
    assert all(standing.players == (player,) for player, standing in scored.items())


def test_a_duplicate_event_counts_sets_and_bags_by_its_convention() -> None:
    for convention in ("as_scored", "transferred"):
        league = created(rounds=1, boards_per_round=1, convention=convention)
        assert league.convention == convention
        league = then(decide(league, ScheduleRound(1), results={}, board_seeds=seeds(1)), league)
        played = league.rounds[-1]
        rng = random.Random(3)
        hands: dict[str, list[Any]] = {}
        results = {}
        for table in played.tables:
            game, kept = play_table(league, table, played.boards, rng, keep=True)
            hands[table.game_id] = hand_records(kept)
            results[table.game_id] = table_result(game)
        league = then(decide(league, FinishRound(1), results=results, board_seeds=seeds(1)), league)
        counted = duplicate_results(league, hands)
        assert counted is not None
        assert (counted.convention, counted.overtrick_points) == (
            convention,
            league.rules.overtrick_points,
        )
    standard = CreateLeague("std", "Std", RULES, PLAYERS, convention="transferred")
    with pytest.raises(RuleViolation) as refused:
        decide(None, standard, seed="00")
    assert refused.value.code == "invalid_rules"  # a convention is a duplicate event's
    solo = CreateLeague(
        "solo", "Solo", {"preset": "solo"}, PLAYERS, format="duplicate", partners="rotating"
    )
    solo_seeds = seeds(duplicate_boards(solo))
    with pytest.raises(RuleViolation) as refused:
        decide(None, solo, seed="00", board_seeds=solo_seeds)
    assert refused.value.code == "invalid_rules"  # no partners to rotate


def test_a_knockout_of_the_top_pairs_follows_a_duplicate_event() -> None:
    league = created(rounds=3, boards_per_round=1, knockout=KnockoutStage(top=4, deals=1))
    assert (league.before_knockout, league.planned) == (3, 5)  # then semifinals and a final
    rng = random.Random(4)
    hands: dict[str, list[Any]] = {}
    for number in (1, 2, 3):
        league = then(
            decide(league, ScheduleRound(number), results={}, board_seeds=seeds(3)), league
        )
        played = league.rounds[-1]
        results = {}
        for table in played.tables:
            game, kept = play_table(league, table, played.boards, rng, keep=True)
            hands[table.game_id] = hand_records(kept)
            results[table.game_id] = table_result(game)
        ended = decide(league, FinishRound(number), results=results, board_seeds=seeds(3))
        assert not any(isinstance(event, LeagueFinished) for event in ended)  # a knockout next
        league = then(ended, league)
    order = seeding(league, hands)
    assert sorted(order) == sorted(duplicate_pairs(league))  # every pair, once
    with pytest.raises(ValueError, match="input"):
        decide(league, ScheduleRound(4))  # the standings are the engine's to read
    events = decide(league, ScheduleRound(4), seeding=order)
    seeded = events[0]
    assert isinstance(seeded, KnockoutSeeded)
    assert seeded.entrants == tuple(order)
    league = then(events, league)
    one, two, three, four = order
    # partners face each other: the better seed's pair in seats 0 and 2
    assert [t.players for t in league.rounds[-1].tables] == [
        (one[0], four[0], one[1], four[1]),
        (two[0], three[0], two[1], three[1]),
    ]
    assert league.rounds[-1].boards == ()  # knockout matches are dealt afresh
    assert league.rules_of_round(4).max_hands == 1
    for number in (4, 5):
        played = league.rounds[-1]
        won = {  # the second seed of each match wins: its unit sits in seats 1 and 3
            t.game_id: TableResult(t.game_id, (10, 90, 10, 90), (False, True, False, True))
            for t in played.tables
        }
        ended = decide(league, FinishRound(number), results=won)
        league = then(ended, league)
        if number == 4:
            league = then(decide(league, ScheduleRound(5)), league)
    assert league.finished
    assert champion(league) == four  # four beat one, three beat two, then four beat three
