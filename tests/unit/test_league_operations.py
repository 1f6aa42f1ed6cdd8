"""League operations in the aggregate and what leaves the service about them: a league clock,
withdrawals, substitutes, forfeits and byes in the ranking, a round that finishes as its last
game ends, a league that finishes with its last planned round, the webhooks of both, the round
watch's reading of game commits, and the exports."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import pytest

from contracts.webhooks import type_of
from contracts.wire import Commit, FinishRoundRequest, LeagueCommit, encode_commit
from domain.clock import Clock
from domain.commands import CreateGame
from domain.errors import RuleViolation
from domain.events import GameEnded, SeatTaken
from domain.game import decide as decide_game
from domain.game import evolve as evolve_game
from domain.game import fold as fold_game
from domain.league import (
    BYE_WINS,
    CreateLeague,
    FinishRound,
    League,
    LeagueFinished,
    PlayerSubstituted,
    PlayerWithdrawn,
    RoundCompleted,
    ScheduleRound,
    SubstitutePlayer,
    TableResult,
    WithdrawPlayer,
    decide,
    fold,
    ranking,
    table_result,
)
from services.audit.replay import recorded_command
from services.engine.round_watch import finish_request
from services.gateway.league_views import (
    RESULTS_CSV,
    results_cells,
    results_rows,
    standings_answer,
    to_csv,
)
from services.gateway.projection_queries import LeagueStandings, PlayerRecord
from services.webhooks.events import league_webhooks

PLAYERS = ("ann", "bob", "cat", "dan", "eve")


def create(
    players: Sequence[str] = PLAYERS,
    rounds: int | None = 2,
    clock: Clock | None = None,
    pairing: str = "round_robin",
) -> League:
    command = CreateLeague(
        "north",
        "North",
        {"preset": "two-player"},
        tuple(players),
        rounds,
        pairing,  # type: ignore[arg-type]
        clock=clock,
    )
    league = fold(decide(None, command, seed="5eed"))
    assert league is not None
    return league


def apply(league: League, events: Sequence[Any]) -> League:
    after = fold(events, league)
    assert after is not None
    return after


def scheduled(league: League, results: Mapping[str, TableResult] | None = None) -> League:
    return apply(league, decide(league, ScheduleRound(league.next_round), results=results))


def won_by_first(league: League, forfeit: bool = False) -> dict[str, TableResult]:
    """Every table of the round being played won by its first seat; the second seat forfeits
    when ``forfeit``."""
    current = league.rounds[-1]
    return {
        table.game_id: TableResult(
            table.game_id, (300, 120), (True, False), (False, True) if forfeit else ()
        )
        for table in current.tables
    }


# --------------------------------------------------------------------------- the aggregate


def test_a_league_keeps_the_clock_of_its_tables_and_refuses_an_impossible_one() -> None:
    clock = Clock(turn_s=20, bank_s=60, on_timeout="forfeit", away_after=2)
    assert create(clock=clock).clock == clock
    for bad in (Clock(turn_s=0), Clock(turn_s=5, bank_s=-1), Clock(turn_s=5, away_after=-3)):
        with pytest.raises(RuleViolation) as refused:
            create(clock=bad)
        assert refused.value.code == "invalid_rules"


def test_a_round_finishes_with_its_last_game_and_only_then() -> None:
    league = scheduled(create(players=("ann", "bob", "cat", "dan")))
    first, second = league.rounds[0].tables
    results = won_by_first(league)
    only_one = {first.game_id: results[first.game_id]}
    assert decide(league, FinishRound(1), results=only_one) == []
    events = decide(league, FinishRound(1), results=results)
    assert events == [RoundCompleted(1, (results[first.game_id], results[second.game_id]))]
    league = apply(league, events)
    assert league.rounds[0].finished
    assert league.current is None
    assert not league.finished
    # a second table's end, or a retry, records nothing more; nor does a round not scheduled
    assert decide(league, FinishRound(1), results=results) == []
    assert decide(league, FinishRound(7), results=results) == []
    # the next round is scheduled from the recorded results, without recording them again
    (next_round,) = decide(league, ScheduleRound(2))
    assert next_round.round == 2  # type: ignore[union-attr]


def test_the_last_planned_round_finishes_the_league() -> None:
    league = scheduled(create(players=("ann", "bob", "cat", "dan"), rounds=1))
    events = decide(league, FinishRound(1), results=won_by_first(league))
    assert [type(event) for event in events] == [RoundCompleted, LeagueFinished]
    league = apply(league, events)
    assert league.finished
    assert league.over
    with pytest.raises(RuleViolation) as refused:
        decide(league, WithdrawPlayer("ann"))
    assert refused.value.code == "wrong_phase"
    # a league of no planned end never finishes
    endless = scheduled(create(players=("ann", "bob", "cat", "dan"), rounds=None))
    events = decide(endless, FinishRound(1), results=won_by_first(endless))
    assert [type(event) for event in events] == [RoundCompleted]


def test_a_withdrawn_player_is_seated_in_no_later_round_and_has_no_bye() -> None:
    league = scheduled(create(rounds=4))
    (left,) = decide(league, WithdrawPlayer("cat"))
    assert left == PlayerWithdrawn("cat", after_round=1)
    league = apply(league, [left])
    assert league.active == tuple(p for p in league.order if p != "cat")
    # cat's table of round 1 still counts; cat is in no later round, at a table or as a bye
    league = apply(league, decide(league, FinishRound(1), results=won_by_first(league)))
    for _ in range(3):
        league = scheduled(league)
        latest = league.rounds[-1]
        assert "cat" not in {p for t in latest.tables for p in t.players} | set(latest.byes)
        assert not latest.byes  # four players left: two full tables
        league = apply(
            league, decide(league, FinishRound(latest.number), results=won_by_first(league))
        )
    for code, player in (("wrong_phase", "cat"), ("malformed", "zed")):
        with pytest.raises(RuleViolation) as refused:
            decide(league, WithdrawPlayer(player))
        assert refused.value.code == code


def test_a_withdrawal_that_leaves_no_table_is_refused() -> None:
    league = create(players=("ann", "bob"), rounds=3)
    with pytest.raises(RuleViolation) as refused:
        decide(league, WithdrawPlayer("ann"))
    assert refused.value.code == "wrong_phase"


def test_a_substitute_takes_a_running_seat_for_the_players_record() -> None:
    league = scheduled(create(players=("ann", "bob", "cat", "dan")))
    table = league.rounds[0].tables[1]
    player = table.players[1]
    (seated,) = decide(league, SubstitutePlayer(player, "zoe"), results={})
    assert seated == PlayerSubstituted(1, table.game_id, 1, player, "zoe")
    league = apply(league, [seated])
    assert league.sitting(table, 1) == "zoe"
    assert league.sitting(table, 0) == table.players[0]
    # a second substitute for the same seat replaces the first
    league = apply(league, decide(league, SubstitutePlayer(player, "yan"), results={}))
    assert league.sitting(table, 1) == "yan"
    refusals = [
        (SubstitutePlayer(player, "yan"), {}, "seat_taken"),  # plays a seat of the round
        (SubstitutePlayer(player, table.players[0]), {}, "seat_taken"),
        (SubstitutePlayer("nobody", "zed"), {}, "malformed"),
        (SubstitutePlayer(player, ""), {}, "malformed"),
        (SubstitutePlayer(player, "zed"), won_by_first(league), "game_over"),
    ]
    for command, results, code in refusals:
        with pytest.raises(RuleViolation) as refused:
            decide(league, command, results=results)
        assert refused.value.code == code, command
    # the round's results stay the player's: the league's tables never change
    finished = apply(league, decide(league, FinishRound(1), results=won_by_first(league)))
    assert finished.rounds[0].tables[1].players[1] == player
    with pytest.raises(RuleViolation) as refused:
        decide(finished, SubstitutePlayer(player, "zed"))
    assert refused.value.code == "wrong_phase"  # no round being played


def test_the_ranking_counts_a_bye_as_a_win_and_breaks_ties_on_forfeits() -> None:
    league = scheduled(create(players=("ann", "bob", "cat"), rounds=3))
    (bye,) = league.rounds[0].byes
    (table,) = league.rounds[0].tables
    winner, loser = table.players
    results = {table.game_id: TableResult(table.game_id, (200, 200), (True, False), (False, True))}
    league = apply(league, decide(league, FinishRound(1), results=results))
    standings = {s.player: s for s in ranking(league)}
    assert (standings[bye].wins, standings[bye].byes, standings[bye].games) == (BYE_WINS, 1, 0)
    assert (standings[winner].wins, standings[winner].forfeits) == (1, 0)
    assert (standings[loser].wins, standings[loser].forfeits) == (0, 1)
    # the winner and the bye are level on wins; the winner's points put them first
    assert [s.player for s in ranking(league)] == [winner, bye, loser]


def test_a_forfeited_game_is_a_loss_for_the_unit_that_ran_out_of_time() -> None:
    game = fold_game(decide_game(None, CreateGame("g", {"preset": "partnership"})))
    assert game is not None
    for seat, name in enumerate(("a", "b", "c", "d")):
        game = evolve_game(game, SeatTaken(seat, name))
    # the scores as they stood (none yet), the winners the others
    over = evolve_game(game, GameEnded(winners=(0,), scores=(0, 0), forfeited=1))
    assert table_result(over) == TableResult(
        "g", (0, 0, 0, 0), (True, False, True, False), (False, True, False, True)
    )


# --------------------------------------------------------------------------- the round watch


def commit(game_id: str, events: list[Any]) -> bytes:
    return encode_commit(
        Commit(game_id=game_id, version=9, command_id="c", time="t", previous="", events=events)
    )


def test_the_round_watch_finishes_a_tables_round_when_its_game_ends() -> None:
    ended = commit("north-3-2", [GameEnded(winners=(0,), scores=(500, 20))])
    request = finish_request("north-3-2", ended)
    assert request is not None
    assert (request.league_id, request.body) == ("north", FinishRoundRequest(round=3))
    assert request.command_id == "round-end-north-3-2"
    # a game of no league, or a commit that does not end the game: nothing to do
    assert finish_request("0123456789abcdef", ended) is None
    assert finish_request("north-3-2", commit("north-3-2", [SeatTaken(0, "ann")])) is None
    with pytest.raises(msgspec.DecodeError):
        finish_request("north-3-2", b'{"not json "game_ended"')


# --------------------------------------------------------------------------- webhooks


def test_a_rounds_end_and_the_leagues_are_told_in_order() -> None:
    created = create(players=("ann", "bob", "cat", "dan"), rounds=1)
    league = scheduled(created)
    events = decide(league, FinishRound(1), results=won_by_first(league, forfeit=True))
    made = league_webhooks(
        league,
        LeagueCommit(
            league_id="north", version=4, command_id="c", time="t", previous="", events=events
        ),
    )[1]
    assert [type_of(m.webhook) for m in made] == ["league.round_finished", "league.finished"]
    assert all(m.chain == "league:north" for m in made)
    finished = msgspec.to_builtins(made[0].webhook)["data"]
    assert finished["round"] == 1
    assert [r["forfeited"] for r in finished["results"]] == [[False, True], [False, True]]
    assert msgspec.to_builtins(made[1].webhook)["data"] == {
        "league_id": "north",
        "rounds": 1,
        "champion": None,
    }


# --------------------------------------------------------------------------- views, exports


def test_standings_state_byes_forfeits_and_withdrawals() -> None:
    league = scheduled(create(players=("ann", "bob", "cat"), rounds=3))
    (bye,) = league.rounds[0].byes
    league = apply(league, decide(league, WithdrawPlayer(bye)))
    record = PlayerRecord(
        player="x", points=0, wins=0, games=1, forfeits=0, mu=25.0, sigma=8.0, ordinal=1.0
    )
    (table,) = league.rounds[0].tables
    winner, loser = table.players
    rows = [
        msgspec.structs.replace(record, player=winner, points=200, wins=1),
        msgspec.structs.replace(record, player=loser, points=200, forfeits=1, ordinal=5.0),
    ]
    body = standings_answer(league, LeagueStandings(1, rows))
    by_player = {row.player: row for row in body.players}
    assert [row.player for row in body.players] == [winner, bye, loser]
    assert (by_player[bye].wins, by_player[bye].byes, by_player[bye].withdrawn) == (1, 1, True)
    assert (by_player[loser].forfeits, by_player[winner].withdrawn) == (1, False)


def test_results_export_every_seat_of_finished_rounds_and_every_bye() -> None:
    league = scheduled(create(players=("ann", "bob", "cat"), rounds=3))
    (table,) = league.rounds[0].tables
    league = apply(league, decide(league, SubstitutePlayer(table.players[1], "=cmd()")))
    assert results_rows(league) == []  # nothing is recorded while the round is played
    results = {table.game_id: TableResult(table.game_id, (200, 90), (True, False), (False, True))}
    league = apply(league, decide(league, FinishRound(1), results=results))
    rows = results_rows(league)
    assert [(r.player, r.played_by, r.result) for r in rows] == [
        (table.players[0], table.players[0], "win"),
        (table.players[1], "=cmd()", "forfeit"),
        (league.rounds[0].byes[0], None, "bye"),
    ]
    text = to_csv(RESULTS_CSV, results_cells(rows))
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == list(RESULTS_CSV)
    assert parsed[2][5] == "'=cmd()"  # never a formula in a spreadsheet
    assert parsed[3][1:4] == ["", "", ""]  # a bye has no table


def test_a_tables_clock_is_recorded_and_replayed_by_the_audit() -> None:
    clock = Clock(turn_s=20, bank_s=60, on_timeout="auto", away_after=2)
    command = CreateGame("north-1-1", {"preset": "solo"}, league="north", clock=clock)
    events = decide_game(None, command)
    (created,) = events
    assert created.clock == clock  # type: ignore[union-attr]
    replayed = recorded_command(events, None)
    assert isinstance(replayed, CreateGame)
    assert decide_game(None, replayed) == events  # the audit decides the same creation again


def test_the_round_watch_benchmark_finds_every_table_end_its_peer_finds() -> None:
    from benchmarks.round_watch import run

    figures = run(games=4, seed=3, rounds=1)
    assert (figures.games, figures.ending) == (4, 2)
    assert figures.commits > 4
