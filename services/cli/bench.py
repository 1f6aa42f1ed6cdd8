"""``spades bench ...``: the measured figures of each part, against a named peer."""

from __future__ import annotations

from typing import Annotated

import msgspec
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(no_args_is_help=True, help="Benchmarks: print figures and ratios to a peer.")
console = Console(stderr=True)


@app.command("engine")
def engine(
    hands: Annotated[int, typer.Option(help="Hands per round.")] = 2000,
    preset: Annotated[str, typer.Option(help="Rules preset.")] = "partnership",
    seed: Annotated[int, typer.Option(help="Seed of the random players.")] = 1,
    rounds: Annotated[int, typer.Option(help="Rounds; the best of each side counts.")] = 3,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """Random legal hands through legal_actions + decide + evolve, against OpenSpiel's Spades."""
    from benchmarks.engine import run

    figures = run(preset, hands, seed, rounds, progress=None if json else console.print)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(title=f"engine: {hands} random legal hands of {preset}, best of {rounds}")
    table.add_column("engine")
    table.add_column("hands/s", justify="right")
    table.add_row("spades (domain/)", f"{figures.hands_per_s:,.0f}")
    if figures.peer_hands_per_s is not None:
        table.add_row("OpenSpiel C++ spades", f"{figures.peer_hands_per_s:,.0f}")
    Console().print(table)
    if figures.ratio is not None:
        typer.echo(f"ratio (ours / OpenSpiel): {figures.ratio:.2f}")
    else:
        typer.echo("OpenSpiel is not installed (pip install -e '.[bench]'): no ratio")
