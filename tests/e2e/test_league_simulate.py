"""``spades league simulate`` against the running stack: a whole league of bots over HTTP, its
standings printed, and every game it played finished and audited clean."""

from __future__ import annotations

import asyncio
import os
import re
import sys

import pytest

from services.client import SpadesClient
from services.client.leagues import LeagueClient
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

SIMULATE_TIMEOUT_S = 600


async def simulate(
    stack: Stack, *options: str, env: dict[str, str] | None = None
) -> tuple[str, str, str]:
    """``spades league simulate --bots OPTIONS`` against the stack: the league's id, and what
    the command printed (standard output, standard error)."""
    argv = [sys.executable, "-m", "services.cli.main", "league", "simulate", "--bots", *options]
    argv += ["--url", stack.base_url]
    if stack.api_key:
        argv += ["--api-key", stack.api_key]
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    out, err = await asyncio.wait_for(process.communicate(), SIMULATE_TIMEOUT_S)
    assert process.returncode == 0, err.decode()[-4000:]
    found = re.search(r"league ([0-9a-f]{16}):", err.decode())
    assert found, err.decode()[-2000:]
    return found[1], out.decode(), err.decode()


async def test_a_simulated_league_plays_every_round_and_prints_its_standings(
    stack: Stack, client: SpadesClient
) -> None:
    # whole games to 500 are `spades bots`' test
    options = ("--players", "8", "--rounds", "2", "--rules", '{"max_hands": 3}')
    league_id, printed, err = await simulate(stack, *options)
    assert re.search(rf"league {league_id}: 8 players, (swiss|round_robin)", err), err[-2000:]
    assert f"standings of league {league_id} (4 games)" in printed
    assert all(f"player {n} " in printed for n in range(1, 9))

    leagues = LeagueClient(client)
    standings = await leagues.standings(league_id, min_version=4)
    assert standings.version == 4
    assert [row.games for row in standings.players] == [2] * 8
    assert sum(row.wins for row in standings.players) >= 8  # two winners a partnership game
    for number in (1, 2):
        played = await leagues.round(league_id, number)
        assert len(played.tables) == 2
        for table in played.tables:
            state = await client.state(table.game_id)
            assert state.status == "finished"
            assert [seat.player for seat in state.seats] == table.players
            audit = await client.audit(table.game_id)
            assert audit.ok, audit


async def test_a_six_player_league_seats_teams_of_facing_partners(
    stack: Stack, client: SpadesClient
) -> None:
    options = ("--players", "6", "--rounds", "2", "--preset", "six-player")
    league_id, out, err = await simulate(stack, *options, "--rules", '{"max_hands": 1}')
    assert f"league {league_id}: 6 players" in err
    assert f"standings of league {league_id} (2 games)" in out
    leagues = LeagueClient(client)
    standings = await leagues.standings(league_id, min_version=2)
    assert [row.games for row in standings.players] == [2] * 6
    partners: set[frozenset[str]] = set()
    for number in (1, 2):
        (table,) = (await leagues.round(league_id, number)).tables
        state = await client.state(table.game_id)
        assert state.status == "finished"
        assert state.units == [[0, 3], [1, 4], [2, 5]]
        partners |= {frozenset({table.players[a], table.players[b]}) for a, b in state.units}
        audit = await client.audit(table.game_id)
        assert audit.ok, audit
    assert len(partners) == 6, "the second round changes every partnership"


async def test_a_round_with_idle_players_still_finishes_on_its_clocks(
    stack: Stack, client: SpadesClient
) -> None:
    """A quarter of the players never act: their seats are played by the league clock
    (``auto``), so every round still finishes and the league with it."""
    league_id, out, err = await simulate(
        stack,
        *("--players", "8", "--rounds", "2", "--idle", "0.25", "--rules", '{"max_hands": 1}'),
        *("--turn-s", "0.5", "--round-timeout", "60"),
    )
    assert re.search(rf"league {league_id}: 8 players, \w+, 2 idle", err), err[-2000:]
    assert "round 2 finished" in err
    assert f"standings of league {league_id} (4 games)" in out
    leagues = LeagueClient(client)
    league = await leagues.league(league_id)
    assert (league.rounds_finished, league.finished) == (2, True)
    assert league.clock is not None
    assert league.clock.on_timeout == "auto"
    standings = await leagues.standings(league_id, min_version=4)
    assert [row.games for row in standings.players] == [2] * 8


async def test_a_simulated_league_ends_with_a_knockout_of_its_top_four(
    stack: Stack, client: SpadesClient
) -> None:
    league_id, out, err = await simulate(
        stack,
        "--players",
        "6",
        "--rounds",
        "1",
        "--preset",
        "two-player",
        "--rules",
        '{"max_hands": 1}',
        "--knockout-top",
        "4",
        "--knockout-deals",
        "1",
    )
    champion = re.search(r"the knockout's champion: (player \d)", err)
    assert champion, err[-2000:]

    league = await LeagueClient(client).league(league_id)
    assert (league.rounds, league.finished) == (3, True)  # a Swiss round, semifinals, final
    bracket = league.knockout
    assert bracket is not None
    assert bracket.champion == [champion[1]]
    semifinals, final = bracket.rounds
    assert [len(m.sides) for m in semifinals.matches] == [2, 2]
    (decider,) = final.matches
    assert decider.winner == bracket.champion
    # the semifinals' winners meet in the final, the better seed first
    winners = [m.winner for m in semifinals.matches]
    assert sorted(w for w in winners if w is not None) == sorted(decider.sides)
    for played in (semifinals, final):
        for match in played.matches:
            assert match.game_id is not None
            assert (await client.audit(match.game_id)).ok
    assert out  # the standings were printed too


