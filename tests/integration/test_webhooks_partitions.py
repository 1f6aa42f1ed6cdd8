"""Two webhooks processes on three partitions and one PostgreSQL database, one of them killed
with SIGKILL while it sends: an engine process, a gateway, two ``spades serve webhooks``
processes and a real receiver, on a nats-server of the test's own.

What the receiver gets is checked against the truth (the webhooks each game's history in
JetStream makes, byte for byte): every event of every game arrives, in order per game, none
twice by ``webhook-id`` unless a try of it got no answer: what the killed process had in flight
(its answer never reached the process, so the delivery is sent again by the other once the
claim ran out), or a try the hung receiver held past the timeout; and the killed process's
partitions are followed by the other."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.webhook_receiver import ACKNOWLEDGE, HANG, Received, Receiver
from contracts.partitions import Partitions
from contracts.webhooks import EVENT_TYPES, encode_webhook
from services.bots.runner import play_games
from services.bots.strategy import Bot
from services.client import SpadesClient
from services.client.webhooks import WebhookClient
from services.runtime.nats_server import EmbeddedNats, free_port
from services.store.database import Store
from services.store.schema import webhook_deliveries
from services.webhooks.events import Seen, game_webhooks
from services.webhooks.ingest import GAMES_KIND
from tests.integration.support import (
    EngineProcess,
    broker_credentials,
    connected,
    history,
    holder_pid,
)
from tests.integration.test_gateway import SIGNING_KEY, ServedGateway, gateway_settings
from tests.integration.test_webhooks import (
    ACME,
    KEYS,
    QUICK,
    SHORT_GAME,
    WebhooksProcess,
    finished,
    of_game,
)

pytest.register_assert_rewrite("tests.integration.conftest_projections")

pytestmark = [pytest.mark.integration, pytest.mark.postgres]
pytest_plugins = ["tests.integration.conftest_projections"]

LAYOUT = Partitions(3)
GAMES = 8
WAIT_S = 45.0


@pytest.fixture
def partitioned_nats(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A server whose broker users are those of a deployment of three partitions."""
    with EmbeddedNats(
        tmp_path / "nats", credentials=broker_credentials(), partitions=LAYOUT
    ) as server:
        yield server


@pytest.fixture
def partitioned_engine(partitioned_nats: EmbeddedNats, tmp_path: Path) -> Iterator[EngineProcess]:
    env = {"SPADES_PARTITIONS": str(LAYOUT.count)}
    process = EngineProcess(partitioned_nats.url, tmp_path, "engine", env=env)
    process.start()
    process.wait_ready()
    yield process
    process.stop()


async def truth(house: Client, game_id: str) -> list[bytes]:
    """The bodies the game's history makes, in order: what its platform must receive."""
    seen: Seen | None = None
    bodies: list[bytes] = []
    for stored in await history(house, game_id, LAYOUT):
        seen, made = game_webhooks(seen, stored.commit)
        bodies += [encode_webhook(one.webhook) for one in made]
    return bodies


def worker(
    nats_url: str, database_url: str, log_dir: Path, name: str, metrics_port: int = 0
) -> WebhooksProcess:
    return WebhooksProcess(
        nats_url,
        log_dir,
        name=name,
        env={
            "SPADES_DATA_DIR": str(log_dir),
            "SPADES_DATABASE_URL": database_url,
            "SPADES_SECRET_KEY": SIGNING_KEY,  # the gateway's: it sealed the endpoints' secrets
            "SPADES_PARTITIONS": str(LAYOUT.count),
            "SPADES_METRICS_PORT": str(metrics_port),
            "SPADES_WEBHOOK_ALLOW_PRIVATE": "1",
            "SPADES_WEBHOOK_SCHEDULE": QUICK,
            # A hung try fails after 5 s and its chain is claimable again, by either process.
            "SPADES_WEBHOOK_TIMEOUT_S": "5",
        },
    )


async def claimed_by(store: Store, pid: int) -> set[str]:
    """The deliveries the process claims now (its claim tokens name its process id)."""
    table = webhook_deliveries
    async with store.reading() as conn:
        found = await conn.execute(
            sa.select(table.c.message_id).where(
                table.c.status == "pending", table.c.claim.like(f"%-{pid}-%")
            )
        )
        return set(found.scalars())


async def delivered(store: Store) -> set[str]:
    table = webhook_deliveries
    async with store.reading() as conn:
        found = await conn.execute(
            sa.select(table.c.message_id).where(table.c.status == "delivered")
        )
        return set(found.scalars())


async def pending(store: Store) -> int:
    table = webhook_deliveries
    async with store.reading() as conn:
        counted = await conn.scalar(
            sa.select(sa.func.count()).select_from(table).where(table.c.status == "pending")
        )
        return int(counted or 0)


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll other processes' progress until ``check()`` is true."""
    deadline = time.monotonic() + WAIT_S
    while not await check():
        assert time.monotonic() < deadline, f"not in time: {what}"
        await asyncio.sleep(0.05)


