"""``spades archive``: move finished games out of the partition streams into the archive of
finished games (see :mod:`services.archive` and :mod:`services.runtime.game_archive`).

It works on a running NATS (``--nats-url``, ``SPADES_NATS_URL``, or the server of the ``spades
up`` running on the data directory), as the broker's ``admin`` user, the one user that may
purge. The services go on meanwhile: an archived game reads, audits and refuses commands as it
did in the stream.
"""

from __future__ import annotations

import asyncio
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from services.runtime.broker_users import ADMIN
from services.runtime.logging import configure_logging
from services.runtime.settings import get_settings

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def idle_since(text: str, now: float) -> float:
    """The time (seconds since the epoch) ``--finished-before`` means: a duration back from
    ``now`` (``30d``, ``12h``, ``15m``, ``0s``) or a time with its zone (ISO 8601).

    >>> idle_since("2h", 10_000.0)
    2800.0
    >>> idle_since("1970-01-01T01:00:00Z", 0.0)
    3600.0
    """
    match = _DURATION.match(text)
    if match:
        return now - float(match.group(1)) * _SECONDS[match.group(2)]
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither a duration (30d, 12h, 15m, 0s) nor a time (ISO 8601)"
        ) from None
    if moment.tzinfo is None:
        raise typer.BadParameter(f"{text!r} names no time zone (add Z for UTC)")
    return moment.timestamp()


def archive(
    finished_before: Annotated[
        str,
        typer.Option(
            "--finished-before",
            help="Move the finished games whose last commit is older than this: a duration "
            "back from now (30d, 12h, 15m, 0s) or a time (2026-12-01T00:00:00Z).",
        ),
    ] = "1d",
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Move at most this many games.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say which games would move, and move none.")
    ] = False,
    nats_url: Annotated[
        str | None, typer.Option("--nats-url", help="NATS server (default: SPADES_NATS_URL).")
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir", help="The deployment's data directory (default SPADES_DATA_DIR)."
        ),
    ] = None,
) -> None:
    """Move finished games into the archive (SPADES_ARCHIVE): each game's history is written
    there, read back and checked, and only then purged from its partition stream, all but its
    last commit. Audits, replays, hand records and every read of the game go on working."""
    from services.archive.moving import archive_games
    from services.cli.discover import stack_settings
    from services.runtime.game_stream import deployed_partitions
    from services.runtime.nats import connect

    since = idle_since(finished_before, time.time())
    settings = get_settings()
    changes = {"nats_url": nats_url, "data_dir": data_dir}
    settings = settings.model_copy(update={k: v for k, v in changes.items() if v is not None})
    configure_logging(settings)
    settings = stack_settings(settings)
    url = settings.nats_url
    assert url is not None  # stack_settings exits when it finds none

    async def run() -> None:
        client = await connect(
            url, "spades-archive", user=ADMIN, credentials=settings.nats_credentials(ADMIN)
        )
        try:
            js = client.jetstream()
            done = await archive_games(
                js,
                await deployed_partitions(js, settings.layout),
                idle_since=since,
                limit=limit,
                dry_run=dry_run,
                replicas=settings.stream_replicas,
                report=typer.echo,
            )
        finally:
            await client.close()
        history = sum(moved.history_bytes for moved in done.moved)
        archived = sum(moved.archive_bytes for moved in done.moved)
        verb = "would move" if dry_run else "moved"
        typer.echo(
            f"{verb} {len(done.moved)} games: {history} bytes of commits into {archived} "
            f"bytes of archive; {len(done.left)} left"
        )

    asyncio.run(run())
