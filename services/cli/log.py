"""``spades log ...``: the audit log's keys (:mod:`services.transparency`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from services.runtime.settings import LOG_KEY_FILENAME, get_settings
from services.transparency.note import Verifier

app = typer.Typer(no_args_is_help=True, help="The audit log: its keys.")


def verifier_keys(origin: str, partitions: int, public: Verifier) -> list[str]:
    """Each partition's verifier key: the log's key under the name of that partition's log."""
    return [
        Verifier(f"{origin}/{partition}", public.kind, public.public).text()
        for partition in range(partitions)
    ]


@app.command("keys")
def keys(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir", help="The deployment's data directory (default SPADES_DATA_DIR)."
        ),
    ] = None,
) -> None:
    """Print the public key of each partition's log, one a line: what a player, a platform or
    a witness keeps to check checkpoints and receipts (`GET /v1/log` serves the same).

    The key is SPADES_LOG_KEY, else the data directory's log.key (`spades up` makes it)."""
    settings = get_settings()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    signer = settings.log_signer()
    if signer is None:
        typer.echo(
            f"no log key: set SPADES_LOG_KEY, or start `spades up` once to make "
            f"{settings.data_dir / LOG_KEY_FILENAME}; the log signs nothing without one",
            err=True,
        )
        raise typer.Exit(1)
    for line in verifier_keys(settings.log_origin, settings.partitions, signer.verifier):
        typer.echo(line)
