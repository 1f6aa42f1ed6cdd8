"""The director's tools in the league aggregate and what leaves the gateway about them: an
adjusted score and a voided table, each an event with its reason, in the ranking Swiss pairs
by, in the standings (with the read model's records) and in the results export; a late
player's seat taken by a substitute before its first move."""

from __future__ import annotations

import msgspec
import pytest

from contracts.wire import LeagueCommit
from domain.errors import RuleViolation
from domain.league import (
    AdjustScore,
    FinishRound,
    League,
    ScoreAdjusted,
    SubstitutePlayer,
    TableResult,
    TableVoided,
    VoidTable,
    decide,
    ranking,
)
from services.gateway.league_views import results_rows, standings_answer
from services.gateway.projection_queries import LeagueStandings, PlayerRecord
from services.webhooks.events import league_webhooks
from tests.unit.test_league_operations import apply, create, scheduled

FOUR = ("ann", "bob", "cat", "dan")


def finished_round() -> tuple[League, dict[str, TableResult]]:
    league = scheduled(create(players=FOUR, rounds=3))
    results = {
        table.game_id: TableResult(table.game_id, (300, 120), (True, False))
        for table in league.rounds[0].tables
    }
    return apply(league, decide(league, FinishRound(1), results=results)), results


def test_an_adjusted_score_is_an_event_with_its_reason_and_counts_in_the_ranking() -> None:
    league, _ = finished_round()
    last = ranking(league)[-1].player
    (made,) = decide(league, AdjustScore(last, 500, "opponent's revoke not called", 1))
    assert made == ScoreAdjusted(1, last, 500, "opponent's revoke not called", 1)
    league = apply(league, [made])
    (second,) = decide(league, AdjustScore(last, -20, "slow play"))
    assert isinstance(second, ScoreAdjusted)
    assert second.number == 2
    league = apply(league, [second])
    mine = {s.player: s for s in ranking(league)}[last]
    assert mine.points == 120 + 500 - 20
    # level on wins with the other loser, the adjustment now ranks them first of the two
    losers = [s.player for s in ranking(league) if s.wins == 0]
    assert losers[0] == last


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (AdjustScore("nobody", 5, "why"), "malformed"),
        (AdjustScore("ann", 0, "why"), "malformed"),
        (AdjustScore("ann", 100_001, "why"), "malformed"),
        (AdjustScore("ann", 5, ""), "malformed"),
        (AdjustScore("ann", 5, "   "), "malformed"),
        (AdjustScore("ann", 5, "line\nbreak"), "malformed"),
        (AdjustScore("ann", 5, "x" * 501), "malformed"),
        (AdjustScore("ann", 5, "why", round=2), "wrong_phase"),  # not scheduled yet
        (VoidTable("north-9-1", "why"), "malformed"),
        (VoidTable("elsewhere-1-1", "why"), "malformed"),
        (VoidTable("north-1-1", "\x00"), "malformed"),
        (VoidTable("north-1-1", "why", board=1), "malformed"),  # a duplicate event's only
    ],
)
def test_a_director_command_that_makes_no_sense_is_refused(
    command: AdjustScore | VoidTable, code: str
) -> None:
    league, _ = finished_round()
    with pytest.raises(RuleViolation) as refused:
        decide(league, command)
    assert refused.value.code == code


