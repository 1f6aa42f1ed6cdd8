"""``spades serve webhooks``: the webhooks worker as its own process.

It migrates the read-model database (where endpoints and deliveries live), follows the game and
league streams into the outbox (:mod:`.ingest`) while any endpoint exists (:mod:`.interest`)
and delivers (:mod:`.delivery`). It is apart
from the engine and the gateway, so a slow or dead receiver never slows a game. Run one per
deployment: its consumers are durable, and its positions and outbox are in the database.
"""

from __future__ import annotations

import asyncio
import logging

import structlog

from services.runtime.loop import freeze_started_heap, until_stopped
from services.runtime.nats import connect
from services.runtime.settings import Settings
from services.runtime.webhook_addresses import AddressPolicy
from services.store.database import open_store
from services.store.migrations import migrate
from services.webhooks.delivery import Deliveries, Sender
from services.webhooks.ingest import GAMES, LEAGUES, Ingest, game_folds, league_folds
from services.webhooks.interest import EndpointWatch
from services.webhooks.schedule import Schedule
from services.webhooks.transport import delivery_client

log = structlog.get_logger("spades.webhooks")


async def run_webhooks(settings: Settings, *, nats_url: str | None = None) -> None:
    """Run until cancelled."""
    url = nats_url or settings.nats_url
    if url is None:
        raise ValueError("the webhooks worker needs a NATS server: set SPADES_NATS_URL")
    schedule = Schedule.parse(settings.webhook_schedule)
    # httpx logs every request with its URL, which is the platform's (and may hold a secret):
    # the delivery loop logs tries by endpoint id instead.
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    client = await connect(
        url, "spades-webhooks", user="webhooks", credentials=settings.nats_credentials("webhooks")
    )
    store = open_store(settings.read_model_database_url)
    http = delivery_client(
        AddressPolicy(allow_private=settings.webhook_allow_private),
        connections=settings.webhook_concurrency,
        timeout_s=settings.webhook_timeout_s,
    )
    try:
        await migrate(store)
        watch = EndpointWatch(store)
        deliveries = Deliveries(
            store,
            Sender(http, settings.webhook_timeout_s),
            schedule,
            watch,
            concurrency=settings.webhook_concurrency,
            per_endpoint=settings.webhook_endpoint_concurrency,
            retention_s=settings.webhook_retention_s,
        )
        ingests = [
            Ingest(GAMES, store, client, game_folds(client), watch, deliveries.wake),
            Ingest(LEAGUES, store, client, league_folds(client), watch, deliveries.wake),
        ]
        tasks = [
            asyncio.create_task(watch.run(), name="webhook endpoints"),
            asyncio.create_task(deliveries.run(), name="webhook deliveries"),
            *(asyncio.create_task(i.run(), name=f"webhooks {i.source.name}") for i in ingests),
        ]
        freeze_started_heap()
        log.info(
            "webhooks ready",
            schedule=settings.webhook_schedule,
            allow_private=settings.webhook_allow_private,
        )
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await http.aclose()
        await store.close()
        await client.close()


async def serve_webhooks(settings: Settings, *, nats_url: str | None = None) -> None:
    """:func:`run_webhooks` until SIGTERM or Ctrl-C. A try in flight then is not recorded: it
    is sent again, with the same ``webhook-id``, when the worker starts again."""
    await until_stopped(run_webhooks(settings, nats_url=nats_url))
