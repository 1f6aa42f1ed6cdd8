"""``spades league``: run leagues against a running stack over the HTTP API.

``simulate`` runs a whole league: it creates it, then round after round starts the round's games
and plays every seat with a bot until each game ends, and prints the final standings.
``create``, ``schedule`` and ``standings`` are the single steps, for scripts.

Register in ``services/cli/main.py``::

    from services.cli import league
    app.add_typer(league.app, name="league")
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import msgspec
import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from services.cli.discover import Url

if TYPE_CHECKING:
    from services.bots.strategy import Player
    from services.client.leagues import LeagueClient, Standings, StartedTable

DEFAULT_URL = "http://127.0.0.1:8000"

T = TypeVar("T")

app = typer.Typer(no_args_is_help=True, help="Leagues: create, schedule rounds, standings.")
console = Console(stderr=True)

ApiKey = Annotated[
    str | None,
    typer.Option("--api-key", envvar="SPADES_API_KEY", help="Platform key (SPADES_API_KEY)."),
]
Preset = Annotated[str, typer.Option(help="Rules preset of every game.")]
Rules = Annotated[
    str | None, typer.Option(help="Rule overrides as JSON, e.g. '{\"target\": 200}'.")
]


def _rules(preset: str, overrides: str | None) -> dict[str, Any]:
    try:
        extra = json.loads(overrides) if overrides else {}
    except json.JSONDecodeError as error:
        raise typer.BadParameter(f"--rules is not JSON: {error}") from None
    if not isinstance(extra, dict):
        raise typer.BadParameter("--rules is a JSON object of rule options")
    return {"preset": preset, **extra}


def _run(url: str, api_key: str | None, work: Callable[[LeagueClient], Awaitable[T]]) -> T:
    """Run ``work`` with a league client; an error answer or no server exits 1, saying why."""
    from services.cli.errors import server_errors_reported
    from services.client import SpadesClient
    from services.client.leagues import LeagueClient

    async def main() -> T:
        async with SpadesClient(url, api_key=api_key) as client:
            return await work(LeagueClient(client))

    with server_errors_reported(url):
        return asyncio.run(main())


# --------------------------------------------------------------------------- simulate


@app.command("simulate")
def simulate(
    players: Annotated[int, typer.Option(min=2, help="Players in the league.")] = 8,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds to play.")] = 3,
    bots: Annotated[
        bool,
        typer.Option(
            "--bots", help="Seat decent bots; without it, players that pick any legal action."
        ),
    ] = False,
    preset: Preset = "partnership",
    rules: Rules = None,
    pairing: Annotated[str, typer.Option(help="auto, round_robin or swiss.")] = "auto",
    concurrency: Annotated[int, typer.Option(min=1, help="Games played at once.")] = 8,
    seed: Annotated[int, typer.Option(help="Seed of the random players' choices.")] = 0,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Run a whole league with bots in every seat, and print the final standings."""
    names = [f"player {number}" for number in range(1, players + 1)]
    raw = _rules(preset, rules)
    factory = _bot_factory(bots, seed)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console) as progress:

        async def work(leagues: LeagueClient) -> Standings:
            league = LeagueSimulation(leagues, progress, factory, concurrency)
            return await league.run(names, raw, rounds, pairing)

        standings = _run(url, api_key, work)
    Console().print(standings_table(standings))


def _bot_factory(bots: bool, seed: int) -> Callable[[], Player]:
    from services.bots.strategy import Bot, RandomPlayer

    if bots:
        return Bot
    seeds = random.Random(seed)
    return lambda: RandomPlayer(random.Random(seeds.getrandbits(64)))


class LeagueSimulation:
    """One league played to its end over HTTP, with the progress of rounds and games shown."""

    def __init__(
        self,
        leagues: LeagueClient,
        progress: Progress,
        bot_factory: Callable[[], Player],
        concurrency: int,
    ) -> None:
        self.leagues = leagues
        self.progress = progress
        self.bot_factory = bot_factory
        self.gate = asyncio.Semaphore(concurrency)
        self.games_ended = 0

    async def run(
        self, names: list[str], rules: dict[str, Any], rounds: int, pairing: str
    ) -> Standings:
        league = await self.leagues.create_league(
            "simulated league", rules, names, rounds=rounds, pairing=pairing
        )
        console.print(f"league {league.league_id}: {len(names)} players, {league.pairing}")
        tables = len(names) // int(league.rules["players"])
        rounds_task = self.progress.add_task("rounds", total=rounds)
        games_task = self.progress.add_task("games finished", total=rounds * tables)
        for number in range(1, rounds + 1):
            started = await self.leagues.start_round(
                league.league_id, number, idempotency_key=f"simulate-{number}"
            )
            await asyncio.gather(*(self._play(table, games_task) for table in started.tables))
            self.progress.advance(rounds_task)
        return await self.leagues.standings(league.league_id, min_version=self.games_ended)

    async def _play(self, table: StartedTable, games_task: TaskID) -> None:
        from services.bots.runner import play_game

        async with self.gate:
            await play_game(self.leagues.client, table.game_id, table.tokens(), self.bot_factory)
        self.games_ended += 1
        self.progress.advance(games_task)


def standings_table(standings: Standings) -> Table:
    table = Table(title=f"standings of league {standings.league_id} ({standings.version} games)")
    for column in ("#", "player", "wins", "points", "games", "byes", "rating", "mu ± sigma"):
        table.add_column(column, justify="left" if column == "player" else "right")
    for row in standings.players:
        rating = row.rating
        table.add_row(
            str(row.rank),
            row.player,
            str(row.wins),
            f"{row.points:,}",
            str(row.games),
            str(row.byes),
            f"{rating.ordinal:.2f}",
            f"{rating.mu:.2f} ± {rating.sigma:.2f}",
        )
    return table


# --------------------------------------------------------------------------- single steps


@app.command("create")
def create(
    player: Annotated[list[str], typer.Option("--player", "-p", help="A player (repeat it).")],
    name: Annotated[str, typer.Option(help="The league's name.")] = "league",
    rounds: Annotated[int | None, typer.Option(min=1, help="Rounds; absent: no end.")] = None,
    pairing: Annotated[str, typer.Option(help="auto, round_robin or swiss.")] = "auto",
    preset: Preset = "partnership",
    rules: Rules = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Create a league; prints its id."""
    raw = _rules(preset, rules)

    async def work(leagues: LeagueClient) -> str:
        league = await leagues.create_league(name, raw, player, rounds=rounds, pairing=pairing)
        return league.league_id

    typer.echo(_run(url, api_key, work))


@app.command("schedule")
def schedule(
    league_id: Annotated[str, typer.Argument(help="The league.")],
    key: Annotated[
        str | None, typer.Option(help="Idempotency-Key: the same key finishes the same round.")
    ] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Schedule and start the next round; prints it as JSON, every seat's token included."""
    from services.client.leagues import RoundStarted

    async def work(leagues: LeagueClient) -> RoundStarted:
        return await leagues.start_round(league_id, idempotency_key=key)

    typer.echo(msgspec.json.encode(_run(url, api_key, work)).decode())


@app.command("standings")
def standings(
    league_id: Annotated[str, typer.Argument(help="The league.")],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Print the league's standings."""

    async def work(leagues: LeagueClient) -> Standings:
        return await leagues.standings(league_id)

    Console().print(standings_table(_run(url, api_key, work)))
