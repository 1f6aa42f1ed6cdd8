"""``spades serve webhooks``: the webhooks worker as its own process.

It migrates the read-model database (where endpoints and deliveries live), follows the game
partitions and the league stream into the outbox (:mod:`.ingest`) while any endpoint exists
(:mod:`.interest`) and delivers (:mod:`.delivery`). It is apart from the engine and the gateway,
so a slow or dead receiver never slows a game.

Run as many as the load needs, on one database: they share the game partitions (claims of kind
``webhooks``) and the league stream (``webhooks-leagues``, one partition) through leases in
NATS (:mod:`services.runtime.claims`), so each stream is followed by one of them at a time and
by another within seconds of its end; and every process sends from the one outbox, each
delivery under a claim of its own (:mod:`.outbox`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import nats.errors
import nats.js.errors
import structlog
from nats.js import JetStreamContext

from contracts.partitions import LEGACY_STREAM, Partitions
from services.runtime.claims import Claims
from services.runtime.follower import Following
from services.runtime.game_stream import LayoutError, check_partitions, game_partitions
from services.runtime.loop import freeze_started_heap, until_stopped
from services.runtime.nats import connect
from services.runtime.sealing import WEBHOOK_SECRETS, Sealer
from services.runtime.settings import Settings
from services.runtime.webhook_addresses import AddressPolicy
from services.store.database import open_store
from services.store.migrations import migrate
from services.webhooks.delivery import Deliveries, Sender
from services.webhooks.ingest import (
    GAMES_KIND,
    LEAGUES,
    LEAGUES_KIND,
    PACE,
    Ingest,
    game_folds,
    league_folds,
)
from services.webhooks.interest import EndpointWatch
from services.webhooks.receipts import Receipts
from services.webhooks.schedule import Schedule
from services.webhooks.transport import delivery_client

log = structlog.get_logger("spades.webhooks")

RETIRED_CONSUMER = "spades-webhooks-games"
"""The games' consumer of the worker before partitions (one process followed the one stream):
the follower of partition 0 of a one-partition deployment is ``spades-webhooks`` now."""


async def retire_consumer(js: JetStreamContext, partitions: Partitions) -> None:
    """Delete the consumer an earlier version followed the games with, if it is there: nothing
    reads it any more, and the server would keep its state."""
    if not partitions.legacy:
        return
    with contextlib.suppress(nats.js.errors.NotFoundError):
        await js.delete_consumer(LEGACY_STREAM, RETIRED_CONSUMER)
        log.info("retired the webhooks' consumer of before partitions", stream=LEGACY_STREAM)


async def run_webhooks(settings: Settings, *, nats_url: str | None = None) -> None:
    """Run until cancelled."""
    url = nats_url or settings.nats_url
    if url is None:
        raise ValueError("the webhooks worker needs a NATS server: set SPADES_NATS_URL")
    schedule = Schedule.parse(settings.webhook_schedule)
    layout = settings.layout
    # httpx logs every request with its URL, which is the platform's (and may hold a secret):
    # the delivery loop logs tries by endpoint id instead.
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    client = await connect(
        url, "spades-webhooks", user="webhooks", credentials=settings.nats_credentials("webhooks")
    )
    store = open_store(settings.read_model_database_url)
    secret = settings.signing_key()  # the endpoints' secrets are sealed with it
    http = delivery_client(
        AddressPolicy(allow_private=settings.webhook_allow_private),
        connections=settings.webhook_concurrency,
        timeout_s=settings.webhook_timeout_s,
    )
    try:
        js = client.jetstream()
        reason = await check_partitions(js, layout)
        if reason is not None:
            raise LayoutError(reason)
        await migrate(store, secret=secret)
        with contextlib.suppress(nats.errors.Error):
            await retire_consumer(js, layout)
        watch = EndpointWatch(store)
        deliveries = Deliveries(
            store,
            Sender(
                http,
                settings.webhook_timeout_s,
                secrets=Sealer(secret, WEBHOOK_SECRETS),
                receipts=Receipts(
                    store,
                    settings.webhook_receipt_wait_s,
                    witnessed=bool(settings.log_witnesses.strip()),
                ),
            ),
            schedule,
            watch,
            concurrency=settings.webhook_concurrency,
            per_endpoint=settings.webhook_endpoint_concurrency,
            retention_s=settings.webhook_retention_s,
        )
        games = Ingest(GAMES_KIND, js, store, game_folds(client, layout), watch, deliveries.wake)
        leagues = Ingest(LEAGUES_KIND, js, store, league_folds(client), watch, deliveries.wake)
        followings = [
            Following(client, games, game_partitions(layout), PACE),
            Following(client, leagues, [LEAGUES], PACE),
        ]
        claims = [
            Claims(js, GAMES_KIND, layout.count, followings[0].gain, followings[0].lose,
                   member=deliveries.member, replicas=settings.stream_replicas),
            Claims(js, LEAGUES_KIND, 1, followings[1].gain, followings[1].lose,
                   member=deliveries.member, replicas=settings.stream_replicas),
        ]  # fmt: skip
        deliveries.reports_outbox = lambda: bool(claims[1].held)  # one process at a time
        tasks = [
            asyncio.create_task(watch.run(), name="webhook endpoints"),
            asyncio.create_task(deliveries.run(), name="webhook deliveries"),
            *(asyncio.create_task(c.run(), name=f"{c.kind} claims") for c in claims),
        ]
        freeze_started_heap()
        log.info(
            "webhooks ready",
            schedule=settings.webhook_schedule,
            allow_private=settings.webhook_allow_private,
            partitions=layout.count,
            member=deliveries.member,
        )
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:  # the claims stop their followers as they give partitions up
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for following in followings:
                await following.stop()
    finally:
        await http.aclose()
        await store.close()
        await client.close()


async def serve_webhooks(settings: Settings, *, nats_url: str | None = None) -> None:
    """:func:`run_webhooks` until SIGTERM or Ctrl-C. A try in flight then is not recorded: it
    is sent again, with the same ``webhook-id``, once its claim has run out, by this worker
    started again or by another."""
    await until_stopped(run_webhooks(settings, nats_url=nats_url))