async def scraped(port: int, ready: Callable[[dict[str, float]], bool]) -> dict[str, float]:
    """A process's ``/metrics`` by sample (``name{label="value",...}``), once ``ready`` holds
    of it (polled: another process's state)."""
    async with httpx.AsyncClient() as http, asyncio.timeout(WAIT_S):
        while True:
            text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
            samples = {
                sample.name
                + (
                    "{" + ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items())) + "}"
                    if sample.labels
                    else ""
                ): sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples
            }
            if ready(samples):
                return samples
            await asyncio.sleep(0.1)


def arrivals(received: list[Received], game_id: str) -> list[Received]:
    """The game's requests in order of arrival, a try sent again right after the one before it
    (the same ``webhook-id``) counted once."""
    kept: list[Received] = []
    for request in of_game(received, game_id):
        if not kept or kept[-1].id != request.id:
            kept.append(request)
    return kept


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_two_webhooks_processes_one_killed_mid_delivery_deliver_every_event_once_in_order(
    partitioned_nats: EmbeddedNats,
    partitioned_engine: EngineProcess,
    database_url: str,
    store: Store,
    tmp_path: Path,
) -> None:
    nats_url = partitioned_nats.url
    settings = gateway_settings(
        nats_url,
        tmp_path,
        api_keys=KEYS,
        webhook_allow_private=True,
        partitions=LAYOUT.count,
        database_url=database_url,
    )
    victim = worker(nats_url, database_url, tmp_path, "webhooks-victim")
    metrics_port = free_port()
    survivor = worker(nats_url, database_url, tmp_path, "webhooks-survivor", metrics_port)
    house = await connected(nats_url)
    try:
        with ServedGateway(settings) as gateway, Receiver() as receiver:
            for process in (victim, survivor):
                process.start()
            for process in (victim, survivor):
                process.wait_ready("webhooks ready")
            async with SpadesClient(gateway.url, api_key=ACME) as client:
                await WebhookClient(client).create(receiver.url, EVENT_TYPES)
                playing = asyncio.create_task(
                    play_games(client, SHORT_GAME, GAMES, Bot, concurrency=GAMES)
                )
                await asyncio.to_thread(receiver.wait_for, lambda got: len(got) >= 20, WAIT_S)
                in_flight = await kill_mid_delivery(receiver, store, victim)
                games = await asyncio.wait_for(playing, WAIT_S)
                game_ids = [game.game_id for game in games]
                await asyncio.to_thread(receiver.wait_for, finished(game_ids), WAIT_S)

                async def drained() -> bool:
                    return await pending(store) == 0

                await until(drained, "every delivery recorded")

                async def taken_over() -> bool:
                    held = [await holder_pid(house, GAMES_KIND, p) for p in LAYOUT.indexes]
                    return set(held) == {survivor.pid}

                await until(taken_over, "the survivor following every partition")
                metrics = await scraped(
                    metrics_port, lambda m: m.get("spades_webhook_deliveries_pending") == 0
                )
            received = list(receiver.received)

        assert in_flight, "the victim was killed with deliveries in flight"
        for game_id in game_ids:
            bodies = [request.body for request in arrivals(received, game_id)]
            assert bodies == await truth(house, game_id), f"every event of {game_id}, in order"
        times = Counter(request.id for request in received)
        again = {webhook_id for webhook_id, count in times.items() if count > 1}
        unanswered = {request.id for request in received if request.answered == HANG}
        assert in_flight <= again, "what the victim had in flight is sent again"
        assert again <= unanswered, "nothing is sent twice unless a try of it got no answer"
        assert metrics['spades_partitions_held{kind="webhooks"}'] == LAYOUT.count
        assert metrics['spades_partitions_held{kind="webhooks-leagues"}'] == 1
        assert metrics['spades_webhook_attempts_total{result="acknowledged"}'] > 0
        assert metrics["spades_webhook_endpoints_disabled"] == 0
        assert metrics["spades_webhook_deliveries_failed_total"] == 0
    finally:
        for process in (victim, survivor):
            process.stop()
        await house.close()


async def kill_mid_delivery(receiver: Receiver, store: Store, victim: WebhooksProcess) -> set[str]:
    """From now on every request hangs, until the victim has some in flight and everything
    answered before is recorded; then the victim is killed (SIGKILL), and the receiver answers
    again. What the victim had in flight (sent, unanswered), by ``webhook-id``."""
    receiver.answer = lambda _request: HANG

    def hung() -> set[str]:
        return {r.id for r in receiver.received if r.answered == HANG}

    async def victim_hangs() -> bool:
        answered = {r.id for r in receiver.received if r.answered != HANG} - hung()
        mine = await claimed_by(store, victim.pid)
        return bool(hung() & mine) and answered <= await delivered(store)

    await until(victim_hangs, "the victim sending into the hung receiver")
    victim.kill()
    in_flight = hung() & await claimed_by(store, victim.pid)
    receiver.answer = ACKNOWLEDGE
    receiver.release()
    return in_flight
