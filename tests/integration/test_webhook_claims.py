"""Deliveries claimed before they are sent, on SQLite and PostgreSQL: two senders on one database
send each delivery once, in order per chain; a claim that is not renewed runs out and another
sender takes the chain over; a claim renewed while its send hangs is never taken; a try made
under a claim that ran out is counted in the log, and what comes next is the new holder's.

The senders are the delivery loops of two webhooks processes, each with its own connections to
the database and its own HTTP client, sending to a real receiver."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx
import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY

from benchmarks.webhook_receiver import HANG, Received, Receiver
from contracts.wire import GAMES_STREAM, LEAGUES_STREAM
from services.runtime.webhook_addresses import AddressPolicy
from services.runtime.webhook_signing import new_secret
from services.store import webhook_endpoints as endpoints
from services.store.database import Store, open_store
from services.store.schema import webhook_deliveries
from services.store.webhook_endpoints import Endpoint
from services.webhooks import delivery as sending
from services.webhooks import outbox
from services.webhooks.delivery import CLAIM_S as PRODUCTION_CLAIM_S
from services.webhooks.delivery import RENEW_S as PRODUCTION_RENEW_S
from services.webhooks.delivery import Deliveries, Sender
from services.webhooks.interest import EndpointWatch
from services.webhooks.schedule import Schedule
from services.webhooks.transport import delivery_client

pytest.register_assert_rewrite("tests.integration.conftest_projections")

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.integration.conftest_projections"]

WAIT_S = 30.0
TIMEOUT_S = 10.0
CLAIM_S = 1.0
RENEW_S = 0.2


def endpoint(name: str, url: str) -> Endpoint:
    return Endpoint(
        id=f"ep_{name:0>24}",
        platform="acme",
        url=url,
        events=("game.turn",),
        secret=new_secret(),
        created_at=time.time(),
        starts={GAMES_STREAM: 0, LEAGUES_STREAM: 0},
    )


async def queue(store: Store, to: Endpoint, chains: int, each: int) -> list[outbox.Pending]:
    """Record ``each`` deliveries in each of ``chains`` chains, interleaved as a stream's
    commits are; they are due now. The endpoint is registered first if it is not."""
    made = [
        outbox.Pending(
            to.id, f"msg_{c:03}_{n:03}", "game.turn", f"game:g{c}", b'{"n":%d}' % n, "pending"
        )
        for n in range(each)
        for c in range(chains)
    ]
    async with store.writing() as conn:
        if await endpoints.find(conn, to.platform, to.id) is None:
            await endpoints.add(conn, to)
        await outbox.record(conn, made, time.time())
    return made


class Process:
    """One webhooks process's delivery loop: its own database connections, HTTP client,
    endpoint watch; the tries it made and the answers it got, by ``webhook-id``, counted by
    event hooks of its client."""

    def __init__(
        self, database_url: str, name: str, claim_s: float = CLAIM_S, renew_s: float = RENEW_S
    ) -> None:
        self.store = open_store(database_url)
        self.http = delivery_client(
            AddressPolicy(allow_private=True), connections=16, timeout_s=TIMEOUT_S
        )
        self.http.event_hooks["request"].append(self._tried)
        self.http.event_hooks["response"].append(self._answered)
        self.tries: Counter[str] = Counter()
        self.answers: Counter[str] = Counter()
        self.watch = EndpointWatch(self.store, every_s=0.05)
        self.deliveries = Deliveries(
            self.store,
            Sender(self.http, TIMEOUT_S),
            Schedule.parse("0.2s,0.2s,0.2s"),
            self.watch,
            concurrency=8,
            per_endpoint=8,
            retention_s=3600.0,
            member=name,
            claim_s=claim_s,
            renew_s=renew_s,
        )

    async def _tried(self, request: httpx.Request) -> None:
        self.tries[request.headers["webhook-id"]] += 1

    async def _answered(self, response: httpx.Response) -> None:
        self.answers[response.request.headers["webhook-id"]] += 1

    def unanswered(self) -> Counter[str]:
        """Tries whose answer never came back (the connection failed): sent again, rightly."""
        return self.tries - self.answers

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Process]:
        tasks = [asyncio.create_task(self.watch.run()), asyncio.create_task(self.deliveries.run())]
        try:
            yield self
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.http.aclose()
            await self.store.close()


async def statuses(store: Store) -> Counter[str]:
    async with store.reading() as conn:
        found = await conn.execute(sa.select(webhook_deliveries.c.status))
        return Counter(found.scalars())


async def until_delivered(store: Store, count: int) -> None:
    """Once ``count`` deliveries are recorded delivered (other processes' progress)."""
    async with asyncio.timeout(WAIT_S):
        while (await statuses(store))["delivered"] < count:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


RACE_ANSWER_S = 0.05


def by_chain(received: list[Received]) -> dict[str, list[str]]:
    chains: dict[str, list[str]] = defaultdict(list)
    for request in received:
        chains[request.id.rsplit("_", 1)[0]].append(request.id)
    return chains


async def test_two_senders_racing_on_one_database_never_send_one_delivery_twice(
    store: Store, database_url: str
) -> None:
    def slowly(request: Received) -> int:
        """An endpoint that takes a moment to answer: each sender's eight chains in flight
        keep it busy for over a second, so the other one, even stalled by a loaded machine,
        still takes chains of its own and the two race."""
        time.sleep(RACE_ANSWER_S)
        return 200

    with Receiver(slowly) as receiver:
        to = endpoint("race", receiver.url)
        async with store.writing() as conn:
            await endpoints.add(conn, to)
        # Claims as long as production's: a loaded machine may stall a process for a second,
        # and a claim that runs out during a try lets the other send it too (the tests below).
        one = Process(database_url, "one", PRODUCTION_CLAIM_S, PRODUCTION_RENEW_S)
        two = Process(database_url, "two", PRODUCTION_CLAIM_S, PRODUCTION_RENEW_S)
        async with one.running(), two.running():
            await asyncio.gather(one.watch.until_any(), two.watch.until_any())
            made = await queue(store, to, chains=32, each=8)
            one.deliveries.wake()  # as each one's ingest would, having recorded them
            two.deliveries.wake()
            await until_delivered(store, len(made))
        received = list(receiver.received)

    arrived = Counter(request.id for request in received)
    assert set(arrived) == {delivery.message_id for delivery in made}
    again = one.unanswered() + two.unanswered()
    twice = {id: count for id, count in arrived.items() if count > 1 + again[id]}
    assert twice == {}, "each delivery sent once (again only after a try that got no answer)"
    assert one.tries.total(), "both senders took chains"
    assert two.tries.total(), "both senders took chains"
    for chain, sent in by_chain(received).items():
        assert sent == sorted(sent), f"{chain} in order"


async def test_a_claim_that_is_not_renewed_runs_out_and_another_sender_takes_the_chain(
    store: Store, database_url: str
) -> None:
    """As a sender killed mid-send leaves it: its claim, renewed by no one, runs out; then (not
    before) another sends the chain, from the delivery it held."""
    with Receiver() as receiver:
        made = await queue(store, endpoint("dead", receiver.url), chains=1, each=3)
        dead_until = time.time() + 2 * CLAIM_S
        async with store.writing() as conn:
            claimed = await outbox.claim(
                conn,
                "killed.1",
                time.time(),
                dead_until,
                chains=1,
                room={},
                per_endpoint=8,
                run_length=10,
            )
        assert [len(run) for run in claimed.runs] == [3]
        async with Process(database_url, "alive").running():
            await until_delivered(store, len(made))
        received = list(receiver.received)

    assert [request.id for request in received] == [delivery.message_id for delivery in made]
    assert received[0].at >= dead_until, "nothing was sent before the claim ran out"
    async with store.reading() as conn:
        log = await endpoints.deliveries_of(conn, made[0].endpoint_id, limit=10)
    assert [(d.status, d.attempts) for d in log] == [("delivered", 1)] * 3


async def test_a_claim_renewed_while_its_send_hangs_is_not_taken_over(
    store: Store, database_url: str
) -> None:
    hung = asyncio.Event()
    loop = asyncio.get_running_loop()

    def hang_first(request: Received) -> int:
        if request.id.endswith("_000"):
            loop.call_soon_threadsafe(hung.set)
            return HANG
        return 200

    with Receiver(hang_first) as receiver:
        made = await queue(store, endpoint("slow", receiver.url), chains=1, each=2)
        first, second = Process(database_url, "first"), Process(database_url, "second")
        async with first.running():
            await asyncio.wait_for(hung.wait(), WAIT_S)
            async with second.running():
                # The time under test: three claims' length, over which nothing may happen.
                await asyncio.sleep(3 * CLAIM_S)
                assert len(receiver.received) == 1, "the other sender left the chain alone"
                receiver.release()
                await until_delivered(store, len(made))
        received = list(receiver.received)

    assert [request.id for request in received] == [delivery.message_id for delivery in made]
    assert (first.tries.total(), second.tries.total()) == (2, 0)


async def test_a_try_under_a_claim_that_ran_out_is_counted_and_the_new_holder_decides(
    store: Store,
) -> None:
    [made] = await queue(store, endpoint("late", "http://127.0.0.1:9/hooks"), chains=1, each=1)
    now = time.time()
    async with store.writing() as conn:
        [[held]] = (
            await outbox.claim(
                conn, "old", now, now + 1, chains=1, room={}, per_endpoint=8, run_length=1
            )
        ).runs
    async with store.writing() as conn:
        assert (
            await outbox.claim(
                conn, "new", now + 0.5, now + 5, chains=1, room={}, per_endpoint=8, run_length=1
            )
        ).runs == [], "held until its time"
        [[taken]] = (
            await outbox.claim(
                conn, "new", now + 2, now + 5, chains=1, room={}, per_endpoint=8, run_length=1
            )
        ).runs
        assert taken.id == held.id
    async with store.writing() as conn:
        late = await outbox.failed_try(conn, held.id, "old", 503, "answered 503", now + 2, None)
        assert late is False, "the old holder decides nothing"
        assert await outbox.renew(conn, ["old"], now + 9) == 0
        assert await outbox.renew(conn, ["new"], now + 9) == 1
    async with store.reading() as conn:
        [row] = (await conn.execute(sa.select(webhook_deliveries))).all()
    assert (row.status, row.attempts, row.last_status, row.claim) == ("pending", 1, 503, "new")
    assert row.message_id == made.message_id
    async with store.writing() as conn:
        await outbox.delivered(conn, [outbox.Acknowledged(held.id, 200, now + 3)])
    async with store.reading() as conn:
        [row] = (await conn.execute(sa.select(webhook_deliveries))).all()
    assert (row.status, row.attempts, row.last_status, row.claim) == ("delivered", 2, 200, None)


async def test_one_process_reports_the_outboxs_pending_deliveries_and_the_others_none(
    store: Store, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Summed over the processes, ``spades_webhook_deliveries_pending`` is the outbox's count:
    the process that follows the leagues' stream reports it, every other one 0."""
    monkeypatch.setattr(sending, "PENDING_EVERY_S", 0.0)
    off = replace(endpoint("off", "http://127.0.0.1:9/hooks"), disabled_at=time.time())
    made = await queue(store, off, chains=3, each=2)  # pending, and sent to no one

    def reported() -> float | None:
        return REGISTRY.get_sample_value("spades_webhook_deliveries_pending")

    process = Process(database_url, "counting")
    async with process.running():
        async with asyncio.timeout(WAIT_S):
            while reported() != len(made):  # noqa: ASYNC110
                await asyncio.sleep(0.05)  # the loop's rounds, which signal no one
        process.deliveries.reports_outbox = lambda: False
        process.deliveries.wake()
        async with asyncio.timeout(WAIT_S):
            while reported() != 0:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
