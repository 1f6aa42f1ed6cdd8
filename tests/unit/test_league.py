"""The league aggregate (:mod:`domain.league`): creation, rounds, results, refusals."""

from __future__ import annotations

import doctest
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

import domain.league
from domain.commands import CreateGame
from domain.errors import RuleViolation
from domain.game import decide as decide_game
from domain.game import fold as fold_game
from domain.league import (
    CreateLeague,
    League,
    LeagueCreated,
    RoundCompleted,
    RoundScheduled,
    ScheduleRound,
    TablePlace,
    TableResult,
    decide,
    evolve,
    fold,
    is_table_game,
    ranking,
    seeded_order,
    table_game_id,
    table_of,
    table_result,
)

PLAYERS = ("ann", "bob", "cat", "dan", "eve")


def create(
    players: Sequence[str] = PLAYERS,
    rules: Mapping[str, Any] | None = None,
    rounds: int | None = None,
    pairing: str = "auto",
    seed: str = "5eed",
) -> League:
    command = CreateLeague(
        "north",
        "North",
        dict(rules or {"preset": "two-player"}),
        tuple(players),
        rounds,
        pairing,  # type: ignore[arg-type]
    )
    league = fold(decide(None, command, seed=seed))
    assert league is not None
    return league


def refusal(state: League | None, command: Any, **inputs: Any) -> tuple[str, str]:
    with pytest.raises(RuleViolation) as refused:
        decide(state, command, **inputs)
    return refused.value.code, refused.value.detail


def schedule(league: League, results: Mapping[str, TableResult] | None = None) -> League:
    after = fold(decide(league, ScheduleRound(league.next_round), results=results), league)
    assert after is not None
    return after


def first_seat_wins(league: League) -> dict[str, TableResult]:
    """A result for every table of the last round: seat 0 wins 300 to 100."""
    return {
        table.game_id: TableResult(
            table.game_id,
            tuple(300 if seat == 0 else 100 for seat in range(len(table.players))),
            tuple(seat == 0 for seat in range(len(table.players))),
        )
        for table in league.rounds[-1].tables
    }


def test_the_docstring_examples_hold() -> None:
    assert doctest.testmod(domain.league).failed == 0


# --------------------------------------------------------------------------- creating


def test_a_league_has_its_rules_resolved_and_its_players_shuffled_by_the_seed() -> None:
    (created,) = decide(
        None,
        CreateLeague("north", "North", {"preset": "solo", "target": 200}, PLAYERS, rounds=1),
        seed="5eed",
    )
    assert isinstance(created, LeagueCreated)
    assert (created.rules.preset, created.rules.target, created.rules.players) == ("solo", 200, 4)
    assert created.pairing == "swiss"  # one round cannot bring five players all together
    league = evolve(None, created)
    assert league.players == PLAYERS
    assert sorted(league.order) == sorted(PLAYERS)
    assert league.order == seeded_order(PLAYERS, "5eed")
    assert seeded_order(PLAYERS, "5eed") != seeded_order(PLAYERS, "0ther")
    assert (league.version, league.next_round, league.over) == (1, 1, False)


@pytest.mark.parametrize(
    ("command", "code", "detail"),
    [
        (CreateLeague("no spaces", "N", {}, PLAYERS), "malformed", "league id"),
        (CreateLeague("x" * 41, "N", {}, PLAYERS), "malformed", "league id"),
        (CreateLeague("north", "", {}, PLAYERS), "malformed", "name"),
        (CreateLeague("north", "N", {"preset": "bridge"}, PLAYERS), "invalid_rules", "preset"),
        (CreateLeague("north", "N", {}, ("ann", "bob", "ann", "cat")), "malformed", "once"),
        (CreateLeague("north", "N", {}, ("ann", "bob", "cat")), "invalid_rules", "needs 4"),
        (CreateLeague("north", "N", {}, ("ann", "", "cat", "dan")), "malformed", "name"),
        (CreateLeague("north", "N", {}, ("ann", "b\nb", "c", "d")), "malformed", "printable"),
        (CreateLeague("north", "N", {}, PLAYERS, rounds=0), "invalid_rules", "rounds"),
        (CreateLeague("north", "N", {}, PLAYERS, pairing="ladder"), "malformed", "pairing"),  # type: ignore[arg-type]
    ],
)
def test_a_league_that_cannot_be_played_is_refused(
    command: CreateLeague, code: str, detail: str
) -> None:
    refused_code, refused_detail = refusal(None, command, seed="00")
    assert refused_code == code
    assert detail in refused_detail


def test_a_league_is_created_once_and_scheduled_only_once_created() -> None:
    league = create()
    assert refusal(league, CreateLeague("north", "N", {}, PLAYERS))[0] == "wrong_phase"
    assert refusal(None, ScheduleRound(1))[0] == "wrong_phase"


# --------------------------------------------------------------------------- rounds


