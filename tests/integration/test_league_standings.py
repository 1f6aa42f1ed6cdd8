"""The ``standings`` read model over a real game stream: a league's own games counted in the
order they ended, nothing else counted, and a rebuild that gives the same numbers to the bit."""

from __future__ import annotations

import random
from typing import Any

import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.projections import GameLog, interleaved, play_game
from contracts.wire import read_commit
from domain.events import GameEnded
from domain.game import fold as fold_game
from domain.league import CreateLeague, League, ScheduleRound, decide, fold, table_result
from domain.state import Game
from domain.table import table_for
from services.projections.rebuild import rebuild
from services.store import queries
from services.store.database import Store
from services.store.ratings import Standing, record_game

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    append_games,
    random_logs,
    wait_for_position,
    workers,
)

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration

STANDINGS = ["standings"]


def played_league(
    league_id: str, preset: str, players: int, rounds: int, seed: int
) -> tuple[League, list[GameLog]]:
    """A league played through the domain: each round scheduled from the last one's results,
    each table's game played at random and committed as the engine commits."""
    rng = random.Random(seed)
    names = tuple(f"{league_id} player {n}" for n in range(players))
    rules = {"preset": preset, "max_hands": 1}
    command = CreateLeague(league_id, league_id, rules, names, rounds)
    league = fold(decide(None, command, seed=f"{seed:x}"))
    logs: list[GameLog] = []
    results = None
    for number in range(1, rounds + 1):
        league = fold(decide(league, ScheduleRound(number), results=results), league)
        assert league is not None
        games = [
            play_game(
                rng, t.game_id, preset=preset, max_hands=1, league=league_id, players=[*t.players]
            )
            for t in league.rounds[-1].tables
        ]
        logs += games
        results = {log.game_id: table_result(_final(log)) for log in games}
    assert league is not None
    return league, logs


def _final(log: GameLog) -> Game:
    game = fold_game(log.events)
    assert game is not None
    return game


def seated(game: Game) -> list[str]:
    return [player.name if player is not None else "" for player in game.players]


def unit_scores_of(logs: list[GameLog], name: str) -> list[int]:
    """The final score of ``name``'s unit in each game they played."""
    found = []
    for log in logs:
        game = _final(log)
        for unit, seats in enumerate(table_for(game.rules).units):
            if name in (seated(game)[seat] for seat in seats):
                found.append(game.scores[unit])
    return found


def expected_standings(logs: list[GameLog], league_id: str) -> dict[str, dict[str, Any]]:
    """The league's games counted in the order they end in the stream (``interleaved``)."""
    by_id = {log.game_id: log for log in logs}
    standings: dict[str, Standing] = {}
    for _subject, data in interleaved(logs):
        commit = read_commit(data)
        ended = [event for event in commit.events if isinstance(event, GameEnded)]
        game = _final(by_id[commit.game_id])
        if not ended or not commit.game_id.startswith(f"{league_id}-"):
            continue
        units = [[seated(game)[seat] for seat in unit] for unit in table_for(game.rules).units]
        for unit in units:
            for player in unit:
                standings.setdefault(player, Standing())
        end = ended[0]
        record_game(standings, units, list(end.scores), list(end.winners), end.forfeited)
    return {
        player: {
            "points": s.points,
            "wins": s.wins,
            "games": s.games,
            "forfeits": s.forfeits,
            "mu": s.mu,
            "sigma": s.sigma,
            "ordinal": s.ordinal,
        }
        for player, s in standings.items()
    }


async def stored_standings(store: Store, league_id: str) -> tuple[int, dict[str, dict[str, Any]]]:
    version, rows = await queries.league_standings(store.engine, league_id)
    return version, {
        row.pop("player"): {k: v for k, v in row.items() if k != "league"} for row in rows
    }


def decoy(league_id: str) -> GameLog:
    """A game tagged with the league by some client, whose id is none of the league's tables."""
    return play_game(
        random.Random(9),
        "decoy0123456789a",
        preset="solo",
        max_hands=1,
        league=league_id,
        players=["stranger 1", "stranger 2", "stranger 3", "stranger 4"],
    )


async def test_a_leagues_games_count_in_the_order_they_ended(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    teams, team_logs = played_league("teams", "partnership", 9, 3, seed=1)
    solo, solo_logs = played_league("solo", "cutthroat", 7, 3, seed=2)
    logs = [*team_logs, *solo_logs, decoy("solo"), *random_logs(4, seed=3, prefix="other")]
    last = await append_games(js, logs)
    async with workers(store, nats_client, models=STANDINGS):
        await wait_for_position(store, last, models=STANDINGS)

    for league, league_logs in ((teams, team_logs), (solo, solo_logs)):
        version, rows = await stored_standings(store, league.league_id)
        assert version == len(league_logs)
        assert rows == expected_standings(league_logs, league.league_id)
        assert not any(player.startswith("stranger") for player in rows)
        tables = [table for played in league.rounds for table in played.tables]
        assert set(rows) == {player for table in tables for player in table.players}
        for player, row in rows.items():
            scores = unit_scores_of(league_logs, player)
            assert (row["points"], row["games"]) == (sum(scores), len(scores))


async def test_a_rebuild_gives_the_same_numbers_however_the_stream_is_batched(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    _league, logs = played_league("rebuilt", "solo", 10, 3, seed=4)
    last = await append_games(js, [*logs, *random_logs(3, seed=5, prefix="noise")])
    async with workers(store, nats_client, models=STANDINGS):
        await wait_for_position(store, last, models=STANDINGS)
    before = await stored_standings(store, "rebuilt")
    assert before[0] == len(logs)

    assert await rebuild(store, ["standings"]) == ["standings"]
    assert await stored_standings(store, "rebuilt") == (0, {})
    async with workers(store, nats_client, models=STANDINGS, batch_size=3):
        await wait_for_position(store, last, models=STANDINGS)
    assert await stored_standings(store, "rebuilt") == before
