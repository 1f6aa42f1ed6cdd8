"""``spades broker ...``: the broker's users for a deployed nats-server.

``spades up`` makes and uses its own credentials; a deployment makes them once with
``spades broker keys DIR`` and hands each process its own seed file (``SPADES_NATS_CREDS``),
and each nats-server the public keys (``nats.env``) that ``deploy/nats/authorization.conf``
reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contracts.partitions import MAX_PARTITIONS

app = typer.Typer(no_args_is_help=True, help="The broker's users: keys and authorization.")

NATS_ENV_FILENAME = "nats.env"


@app.command("keys")
def keys(
    directory: Annotated[Path, typer.Argument(help="Where to keep the seeds (made if missing).")],
) -> None:
    """Make an nkey per broker user, once (existing seeds are kept): ``<user>.nk`` (mode 0600,
    the secret a process presents) and ``nats.env`` (the public keys a nats-server reads)."""
    from services.runtime.broker_users import BROKER_USERS, nkey_variable
    from services.runtime.credentials import BrokerCredentials

    credentials = BrokerCredentials(directory).ensure()
    lines = [f"{nkey_variable(user)}={credentials.public_key(user)}" for user in BROKER_USERS]
    (credentials.directory / NATS_ENV_FILENAME).write_text("\n".join(lines) + "\n")
    for user in BROKER_USERS:
        typer.echo(f"{user}: {credentials.path(user)}")
    typer.echo(f"public keys for the nats-servers: {credentials.directory / NATS_ENV_FILENAME}")


@app.command("authorization")
def authorization(
    partitions: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_PARTITIONS,
            help="K, the deployment's partitions of the game stream (default SPADES_PARTITIONS, "
            "else 1): each partition's stream is named in the users' permissions.",
        ),
    ] = None,
) -> None:
    """Print the nats-server ``authorization`` block of every broker user for a deployment of
    K partitions (``deploy/nats/authorization.conf``)."""
    from contracts.partitions import Partitions
    from services.runtime.broker_users import deployed_authorization
    from services.runtime.settings import get_settings

    count = partitions if partitions is not None else get_settings().partitions
    typer.echo(deployed_authorization(Partitions(count)), nl=False)
