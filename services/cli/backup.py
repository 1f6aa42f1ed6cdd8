"""``spades backup DIR [--since BACKUP]`` and ``spades restore BASE [INCREMENT ...]``: the
streams and what lives outside them, whole or since an earlier backup (see
:mod:`services.backup`).

A backup reads a running NATS (``--nats-url``, ``SPADES_NATS_URL``, or the server of the
``spades up`` running on the data directory), as the broker's ``admin`` user. A restore writes
into a NATS with no streams, or none with messages: the one ``--nats-url`` names, or, without
one, an embedded server it starts on the empty data directory's store and stops when done, so
that on one machine the next ``spades up`` finds the streams in place.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from services.runtime.broker_users import ADMIN
from services.runtime.logging import configure_logging
from services.runtime.settings import Settings, get_settings

Folder = Annotated[Path, typer.Argument(help="The backup's folder.")]
NatsUrl = Annotated[
    str | None, typer.Option("--nats-url", help="NATS server (default: SPADES_NATS_URL).")
]
DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="The deployment's data directory (default SPADES_DATA_DIR)."),
]


def _settings(nats_url: str | None, data_dir: Path | None) -> Settings:
    settings = get_settings()
    changes = {"nats_url": nats_url, "data_dir": data_dir}
    settings = settings.model_copy(update={k: v for k, v in changes.items() if v is not None})
    configure_logging(settings)
    return settings


Since = Annotated[
    Path | None,
    typer.Option(
        "--since",
        help="An earlier backup of the same streams (full or itself an increment): copy only "
        "the messages after it. Only its manifest.json is read.",
    ),
]
Chain = Annotated[
    list[Path],
    typer.Argument(
        help="A full backup's folder, then its increments' in the order they were taken.",
        metavar="BACKUP",
        show_default=False,
    ),
]


def backup(
    folder: Folder,
    since: Since = None,
    nats_url: NatsUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Back up the streams, byte for byte, the signing key and the webhook endpoints into FOLDER
    (new or empty); with --since, only the messages after that backup (an increment of it).

    Read models are not backed up: they are rebuilt from the streams after a restore.
    """
    from services.backup.deployment import take_backup
    from services.backup.manifest import BackupError
    from services.cli.discover import stack_settings
    from services.runtime.nats import connect

    settings = stack_settings(_settings(nats_url, data_dir))
    url = settings.nats_url
    assert url is not None  # stack_settings exits when it finds none

    async def run() -> None:
        client = await connect(
            url, "spades-backup", user=ADMIN, credentials=settings.nats_credentials(ADMIN)
        )
        try:
            await take_backup(settings, client, folder, typer.echo, since=since)
        finally:
            await client.close()

    try:
        asyncio.run(run())
    except BackupError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"backup complete: {folder}" + (f", an increment of {since}" if since else ""))


def restore(folders: Chain, nats_url: NatsUrl = None, data_dir: DataDir = None) -> None:
    """Restore a full backup and its increments, in the order they were taken, into an empty
    NATS, and the signing key and webhook endpoints beside it. Every backup is checked, and each
    increment against the one before, before anything is written.

    Without --nats-url or SPADES_NATS_URL, into the embedded server's store under the data
    directory, which must hold none yet. Start the engines and projection workers afterwards;
    they rebuild the read models from the restored streams.
    """
    from services.backup.deployment import restore_backup
    from services.backup.manifest import BackupError
    from services.runtime.nats import connect
    from services.runtime.nats_server import EmbeddedNats

    settings = _settings(nats_url, data_dir)
    server: EmbeddedNats | None = None
    if settings.nats_url is None:
        store = settings.nats_store_dir / "jetstream"
        if store.exists() and any(store.iterdir()):
            typer.echo(
                f"error: {store} is not empty: restore into an empty data directory, or pass "
                "--nats-url (is `spades up` running on it?)",
                err=True,
            )
            raise typer.Exit(1)
        server = EmbeddedNats(settings.nats_store_dir, partitions=settings.layout)

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
            client = await connect(url, "spades-restore", user=ADMIN, credentials=credentials)
            try:
                await restore_backup(settings, client, *folders, report=typer.echo)
            finally:
                await client.close()
        finally:
            if server is not None:
                await asyncio.to_thread(server.stop)

    try:
        asyncio.run(run())
    except BackupError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(
        "restore complete: start the engines and the projection workers (`spades up` on one "
        "machine); the read models are rebuilt from the streams"
    )
