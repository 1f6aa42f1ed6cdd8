"""``spades league``: run leagues against a running stack over the HTTP API.

``simulate`` runs a whole league: it creates it (every table on a league clock), then round after
round starts the round's games and plays every seat with a bot until each game ends, waits for
the league to record the round over, and prints the final standings. ``--idle P`` leaves a
share of the players idle: they never act, and only their seats' clocks play their tables out.
``create``, ``schedule``, ``standings``, ``withdraw``, ``substitute``, ``adjust``, ``void`` and
``export`` are the single steps, for scripts.

Register in ``services/cli/main.py``::

    from services.cli import league
    app.add_typer(league.app, name="league")
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
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

from services.cli import duplicate, knockout
from services.cli.discover import Url

if TYPE_CHECKING:
    from contracts.leagues import IntegrityReport, Standings, StartedTable
    from services.bots.strategy import Player
    from services.client.leagues import Export, LeagueClient

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
    rounds: Annotated[
        int, typer.Option(min=0, help="Rounds to play (before the knockout, if any).")
    ] = 3,
    knockout_top: Annotated[
        int | None,
        typer.Option(min=2, help="End with a knockout of the standings' top N (two-player games)."),
    ] = None,
    knockout_deals: Annotated[int, typer.Option(min=1, help="Deals of a knockout match.")] = 2,
    knockout_ties: Annotated[
        str,
        typer.Option(
            help="A knockout match tied at its end: play_on, extra_deal (3 more at most, "
            "then the better seed) or higher_seed."
        ),
    ] = "play_on",
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
    idle: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="Share of the players who never act (their clocks play)."
        ),
    ] = 0.0,
    turn_s: Annotated[
        float, typer.Option(min=0.1, help="The league clock: seconds a turn, then auto-play.")
    ] = 5.0,
    round_timeout: Annotated[
        float, typer.Option(min=1.0, help="Seconds a round may take before the run fails.")
    ] = 1800.0,
    duplicate_boards: Annotated[
        int | None,
        typer.Option("--duplicate", min=1, help="A duplicate event of this many boards a round."),
    ] = None,
    rotating: Annotated[
        bool,
        typer.Option(
            "--rotating", help="A duplicate event's partners rotate: an individual event."
        ),
    ] = False,
    convention: Annotated[
        str, typer.Option(help="A duplicate event's sets and bags: as_scored or transferred.")
    ] = "as_scored",
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Run a whole league with bots in every seat (but the idle players'), and print the final
    standings (a duplicate event's by matchpoints; and the knockout's champion, with
    ``--knockout-top``)."""
    names = [f"player {number}" for number in range(1, players + 1)]
    knockout = (
        None
        if knockout_top is None
        else {"top": knockout_top, "deals": knockout_deals, "tie_break": knockout_ties}
    )
    if knockout is None and rounds == 0:
        raise typer.BadParameter("a league without a knockout plays 1 round or more")
    raw = _rules(preset, rules)
    factory = _bot_factory(bots, seed)
    idlers = frozenset(random.Random(seed).sample(names, round(idle * len(names))))
    clock = {"turn_s": turn_s, "on_timeout": "auto", "away_after": 1}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=console) as progress:

        async def work(leagues: LeagueClient) -> Standings:
            league = LeagueSimulation(
                leagues,
                progress,
                factory,
                concurrency,
                idle=idlers,
                clock=clock,
                round_timeout_s=round_timeout,
                knockout=knockout,
                duplicate_boards=duplicate_boards,
                duplicate_options={
                    "partners": "rotating" if rotating else "fixed",
                    "convention": convention,
                },
            )
            return await league.run(names, raw, rounds, pairing)

        try:
            standings = _run(url, api_key, work)
        except RoundStalled as stalled:
            console.print(f"error: {stalled}")
            raise typer.Exit(1) from None
    Console().print(standings_table(standings))


def _bot_factory(bots: bool, seed: int) -> Callable[[], Player]:
    from services.bots.strategy import Bot, RandomPlayer

    if bots:
        return Bot
    seeds = random.Random(seed)
    return lambda: RandomPlayer(random.Random(seeds.getrandbits(64)))


