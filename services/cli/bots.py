"""``spades bots``: fill games with bots and play them over HTTP; ``spades bench bots``: bots
against random players in process.

Register in ``services/cli/main.py``::

    from services.cli import bots
    app.command("bots")(bots.play_bots)
    bench.app.command("bots")(bots.bench_bots)
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections import Counter
from typing import Annotated, Any

import msgspec
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from services.cli.discover import Url

DEFAULT_URL = "http://127.0.0.1:8000"

console = Console(stderr=True)


def _overrides(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise typer.BadParameter(f"--rules is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise typer.BadParameter("--rules is a JSON object of rule options")
    return value


def play_bots(
    games: Annotated[int, typer.Option(min=1, help="Games to create and play.")] = 10,
    preset: Annotated[str, typer.Option(help="Rules preset.")] = "partnership",
    rules: Annotated[
        str | None, typer.Option(help="Rule overrides as JSON, e.g. '{\"target\": 200}'.")
    ] = None,
    url: Url = DEFAULT_URL,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", envvar="SPADES_API_KEY", help="Platform key (SPADES_API_KEY)."),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Games played at once.")] = 4,
) -> None:
    """Create games, seat a bot in every seat and play them to the end over the HTTP API;
    print each game's id (for `spades audit` or the replay page) and a summary."""
    from services.bots.runner import GameOutcome, play_games
    from services.bots.strategy import Bot
    from services.cli.errors import server_errors_reported
    from services.client import SpadesClient

    raw = {"preset": preset, **_overrides(rules)}
    finished: list[GameOutcome] = []

    async def run(progress: Progress) -> float:
        task = progress.add_task(f"{preset} games", total=games)

        def done(outcome: GameOutcome) -> None:
            finished.append(outcome)
            progress.advance(task)

        start = time.perf_counter()
        async with SpadesClient(url, api_key=api_key) as client:
            await play_games(client, raw, games, Bot, concurrency=concurrency, on_game=done)
        return time.perf_counter() - start

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with (
        server_errors_reported(url),
        Progress(*columns, TimeElapsedColumn(), console=console) as progress,
    ):
        seconds = asyncio.run(run(progress))
    for outcome in finished:
        typer.echo(_played(outcome))
    Console().print(_summary(preset, finished, seconds))


def _played(outcome: Any) -> str:
    """One line per game, its id first, so it can be watched, replayed or audited."""
    scores = " / ".join(str(score) for score in outcome.scores)
    won = " & ".join(f"unit {unit}" for unit in outcome.winners) or "nobody"
    return f"game {outcome.game_id}: {outcome.hands} hands, scores {scores}, won by {won}"


def _summary(preset: str, outcomes: list[Any], seconds: float) -> Table:
    actions = sum(outcome.actions for outcome in outcomes)
    stale = sum(seat.stale for outcome in outcomes for seat in outcome.seats)
    wins = Counter(unit for outcome in outcomes for unit in outcome.winners)
    table = Table(title=f"bots: {len(outcomes)} {preset} games over HTTP")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("games finished", str(len(outcomes)))
    table.add_row("hands per game", f"{statistics.fmean(o.hands for o in outcomes):.1f}")
    table.add_row("actions", f"{actions:,}")
    table.add_row("actions/s", f"{actions / seconds:,.1f}")
    table.add_row("stale views re-read", str(stale))
    table.add_row("wall time", f"{seconds:.1f} s")
    for unit, count in sorted(wins.items()):
        table.add_row(f"wins of unit {unit}", str(count))
    return table


def bench_bots(
    games: Annotated[int, typer.Option(min=2, help="Games per matchup.")] = 200,
    seed: Annotated[int, typer.Option(help="Seed of game 0; game i uses seed + i.")] = 1,
    preset: Annotated[
        str | None, typer.Option(help="Only this preset's matchups (default: every preset).")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """Bots against uniformly random players, and bot mirrors: win rates and score margins."""
    from benchmarks.bots import MATCHUPS, MatchupFigures, run

    matchups = [m for m in MATCHUPS if preset is None or m[0] == preset]

    def report(figures: MatchupFigures) -> None:
        if not json_output:
            console.print(f"{figures.preset} ({figures.bots}): {figures.seconds:.0f} s")

    figures = run(games, seed, matchups, progress=report)
    if json_output:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(
        title=f"bots: {games} games per matchup, seeds {seed}..{seed + games - 1}",
        caption="bots: team = seats 0+2 vs random, one = seat 0 vs random, all = bot mirror; "
        "score diff = the bots' unit less the best other, 95% intervals",
    )
    table.add_column("preset", no_wrap=True)
    table.add_column("bots")
    for column in ("win rate", "95% CI", "fair", "score diff", "hands"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in figures:
        table.add_row(
            row.preset,
            row.bots,
            f"{row.win_rate:.3f}",
            f"{row.win_low:.2f}-{row.win_high:.2f}",
            f"{row.fair_share:.2f}",
            f"{row.score_difference:+.0f} ± {row.difference_margin:.0f}",
            f"{row.mean_hands:.1f}",
        )
    Console().print(table)
