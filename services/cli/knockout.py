"""``spades league bracket``: a knockout's bracket, seeded from a previous stage's standings (the
names in order) or by rating, with its byes (computed here from the domain; no stack needed).

    spades league bracket ada bea cy di ev          # seeds in the order given
    spades league bracket --top 4 ada bea cy di ev  # the first four of a stage's standings
    spades league bracket --ratings ratings.json    # {"ada": 24.1, ...}: highest first
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import msgspec
import typer
from rich.console import Console
from rich.table import Table

from domain.knockout import KnockoutError, Match, first_round, places, seeded_by_rating, top_of

out = Console()


def bracket_command(
    entrants: Annotated[
        list[str] | None, typer.Argument(help="The entrants, best first (a stage's standings).")
    ] = None,
    top: Annotated[
        int | None, typer.Option(help="Take only the first N of the entrants given.")
    ] = None,
    ratings: Annotated[
        Path | None,
        typer.Option(help="A JSON object of entrant to rating (an ordinal): seeds by rating."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the first round as JSON.")] = False,
) -> None:
    """Seed a knockout and print its first round: who meets whom, and who has a bye."""
    try:
        seeds = _seeds(entrants or [], top, ratings)
        matches = first_round(len(seeds))
    except KnockoutError as error:
        raise typer.BadParameter(error.detail) from None
    if as_json:
        shown = [
            {"match": m.number, "entrants": [seeds[s - 1] for s in m.seeds], "bye": m.bye}
            for m in matches
        ]
        typer.echo(msgspec.json.encode({"places": places(len(seeds)), "round": shown}).decode())
        return
    out.print(_table(matches, seeds))


def _seeds(entrants: list[str], top: int | None, ratings: Path | None) -> list[str]:
    if ratings is not None:
        if entrants:
            raise KnockoutError("give the entrants or --ratings, not both")
        try:
            read = json.loads(ratings.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise KnockoutError(f"{ratings}: {error}") from None
        if not isinstance(read, dict) or not all(
            isinstance(value, int | float) for value in read.values()
        ):
            raise KnockoutError(f"{ratings}: a JSON object of entrant to rating")
        entrants = seeded_by_rating({str(name): float(value) for name, value in read.items()})
    return top_of(entrants, top if top is not None else len(entrants))


def _table(matches: list[Match], seeds: list[str]) -> Table:
    table = Table(title=f"Round 1 of {len(seeds)} entrants ({places(len(seeds))} places)")
    table.add_column("match", justify="right")
    table.add_column("seed", justify="right")
    table.add_column("entrant")
    table.add_column("against")
    for match in matches:
        best, *other = match.seeds
        against = "bye" if match.bye else f"{seeds[other[0] - 1]} ({other[0]})"
        table.add_row(str(match.number), str(best), seeds[best - 1], against)
    return table