async def test_a_simulated_duplicate_league_ranks_by_matchpoints_and_audits_clean(
    stack: Stack, client: SpadesClient
) -> None:
    """A duplicate event on the whole stack (``spades up``: its engines derive the boards from
    the stack's key file): 8 players in fixed pairs, 2 rounds of 2 boards, every table of a
    round dealt the same boards, the standings by matchpoints."""
    wide = {**os.environ, "COLUMNS": "200"}  # the standings' every column, headers whole
    league_id, out, _ = await simulate(
        stack, "--players", "8", "--rounds", "2", "--duplicate", "2", env=wide
    )
    assert "matchpoints" in out

    leagues = LeagueClient(client)
    league = await leagues.league(league_id)
    assert (league.format, league.finished) == ("duplicate", True)
    assert [shown.board for shown in league.revealed] == [1, 2, 3, 4]
    standings = await leagues.standings(league_id, min_version=4)
    assert all(row.boards == 4 for row in standings.players)
    assert sum(row.matchpoints or 0 for row in standings.players) == 16
    assert await leagues.board_audit(league_id) == []
    for number in (1, 2):
        for table in (await leagues.round(league_id, number)).tables:
            audit = await client.audit(table.game_id)
            assert audit.ok, audit


@pytest.mark.parametrize(
    ("preset", "players"),
    [("cutthroat", 6), ("solo", 8), ("three-player-house", 6), ("six-player", 12)],
)
async def test_a_duplicate_event_of_every_preset_deals_each_table_the_boards(
    stack: Stack, client: SpadesClient, preset: str, players: int
) -> None:
    """Duplicate beyond fixed pairs: a preset of single players seats each player as a side
    of their own and compares each seat of a board with the same seat at the other tables;
    six-player compares its three pairs."""
    league_id, _, _ = await simulate(
        stack, "--players", str(players), "--rounds", "1", "--duplicate", "1", "--preset", preset
    )
    leagues = LeagueClient(client)
    league = await leagues.league(league_id)
    assert (league.format, league.finished) == ("duplicate", True)
    assert await leagues.board_audit(league.league_id) == []
    (board,) = (await leagues.boards(league.league_id)).boards
    played = await leagues.round(league.league_id, 1)
    assert board.played == len(played.tables) >= 2
    units = len(league.rules.table.units)
    assert len(board.results) == units * board.played  # every side of every table
    for direction in range(units):
        column = [r for r in board.results if r.direction == direction]
        # each direction's sides share the matchpoints of their comparisons
        assert sum(r.matchpoints for r in column) == pytest.approx(
            board.played * (board.played - 1) / 2
        )
    standings = await leagues.standings(league.league_id)
    assert all(row.percentage is not None for row in standings.players)


async def test_an_individual_duplicate_event_rotates_partners_through_the_stack(
    stack: Stack, client: SpadesClient
) -> None:
    league_id, _, _ = await simulate(
        stack,
        "--players",
        "8",
        "--rounds",
        "3",
        "--duplicate",
        "1",
        "--rotating",
        "--convention",
        "transferred",
    )
    leagues = LeagueClient(client)
    league = await leagues.league(league_id)
    assert (league.partners, league.convention, league.finished) == (
        "rotating",
        "transferred",
        True,
    )
    partners: dict[str, set[str]] = {}
    for number in (1, 2, 3):
        for table in (await leagues.round(league.league_id, number)).tables:
            for seat, player in enumerate(table.players):
                partners.setdefault(player, set()).add(table.players[(seat + 2) % 4])
    assert all(len(theirs) == 3 for theirs in partners.values()), partners
    assert await leagues.board_audit(league.league_id) == []
    standings = await leagues.standings(league.league_id)
    assert len(standings.players) == 8
    assert all(row.boards == 3 for row in standings.players)


async def test_a_duplicate_event_ends_with_a_knockout_of_its_top_pairs(
    stack: Stack, client: SpadesClient
) -> None:
    """Stages: a duplicate event of fixed pairs, then a knockout of its best four pairs,
    seeded by the event's matchpoint standings (which the engine reads from the tables'
    histories), partners facing each other at every match."""
    league_id, _, _ = await simulate(
        stack,
        "--players",
        "8",
        "--rounds",
        "3",
        "--duplicate",
        "1",
        "--knockout-top",
        "4",
        "--knockout-deals",
        "1",
        "--knockout-ties",
        "extra_deal",
    )
    leagues = LeagueClient(client)
    league = await leagues.league(league_id)
    assert (league.format, league.rounds, league.finished) == ("duplicate", 5, True)
    bracket = league.knockout
    assert bracket is not None
    assert bracket.after_round == 3
    assert (bracket.tie_break, bracket.extra_deals) == ("extra_deal", 3)
    # seeded by the event's standings: the pairs in the order of their percentages
    standings = await leagues.standings(league.league_id)
    by_pair: list[list[str]] = []
    for row in standings.players:
        pair = next(side for side in bracket.entrants if row.player in side)
        if pair not in by_pair:
            by_pair.append(pair)
    assert by_pair == bracket.entrants
    semifinals, final = bracket.rounds
    for match in semifinals.matches:
        assert match.game_id is not None
        table = (await client.state(match.game_id)).seats
        first, second = match.sides
        assert [seat.player for seat in table] == [first[0], second[0], first[1], second[1]]
    (decider,) = final.matches
    assert bracket.champion == decider.winner
    assert bracket.champion in decider.sides
    assert await leagues.board_audit(league.league_id) == []
