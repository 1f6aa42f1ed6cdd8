"""The ``standings`` read model over a real game stream: a league's own games counted in the
league's order (round, then table) whatever order they end in, nothing else counted, and a
rebuild that gives the same numbers to the bit."""

from __future__ import annotations

import random
from typing import Any

import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.projections import GameLog, play_game
from contracts.partitions import partition_of
from domain.events import GameEnded
from domain.game import fold as fold_game
from domain.league import (
    CreateLeague,
    League,
    ScheduleRound,
    decide,
    fold,
    table_of,
    table_result,
)
from domain.state import Game
from domain.table import table_for
from services.projections.model import Delivered
from services.projections.rebuild import rebuild
from services.projections.standings import StandingsModel
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


def league_order(log: GameLog) -> tuple[int, int]:
    place = table_of(log.game_id)
    assert place is not None
    return place.round, place.table


def expected_standings(logs: list[GameLog], league_id: str) -> dict[str, dict[str, Any]]:
    """The league's games counted in the league's order: by round, then table (in the stream
    (``interleaved``) the games of a round end in another order, and some of the next round's
    before them)."""
    standings: dict[str, Standing] = {}
    for log in sorted(logs, key=league_order):
        ended = [event for event in log.events if isinstance(event, GameEnded)]
        game = _final(log)
        if not ended or not log.game_id.startswith(f"{league_id}-"):
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
    version, rows, _ = await queries.league_standings(store.engine, league_id)
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


async def test_a_leagues_games_count_in_the_leagues_order(
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


async def apply_in_batches(store: Store, logs: list[GameLog], sizes: random.Random) -> None:
    """Every commit of ``logs`` (each game's in its order, the games in the order given) to a
    standings model of its own, in batches of random sizes, one transaction each."""
    model = StandingsModel()
    commits = [commit for log in logs for commit in log.commits]
    delivered = [Delivered(sequence, commit) for sequence, commit in enumerate(commits, 1)]
    while delivered:
        size = sizes.randint(1, 40)
        batch, delivered = delivered[:size], delivered[size:]
        async with store.writing() as conn:
            assert await model.apply(conn, batch) == {}


async def test_the_standings_are_the_same_however_partitions_interleave(store: Store) -> None:
    """The same league games reach the model in two orders: as a stream of one partition had
    them (round by round, each round's tables in turn), and as three partitions' streams taken
    one after another, each backwards (the last round's games first, each round's tables in
    another order). Every column is the same to the bit, and is the league's order's."""
    league, logs = played_league("spread", "partnership", 12, 4, seed=6)
    expected = expected_standings(logs, "spread")
    streams = [[log for log in logs if partition_of(log.game_id, 3) == p] for p in range(3)]
    orders = {
        "one stream": logs,
        "partitions backwards": [log for stream in streams[::-1] for log in stream[::-1]],
    }
    assert all(streams), "every partition has games of the league"
    found = {}
    for number, (name, order) in enumerate(orders.items()):
        await rebuild(store, ["standings"])
        await apply_in_batches(store, order, random.Random(number))
        version, found[name] = await stored_standings(store, league.league_id)
        assert version == len(logs)
    assert found["one stream"] == expected
    assert found["partitions backwards"] == expected
