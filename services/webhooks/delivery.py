"""The delivery loop: sends what the outbox holds, in order per chain, and records each try.

A chain is one endpoint and one game (or league): only its first pending delivery may be sent,
so a platform hears of a game's events in the order they happened, each until it is
acknowledged (a 2xx) or has failed every try of the schedule. Chains are independent: many
endpoints and games are delivered at once, up to ``concurrency`` tries in flight and
``per_endpoint`` to any one endpoint, so a receiver that hangs holds a few slots until the
timeout and never the others.

Several webhooks processes share one outbox: a process claims the chains it sends
(:func:`.outbox.claim`) before it sends them, for :data:`CLAIM_S` from the claim, renewed every
:data:`RENEW_S` while the sends are in flight. So each delivery is sent by one process, and a
process that ends (even killed) leaves claims that run out within :data:`CLAIM_S`, for another
to take. A process sends under a claim only while it knows the claim is its own: once a renewal
fails to land before the claim would run out, the chains claimed under it stop (another process
may hold them now).

Each try is ``POST url`` with the stored body, signed afresh
(:mod:`services.runtime.webhook_signing`) under the same ``webhook-id``, through connections to
checked addresses only (:mod:`.transport`); at most :data:`ANSWER_LIMIT_BYTES` of the answer are
read, and the whole try is bounded by the timeout. A failed try waits the schedule's next wait
(full jitter); after the last, the delivery has failed and its endpoint is disabled with the
reason (a replay enables it again).

Nothing of a try is recorded before its answer: a worker killed while sending leaves the
delivery pending and claimed, and once the claim has run out it is sent again, by whichever
process claims it, with the same id (at least once).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import httpx
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from services.runtime import webhook_signing as signing
from services.runtime.claims import member_id
from services.runtime.sealing import Sealer
from services.runtime.webhook_addresses import AddressRefused
from services.store.database import Store, is_store_trouble
from services.store.webhook_endpoints import rfc3339
from services.webhooks import metrics, outbox
from services.webhooks.interest import EndpointWatch
from services.webhooks.receipts import Receipts
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
CLAIM_S = 5.0
"""How long a claim lasts past its last renewal: how soon, at most, the deliveries of a process
that ended are sent by another (plus a round, :data:`IDLE_WAIT_S`)."""
RENEW_S = 1.0
"""How often the claims of the chains in flight are renewed."""
PENDING_EVERY_S = 5.0
"""How often the outbox's pending deliveries are counted (a metric)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one try came to: the answer's status (None: no answer), and what went wrong."""

    status: int | None
    error: str | None = None
    result: str = metrics.ACKNOWLEDGED
    """What the try came to, as :data:`~.metrics.ATTEMPTS` counts it."""

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
        *,
        secrets: Sealer | None = None,
        receipts: Receipts | None = None,
    ) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self.clock = clock
        self.secrets = secrets
        """Opens the endpoints' secrets as the database keeps them (sealed); None for
        secrets given in the clear (a test's endpoint that no gateway registered)."""
        self.receipts = receipts
        """Adds a ``hand.scored``'s receipt from the audit log (:mod:`.receipts`); None sends
        the bodies as stored."""

    async def send(self, due: outbox.Due) -> Outcome:
        secret = due.secret
        if self.secrets is not None:
            secret = self.secrets.open_text(secret, due.endpoint_id)
        body = due.body
        if self.receipts is not None:
            body = await self.receipts.added(body, due.created_at)
        headers = signing.headers(secret, due.message_id, int(self.clock()), body)
        try:
            async with asyncio.timeout(self.timeout_s):
                async with self.client.stream(
                    "POST", due.url, content=body, headers=headers
                ) as answer:
                    await _read_some(answer, ANSWER_LIMIT_BYTES)
        except AddressRefused as error:
            return Outcome(None, f"refused: {error}", metrics.REFUSED)
        except (TimeoutError, httpx.TimeoutException):
            return Outcome(None, f"no answer within {self.timeout_s:g} s", metrics.TIMEOUT)
        except (httpx.HTTPError, OSError) as error:
            return Outcome(None, f"{type(error).__name__}: {error}"[:300], metrics.UNREACHABLE)
        if 200 <= answer.status_code < 300:
            return Outcome(answer.status_code)
        return Outcome(answer.status_code, f"answered {answer.status_code}", metrics.REJECTED)


async def _read_some(answer: httpx.Response, limit: int) -> None:
    """Read at most ``limit`` bytes of the answer, and leave the rest unread."""
    read = 0
    async for chunk in answer.aiter_raw():
        read += len(chunk)
        if read >= limit:
            return


Chain = tuple[str, str]
"""An endpoint and a game or league: what is delivered in order."""


@dataclass(frozen=True, slots=True)
class Tried:
    """A try to record: the delivery, what came of it, when, under which claim."""

    due: outbox.Due
    outcome: Outcome
    at: float
    token: str


@dataclass(frozen=True, slots=True)
class Released:
    """A chain's run ended: its claims on what was not sent are given up."""

    token: str
    endpoint_id: str
    chain: str


@dataclass
class Held:
    """One claim of this process: until when it is surely its own, and its chains running."""

    until: float
    chains: int = 0


class Deliveries:
    """Sends the outbox's deliveries until cancelled.

    Each round claims the chains whose first pending delivery is due and no process holds (up
    to ``concurrency`` chains in flight, ``per_endpoint`` of one endpoint) and starts a task per
    chain. A chain's task sends its claimed run one after the other, as long as each is
    acknowledged (up to :data:`CHAIN_BATCH`), and hands each outcome to a recorder that writes
    what many chains did in one transaction; it ends at the first failure (retried at its time)
    and once its outcomes are written and the rest of its run released.
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
        member: str | None = None,
        claim_s: float = CLAIM_S,
        renew_s: float = RENEW_S,
    ) -> None:
        if claim_s <= 2 * renew_s:
            raise ValueError("a claim must outlive two renewals")
        self.store = store
        self.sender = sender
        self.schedule = schedule
        self.watch = watch
        self.concurrency = concurrency
        self.per_endpoint = per_endpoint
        self.retention_s = retention_s
        self.clock = clock
        self.draw = draw or random.Random()
        self.member = member or member_id()
        """The first part of every claim token of this process (host, process id, random)."""
        self.claim_s = claim_s
        self.renew_s = renew_s
        self.reports_outbox: Callable[[], bool] = lambda: True
        """Whether this process reports the outbox's pending deliveries now (one process of a
        deployment does, so that their sum over the processes is the outbox's)."""
        self._claims = itertools.count(1)
        self._held: dict[str, Held] = {}
        """The claims of the chains in flight, by token."""
        self._wake = asyncio.Event()
        self._in_flight: set[Chain] = set()
        self._per_endpoint: Counter[str] = Counter()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pruned_at = 0.0
        self._counted_at = 0.0
        self._written_items: list[tuple[Tried | Released, asyncio.Future[None]]] = []
        self._written = asyncio.Event()
        """Set when outcomes are waiting for the recorder."""

    def wake(self) -> None:
        """New deliveries may be due (the ingest recorded some)."""
        self._wake.set()

    async def run(self) -> None:
        helpers = [
            asyncio.create_task(self._record_outcomes(), name="webhook outcomes"),
            asyncio.create_task(self._renew_claims(), name="webhook claims"),
        ]
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
            for task in (*self._tasks, *helpers):
                task.cancel()
            await asyncio.gather(*self._tasks, *helpers, return_exceptions=True)

    async def _round(self) -> float:
        """Start every chain that may start now; how long to sleep unless woken."""
        now = self.clock()
        if now - self._pruned_at >= PRUNE_EVERY_S:
            await self._prune(now)
        if now - self._counted_at >= PENDING_EVERY_S:
            if self.reports_outbox():
                async with self.store.reading() as conn:
                    metrics.PENDING.set(await outbox.pending_count(conn))
            else:
                metrics.PENDING.set(0)
            self._counted_at = now
        while await self._start_due():
            pass
        if len(self._in_flight) >= self.concurrency:
            return IDLE_WAIT_S  # a chain that ends wakes the loop
        async with self.store.reading() as conn:
            earliest = await outbox.next_due(conn)
        if earliest is None or earliest <= now:
            return IDLE_WAIT_S  # nothing, or only chains under way (here or elsewhere)
        return min(IDLE_WAIT_S, earliest - now)

    async def _start_due(self) -> bool:
        """Claim the chains whose turn it is, and start them; True if one was left out only
        because its endpoint filled up (claim again without it)."""
        free = self.concurrency - len(self._in_flight)
        if free <= 0:
            return False
        now = self.clock()  # the claims' time: a round's start may be a while ago
        token = f"{self.member}.{next(self._claims)}"
        until = now + self.claim_s
        room = {e: self.per_endpoint - count for e, count in self._per_endpoint.items()}
        async with self.store.writing() as conn:
            claimed = await outbox.claim(
                conn,
                token,
                now,
                until,
                chains=free,
                room=room,
                per_endpoint=self.per_endpoint,
                run_length=CHAIN_BATCH,
                sending=self._in_flight,
            )
        if claimed.runs:
            self._held[token] = Held(until)
        for run in claimed.runs:
            self._start(token, run)
        return claimed.left_out and bool(claimed.runs)

    def _start(self, token: str, run: list[outbox.Due]) -> None:
        head = run[0]
        chain = (head.endpoint_id, head.chain)
        self._in_flight.add(chain)
        self._per_endpoint[head.endpoint_id] += 1
        self._held[token].chains += 1
        task = asyncio.create_task(self._deliver(token, run), name=f"webhooks {head.chain}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def holds(self, token: str) -> bool:
        """Whether the claim is surely still this process's (renewed in time)."""
        held = self._held.get(token)
        return held is not None and self.clock() < held.until

    async def _deliver(self, token: str, run: list[outbox.Due]) -> None:
        """Send the chain's claimed run in order while each is acknowledged and the claim
        holds; then give up the rest of the run."""
        head = run[0]
        recorded: list[asyncio.Future[None]] = []
        try:
            for due in run:
                if not self.holds(token):
                    log.warning(
                        "webhook claim not renewed in time: the chain is left to whoever holds "
                        "it now",
                        chain=head.chain,
                        endpoint=head.endpoint_id,
                    )
                    break
                outcome = await self.sender.send(due)
                metrics.ATTEMPTS.labels(outcome.result).inc()
                recorded.append(self._hand_over(Tried(due, outcome, self.clock(), token)))
                if not outcome.acknowledged:
                    break
            recorded.append(self._hand_over(Released(token, head.endpoint_id, head.chain)))
            await asyncio.gather(*recorded)
        except Exception as error:  # a chain must never take the loop down
            log.error("webhook chain failed to run", chain=head.chain, error=repr(error))
        finally:
            self._in_flight.discard((head.endpoint_id, head.chain))
            self._per_endpoint[head.endpoint_id] -= 1
            if not self._per_endpoint[head.endpoint_id]:
                del self._per_endpoint[head.endpoint_id]
            held = self._held[token]
            held.chains -= 1
            if not held.chains:
                del self._held[token]
            self._wake.set()

    async def _renew_claims(self) -> None:
        """Every :attr:`renew_s`, extend the claims of the chains in flight; a claim whose
        renewal did not land before it would have run out is not extended here (it may be
        another process's by then), and its chains stop."""
        while True:
            await asyncio.sleep(self.renew_s)
            tokens = [token for token in self._held if self.holds(token)]
            if not tokens:
                continue
            started = self.clock()
            try:
                async with self.store.writing() as conn:
                    await outbox.renew(conn, tokens, started + self.claim_s)
            except Exception as error:
                if not is_store_trouble(error):
                    raise
                log.warning("webhook claims not renewed", error=repr(error))
                continue
            landed = self.clock()
            for token in tokens:
                held = self._held.get(token)
                if held is not None and landed < held.until:
                    held.until = started + self.claim_s

    def _hand_over(self, item: Tried | Released) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._written_items.append((item, done))
        self._written.set()
        return done

    async def _record_outcomes(self) -> None:
        """Write the outcomes handed over, many in one transaction, until cancelled."""
        while True:
            await self._written.wait()
            self._written.clear()
            batch, self._written_items = self._written_items, []
            items = [item for item, _ in batch]
            try:
                await self._despite_store_trouble(functools.partial(self._write, items))
            except Exception as error:
                log.error("webhook outcomes not recorded", error=repr(error))
                for _, done in batch:
                    if not done.done():
                        done.set_exception(error)
                continue
            for _, done in batch:
                if not done.done():
                    done.set_result(None)

    async def _write(self, items: Sequence[Tried | Released]) -> None:
        tries = [item for item in items if isinstance(item, Tried)]
        failures: list[tuple[Tried, int, float | None, bool]] = []
        async with self.store.writing() as conn:
            acknowledged = [
                outbox.Acknowledged(tried.due.id, tried.outcome.status, tried.at)
                for tried in tries
                if tried.outcome.acknowledged and tried.outcome.status is not None
            ]
            await outbox.delivered(conn, acknowledged)
            for tried in tries:
                if not tried.outcome.acknowledged:
                    failures.append(await self._failed(conn, tried))
            for item in items:
                if isinstance(item, Released):
                    await outbox.release(conn, item.token, item.endpoint_id, item.chain)
        for tried, count, next_try, held in failures:
            due, outcome = tried.due, tried.outcome
            if not held:
                message = "webhook try failed after its claim was taken over"
            elif next_try is None:
                metrics.FAILED.inc()
                message = "webhook endpoint disabled"
            else:
                message = "webhook try failed"
            log.info(
                message,
                endpoint=due.endpoint_id,
                message_id=due.message_id,
                status=outcome.status,
                error=outcome.error,
                tries=count,
            )

    async def _failed(
        self, conn: AsyncConnection, tried: Tried
    ) -> tuple[Tried, int, float | None, bool]:
        """Record a failed try: its next try by the schedule, or the endpoint disabled after
        the last; whether the claim held (if not, only the try is counted)."""
        due, outcome, at = tried.due, tried.outcome, tried.at
        count = due.attempts + 1
        error = outcome.error or "failed"
        wait = self.schedule.wait_after(count, self.draw)
        next_try = at + wait if wait is not None else None
        held = await outbox.failed_try(
            conn, due.id, tried.token, outcome.status, error, at, next_try
        )
        if held and next_try is None:
            reason = (
                f"every one of {count} tries of {due.message_id} failed, from "
                f"{rfc3339(due.created_at)} to {rfc3339(at)}; the last: {error}"
            )
            await outbox.disable(conn, due.endpoint_id, reason, at)
        return tried, count, next_try, held

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
