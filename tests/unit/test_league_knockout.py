"""A league's knockout stage in the aggregate: seeded from the standings of the rounds before
(or from the organiser's ratings), byes to the best seeds, each round pairing the winners of
the one before, the match length in the tables' rules, the champion, and what is refused."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec
import pytest

from contracts.wire import LeagueCommit
from domain.errors import RuleViolation
from domain.league import (
    CreateLeague,
    FinishRound,
    KnockoutSeeded,
    KnockoutStage,
    League,
    RoundScheduled,
    ScheduleRound,
    TableResult,
    VoidTable,
    WithdrawPlayer,
    champion,
    decide,
    fold,
    knockout_rounds,
    ranking,
)
from services.webhooks.events import league_webhooks
from tests.unit.test_league_operations import apply

SIX = ("ann", "bob", "cat", "dan", "eve", "fay")


def league_of(
    players: Sequence[str], rounds: int | None, stage: KnockoutStage, preset: str = "two-player"
) -> League:
    command = CreateLeague(
        "cup", "Cup", {"preset": preset}, tuple(players), rounds, "swiss", knockout=stage
    )
    league = fold(decide(None, command, seed="5eed"))
    assert league is not None
    return league


def finish(league: League, winner: Callable[[tuple[str, ...]], int]) -> League:
    """Record the round being played over, each table won by the seat ``winner`` picks."""
    played = league.rounds[-1]
    results = {}
    for table in played.tables:
        seat = winner(table.players)
        points = tuple(200 if index == seat else 100 for index in range(len(table.players)))
        won = tuple(index == seat for index in range(len(table.players)))
        results[table.game_id] = TableResult(table.game_id, points, won)
    return apply(league, decide(league, FinishRound(played.number), results=results))


def play_round(league: League, winner: Callable[[tuple[str, ...]], int]) -> League:
    """Schedule the next round and record it over (:func:`finish`)."""
    return finish(apply(league, decide(league, ScheduleRound(league.next_round))), winner)


def test_a_knockout_after_swiss_seeds_the_top_of_the_standings_and_plays_to_a_champion() -> None:
    league = league_of(SIX, 2, KnockoutStage(top=4, deals=3))
    assert league.planned == 4  # two Swiss rounds, then a semifinal and a final
    best_name = min  # in the Swiss rounds, the first name alphabetically always wins
    for _ in range(2):
        league = play_round(league, lambda players: players.index(best_name(players)))
    standings = [standing.player for standing in ranking(league)]
    events = decide(league, ScheduleRound(3))
    seeded, scheduled = events
    assert seeded == KnockoutSeeded(3, tuple((player,) for player in standings[:4]))
    assert isinstance(scheduled, RoundScheduled)
    (one,), (two,), (three,), (four,) = seeded.entrants
    assert [table.players for table in scheduled.tables] == [(one, four), (two, three)]
    assert scheduled.byes == ()
    league = apply(league, events)
    # the knockout's games are of three deals; the Swiss rounds' of the league's rules
    assert league.rules_of_round(3).max_hands == 3
    assert league.rules_of_round(2) == league.rules
    # the lower seed wins every match
    league = finish(league, lambda players: 1)
    assert champion(league) is None
    assert not league.finished
    league = play_round(league, lambda players: 1)
    assert [table.players for table in league.rounds[-1].tables] == [(three, four)]
    assert champion(league) == (four,)
    assert league.finished
    assert league.over
    rounds = knockout_rounds(league)
    assert [[m.winner for m in played] for played in rounds] == [[4, 3], [4]]


def test_a_knockout_alone_gives_byes_to_the_best_seeds() -> None:
    league = league_of(SIX, 0, KnockoutStage(deals=1))
    assert league.planned == 3  # six entrants: a bracket of eight
    league = play_round(league, lambda players: 0)
    first = league.rounds[0]
    assert league.knockout is not None
    entrants = [player for (player,) in league.knockout.entrants]
    assert set(entrants) == set(SIX)
    # byes go to the two best seeds; the others play 3-6 and 4-5
    assert first.byes == (entrants[0], entrants[1])
    assert [t.players for t in first.tables] == [
        (entrants[3], entrants[4]),
        (entrants[2], entrants[5]),
    ]
    league = play_round(league, lambda players: 0)
    league = play_round(league, lambda players: 0)
    assert champion(league) == (entrants[0],)
    assert league.finished
    with pytest.raises(RuleViolation) as refused:
        decide(league, ScheduleRound(4))
    assert refused.value.code == "wrong_phase"


def test_a_knockout_seeded_by_the_organisers_ratings() -> None:
    ratings = {"ann": 10.0, "bob": 30.0, "cat": 20.0, "dan": 30.0, "eve": 5.0}
    league = league_of(tuple(ratings), 0, KnockoutStage(target=200, ratings=ratings))
    events = decide(league, ScheduleRound(1))
    seeded = events[0]
    assert isinstance(seeded, KnockoutSeeded)
    assert seeded.entrants == (("bob",), ("dan",), ("cat",), ("ann",), ("eve",))  # ties by name
    league = apply(league, events)
    rules = league.rules_of_round(1)
    assert (rules.target, rules.max_hands) == (200, None)
    (match,) = league.rounds[0].tables  # five entrants: 4-5 play, three byes
    assert match.players == ("ann", "eve")


def test_a_knockout_refuses_what_it_cannot_hold() -> None:
    refusals = [
        ({"preset": "partnership"}, KnockoutStage(deals=2), "invalid_rules"),
        ({"preset": "two-player"}, KnockoutStage(), "invalid_rules"),
        ({"preset": "two-player"}, KnockoutStage(deals=2, target=100), "invalid_rules"),
        ({"preset": "two-player"}, KnockoutStage(deals=0), "invalid_rules"),
        ({"preset": "two-player"}, KnockoutStage(deals=2, top=1), "invalid_rules"),
        ({"preset": "two-player"}, KnockoutStage(deals=2, top=7), "invalid_rules"),
        ({"preset": "two-player"}, KnockoutStage(deals=2, ratings={"ann": 1.0}), "invalid_rules"),
    ]
    for rules, stage, code in refusals:
        command = CreateLeague(
            "cup",
            "Cup",
            rules,
            SIX if rules["preset"] != "partnership" else SIX[:4],
            1,
            knockout=stage,
        )
        with pytest.raises(RuleViolation) as refused:
            decide(None, command, seed="00")
        assert refused.value.code == code, (rules, stage)


def test_no_withdrawal_or_void_once_the_knockout_is_seeded() -> None:
    league = league_of(SIX[:4], 0, KnockoutStage(deals=1))
    league = play_round(league, lambda players: 0)
    with pytest.raises(RuleViolation) as refused:
        decide(league, WithdrawPlayer("ann"))
    assert refused.value.code == "wrong_phase"
    game = league.rounds[0].tables[0].game_id
    with pytest.raises(RuleViolation) as refused:
        decide(league, VoidTable(game, "dispute"))
    assert refused.value.code == "wrong_phase"


def test_a_withdrawal_before_the_knockout_shrinks_its_field() -> None:
    league = league_of(SIX, 1, KnockoutStage(deals=1))
    assert league.planned == 1 + 3
    league = play_round(league, lambda players: 0)
    league = apply(league, decide(league, WithdrawPlayer("fay")))
    league = apply(league, decide(league, WithdrawPlayer("eve")))
    events = decide(league, ScheduleRound(2))
    assert isinstance(events[0], KnockoutSeeded)
    assert len(events[0].entrants) == 4
    league = apply(league, events)
    assert league.planned == 1 + 2  # four entrants: a semifinal and a final
    league = finish(league, lambda players: 0)
    league = play_round(league, lambda players: 0)
    assert league.finished
    assert champion(league) == events[0].entrants[0]


def test_the_league_finished_webhook_names_the_knockouts_champion() -> None:
    league = league_of(SIX[:2], 0, KnockoutStage(deals=1))
    league = apply(league, decide(league, ScheduleRound(1)))
    (table,) = league.rounds[0].tables
    ended = {table.game_id: TableResult(table.game_id, (10, 90), (False, True))}
    events = decide(league, FinishRound(1), results=ended)
    commit = LeagueCommit(
        league_id="cup", version=5, command_id="c", time="t", previous="", events=events
    )
    made = [msgspec.to_builtins(m.webhook) for m in league_webhooks(league, commit)[1]]
    assert made[-1]["type"] == "league.finished"
    assert made[-1]["data"]["champion"] == [table.players[1]]