ROUND_POLL_S = 0.25
"""How often a simulation asks whether the league has recorded its round over."""


class RoundStalled(RuntimeError):
    """A round did not finish within the simulation's bound."""


class LeagueSimulation:
    """One league played to its end over HTTP, with the progress of rounds and games shown.

    The seats of ``idle`` players are never played: their tables end only by their clocks
    (the league's ``clock``, auto-play on timeout). A round counts as over when the league
    says so (it records the round over as its last game ends), not when the bots stop.
    """

    def __init__(
        self,
        leagues: LeagueClient,
        progress: Progress,
        bot_factory: Callable[[], Player],
        concurrency: int,
        *,
        idle: frozenset[str] = frozenset(),
        clock: dict[str, Any] | None = None,
        round_timeout_s: float = 1800.0,
        knockout: dict[str, Any] | None = None,
        duplicate_boards: int | None = None,
        duplicate_options: dict[str, Any] | None = None,
    ) -> None:
        self.duplicate_boards = duplicate_boards
        self.duplicate_options = duplicate_options or {}
        """A duplicate event of this many boards a round; None: a standard league."""
        self.leagues = leagues
        self.knockout = knockout
        self.progress = progress
        self.bot_factory = bot_factory
        self.gate = asyncio.Semaphore(concurrency)
        self.idle = idle
        self.clock = clock
        self.round_timeout_s = round_timeout_s
        self.games_ended = 0

    async def run(
        self, names: list[str], rules: dict[str, Any], rounds: int, pairing: str
    ) -> Standings:
        league = await self.leagues.create_league(
            "simulated league",
            rules,
            names,
            rounds=rounds,
            pairing=pairing,
            clock=self.clock,
            knockout=self.knockout,
            league_format=None if self.duplicate_boards is None else "duplicate",
            boards_per_round=self.duplicate_boards,
            **(self.duplicate_options if self.duplicate_boards is not None else {}),
        )
        idle = f", {len(self.idle)} idle" if self.idle else ""
        console.print(f"league {league.league_id}: {len(names)} players, {league.pairing}{idle}")
        tables = len(names) // league.rules.players
        if league.rounds is not None:
            rounds = league.rounds  # a knockout's rounds come after the ones asked for
        if league.format == "duplicate" and league.rules.partnerships:
            tables = len(names) // 2 // len(league.rules.table.units)  # whole pairs sit out
        rounds_task = self.progress.add_task("rounds", total=rounds)
        games_task = self.progress.add_task("games finished", total=rounds * tables)
        for number in range(1, rounds + 1):
            started = await self.leagues.start_round(
                league.league_id, number, idempotency_key=f"simulate-{number}"
            )
            try:
                async with asyncio.timeout(self.round_timeout_s):
                    await asyncio.gather(
                        *(self._play(table, games_task) for table in started.tables)
                    )
                    await self._round_finished(league.league_id, number)
            except TimeoutError:
                raise RoundStalled(
                    f"round {number} did not finish within {self.round_timeout_s:g} s"
                ) from None
            console.print(f"round {number} finished")
            self.progress.advance(rounds_task)
        if self.knockout is not None:
            bracket = (await self.leagues.league(league.league_id)).knockout
            assert bracket is not None
            won = " & ".join(bracket.champion or ["nobody"])
            console.print(f"the knockout's champion: {won}")
        return await self.leagues.standings(league.league_id, min_version=self.games_ended)

    async def _play(self, table: StartedTable, games_task: TaskID) -> None:
        from services.bots.runner import play_game

        active = {seat.seat: seat.token for seat in table.seats if seat.player not in self.idle}
        async with self.gate:
            if active:
                await play_game(self.leagues.client, table.game_id, active, self.bot_factory)
        self.games_ended += 1
        self.progress.advance(games_task)

    async def _round_finished(self, league_id: str, number: int) -> None:
        """Until the league has recorded round ``number`` over (its last game ended)."""
        while True:
            if (await self.leagues.round(league_id, number)).finished:
                return
            await asyncio.sleep(ROUND_POLL_S)  # the league has no stream to wait on


