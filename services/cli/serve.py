"""``spades serve ...``: run one service as its own process."""

from __future__ import annotations

from typing import Annotated

import typer

from services.cli.projections import serve as serve_projections
from services.runtime.logging import configure_logging
from services.runtime.loop import run as run_service
from services.runtime.metrics import serve_metrics
from services.runtime.private import private_umask
from services.runtime.settings import get_settings

app = typer.Typer(no_args_is_help=True, help="Run one service as its own process.")


@app.callback()
def private() -> None:
    """Every file a service writes (the read-model database, the key file) is its user's."""
    private_umask()


NatsUrl = Annotated[
    str | None,
    typer.Option("--nats-url", help="NATS server (default: SPADES_NATS_URL)."),
]


def nats_url_or_exit(given: str | None) -> str:
    """``--nats-url``, else ``SPADES_NATS_URL``, else the NATS server of the stack running on
    the data directory (the one ``spades up`` records there)."""
    from services.cli.discover import stack_settings

    url = stack_settings(get_settings(), nats_url=given).nats_url
    assert url is not None  # stack_settings exits when it finds none
    return url


@app.command("engine")
def engine(nats_url: NatsUrl = None) -> None:
    """The command handler: a queue-group subscriber that decides and appends commands."""
    from services.engine.service import build_engine_app

    settings = get_settings()
    configure_logging(settings)
    url = nats_url_or_exit(nats_url)
    application = build_engine_app(
        url,
        queue=settings.engine_queue,
        replicas=settings.stream_replicas,
        credentials=settings.nats_credentials("engine"),
        partitions=settings.layout,
        commands_per_minute=settings.max_commands_per_minute,
        board_key=settings.signing_key(),
    )
    serve_metrics(settings.metrics_port, settings.host)
    run_service(application.run())


@app.command("gateway")
def gateway(
    host: Annotated[str | None, typer.Option(help="Address to bind (default SPADES_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default SPADES_PORT).")] = None,
    nats_url: NatsUrl = None,
) -> None:
    """The HTTP API: FastAPI under uvicorn, sending commands to the engines over NATS."""
    import uvicorn

    from services.gateway.app import create_app
    from services.gateway.server import gateway_config

    settings = get_settings()
    changes = {"host": host, "port": port, "nats_url": nats_url_or_exit(nats_url)}
    settings = settings.model_copy(update={k: v for k, v in changes.items() if v is not None})
    configure_logging(settings)
    # X-Forwarded-For names the client (whose address the rate limit counts) only when it
    # comes from a proxy named in SPADES_TRUSTED_PROXIES; anyone else could set it.
    config = gateway_config(create_app(settings), settings, settings.host, settings.port)
    uvicorn.Server(config).run()


app.command("projections")(serve_projections)


@app.command("webhooks")
def webhooks(nats_url: NatsUrl = None) -> None:
    """The webhooks worker: follows the streams and delivers to the platforms' endpoints."""
    from services.webhooks.service import serve_webhooks

    settings = get_settings()
    configure_logging(settings)
    serve_metrics(settings.metrics_port, settings.host)
    run_service(serve_webhooks(settings, nats_url=nats_url_or_exit(nats_url)))


@app.command("timers")
def timers(nats_url: NatsUrl = None) -> None:
    """The timer worker: fires each timeout once through the engine, for the partitions of the
    game stream it holds (several share them; one takes over a stopped one's)."""
    from services.timers.service import serve_timers

    settings = get_settings()
    configure_logging(settings)
    serve_metrics(settings.metrics_port, settings.host)
    run_service(serve_timers(settings, nats_url=nats_url_or_exit(nats_url)))
