"""How a command that talks to a server ends when the server says no or is not there."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import typer

from services.client import ApiError


@contextlib.contextmanager
def server_errors_reported(url: str) -> Iterator[None]:
    """An error answer or an unreachable server ends the command with status 1, saying why on
    stderr, never with a traceback."""
    try:
        yield
    except ApiError as error:
        typer.echo(f"error: {error.status} {error.code}: {error.detail or error.title}", err=True)
        raise typer.Exit(1) from None
    except (httpx.TransportError, OSError) as error:
        typer.echo(f"error: cannot reach the server at {url}: {error!r}", err=True)
        raise typer.Exit(1) from None
