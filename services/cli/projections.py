"""``spades projections ...`` (parked messages, rebuilds, lag) and ``spades serve projections``.

Register in ``services/cli/main.py``::

    app.add_typer(projections.app, name="projections")
    serve_app.command("projections")(projections.serve)      # the ``serve`` group
    bench.app.command("projections")(projections.bench)      # or in services/cli/bench.py

``python -m services.cli.projections`` runs :func:`serve` too. The read side is imported when a
command runs, not when the command line starts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import msgspec
import typer
from rich.console import Console
from rich.table import Table

from services.runtime.logging import configure_logging
from services.runtime.loop import run as run_service
from services.runtime.loop import until_stopped
from services.runtime.metrics import serve_metrics
from services.runtime.settings import Settings, get_settings

if TYPE_CHECKING:
    from services.projections.parking import ParkedMessage
    from services.store.database import Store
    from services.store.lag import WorkerLag

app = typer.Typer(no_args_is_help=True, help="Read models: parked messages, rebuilds, lag.")
console = Console()

T = TypeVar("T")

ModelOption = Annotated[
    str | None,
    typer.Option("--model", "-m", help="One read model (`spades projections lag` lists them)."),
]


def _settings(level: str | None = None) -> Settings:
    """The settings, with logs going to stderr (stdout is the command's own output)."""
    settings = get_settings()
    configure_logging(settings, level)
    return settings


def _read_model_settings() -> Settings:
    """The settings of a command on the read models: the running stack's database (else
    ``SPADES_DATABASE_URL`` or the data directory's), which must be there already."""
    from services.cli.discover import database_settings, sqlite_file_or_exit

    settings = database_settings(_settings("WARNING"))
    sqlite_file_or_exit(settings.read_model_database_url)
    return settings


def _stream_settings() -> Settings:
    """The same, and the NATS server of the running stack (else ``SPADES_NATS_URL``)."""
    from services.cli.discover import sqlite_file_or_exit, stack_settings

    settings = stack_settings(_settings("WARNING"))
    sqlite_file_or_exit(settings.read_model_database_url)
    return settings


def _reported(work: Callable[[], T]) -> T:
    """Run ``work``; a server or database that cannot be reached ends the command with one
    line and status 2, never a traceback."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return work()
    except (OSError, TimeoutError, SQLAlchemyError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        typer.echo(f"error: {reason}", err=True)
        raise typer.Exit(2) from None


def _with_store(settings: Settings, work: Callable[[Store], Awaitable[T]]) -> T:
    from services.store.database import open_store
    from services.store.migrations import migrate

    async def run() -> T:
        store = open_store(settings.read_model_database_url)
        try:
            await migrate(store)
            return await work(store)
        finally:
            await store.close()

    return _reported(lambda: asyncio.run(run()))


def _check_model(model: str | None) -> None:
    from services.projections.registry import READ_MODELS

    if model is not None and model not in READ_MODELS:
        raise typer.BadParameter(f"no read model {model!r}; known: {', '.join(READ_MODELS)}")


def _parked_table(title: str, messages: list[ParkedMessage]) -> Table:
    table = Table(title=title)
    numbers = ("partition", "sequence", "bytes")
    for column in ("model", *numbers[:2], "subject", "attempts", "parked at", "bytes", "reason"):
        table.add_column(column, justify="right" if column in numbers else "left")
    for message in messages:
        table.add_row(
            message.model,
            str(message.partition),
            str(message.sequence),
            message.subject,
            str(message.attempts),
            message.parked_at,
            str(len(message.payload)),
            message.reason,
        )
    return table


@app.command("parked")
def parked(
    model: ModelOption = None,
    json: Annotated[bool, typer.Option("--json", help="JSON lines instead of a table.")] = False,
) -> None:
    """List the messages the workers could not apply, with the reason."""
    from services.projections.parking import parked_messages

    _check_model(model)
    messages = _with_store(_read_model_settings(), lambda store: parked_messages(store, model))
    if json:
        for message in messages:
            fields = {**dataclasses.asdict(message), "payload": None}
            typer.echo(msgspec.json.encode(fields).decode())
        return
    console.print(_parked_table(f"{len(messages)} parked message(s)", messages))


@app.command("replay-parked")
def replay_parked_command(model: ModelOption = None) -> None:
    """Apply the parked messages again, oldest first; those that apply are forgotten."""
    from services.projections.parking import replay_parked
    from services.projections.registry import seal_hands

    _check_model(model)
    settings = _read_model_settings()
    seal_hands(settings.signing_key())  # the stack's: the hands in progress are sealed with it
    outcome = _with_store(settings, lambda store: replay_parked(store, model, settings.layout))
    typer.echo(f"{len(outcome.applied)} applied, {len(outcome.still_parked)} still parked")
    if outcome.still_parked:
        console.print(_parked_table("still parked", outcome.still_parked))
        raise typer.Exit(1)


@app.command("rebuild")
def rebuild_command(
    name: Annotated[str | None, typer.Argument(help="The read model to rebuild.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Rebuild every read model.")] = False,
    partition: Annotated[
        list[int] | None,
        typer.Option(
            "--partition",
            "-p",
            help="Rebuild only this partition of the game stream (repeat for more); "
            "games, scoreboard and hands only.",
        ),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until the running workers have replayed.")
    ] = False,
) -> None:
    """Rebuild a read model (or all) from the stream, every partition (or those named); the
    others keep serving, and so does the gateway (``/readyz`` names the rebuild).

    The running workers notice within a second and replay the partitions, each where it is
    followed, at once; with no worker running, the next start replays. ``--partition`` empties
    only the rows of that partition's games: the players' counters and the leagues' standings
    hold games of every partition and are rebuilt whole. Read models whose positions belong
    to another stream (NATS was reset or restored, or the database is another deployment's)
    are brought back with ``--all``.
    """
    from services.projections.rebuild import rebuild

    if (name is None) == (not every):
        raise typer.BadParameter("name one read model, or give --all")
    _check_model(name)
    settings = _stream_settings() if wait else _read_model_settings()
    names = None if every else [name or ""]
    only = partition or None

    async def reset(store: Store) -> list[str]:
        return await rebuild(store, names, settings.layout, only=only)

    try:
        rebuilt = _with_store(settings, reset)
    except ValueError as error:  # AcrossPartitions, or a partition the stream has not
        raise typer.BadParameter(str(error), param_hint="--partition") from None
    where = "" if only is None else f" in partition{'s' if len(only) > 1 else ''} "
    where += "" if only is None else ", ".join(map(str, sorted(set(only))))
    typer.echo(f"reset {', '.join(rebuilt)}{where}: the workers replay the stream")
    if wait:
        _reported(lambda: asyncio.run(_wait_replayed(settings, rebuilt)))


async def _wait_replayed(settings: Settings, models: list[str]) -> None:
    report = await _lag(settings, models, until_caught_up=True)
    reached: dict[str, list[str]] = {}
    for (model, partition), lag in report.items():
        shown = str(lag.position) if settings.layout.legacy else f"{partition}:{lag.position}"
        reached.setdefault(model, []).append(shown)
    typer.echo(", ".join(f"{model} at {' '.join(shown)}" for model, shown in reached.items()))


@app.command("lag")
def lag_command(
    json: Annotated[bool, typer.Option("--json", help="One JSON line.")] = False,
) -> None:
    """Each read model's position in each partition of the game stream and how far it is behind
    there, whether a rebuild replays it there (and moves), and why it refuses a partition's
    stream, if it does (exit status 1 then). ``--json`` gives each model's lag over every
    partition."""
    from services.store.lag import lag_by_model, refusals

    settings = _stream_settings()
    report = _reported(lambda: asyncio.run(_lag(settings, None)))
    refused = refusals(report)
    if json:
        typer.echo(msgspec.json.encode(lag_by_model(report)).decode())
    else:
        table = Table(title="projection lag")
        left = ("model", "rebuild", "refuses the stream")
        columns = ("model", "partition", "position", "stream", "lag", "rebuild")
        for column in (*columns, "refuses the stream"):
            table.add_column(column, justify="left" if column in left else "right")
        for worker in report.values():
            rebuild = "replaying" if worker.rebuilding else "stalled" if worker.stalled else ""
            table.add_row(
                worker.model,
                str(worker.partition),
                str(worker.position),
                str(worker.last_sequence),
                str(worker.lag),
                rebuild,
                worker.refusal or "",
            )
        console.print(table)
    if refused is not None:
        typer.echo(refused, err=True)
        raise typer.Exit(1)


async def _lag(
    settings: Settings, models: list[str] | None, *, until_caught_up: bool = False
) -> dict[tuple[str, int], WorkerLag]:
    from services.runtime.broker_users import ADMIN
    from services.runtime.nats import connect
    from services.store.database import open_store
    from services.store.lag import projection_lag

    url = settings.nats_url
    assert url is not None  # _stream_settings exits when it finds none
    client = await connect(
        url, "spades-cli", user=ADMIN, credentials=settings.nats_credentials(ADMIN)
    )
    store = open_store(settings.read_model_database_url)
    try:
        js, layout = client.jetstream(), settings.layout
        report = await projection_lag(store.engine, js, models, layout)
        while until_caught_up and any(w.lag or w.refusal for w in report.values()):
            await asyncio.sleep(1.0)
            report = await projection_lag(store.engine, js, models, layout)
        return report
    finally:
        await store.close()
        await client.close()


def serve(
    model: Annotated[
        list[str] | None, typer.Option("--model", "-m", help="Run only these read models.")
    ] = None,
    batch_size: Annotated[
        int | None, typer.Option(help="Most messages applied in one transaction.")
    ] = None,
    nats_url: Annotated[
        str | None, typer.Option("--nats-url", help="NATS server (default: SPADES_NATS_URL).")
    ] = None,
) -> None:
    """Run the projection workers on the partitions of the game stream this process holds
    (``SPADES_PARTITIONS``; others like it share them) until SIGTERM or Ctrl-C."""
    for name in model or ():
        _check_model(name)
    settings = _settings()
    if nats_url is not None:
        settings = settings.model_copy(update={"nats_url": nats_url})
    serve_metrics(settings.metrics_port, settings.host)
    run_service(_serve(settings, model, batch_size))


async def _serve(settings: Settings, models: list[str] | None, batch_size: int | None) -> None:
    from services.projections.service import run_projections
    from services.projections.worker import BATCH_SIZE

    await until_stopped(
        run_projections(settings, models=models, batch_size=batch_size or BATCH_SIZE)
    )


def bench(
    games: Annotated[int, typer.Option(help="Finished games in the stream.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the random games.")] = 1,
    json: Annotated[bool, typer.Option("--json", help="One JSON line of figures.")] = False,
) -> None:
    """Replay a stream of finished games into fresh read models (SQLite, and PostgreSQL when
    reachable) against a plain replay through the domain."""
    from benchmarks.projections import postgres_url_from, run
    from services.projections.registry import READ_MODELS

    configure_logging(get_settings(), level="WARNING")
    started = time.perf_counter()
    progress = None if json else Console(stderr=True).print
    figures = run(games, seed, postgres_url_from(dict(os.environ)), progress)
    if json:
        typer.echo(msgspec.json.encode(figures).decode())
        return
    table = Table(
        title=f"projections: {figures.games:,} games, {figures.commits:,} commits, "
        f"{figures.events:,} events"
    )
    for column in ("replay", "seconds", "events/s", "commits/s", "of the ceiling"):
        table.add_column(column, justify="left" if column == "replay" else "right")
    ceiling = figures.ceiling_events_per_s
    table.add_row("domain only (ceiling)", "", f"{ceiling:,.0f}", "", "1.000")
    delivery = figures.delivery_events_per_s
    table.add_row("NATS delivery only", "", f"{delivery:,.0f}", "", f"{delivery / ceiling:.3f}")
    through = figures.faststream_delivery_events_per_s
    table.add_row(
        "NATS delivery, FastStream PullSub", "", f"{through:,.0f}", "", f"{through / ceiling:.3f}"
    )
    for store in figures.stores:
        table.add_row(
            f"{len(READ_MODELS)} read models, {store.store}",
            f"{store.seconds:,.1f}",
            f"{store.events_per_s:,.0f}",
            f"{store.commits_per_s:,.0f}",
            f"{store.ratio:.3f}",
        )
    console.print(table)
    if figures.postgres != "measured":
        typer.echo(f"PostgreSQL not measured: {figures.postgres}")
    typer.echo(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    typer.run(serve)