def standings_table(standings: Standings) -> Table:
    table = Table(title=f"standings of league {standings.league_id} ({standings.version} games)")
    columns: tuple[str, ...] = (
        "#",
        "player",
        "wins",
        "points",
        "games",
        "byes",
        "forfeits",
        "rating",
        "mu ± sigma",
    )
    duplicate = any(row.percentage is not None for row in standings.players)
    if duplicate:
        columns = (*columns, "boards", "matchpoints", "%")
    for column in columns:
        table.add_column(column, justify="left" if column == "player" else "right")
    for row in standings.players:
        rating = row.rating
        cells = [
            str(row.rank),
            f"{row.player} (withdrawn)" if row.withdrawn else row.player,
            str(row.wins),
            f"{row.points:,}",
            str(row.games),
            str(row.byes),
            str(row.forfeits),
            f"{rating.ordinal:.2f}",
            f"{rating.mu:.2f} ± {rating.sigma:.2f}",
        ]
        if duplicate:
            percentage = "" if row.percentage is None else f"{row.percentage:.1f}"
            cells += [str(row.boards or 0), f"{row.matchpoints or 0:g}", percentage]
        table.add_row(*cells)
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
    duplicate_boards: Annotated[
        int | None,
        typer.Option(
            "--duplicate",
            min=1,
            help="A duplicate event of this many boards a round (players listed partner beside "
            "partner).",
        ),
    ] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Create a league; prints its id."""
    raw = _rules(preset, rules)

    async def work(leagues: LeagueClient) -> str:
        league = await leagues.create_league(
            name,
            raw,
            player,
            rounds=rounds,
            pairing=pairing,
            league_format=None if duplicate_boards is None else "duplicate",
            boards_per_round=duplicate_boards,
        )
        return league.league_id

    typer.echo(_run(url, api_key, work))


@app.command("audit")
def audit(
    league_id: Annotated[str, typer.Argument(help="A duplicate league.")],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Audit a duplicate league's boards: every table's deals against the published root and
    the revealed seeds. Prints each finding as a JSON line; exits 1 when there is any."""

    async def work(leagues: LeagueClient) -> list[Any]:
        try:
            return await leagues.board_audit(league_id)
        except ValueError as error:
            console.print(f"[red]{error}[/red]")
            raise typer.Exit(2) from None

    found = _run(url, api_key, work)
    for finding in found:
        typer.echo(msgspec.json.encode(finding).decode())
    if found:
        console.print(f"[red]{len(found)} finding(s)[/red]")
        raise typer.Exit(1)
    console.print("[green]every table of every round held the published boards[/green]")


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
    from contracts.leagues import RoundStarted

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


@app.command("integrity")
def integrity(
    league_id: Annotated[str, typer.Argument(help="The league.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer as JSON.")] = False,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Print the league's integrity report (its platform's key only): every pair's collusion
    signals, flagged first, and the replay pages of each flagged signal's hands. What each
    signal means, and what it cannot prove: README, "Integrity signals"."""

    async def work(leagues: LeagueClient) -> IntegrityReport:
        return await leagues.integrity(league_id)

    report = _run(url, api_key, work)
    if as_json:
        typer.echo(msgspec.json.encode(report).decode())
        return
    out = Console()
    out.print(integrity_table(report))
    for signal in report.signals:
        if signal.flagged:
            out.print(f"{signal.signal} {' / '.join(signal.players)}:")
            for where in signal.evidence:
                out.print(f"  {url.rstrip('/')}{where.replay}", soft_wrap=True)


def integrity_table(report: IntegrityReport) -> Table:
    """One row per signal: its effect against the field, its chances or hands behind it, its
    p-value and the p-value adjusted over every signal (``--json`` has the rest)."""
    title = (
        f"integrity of league {report.league_id} ({report.hands} hands,"
        f" flagged at a false discovery rate of {report.fdr:g})"
    )
    table = Table(title=title)
    table.add_column("signal", no_wrap=True)
    table.add_column("players")
    for column in ("effect", "count", "p", "adjusted p", "flagged"):
        table.add_column(column, justify="right", no_wrap=True)
    for signal in report.signals:
        table.add_row(
            signal.signal,
            " / ".join(signal.players),
            f"{signal.effect:+.3g}",
            str(signal.count),
            f"{signal.p_value:.2g}",
            f"{signal.q_value:.2g}",
            "yes" if signal.flagged else "",
        )
    return table


@app.command("withdraw")
def withdraw(
    league_id: Annotated[str, typer.Argument(help="The league.")],
    player: Annotated[str, typer.Argument(help="The player who leaves.")],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Withdraw a player: later rounds skip them; prints the answer as JSON."""

    async def work(leagues: LeagueClient) -> Any:
        return await leagues.withdraw(league_id, player)

    typer.echo(msgspec.json.encode(_run(url, api_key, work)).decode())


