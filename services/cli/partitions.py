"""``spades partitions ...``: the game stream's partitions, who works them, and moving a
deployment of one partition into several (see :mod:`services.backup.repartition`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from contracts.partitions import Partitions
from services.runtime.broker_users import ADMIN
from services.runtime.logging import configure_logging
from services.runtime.settings import Settings, get_settings

if TYPE_CHECKING:
    from nats.js import JetStreamContext
    from nats.js.kv import KeyValue

app = typer.Typer(no_args_is_help=True, help="The game stream's partitions.")

NatsUrl = Annotated[
    str | None, typer.Option("--nats-url", help="NATS server (default: SPADES_NATS_URL).")
]
DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="The deployment's data directory (default SPADES_DATA_DIR)."),
]
KINDS = ("engine", "projections", "webhooks", "webhooks-leagues", "timers")


def _settings(nats_url: str | None, data_dir: Path | None) -> Settings:
    settings = get_settings()
    changes = {"nats_url": nats_url, "data_dir": data_dir}
    settings = settings.model_copy(update={k: v for k, v in changes.items() if v is not None})
    configure_logging(settings)
    return settings


@app.command("migrate")
def migrate(
    partitions: Annotated[
        int, typer.Option("--partitions", "-k", min=2, help="How many partitions to move into.")
    ],
    nats_url: NatsUrl = None,
    data_dir: DataDir = None,
    rebuild: Annotated[
        bool,
        typer.Option(
            help="Afterwards, reset the read models to be rebuilt from the new streams, and "
            "start the webhook endpoints at the new streams' ends (both in the read-model "
            "database)."
        ),
    ] = True,
) -> None:
    """Move every game of a one-partition deployment into PARTITIONS partition streams.

    Stop every Spades process first (`spades up`, or the deployment's engines and workers):
    nothing may append while the games are copied. Without --nats-url, the embedded server of
    the data directory is started for the move and stopped after. Then start every process
    with SPADES_PARTITIONS set to PARTITIONS.
    """
    from services.backup.repartition import MigrationError, migrate_partitions
    from services.runtime.nats import connect
    from services.runtime.nats_server import EmbeddedNats, StoreInUse

    settings = _settings(nats_url, data_dir)
    layout = Partitions(partitions)
    server: EmbeddedNats | None = None
    if settings.nats_url is None:
        server = EmbeddedNats(settings.nats_store_dir, partitions=layout)

    async def run() -> None:
        url = settings.nats_url
        if server is not None:
            await asyncio.to_thread(server.start)
            url = server.url
        assert url is not None
        try:
            credentials = (
                server.credentials_for(ADMIN)
                if server is not None
                else settings.nats_credentials(ADMIN)
            )
            client = await connect(url, "spades-migrate", user=ADMIN, credentials=credentials)
            try:
                js = client.jetstream()
                moved = await migrate_partitions(js, layout, settings.stream_replicas, typer.echo)
            finally:
                await client.close()
        finally:
            if server is not None:
                await asyncio.to_thread(server.stop)
        if rebuild:
            ends = dict(zip(layout.streams, moved.per_partition, strict=True))
            await _after_the_move(settings, layout, ends)

    try:
        asyncio.run(run())
    except StoreInUse as error:
        typer.echo(f"error: {error}: stop `spades up` first", err=True)
        raise typer.Exit(1) from None
    except MigrationError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"moved: start every process with SPADES_PARTITIONS={partitions}")


async def _after_the_move(settings: Settings, layout: Partitions, ends: dict[str, int]) -> None:
    """The read-model database after a move: the read models reset to be rebuilt from the new
    streams; each webhook endpoint starts each new stream at its end (the history it holds was
    heard from the old stream already)."""
    from services.projections.rebuild import rebuild
    from services.store.database import open_store
    from services.store.migrations import migrate as migrate_store
    from services.store.webhook_endpoints import every_endpoint, set_starts

    store = open_store(settings.read_model_database_url)
    try:
        await migrate_store(store)
        rebuilt = await rebuild(store, None, layout)
        async with store.writing() as conn:
            endpoints = await every_endpoint(conn, hold=True)
            for endpoint in endpoints:
                await set_starts(conn, endpoint.id, {**endpoint.starts, **ends})
    finally:
        await store.close()
    typer.echo(f"read models reset to be rebuilt from the new streams: {', '.join(rebuilt)}")
    typer.echo(f"webhook endpoints start the new streams at their ends: {len(endpoints)}")


@app.command("show")
def show(nats_url: NatsUrl = None, data_dir: DataDir = None) -> None:
    """Each partition's stream (messages, leader) and which process of each kind holds it."""
    from services.cli.discover import stack_settings
    from services.runtime.nats import connect

    settings = stack_settings(_settings(nats_url, data_dir))
    url = settings.nats_url
    assert url is not None

    async def run() -> None:
        client = await connect(
            url, "spades-partitions", user=ADMIN, credentials=settings.nats_credentials(ADMIN)
        )
        try:
            for line in await _report(client.jetstream(), settings):
                typer.echo(line)
        finally:
            await client.close()

    asyncio.run(run())


async def _report(js: JetStreamContext, settings: Settings) -> list[str]:
    import nats.js.errors

    from services.runtime.claims import BUCKET
    from services.runtime.game_stream import deployed_partitions

    layout = await deployed_partitions(js, settings.layout)
    kv: KeyValue | None
    try:
        kv = await js.key_value(BUCKET)
    except nats.js.errors.NotFoundError:
        kv = None
    lines = [f"{layout.count} partition(s)"]
    for partition in layout.indexes:
        stream = layout.stream(partition)
        try:
            info = await js.stream_info(stream)
        except nats.js.errors.NotFoundError:
            lines.append(f"{partition}: {stream} not made yet")
            continue
        leader = info.cluster.leader if info.cluster is not None else "-"
        holders = []
        for kind in KINDS:
            if kind == "webhooks-leagues":
                continue
            holder = await _holder(kv, f"{kind}.partitions.{partition}")
            holders.append(f"{kind}={holder}")
        lines.append(
            f"{partition}: {stream} {info.state.messages} messages, leader {leader}; "
            + " ".join(holders)
        )
    return lines


async def _holder(kv: KeyValue | None, key: str) -> str:
    import nats.js.errors

    if kv is None:
        return "-"
    try:
        entry = await kv.get(key)
    except nats.js.errors.NotFoundError:
        return "-"
    return entry.value.decode() if entry.value else "-"
