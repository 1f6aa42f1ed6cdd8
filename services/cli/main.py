"""The ``spades`` command line: one entry point for every process and tool."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core

from services.cli import (
    archive,
    audit,
    backup,
    bench,
    bots,
    broker,
    contracts,
    league,
    log,
    partitions,
    play,
    projections,
    scenario,
    serve,
    verify,
    webhooks,
    witness,
)


def _flags_show_no_value() -> None:
    """Typer's rich help writes ``<bool>`` after every flag (``--json``, ``--help``), as if it
    took a value; its plain help, rightly, writes nothing. Make the rich one agree."""
    shown = typer.core.TyperOption.display_type_rich

    def display_type_rich(option: typer.core.TyperOption, ctx: Any) -> str | None:
        return None if option.is_bool_flag else shown(option, ctx)

    setattr(typer.core.TyperOption, "display_type_rich", display_type_rich)  # noqa: B010


_flags_show_no_value()

app = typer.Typer(
    no_args_is_help=True,
    help="The Spades service: rules engine, event store, HTTP API and tools.",
    pretty_exceptions_enable=False,
)
app.add_typer(scenario.app, name="scenario")
app.add_typer(bench.app, name="bench")
app.add_typer(serve.app, name="serve")
app.add_typer(contracts.app, name="contracts")
app.add_typer(projections.app, name="projections")
app.add_typer(league.app, name="league")
app.add_typer(broker.app, name="broker")
app.add_typer(webhooks.app, name="webhooks")
app.add_typer(partitions.app, name="partitions")
app.add_typer(log.app, name="log")
app.add_typer(witness.app, name="witness")
app.add_typer(play.app)
app.command("audit")(audit.audit)
app.command("verify")(verify.verify)
app.command("archive")(archive.archive)
app.command("backup")(backup.backup)
app.command("restore")(backup.restore)
app.command("bots")(bots.play_bots)
bench.app.command("bots")(bots.bench_bots)


@app.command()
def up(
    host: Annotated[str | None, typer.Option(help="Gateway address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Gateway port (default 8000).")] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Where NATS and SQLite keep data (var).")
    ] = None,
) -> None:
    """Start the whole stack: embedded NATS, engine, projection workers and the gateway."""
    from services.cli.up import run_stack
    from services.runtime.logging import configure_logging
    from services.runtime.settings import get_settings

    settings = get_settings()
    changes = {"host": host, "port": port, "data_dir": data_dir}
    settings = settings.model_copy(update={k: v for k, v in changes.items() if v is not None})
    configure_logging(settings)
    raise typer.Exit(run_stack(settings))


if __name__ == "__main__":
    app()
