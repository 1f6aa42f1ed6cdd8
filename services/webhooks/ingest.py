"""From the streams to the outbox: durable consumers that turn commits into pending deliveries.

One :class:`Ingest` per stream (games, leagues), each on its own durable JetStream consumer.
A batch of commits is folded into the aggregates they belong to (:class:`Folds`), mapped to
webhooks (:mod:`.events`), addressed to the endpoints of the owning platform that subscribe to
each event type, and recorded with the stream's new position in one transaction; only then is
the batch acknowledged. A crash before the commit loses nothing (the batch comes again); after
it, the batch comes again and is skipped (its sequences are at or below the position).

Which platforms have endpoints is known from the :class:`~.interest.EndpointWatch` before any
database work: a commit of another platform is skipped (by its subject alone, once its game's
platform is remembered), and a batch that makes no delivery moves the position only in
memory. The stored position follows at most :data:`POSITION_EVERY_S` later, or when the stream
goes quiet: a crash meanwhile maps those commits again, and again they make nothing. While no
endpoint exists at all, the stream is not followed (nothing in it can be wanted).

Where a stream is first followed, or found to be another stream than the position's (a NATS
store reset or restored from a backup): the webhooks start at the oldest point an endpoint asks
for, or at the stream's end. An endpoint hears of what is committed after it was registered,
never of a history restored or replayed into a new stream. So a position behind every
endpoint's interest jumps to where it begins: the commits between are no endpoint's.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import msgspec
import nats.js.errors
import sqlalchemy as sa
import structlog
from nats.aio.client import Client
from nats.js import api

from contracts.webhooks import encode_webhook, type_of
from contracts.wire import (
    GAME_SUBJECTS,
    GAMES_STREAM,
    LEAGUE_SUBJECTS,
    LEAGUES_STREAM,
    Commit,
    LeagueCommit,
)
from domain.league import League
from services.runtime.consumer import PullFeed
from services.runtime.event_store import EventStore, Stored, stream_sequence
from services.runtime.game_stream import GameStream
from services.runtime.league_stream import LeagueStream
from services.runtime.stream_identity import StreamIdentity
from services.store.database import Store, is_store_trouble
from services.store.schema import webhook_endpoints
from services.store.webhook_endpoints import Endpoint, every_endpoint, platform_key
from services.webhooks import outbox
from services.webhooks.events import Made, Seen, game_webhooks, league_webhooks
from services.webhooks.interest import EndpointWatch, Interest, covers, interest_of

log = structlog.get_logger("spades.webhooks")

BATCH_SIZE = 500
IDLE_S = 1.0
GATHER_S = 0.02
"""After the first messages of a batch, how long the ingest lets more arrive: one transaction
(and one round of the deliveries it wakes) for what a busy stream appends meanwhile, rather
than one per message. At most this much is added to a webhook's lag."""
POSITION_EVERY_S = 1.0
"""How long the position may run ahead of the stored one while batches make no delivery."""
ACK_WAIT_S = 60.0
RESTART_DELAYS_S = (0.2, 1.0, 5.0)
STATES_HELD = 5000
"""Games (or leagues) whose state is kept in memory between their commits."""
PLATFORMS_HELD = 100_000
"""Aggregates whose platform is remembered, so that one with no endpoint is never loaded."""


class CommitLike(Protocol):
    @property
    def version(self) -> int: ...
    @property
    def events(self) -> Sequence[Any]: ...


S = TypeVar("S")
C = TypeVar("C", bound=CommitLike)
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Source:
    """A stream the webhooks follow."""

    name: str
    """``games`` or ``leagues``: the position's name, and which ``*_after`` endpoints set."""
    stream: str
    subjects: str

    @property
    def consumer(self) -> str:
        return f"spades-webhooks-{self.name}"


GAMES = Source("games", GAMES_STREAM, GAME_SUBJECTS)
LEAGUES = Source("leagues", LEAGUES_STREAM, LEAGUE_SUBJECTS)
SOURCES = (GAMES, LEAGUES)


