"""How a command finds the stack it talks to: its flag, then its ``SPADES_*`` variable, then the
record of the ``spades up`` running on the data directory (:mod:`services.runtime.discovery`).
Nothing found is one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from services.runtime.discovery import StackNotFound, find_stack, with_stack
from services.runtime.settings import Settings, get_settings

NOT_FOUND = 2
"""The exit status of a command that finds nothing to talk to."""


def not_found(what: str, why: str, *, flag: str, variable: str) -> NoReturn:
    typer.echo(f"error: no {what}: {why}, or pass {flag} or set {variable}", err=True)
    raise typer.Exit(NOT_FOUND)


def stack_settings(settings: Settings, *, nats_url: str | None = None) -> Settings:
    """``settings`` (with ``--nats-url`` when given) completed from the running stack: its NATS
    server, credentials and read-model database. Exits when no NATS server is named and no
    running stack is found."""
    if nats_url is not None:
        settings = settings.model_copy(update={"nats_url": nats_url})
    if settings.nats_url is not None and settings.database_url is not None:
        return settings
    try:
        record = find_stack(settings.data_dir)
    except StackNotFound as error:
        if settings.nats_url is not None:
            return settings  # the read models: the default database of the data directory
        not_found("NATS server", str(error), flag="--nats-url", variable="SPADES_NATS_URL")
    return with_stack(settings, record)


def database_settings(settings: Settings) -> Settings:
    """``settings`` with the running stack's read-model database when none is named; the default
    SQLite file of the data directory when no stack runs."""
    if settings.database_url is not None:
        return settings
    try:
        record = find_stack(settings.data_dir)
    except StackNotFound:
        return settings
    return settings.model_copy(update={"database_url": record.database_url})


def sqlite_file_or_exit(database_url: str) -> None:
    """A command that reads the read models must not create an empty database (nor the data
    directory around it) where none is: exit, saying where it looked."""
    from sqlalchemy.engine import make_url

    try:
        url = make_url(database_url)
    except Exception:
        return
    if not url.drivername.startswith("sqlite") or url.database in (None, "", ":memory:"):
        return
    if not Path(url.database).is_file():
        typer.echo(
            f"error: no read-model database at {url.database} (is this the data directory of "
            "your stack? start one with `make run`, or set SPADES_DATA_DIR or "
            "SPADES_DATABASE_URL)",
            err=True,
        )
        raise typer.Exit(NOT_FOUND)


def gateway_url() -> str:
    """The gateway of the stack running on the data directory; exits when there is none."""
    settings = get_settings()
    try:
        return find_stack(settings.data_dir).gateway_url
    except StackNotFound as error:
        not_found("Spades server", str(error), flag="--url", variable="SPADES_URL")


def _url_given_or_found(context: typer.Context, parameter: typer.CallbackParam, value: str) -> str:
    """``--url`` as given, else ``SPADES_URL``, else the running stack's gateway (the default
    written in a command's signature is never used)."""
    name = parameter.name or "url"
    source = context.get_parameter_source(name)
    if source is None or source.name != "DEFAULT":  # typer's own click: compared by name
        return value
    return gateway_url()


Url = Annotated[
    str,
    typer.Option(
        "--url",
        envvar="SPADES_URL",
        callback=_url_given_or_found,
        show_default="the running `spades up`",
        help="The Spades server (SPADES_URL).",
    ),
]
"""``--url``: the flag, else ``SPADES_URL``, else the gateway of the running stack."""