def test_a_voided_table_counts_for_no_one_and_only_once_it_is_over() -> None:
    league = scheduled(create(players=FOUR, rounds=3))
    first, second = league.rounds[0].tables
    with pytest.raises(RuleViolation) as refused:
        decide(league, VoidTable(first.game_id, "marked cards"), results={})
    assert refused.value.code == "wrong_phase"  # still being played
    ended = {first.game_id: TableResult(first.game_id, (300, 120), (True, False))}
    (void,) = decide(league, VoidTable(first.game_id, "marked cards"), results=ended)
    assert void == TableVoided(1, first.game_id, "marked cards", ended[first.game_id])
    league = apply(league, [void])
    with pytest.raises(RuleViolation) as refused:
        decide(league, VoidTable(first.game_id, "again"), results=ended)
    assert refused.value.code == "wrong_phase"  # void already
    ended[second.game_id] = TableResult(second.game_id, (200, 250), (False, True))
    league = apply(league, decide(league, FinishRound(1), results=ended))
    standings = {s.player: s for s in ranking(league)}
    for player in first.players:
        assert (standings[player].wins, standings[player].points, standings[player].games) == (
            0,
            0,
            0,
        )
    assert standings[second.players[1]].wins == 1
    rows = results_rows(league)
    assert {row.game_id for row in rows if row.voided} == {first.game_id}


def test_the_standings_take_a_voided_tables_result_out_of_the_read_models_records() -> None:
    league, results = finished_round()
    first = league.rounds[0].tables[0]
    league = apply(league, decide(league, VoidTable(first.game_id, "misdeal"), results=results))
    winner, loser = first.players
    league = apply(league, decide(league, AdjustScore(loser, 40, "revoke penalty")))
    record = PlayerRecord(
        player="x", points=0, wins=0, games=0, forfeits=0, mu=25.0, sigma=8.0, ordinal=1.0
    )
    rows = [
        msgspec.structs.replace(record, player=winner, points=300, wins=1, games=1),
        msgspec.structs.replace(record, player=loser, points=120, games=1),
    ]
    # the read model has counted the voided game: its result comes back out
    counted = standings_answer(league, LeagueStandings(2, rows, frozenset({first.game_id})))
    by_player = {row.player: row for row in counted.players}
    assert (by_player[winner].points, by_player[winner].wins, by_player[winner].games) == (0, 0, 0)
    assert (by_player[loser].points, by_player[loser].adjusted, by_player[loser].games) == (
        40,
        40,
        0,
    )
    assert [(a.player, a.points, a.reason) for a in counted.adjustments] == [
        (loser, 40, "revoke penalty")
    ]
    assert [(v.game_id, v.table, v.reason) for v in counted.voided] == [
        (first.game_id, 1, "misdeal")
    ]
    # not counted yet: nothing to take out
    early = standings_answer(league, LeagueStandings(0, [], frozenset()))
    assert {row.player: row.points for row in early.players}[loser] == 40


def test_a_late_players_seat_is_taken_by_a_substitute_before_its_first_move() -> None:
    league = scheduled(create(players=FOUR, rounds=3))
    table = league.rounds[0].tables[0]
    late = table.players[0]
    (seated,) = decide(league, SubstitutePlayer(late, "stand-in"), results={})
    league = apply(league, [seated])
    assert league.sitting(table, 0) == "stand-in"
    assert league.rounds[0].tables[0].players[0] == late  # the record stays the player's


def test_the_directors_changes_are_told_to_the_leagues_webhooks_with_their_reasons() -> None:
    league, results = finished_round()
    first = league.rounds[0].tables[0]
    events = [
        *decide(league, VoidTable(first.game_id, "misdeal"), results=results),
        *decide(league, AdjustScore("ann", -15, "slow play", 1)),
    ]
    commit = LeagueCommit(
        league_id="north", version=9, command_id="c", time="t", previous="", events=events
    )
    made = [msgspec.to_builtins(m.webhook) for m in league_webhooks(league, commit)[1]]
    assert [m["type"] for m in made] == ["league.adjusted", "league.adjusted"]
    assert made[0]["data"] == {
        "league_id": "north",
        "kind": "table_voided",
        "reason": "misdeal",
        "round": 1,
        "player": None,
        "points": None,
        "game_id": first.game_id,
        "board": None,
    }
    assert made[1]["data"]["kind"] == "score_adjusted"
    assert (made[1]["data"]["player"], made[1]["data"]["points"]) == ("ann", -15)