def message_id() -> str:
    """A new ``webhook-id``: one per event, the same for every endpoint and every try."""
    return f"msg_{secrets.token_hex(12)}"


# --------------------------------------------------------------------------- folding


class Folds(Generic[S, C]):
    """One kind of aggregate in memory, folded commit by commit: the state before each
    commit (read from the stream when it is not held), and the webhooks the commit makes."""

    def __init__(
        self,
        stream: EventStore[C],
        key_of: Callable[[C], str],
        make: Callable[[S | None, C], tuple[S | None, list[Made]]],
        platform_of: Callable[[S], str | None],
        version_of: Callable[[S], int],
    ) -> None:
        self._stream = stream
        self._key_of = key_of
        self._make = make
        self._platform_of = platform_of
        self._version_of = version_of
        self._states: OrderedDict[str, S] = OrderedDict()
        self._platforms: OrderedDict[str, str] = OrderedDict()

    def decode(self, sequence: int, subject: str, data: bytes) -> Stored[C]:
        stored: Stored[C] = self._stream.stored(sequence, data)
        if self._stream.key_of(subject) != self.key(stored):
            raise ValueError(f"a commit of {self.key(stored)!r} on subject {subject}")
        return stored

    def key(self, stored: Stored[C]) -> str:
        """The aggregate the commit belongs to."""
        return self._key_of(stored.commit)

    def remembered(self, subject: str) -> tuple[str, str] | None:
        """The aggregate a subject holds and its platform, if the platform is remembered: what
        decides, without decoding a commit, that no endpoint wants it."""
        key = self._stream.key_of(subject)
        platform = self._platforms.get(key) if key is not None else None
        if key is None or platform is None:
            return None
        self._platforms.move_to_end(key)
        return key, platform

    async def platform(self, stored: Stored[C]) -> str:
        """The platform the commit's aggregate belongs to (as stored: ``""`` for none)."""
        key = self._key_of(stored.commit)
        known = self._platforms.get(key)
        if known is not None:
            self._platforms.move_to_end(key)
            return known
        before = await self._before(stored)
        if before is not None:
            self._hold(key, before)  # for made(), which comes next unless no one listens
        after, _ = self._make(before, stored.commit)
        held = after if after is not None else before
        platform = platform_key(self._platform_of(held) if held is not None else None)
        self._remember(key, platform)
        return platform

    async def made(self, stored: Stored[C]) -> list[Made]:
        """The webhooks the commit makes; the aggregate is held at its state after it."""
        key = self._key_of(stored.commit)
        after, made = self._make(await self._before(stored), stored.commit)
        if after is not None:
            self._hold(key, after)
        return list(made)

    def _hold(self, key: str, state: S) -> None:
        self._states[key] = state
        self._states.move_to_end(key)
        while len(self._states) > STATES_HELD:
            self._states.popitem(last=False)

    def drop(self, key: str) -> None:
        """Forget the aggregate's state (kept: its platform)."""
        self._states.pop(key, None)

    def forget(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._states.pop(key, None)

    async def _before(self, stored: Stored[C]) -> S | None:
        commit = stored.commit
        key = self._key_of(commit)
        held = self._states.get(key)
        first = commit.version - len(commit.events) + 1
        if held is not None and self._version_of(held) == first - 1:
            return held
        self._states.pop(key, None)
        state: S | None = None
        for earlier in await self._stream.read(key, until=stored.sequence):
            if earlier.sequence >= stored.sequence:
                break
            state, _ = self._make(state, earlier.commit)
        return state

    def _remember(self, key: str, platform: str) -> None:
        self._platforms[key] = platform
        while len(self._platforms) > PLATFORMS_HELD:
            self._platforms.popitem(last=False)


def game_folds(client: Client) -> Folds[Seen, Commit]:
    return Folds(
        GameStream(client.jetstream()),
        lambda commit: commit.game_id,
        game_webhooks,
        lambda seen: seen.game.platform,
        lambda seen: seen.game.version,
    )


def league_folds(client: Client) -> Folds[League, LeagueCommit]:
    return Folds(
        LeagueStream(client.jetstream()),
        lambda commit: commit.league_id,
        league_webhooks,
        lambda league: league.platform,
        lambda league: league.version,
    )


# --------------------------------------------------------------------------- the consumer


def consumer_config(source: Source, after: int, max_ack_pending: int) -> api.ConsumerConfig:
    """Pull, from ``after + 1``, acknowledged per batch; the server never gives a message up
    (``max_deliver=-1``): what cannot be mapped is logged and skipped by the worker."""
    return api.ConsumerConfig(
        name=source.consumer,
        durable_name=source.consumer,
        description=f"webhooks: deliveries from the {source.name} stream",
        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=after + 1,
        ack_policy=api.AckPolicy.ALL,
        ack_wait=ACK_WAIT_S,
        max_deliver=-1,
        max_ack_pending=max_ack_pending,
        filter_subject=source.subjects,
    )


async def open_feed(client: Client, source: Source, after: int, max_ack_pending: int) -> PullFeed:
    """The source's durable consumer, made again to start right after ``after`` unless it
    stands exactly there."""
    js = client.jetstream()
    try:
        info: api.ConsumerInfo | None = await js.consumer_info(source.stream, source.consumer)
    except nats.js.errors.NotFoundError:
        info = None
    if info is None or not _stands_at(info, source, after, max_ack_pending):
        if info is not None:
            await js.delete_consumer(source.stream, source.consumer)
        await js.add_consumer(source.stream, config=consumer_config(source, after, max_ack_pending))
    feed = PullFeed(client, source.stream, source.consumer)
    await feed.open()
    return feed


def _stands_at(info: api.ConsumerInfo, source: Source, after: int, max_ack_pending: int) -> bool:
    config = info.config
    delivered = info.delivered.stream_seq if info.delivered else None
    acknowledged = info.ack_floor.stream_seq if info.ack_floor else None
    return (
        delivered == after
        and acknowledged == after
        and not info.num_ack_pending
        and config.ack_policy == api.AckPolicy.ALL
        and config.filter_subject == source.subjects
        and config.max_deliver in (None, -1)
        and config.max_ack_pending == max_ack_pending
    )


class Ingest:
    """Follows one stream into the outbox."""

    def __init__(
        self,
        source: Source,
        store: Store,
        client: Client,
        folds: Folds[Any, Any],
        watch: EndpointWatch,
        wake: Callable[[], None],
        *,
        batch_size: int = BATCH_SIZE,
        idle_s: float = IDLE_S,
        clock: Callable[[], float] = time.time,
        gather_s: float = GATHER_S,
        position_every_s: float = POSITION_EVERY_S,
    ) -> None:
        self.gather_s = gather_s
        self.source = source
        self.store = store
        self.client = client
        self.folds = folds
        self.watch = watch
        self.wake = wake
        self.batch_size = batch_size
        self.idle_s = idle_s
        self.clock = clock
        self.position_every_s = position_every_s
        self.position = 0
        """The last sequence mapped: ahead of :attr:`stored` while batches make nothing."""
        self.stored = 0
        """The position as the database holds it."""
        self.log = log.bind(stream=source.name)
        self._stream: StreamIdentity | None = None
        self._mapped: Interest = {}
        """What the commits after the stored position were mapped by."""
        self._stored_at = 0.0

    async def run(self) -> None:
        """Follow the stream until cancelled; any failure (NATS away, the stream not made yet,
        the database down) starts it again after a pause."""
        failures = 0
        while True:
            try:
                await self._follow()
            except Exception as error:
                delay = RESTART_DELAYS_S[min(failures, len(RESTART_DELAYS_S) - 1)]
                failures += 1
                self.log.warning("webhooks ingest restarting", error=repr(error), in_s=delay)
                await asyncio.sleep(delay)
            else:
                failures = 0

    async def _follow(self) -> None:
        """Follow the stream from the stored position until it must be looked at again (NATS
        reconnected, endpoints wanting what was mapped without them, or none left)."""
        self.position = self.stored = await self.start_position()
        self._stored_at = self.clock()
        if not self.watch.endpoints:
            self.log.info("webhooks waiting for an endpoint", after=self.position)
            await self.watch.until_any()
            return  # and start where the new endpoints' interest begins
        self._mapped = self.watch.interest(self.source.name)
        feed = await open_feed(
            self.client, self.source, self.position, max_ack_pending=4 * self.batch_size
        )
        self.log.info("webhooks following the stream", after=self.position)
        reconnects = self._reconnections()
        try:
            while self.watch.endpoints:
                try:
                    messages = await feed.fetch(self.batch_size, self.idle_s)
                except TimeoutError:
                    if self._reconnections() != reconnects:
                        return  # look at the stream again: it may be another one now
                    if self.stored < self.position and not await self._store_position():
                        return
                    continue
                if len(messages) < self.batch_size and self.gather_s > 0:
                    await asyncio.sleep(self.gather_s)  # a batching window, not a wait for one
                    messages += await feed.fetch_now(self.batch_size - len(messages))
                if self._reconnections() != reconnects or not await self._apply(messages):
                    return
                await messages[-1].ack()
            if self.stored < self.position:
                await self._store_position()
        finally:
            with contextlib.suppress(Exception):
                await feed.close()

    def _reconnections(self) -> int:
        return int(self.client.stats["reconnects"])

    async def start_position(self) -> int:
        """Where to follow the stream from, recorded: the stored position if it belongs to the
        stream found (or where every endpoint's interest begins, if that is later), else where
        the endpoints' interest begins (see the module's docstring)."""
        info = await self.client.jetstream().stream_info(self.source.stream)
        found = StreamIdentity.of(info)
        last = int(info.state.last_seq or 0)
        self._stream = found
        async with self.store.writing() as conn:
            held = await outbox.lock_position(conn, self.source.name)
            same = held.known and held.stream_created == found.created and held.position <= last
            if not same:
                # Where an endpoint asks for more than the stream holds, it was registered on
                # another stream: it hears of this one from its end.
                after = _after_column(self.source)
                await conn.execute(
                    webhook_endpoints.update().where(after > last).values({after.name: last})
                )
            endpoints = await every_endpoint(conn, hold=True)
            self.watch.saw(endpoints)
            asked = min(interest_of(endpoints, self.source.name).values(), default=last)
            start = max(held.position, min(asked, last)) if same else min(asked, last)
            if same and start == held.position:
                return start
            if held.known and not same:
                self.log.warning(
                    "the stream is not the one the webhooks followed: following it from where "
                    "the endpoints' interest begins, not delivering its history again",
                    stream=str(found),
                    position=held.position,
                    start=start,
                )
            await outbox.set_position(
                conn, self.source.name, start, found.created, known=held.known
            )
        return start

    async def _apply(self, messages: Sequence[Any]) -> bool:
        """Record the deliveries of a batch of messages and move the position past them; False
        when the endpoints want what was mapped without them (follow again from the stored
        position)."""
        batch = [(stream_sequence(msg.reply), msg.subject, msg.data) for msg in messages]
        batch = [item for item in batch if item[0] > self.position]
        if not batch:
            return True
        interest = self.watch.interest(self.source.name)
        if interest != self._mapped:
            if self.stored < self.position and not covers(self._mapped, interest, self.position):
                return False
            self._mapped = interest
        made: list[tuple[int, str, Made]] = []
        keys: list[str] = []
        for sequence, subject, data in batch:
            try:
                made += await self._made(sequence, subject, data, interest, keys)
            except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as error:
                self.log.error(
                    "a stream message made no webhook", sequence=sequence, error=repr(error)
                )
        last = batch[-1][0]
        if made or self.clock() - self._stored_at >= self.position_every_s:
            try:
                recorded = await self._despite_store_trouble(lambda: self._record(last, made))
            except BaseException:
                self.folds.forget(keys)  # their states ran ahead of what was recorded
                raise
            if recorded is None:
                self.folds.forget(keys)
                return False
            if recorded:
                self.wake()
        self.position = last
        return True

    async def _store_position(self) -> bool:
        """Store the position mapped so far (False: follow again from the stored one)."""
        position = self.position
        return await self._despite_store_trouble(lambda: self._record(position, [])) is not None

    async def _made(
        self,
        sequence: int,
        subject: str,
        data: bytes,
        interested: Interest,
        keys: list[str],
    ) -> list[tuple[int, str, Made]]:
        remembered = self.folds.remembered(subject)
        if remembered is not None and sequence <= interested.get(remembered[1], sequence):
            self.folds.drop(remembered[0])  # no endpoint of its platform wants it: not decoded
            return []
        stored = self.folds.decode(sequence, subject, data)
        if not stored.commit.events:
            return []  # a refusal: nothing happened
        key = self.folds.key(stored)
        platform = await self.folds.platform(stored)
        if sequence <= interested.get(platform, sequence):
            self.folds.drop(key)  # no endpoint of its platform wants it: keep nothing
            return []
        keys.append(key)
        return [(sequence, platform, made) for made in await self.folds.made(stored)]

    async def _record(self, last: int, made: list[tuple[int, str, Made]]) -> int | None:
        """Record ``made`` and move the stored position to ``last``, in one transaction; the
        deliveries pending, or None (nothing written) when the endpoints held want what the
        commits since the stored position were mapped without."""
        assert self._stream is not None
        now = self.clock()
        async with self.store.writing() as conn:
            held = await outbox.lock_position(conn, self.source.name)
            if held.stream_created != self._stream.created:
                raise RuntimeError("the position was moved to another stream meanwhile")
            if held.position >= last:
                return 0
            endpoints = await every_endpoint(conn, hold=True)
            self.watch.saw(endpoints)
            if not covers(self._mapped, interest_of(endpoints, self.source.name), last):
                self.log.info("webhooks mapping again for new endpoints", after=held.position)
                return None
            pending: list[outbox.Pending] = []
            for sequence, platform, one in made:
                if sequence <= held.position:
                    continue
                kind = type_of(one.webhook)
                body = encode_webhook(one.webhook)
                identifier = message_id()
                for endpoint in endpoints:
                    if _wants(endpoint, self.source, platform, kind, sequence):
                        status = outbox.PENDING if endpoint.enabled else outbox.SKIPPED
                        pending.append(
                            outbox.Pending(endpoint.id, identifier, kind, one.chain, body, status)
                        )
            await outbox.record(conn, pending, now)
            await outbox.set_position(
                conn, self.source.name, last, self._stream.created, known=held.known
            )
        self.stored, self._stored_at = last, now
        return sum(delivery.status == outbox.PENDING for delivery in pending)

    async def _despite_store_trouble(self, attempt: Callable[[], Awaitable[R]]) -> R:
        troubles = 0
        while True:
            try:
                return await attempt()
            except Exception as error:
                if not is_store_trouble(error):
                    raise
                troubles += 1
                delay = RESTART_DELAYS_S[min(troubles - 1, len(RESTART_DELAYS_S) - 1)]
                self.log.warning("webhooks database unavailable", error=repr(error), in_s=delay)
                await asyncio.sleep(delay)


def _after_column(source: Source) -> sa.Column[Any]:
    return webhook_endpoints.c[f"{source.name}_after"]


def _wants(endpoint: Endpoint, source: Source, platform: str, kind: str, sequence: int) -> bool:
    return (
        endpoint.platform == platform
        and kind in endpoint.events
        and sequence > endpoint.after(source.name)
    )
