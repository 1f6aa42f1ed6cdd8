"""``spades league movement`` and ``spades league matchpoints``: a duplicate event's movement
and its cross-tables, computed here from the domain (no stack needed).

``movement`` prints who sits where in each round, the boards every table plays, and how even
the movement is; ``matchpoints`` reads a JSON file of board results (the shape of
:class:`domain.matchpoints.EventResults`) and prints each board across its tables and the
standings.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Annotated

import msgspec
import typer
from rich.console import Console
from rich.table import Table

from domain.errors import RuleViolation
from domain.matchpoints import (
    CrossTable,
    EventResults,
    ResultsError,
    Standing,
    cross_tables,
    standings,
)
from domain.movement import STYLES, Evenness, Movement, evenness, movement
from domain.rules import resolve_rules

out = Console()


def movement_command(
    players: Annotated[int, typer.Option(help="Players in the event.")],
    preset: Annotated[str, typer.Option(help="Rules preset of every table.")] = "partnership",
    style: Annotated[
        str | None,
        typer.Option(help="pairs (fixed partners) or individual; pairs where there are partners."),
    ] = None,
    rounds: Annotated[
        int | None, typer.Option(help="Rounds; absent: enough to meet everyone once.")
    ] = None,
    boards_per_round: Annotated[int, typer.Option(help="Boards every table plays a round.")] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="Print the movement as JSON.")] = False,
) -> None:
    """Generate a duplicate event's movement and print it with its evenness figures."""
    try:
        rules = resolve_rules({"preset": preset})
        chosen = style or ("pairs" if rules.partnerships else "individual")
        if chosen not in STYLES:
            raise typer.BadParameter(f"--style is one of {', '.join(STYLES)}")
        plan = movement(players, rules, chosen, rounds=rounds, boards_per_round=boards_per_round)
    except RuleViolation as error:
        raise typer.BadParameter(error.detail) from None
    figures = evenness(plan)
    if as_json:
        typer.echo(msgspec.json.encode({"movement": plan, "evenness": figures}).decode())
        return
    out.print(movement_table(plan, preset))
    out.print(evenness_table(figures))


def direction_names(plan: Movement) -> list[str]:
    if len(plan.directions) == 2 and len(plan.directions[0]) == 2:
        return ["N-S", "E-W"]
    return ["seats " + "+".join(str(seat + 1) for seat in seats) for seats in plan.directions]


def movement_table(plan: Movement, preset: str) -> Table:
    """A row a table a round (players numbered from 1), and a row of byes."""
    grid = Table(title=f"{preset} {plan.style}: {plan.players} players, {len(plan.rounds)} rounds")
    grid.add_column("Round", justify="right")
    grid.add_column("Boards")
    grid.add_column("Table", justify="right")
    for name in direction_names(plan):
        grid.add_column(name)
    for one in plan.rounds:
        boards = f"{one.boards[0]}-{one.boards[-1]}" if len(one.boards) > 1 else str(one.boards[0])
        for number, table in enumerate(one.tables, start=1):
            held = [" ".join(str(table[seat] + 1) for seat in seats) for seats in plan.directions]
            grid.add_row(str(one.number), boards, str(number), *held)
        if one.byes:
            byes = " ".join(str(player + 1) for player in one.byes)
            grid.add_row(str(one.number), "", "bye", byes, *[""] * (len(plan.directions) - 1))
    return grid


def evenness_table(figures: Evenness) -> Table:
    grid = Table(title="Evenness (fewest, most)")
    grid.add_column("Figure")
    grid.add_column("Fewest", justify="right")
    grid.add_column("Most", justify="right")
    rows = [
        ("meetings as opponents, per two units", figures.meetings),
        ("partnerships, per two players", figures.partners),
        ("boards compared, per two players", figures.comparisons),
        ("byes, per player", figures.byes),
        ("boards played, per player", figures.boards),
    ]
    for name, span in rows:
        if span is not None:
            grid.add_row(name, str(span[0]), str(span[1]))
    return grid


def matchpoints_command(
    path: Annotated[Path, typer.Argument(help="JSON of board results.", exists=True)],
) -> None:
    """Print every board across its tables, matchpointed, and the event's standings."""
    try:
        results = msgspec.json.decode(path.read_bytes(), type=EventResults)
        crosses = cross_tables(results)
    except (msgspec.DecodeError, msgspec.ValidationError, ResultsError) as error:
        raise typer.BadParameter(str(error), param_hint="FILE") from None
    for cross in crosses:
        out.print(cross_table(cross))
    out.print(standings_table(standings(crosses)))


def _number(value: Fraction) -> str:
    return f"{float(value):.2f}"


def cross_table(cross: CrossTable) -> Table:
    grid = Table(title=f"Board {cross.board}: played {cross.played} times")
    for name, justify in [
        ("Direction", "right"),
        ("Table", "left"),
        ("Players", "left"),
        ("Points", "right"),
        ("Delta", "right"),
        ("MP", "right"),
        ("%", "right"),
    ]:
        grid.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in sorted(cross.rows, key=lambda row: (row.direction, -row.matchpoints)):
        share = _number(100 * row.matchpoints / row.top) if row.top else "-"
        grid.add_row(
            str(row.direction + 1),
            row.table,
            " + ".join(row.players),
            str(row.value),
            str(row.delta),
            _number(row.matchpoints),
            share,
        )
    return grid


def standings_table(ranked: tuple[Standing, ...]) -> Table:
    grid = Table(title="Standings")
    for name in ("Rank", "Players", "Boards", "MP", "Top", "%"):
        grid.add_column(name, justify="left" if name == "Players" else "right")
    for rank, one in enumerate(ranked, start=1):
        share = _number(one.percentage) if one.percentage is not None else "-"
        grid.add_row(
            str(rank),
            " + ".join(one.players),
            str(one.boards),
            _number(one.matchpoints),
            str(one.top),
            share,
        )
    return grid