def test_a_round_names_a_game_per_table_and_seats_everyone_once() -> None:
    league = create(rules={"preset": "cutthroat"}, players=[f"p{n}" for n in range(7)])
    (scheduled,) = decide(league, ScheduleRound(1))
    assert isinstance(scheduled, RoundScheduled)
    assert [table.game_id for table in scheduled.tables] == ["north-1-1", "north-1-2"]
    seated = [player for table in scheduled.tables for player in table.players]
    assert sorted([*seated, *scheduled.byes]) == sorted(league.players)
    assert len(scheduled.byes) == 1
    after = evolve(league, scheduled)
    assert (after.version, after.next_round) == (2, 2)


def test_only_the_next_round_can_be_scheduled() -> None:
    league = create()
    code, detail = refusal(league, ScheduleRound(2))
    assert (code, detail) == ("wrong_phase", "round 1 is next, not 2")


def test_a_round_waits_for_every_game_of_the_round_before() -> None:
    league = schedule(create())
    results = first_seat_wins(league)
    missing = league.rounds[0].tables[-1].game_id
    del results[missing]
    code, detail = refusal(league, ScheduleRound(2), results=results)
    assert code == "wrong_phase"
    assert missing in detail


def test_the_next_round_records_the_results_of_the_last() -> None:
    league = schedule(create())
    results = first_seat_wins(league)
    completed, scheduled = decide(league, ScheduleRound(2), results=results)
    assert isinstance(completed, RoundCompleted)
    assert isinstance(scheduled, RoundScheduled)
    assert completed.round == 1
    assert [result.game_id for result in completed.results] == [
        table.game_id for table in league.rounds[0].tables
    ]
    after = fold([completed, scheduled], league)
    assert after is not None
    assert after.rounds[0].results == completed.results
    assert [table.game_id for table in after.rounds[1].tables] == ["north-2-1", "north-2-2"]


def test_a_result_is_one_value_per_seat() -> None:
    league = schedule(create())
    results = first_seat_wins(league)
    game_id = league.rounds[0].tables[0].game_id
    results[game_id] = TableResult(game_id, (1, 2, 3), (True, False, False))
    assert refusal(league, ScheduleRound(2), results=results)[0] == "malformed"


def test_a_league_ends_after_its_rounds() -> None:
    first = schedule(create(rounds=2))
    league = schedule(first, first_seat_wins(first))
    assert league.over
    code, detail = refusal(league, ScheduleRound(3), results=first_seat_wins(league))
    assert (code, detail) == ("wrong_phase", "all 2 rounds are scheduled")


def test_swiss_pairs_the_winners_of_the_round_before() -> None:
    league = schedule(create(players=("a", "b", "c", "d"), pairing="swiss"))
    winners = {table.players[0] for table in league.rounds[0].tables}
    after = schedule(league, first_seat_wins(league))
    ranked = ranking(after)
    assert {standing.player for standing in ranked[:2]} == winners
    assert [standing.wins for standing in ranked] == [1, 1, 0, 0]
    assert [standing.points for standing in ranked] == [300, 300, 100, 100]
    assert set(after.rounds[1].tables[0].players) == winners


@given(count=st.integers(4, 12), preset=st.sampled_from(["solo", "cutthroat", "two-player"]))
def test_a_whole_league_folds_from_its_events(count: int, preset: str) -> None:
    """A league played round after round is the fold of the events it decided."""
    players = tuple(f"p{n}" for n in range(count))
    events = decide(None, CreateLeague("x", "X", {"preset": preset}, players, rounds=4), seed="0")
    league = fold(events)
    assert league is not None
    for number in range(1, 5):
        results = first_seat_wins(league) if league.rounds else None
        new = decide(league, ScheduleRound(number), results=results)
        events += new
        league = fold(new, league)
        assert league is not None
    assert fold(events) == league
    assert league.version == len(events)
    assert sum(standing.games for standing in ranking(league)) == sum(
        len(table.players) for played in league.rounds[:3] for table in played.tables
    )


# --------------------------------------------------------------------------- game ids, results


@given(
    league_id=st.from_regex(r"[A-Za-z0-9_-]{1,40}", fullmatch=True),
    number=st.integers(1, 10**6),
    table=st.integers(1, 10**6),
)
def test_a_table_game_id_names_its_league_round_and_table(
    league_id: str, number: int, table: int
) -> None:
    game_id = table_game_id(league_id, number, table)
    assert len(game_id) <= 64
    assert table_of(game_id) == TablePlace(league_id, number, table)
    assert is_table_game(league_id, game_id)
    assert not is_table_game(league_id + "x", game_id)


def test_no_id_the_gateway_gives_a_game_is_a_table() -> None:
    assert table_of("3f9a0c1d2e4b5a69") is None
    assert not is_table_game("north", "north-1-x")
    assert not is_table_game("north", "north-1")


def test_a_table_result_is_each_seats_units_score_and_win() -> None:
    created = fold_game(decide_game(None, CreateGame("g", {"preset": "partnership"})))
    assert created is not None
    over = replace(created, status="finished", scores=(520, 310), winners=(0,))
    expected = TableResult("g", (520, 310, 520, 310), (True, False, True, False))
    assert table_result(over) == expected
    solo = fold_game(decide_game(None, CreateGame("s", {"preset": "solo"})))
    assert solo is not None
    tied = replace(solo, status="finished", scores=(500, 500, 20, -40), winners=(0, 1))
    assert table_result(tied).won == (True, True, False, False)
