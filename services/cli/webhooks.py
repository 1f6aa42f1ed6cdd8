"""``spades webhooks list|deliveries ID``: a platform's webhook endpoints and what was sent to
them, over the HTTP API (the platform's key in ``--api-key`` or ``SPADES_API_KEY``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import msgspec
import typer
from rich.console import Console
from rich.table import Table

from services.cli.discover import Url

if TYPE_CHECKING:
    from services.client.webhooks import WebhookClient

DEFAULT_URL = "http://127.0.0.1:8000"

T = TypeVar("T")

app = typer.Typer(no_args_is_help=True, help="Webhooks: a platform's endpoints and deliveries.")

ApiKey = Annotated[
    str | None,
    typer.Option("--api-key", envvar="SPADES_API_KEY", help="Platform key (SPADES_API_KEY)."),
]
Json = Annotated[bool, typer.Option("--json", help="The API's JSON answer, as it is.")]


def _call(url: str, api_key: str | None, work: Callable[[WebhookClient], Awaitable[T]]) -> T:
    """Run ``work`` with a webhook client; an API error is one line on stderr and exit 1."""
    import httpx

    from services.client import ApiError, SpadesClient
    from services.client.webhooks import WebhookClient

    async def run() -> T:
        async with SpadesClient(url, api_key=api_key) as client:
            return await work(WebhookClient(client))

    try:
        return asyncio.run(run())
    except ApiError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    except httpx.TransportError as error:
        typer.echo(f"error: no answer from {url}: {error}", err=True)
        raise typer.Exit(1) from None


@app.command("list")
def list_webhooks(url: Url = DEFAULT_URL, api_key: ApiKey = None, json: Json = False) -> None:
    """The platform's endpoints: id, URL, event types, and whether (and why) one is disabled."""
    found = _call(url, api_key, lambda webhooks: webhooks.list())
    if json:
        typer.echo(msgspec.json.encode({"webhooks": found}).decode())
        return
    table = Table(title=f"{len(found)} webhook endpoint(s)")
    for column in ("id", "url", "events", "created", "state"):
        table.add_column(column, overflow="fold")
    for endpoint in found:
        state = f"disabled: {endpoint.disabled_reason}" if endpoint.disabled else "enabled"
        table.add_row(
            endpoint.id, endpoint.url, ", ".join(endpoint.events), endpoint.created_at, state
        )
    Console().print(table)


@app.command("deliveries")
def deliveries(
    endpoint_id: Annotated[str, typer.Argument(help="The endpoint's id.")],
    limit: Annotated[int, typer.Option(min=1, max=500, help="How many, newest first.")] = 50,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    json: Json = False,
) -> None:
    """An endpoint's recent deliveries: event, webhook-id, tries, last answer, next try."""
    page = _call(url, api_key, lambda webhooks: webhooks.deliveries(endpoint_id, limit=limit))
    if json:
        typer.echo(msgspec.json.encode(page).decode())
        return
    endpoint = page.webhook
    state = f"disabled: {endpoint.disabled_reason}" if endpoint.disabled else "enabled"
    table = Table(title=f"{endpoint.id} -> {endpoint.url} ({state})")
    for column in ("webhook-id", "event", "subject", "status", "tries", "last", "next try"):
        table.add_column(column, overflow="fold")
    for delivery in page.deliveries:
        last = str(delivery.last_status) if delivery.last_status is not None else "-"
        if delivery.last_error:
            last = f"{last} {delivery.last_error}"
        table.add_row(
            delivery.id,
            delivery.event,
            delivery.subject,
            delivery.status,
            str(delivery.attempts),
            last,
            delivery.next_try or "-",
        )
    Console().print(table)
