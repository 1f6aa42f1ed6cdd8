"""``spades scenario run FILE...``: run scenario files (docs/rules.md) and print their outcomes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from domain.scenario import MalformedCase, cases_of, differences, run_case

app = typer.Typer(no_args_is_help=True, help="Scenario files: known-answer cases of docs/rules.md.")


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise typer.BadParameter(f"{path}: cannot be read ({error.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise typer.BadParameter(f"{path}: not JSON ({error})") from None


@app.command("run")
def run(
    files: Annotated[list[Path], typer.Argument(help="Scenario files: a case or a list of cases.")],
) -> None:
    """Print one JSON array of outcomes. Exit 1 when an ``expect`` differs, 2 when a file or a
    case is malformed."""
    outcomes: list[dict[str, Any]] = []
    failures: list[str] = []
    for path in files:
        try:
            document = _load(path)
        except typer.BadParameter as error:
            typer.echo(f"error: {error.message}", err=True)
            raise typer.Exit(2) from None
        for position, case in enumerate(cases_of(document)):
            try:
                outcome = run_case(case, position)
            except MalformedCase as error:
                typer.echo(
                    f"error: {path}: case {error.case!r}: field {error.field}: {error.message}",
                    err=True,
                )
                raise typer.Exit(2) from None
            outcomes.append(outcome)
            expect = case.get("expect")
            if expect is not None:
                if not isinstance(expect, dict):
                    typer.echo(
                        f"error: {path}: case {outcome['name']!r}: field expect: an object",
                        err=True,
                    )
                    raise typer.Exit(2)
                for difference in differences(expect, outcome):
                    failures.append(f"{path}: case {outcome['name']!r}: {difference}")
    json.dump(outcomes, sys.stdout)
    sys.stdout.write("\n")
    for failure in failures:
        typer.echo(f"differs: {failure}", err=True)
    if failures:
        raise typer.Exit(1)
