"""The ``spades`` command line: one entry point for every process and tool."""

from __future__ import annotations

import typer

from services.cli import bench, scenario, serve

app = typer.Typer(
    no_args_is_help=True,
    help="The Spades service: rules engine, event store, HTTP API and tools.",
    pretty_exceptions_enable=False,
)
app.add_typer(scenario.app, name="scenario")
app.add_typer(bench.app, name="bench")
app.add_typer(serve.app, name="serve")

if __name__ == "__main__":
    app()