@app.command("substitute")
def substitute(
    league_id: Annotated[str, typer.Argument(help="The league.")],
    player: Annotated[str, typer.Argument(help="The player whose running seat is taken over.")],
    by: Annotated[str, typer.Argument(help="The substitute.")],
    key: Annotated[
        str | None, typer.Option(help="Idempotency-Key: the same key gets the same token.")
    ] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Seat a substitute for a player at their running table; prints the answer as JSON, the
    seat's new token included (for the substitute only)."""

    async def work(leagues: LeagueClient) -> Any:
        return await leagues.substitute(league_id, player, by, idempotency_key=key)

    typer.echo(msgspec.json.encode(_run(url, api_key, work)).decode())


@app.command("adjust")
def adjust(
    league_id: Annotated[str, typer.Argument(help="The league.")],
    player: Annotated[str, typer.Argument(help="The player whose total is adjusted.")],
    points: Annotated[int, typer.Option(help="Points added (negative: taken off).")],
    reason: Annotated[str, typer.Option(help="Why: recorded, and shown with the standings.")],
    round_number: Annotated[
        int | None, typer.Option("--round", help="The round it concerns, if one.")
    ] = None,
    key: Annotated[str | None, typer.Option(help="Idempotency-Key: recorded once.")] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """The director's adjusted score, recorded in the league's history; prints it as JSON."""

    async def work(leagues: LeagueClient) -> Any:
        return await leagues.adjust_score(
            league_id, player, points, reason, round_number, idempotency_key=key
        )

    typer.echo(msgspec.json.encode(_run(url, api_key, work)).decode())


@app.command("void")
def void(
    league_id: Annotated[str, typer.Argument(help="The league.")],
    game_id: Annotated[str, typer.Argument(help="The table's game, which must be over.")],
    reason: Annotated[str, typer.Option(help="Why: recorded, and shown with the standings.")],
    board: Annotated[
        int | None, typer.Option(help="A duplicate event's one board to void at the table.")
    ] = None,
    key: Annotated[str | None, typer.Option(help="Idempotency-Key: recorded once.")] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Void a finished table (or one board of it): its result counts for no one; prints the
    void as JSON."""

    async def work(leagues: LeagueClient) -> Any:
        return await leagues.void_table(
            league_id, game_id, reason, idempotency_key=key, board=board
        )

    typer.echo(msgspec.json.encode(_run(url, api_key, work)).decode())


@app.command("export")
def export(
    league_id: Annotated[str, typer.Argument(help="The league.")],
    what: Annotated[str, typer.Argument(help="standings or results.")] = "standings",
    export_format: Annotated[str, typer.Option("--format", help="json or csv.")] = "csv",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Export the league's standings or its results (every seat of every finished round, and
    every bye), as the server writes them: CSV or JSON."""
    if what not in ("standings", "results"):
        raise typer.BadParameter("standings or results", param_hint="WHAT")
    if export_format not in ("json", "csv"):
        raise typer.BadParameter("json or csv", param_hint="--format")
    kind: Export = "results" if what == "results" else "standings"

    async def work(leagues: LeagueClient) -> bytes:
        return await leagues.export(league_id, kind, export_format)

    data = _run(url, api_key, work)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        output.write_bytes(data)
        console.print(f"wrote {output} ({len(data):,} bytes)")


app.command("movement")(duplicate.movement_command)
app.command("matchpoints")(duplicate.matchpoints_command)
app.command("bracket")(knockout.bracket_command)
