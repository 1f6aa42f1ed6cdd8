"""The delivery loop: sends what the outbox holds, in order per chain, and records each try.

A chain is one endpoint and one game (or league): only its first pending delivery may be sent,
so a platform hears of a game's events in the order they happened, each until it is
acknowledged (a 2xx) or has failed every try of the schedule. Chains are independent: many
endpoints and games are delivered at once, up to ``concurrency`` tries in flight and
``per_endpoint`` to any one endpoint, so a receiver that hangs holds a few slots until the
timeout and never the others.

Each try is ``POST url`` with the stored body, signed afresh
(:mod:`services.runtime.webhook_signing`) under the same ``webhook-id``, through connections to
checked addresses only (:mod:`.transport`); at most :data:`ANSWER_LIMIT_BYTES` of the answer are
read, and the whole try is bounded by the timeout. A failed try waits the schedule's next wait
(full jitter); after the last, the delivery has failed and its endpoint is disabled with the
reason (a replay enables it again).

Nothing of a try is recorded before its answer: a worker killed while sending leaves the
delivery pending, and it is sent again, with the same id (at least once).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
import structlog

from services.runtime import webhook_signing as signing
from services.runtime.webhook_addresses import AddressRefused
from services.store.database import Store, is_store_trouble
from services.store.webhook_endpoints import rfc3339
from services.webhooks import outbox
from services.webhooks.interest import EndpointWatch
from services.webhooks.schedule import Schedule

log = structlog.get_logger("spades.webhooks")

ANSWER_LIMIT_BYTES = 4096
"""The most of a receiver's answer ever read."""
IDLE_WAIT_S = 1.0
"""The longest the loop sleeps without being woken: new deliveries, finished tries wake it
(a replay, queued by the gateway, is found by looking again). While no endpoint exists
nothing can be pending, and the loop sleeps until one is registered."""
PRUNE_EVERY_S = 600.0
CHAIN_BATCH = 100
"""The most deliveries of one chain a task sends before the chain's turn comes again."""
STORE_RETRY_S = (0.2, 1.0, 5.0)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one try came to: the answer's status (None: no answer), and what went wrong."""

    status: int | None
    error: str | None = None

    @property
    def acknowledged(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class Sender:
    """Sends one try of a delivery."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        timeout_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self.clock = clock

    async def send(self, due: outbox.Due) -> Outcome:
        headers = signing.headers(due.secret, due.message_id, int(self.clock()), due.body)
        try:
            async with asyncio.timeout(self.timeout_s):
                async with self.client.stream(
                    "POST", due.url, content=due.body, headers=headers
                ) as answer:
                    await _read_some(answer, ANSWER_LIMIT_BYTES)
        except AddressRefused as error:
            return Outcome(None, f"refused: {error}")
        except (TimeoutError, httpx.TimeoutException):
            return Outcome(None, f"no answer within {self.timeout_s:g} s")
        except (httpx.HTTPError, OSError) as error:
            return Outcome(None, f"{type(error).__name__}: {error}"[:300])
        if 200 <= answer.status_code < 300:
            return Outcome(answer.status_code)
        return Outcome(answer.status_code, f"answered {answer.status_code}")


async def _read_some(answer: httpx.Response, limit: int) -> None:
    """Read at most ``limit`` bytes of the answer, and leave the rest unread."""
    read = 0
    async for chunk in answer.aiter_raw():
        read += len(chunk)
        if read >= limit:
            return


Chain = tuple[str, str]
"""An endpoint and a game or league: what is delivered in order."""


class Deliveries:
    """Sends the outbox's deliveries until cancelled.

    Each round finds the chains whose first pending delivery is due and starts a task per
    chain (up to ``concurrency`` chains, ``per_endpoint`` of one endpoint). A chain's task sends
    its deliveries one after the other, as long as each is acknowledged (up to
    :data:`CHAIN_BATCH`), and hands each outcome to a recorder that writes what many chains did
    in one transaction; it ends at the first failure (retried at its time) and once its
    outcomes are written, so that no round finds the chain again before they are.
    """

    def __init__(
        self,
        store: Store,
        sender: Sender,
        schedule: Schedule,
        watch: EndpointWatch,
        *,
        concurrency: int,
        per_endpoint: int,
        retention_s: float,
        clock: Callable[[], float] = time.time,
        draw: random.Random | None = None,
    ) -> None:
        self.store = store
        self.sender = sender
        self.schedule = schedule
        self.watch = watch
        self.concurrency = concurrency
        self.per_endpoint = per_endpoint
        self.retention_s = retention_s
        self.clock = clock
        self.draw = draw or random.Random()
        self._wake = asyncio.Event()
        self._in_flight: set[Chain] = set()
        self._ended: set[Chain] = set()
        """Chains whose task ended since the last look for due chains began."""
        self._per_endpoint: Counter[str] = Counter()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pruned_at = 0.0
        self._outcomes: list[tuple[outbox.Due, Outcome, float, asyncio.Future[None]]] = []
        self._written = asyncio.Event()
        """Set when outcomes are waiting for the recorder."""

    def wake(self) -> None:
        """New deliveries may be due (the ingest recorded some)."""
        self._wake.set()

    async def run(self) -> None:
        recorder = asyncio.create_task(self._record_outcomes(), name="webhook outcomes")
        try:
            while True:
                await self.watch.until_any()
                self._wake.clear()
                try:
                    wait = await self._round()
                except Exception as error:
                    if not is_store_trouble(error):
                        raise
                    log.warning("webhooks database unavailable", error=repr(error))
                    wait = IDLE_WAIT_S
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
        finally:
            for task in (*self._tasks, recorder):
                task.cancel()
            await asyncio.gather(*self._tasks, recorder, return_exceptions=True)

    async def _round(self) -> float:
        """Start every chain that may start now; how long to sleep unless woken."""
        now = self.clock()
        if now - self._pruned_at >= PRUNE_EVERY_S:
            await self._prune(now)
        while await self._start_due(now):
            pass
        if len(self._in_flight) >= self.concurrency:
            return IDLE_WAIT_S  # a chain that ends wakes the loop
        async with self.store.reading() as conn:
            earliest = await outbox.next_due(conn)
        if earliest is None or earliest <= now:
            return IDLE_WAIT_S  # nothing, or only chains under way
        return min(IDLE_WAIT_S, earliest - now)

    async def _start_due(self, now: float) -> bool:
        """Start the chains whose turn it is; True if one was left out only because its
        endpoint filled up during this round (look again without it)."""
        free = self.concurrency - len(self._in_flight)
        if free <= 0:
            return False
        busy = [e for e, count in self._per_endpoint.items() if count >= self.per_endpoint]
        self._ended.clear()
        async with self.store.reading() as conn:
            found = await outbox.due(conn, now, free + len(self._in_flight), busy_endpoints=busy)
        # A chain that ended while the query ran may have been read as it was before its last
        # outcomes were written: it is looked at again in the next round, which its end wakes.
        passed = self._in_flight | self._ended
        left_out = False
        started = 0
        for head in found:
            if (head.endpoint_id, head.chain) in passed or started >= free:
                continue
            if self._per_endpoint[head.endpoint_id] >= self.per_endpoint:
                left_out = True
                continue
            self._start(head)
            started += 1
        return left_out and len(self._in_flight) < self.concurrency

    def _start(self, head: outbox.Due) -> None:
        chain = (head.endpoint_id, head.chain)
        self._in_flight.add(chain)
        self._per_endpoint[head.endpoint_id] += 1
        task = asyncio.create_task(self._deliver(head), name=f"webhooks {head.chain}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, head: outbox.Due) -> None:
        """Send the chain's deliveries in order, from ``head``, while they are acknowledged."""
        recorded: list[asyncio.Future[None]] = []
        try:
            async with self.store.reading() as conn:
                rest = await outbox.chain_after(conn, head, self.clock(), CHAIN_BATCH - 1)
            for due in (head, *rest):
                outcome = await self.sender.send(due)
                recorded.append(self._outcome(due, outcome))
                if not outcome.acknowledged:
                    break
            await asyncio.gather(*recorded)
        except Exception as error:  # a chain must never take the loop down
            log.error("webhook chain failed to run", chain=head.chain, error=repr(error))
        finally:
            self._in_flight.discard((head.endpoint_id, head.chain))
            self._ended.add((head.endpoint_id, head.chain))
            self._per_endpoint[head.endpoint_id] -= 1
            if not self._per_endpoint[head.endpoint_id]:
                del self._per_endpoint[head.endpoint_id]
            self._wake.set()

    def _outcome(self, due: outbox.Due, outcome: Outcome) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outcomes.append((due, outcome, self.clock(), done))
        self._written.set()
        return done

    async def _record_outcomes(self) -> None:
        """Write the outcomes handed over, many in one transaction, until cancelled."""
        while True:
            await self._written.wait()
            self._written.clear()
            batch, self._outcomes = self._outcomes, []
            try:
                await self._despite_store_trouble(functools.partial(self._write, batch))
            except Exception as error:
                log.error("webhook outcomes not recorded", error=repr(error))
                for *_, done in batch:
                    if not done.done():
                        done.set_exception(error)
                continue
            for *_, done in batch:
                if not done.done():
                    done.set_result(None)

    async def _write(
        self, batch: list[tuple[outbox.Due, Outcome, float, asyncio.Future[None]]]
    ) -> None:
        failures: list[tuple[outbox.Due, Outcome, int, float | None]] = []
        async with self.store.writing() as conn:
            acknowledged = [
                outbox.Acknowledged(due.id, outcome.status, at)
                for due, outcome, at, _ in batch
                if outcome.acknowledged and outcome.status is not None
            ]
            await outbox.delivered(conn, acknowledged)
            for due, outcome, at, _ in batch:
                if outcome.acknowledged:
                    continue
                tries = due.attempts + 1
                error = outcome.error or "failed"
                wait = self.schedule.wait_after(tries, self.draw)
                next_try = at + wait if wait is not None else None
                await outbox.failed_try(conn, due.id, outcome.status, error, at, next_try)
                if next_try is None:
                    reason = (
                        f"every one of {tries} tries of {due.message_id} failed, from "
                        f"{rfc3339(due.created_at)} to {rfc3339(at)}; the last: {error}"
                    )
                    await outbox.disable(conn, due.endpoint_id, reason, at)
                failures.append((due, outcome, tries, next_try))
        for due, outcome, tries, next_try in failures:
            log.info(
                "webhook try failed" if next_try is not None else "webhook endpoint disabled",
                endpoint=due.endpoint_id,
                message_id=due.message_id,
                status=outcome.status,
                error=outcome.error,
                tries=tries,
            )

    async def _prune(self, now: float) -> None:
        async with self.store.writing() as conn:
            forgotten = await outbox.prune(conn, now - self.retention_s)
        self._pruned_at = now
        if forgotten:
            log.info("webhook deliveries forgotten", deliveries=forgotten)

    async def _despite_store_trouble(self, attempt: Callable[[], Awaitable[None]]) -> None:
        troubles = 0
        while True:
            try:
                await attempt()
                return
            except Exception as error:
                if not is_store_trouble(error):
                    raise
                delay = STORE_RETRY_S[min(troubles, len(STORE_RETRY_S) - 1)]
                troubles += 1
                log.warning("webhooks database unavailable", error=repr(error), in_s=delay)
                await asyncio.sleep(delay)
