"""``spades serve ...``: run one service as its own process."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from services.runtime.logging import configure_logging
from services.runtime.settings import get_settings

app = typer.Typer(no_args_is_help=True, help="Run one service as its own process.")

NatsUrl = Annotated[
    str | None,
    typer.Option("--nats-url", help="NATS server (default: SPADES_NATS_URL)."),
]


def nats_url_or_exit(given: str | None) -> str:
    url = given or get_settings().nats_url
    if not url:
        typer.echo(
            "error: no NATS server: pass --nats-url or set SPADES_NATS_URL "
            "(`spades up` starts an embedded one for you)",
            err=True,
        )
        raise typer.Exit(2)
    return url


@app.command("engine")
def engine(nats_url: NatsUrl = None) -> None:
    """The command handler: a queue-group subscriber that decides and appends commands."""
    from services.engine.service import build_engine_app

    settings = get_settings()
    configure_logging(settings)
    url = nats_url_or_exit(nats_url)
    application = build_engine_app(
        url, queue=settings.engine_queue, replicas=settings.stream_replicas
    )
    asyncio.run(application.run())
