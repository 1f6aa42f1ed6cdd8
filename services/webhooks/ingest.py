"""From the streams to the outbox: a follower's handler that turns commits into pending deliveries.

An :class:`Ingest` is a :class:`~services.runtime.follower.Handler`: the game partitions a
webhooks process holds each have a follower (kind ``webhooks``), and the leagues' stream one
more (kind ``webhooks-leagues``), each partition worked by one process at a time
(:mod:`services.runtime.claims`). A batch of commits is folded into the aggregates they belong
to (:class:`Folds`), mapped to webhooks (:mod:`.events`), addressed to the endpoints of the
owning platform that subscribe to each event type, and recorded with the stream's new position
in one transaction; only then is the batch acknowledged. A crash before the commit loses nothing
(the batch comes again); after it, the batch comes again and is skipped (its sequences are at or
below the position). The position row is locked while a batch is recorded, and only moves
forward: a process that lost the partition a moment ago records nothing the new holder did. And
a batch that does not follow the position (while two processes hold the partition, each is
delivered part of the stream) is not recorded: the stream is opened again at the stored
position, so that no commit is passed over.

Which platforms have endpoints is known from the :class:`~.interest.EndpointWatch` before any
database work: a commit of another platform is skipped (by its subject alone, once its game's
platform is remembered), and a batch that makes no delivery moves the position only in
memory. The stored position follows at most :data:`POSITION_EVERY_S` later, or when the stream
goes quiet: a crash meanwhile maps those commits again, and again they make nothing. While no
endpoint exists at all, the stream is not followed (nothing in it can be wanted).

Each stream has its own position, and each endpoint its own starting point in each stream
(:attr:`~services.store.webhook_endpoints.Endpoint.starts`). Where a stream is first followed,
or found to be another stream than the position's (a NATS store reset or restored from a
backup): the webhooks start at the oldest point an endpoint asks for, or at the stream's end. An
endpoint hears of what is committed after it was registered, never of a history restored or
replayed into a new stream. So a position behind every endpoint's interest jumps to where it
begins: the commits between are no endpoint's; and an endpoint with no starting point in a
stream (made after it was registered, as partitions are when a deployment is split) is given
the stream's end when the stream is opened, or the stored position when it is found while a
batch is recorded.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

import msgspec
import structlog
from nats.aio.client import Client
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncConnection

from contracts.partitions import Partitions
from contracts.webhooks import encode_webhook, type_of
from contracts.wire import LEAGUE_SUBJECTS, LEAGUES_STREAM, Commit, LeagueCommit
from domain.league import League
from services.runtime.event_store import EventStore, Stored
from services.runtime.follower import Message, Opened, Pace, Partition, after, end_after
from services.runtime.game_stream import GameStream
from services.runtime.league_stream import LeagueStream
from services.runtime.stream_identity import StreamIdentity
from services.store.database import Store, is_store_trouble
from services.store.webhook_endpoints import Endpoint, every_endpoint, platform_key, set_starts
from services.webhooks import outbox
from services.webhooks.events import Made, Seen, game_webhooks, league_webhooks
from services.webhooks.interest import EndpointWatch, Interest, covers, interest_of

log = structlog.get_logger("spades.webhooks")

GAMES_KIND = "webhooks"
"""The ingest of the game partitions: its claims' kind, and its consumers' (``spades-webhooks``)."""
LEAGUES_KIND = "webhooks-leagues"
"""The ingest of the leagues' stream (one partition of its own)."""
LEAGUES = Partition(0, LEAGUES_STREAM, LEAGUE_SUBJECTS)
PACE = Pace(batch_size=500, idle_s=1.0, gather_s=0.02, ack_wait_s=60.0)
"""While the stream is busy, the follower lets more commits arrive for 20 ms: one transaction
(and one round of the deliveries it wakes) for what a busy stream appends meanwhile, rather
than one per message. At most this much is added to a webhook's lag."""
POSITION_EVERY_S = 1.0
"""How long the position may run ahead of the stored one while batches make no delivery."""
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


def game_folds(client: Client, partitions: Partitions) -> Folds[Seen, Commit]:
    return Folds(
        GameStream(client.jetstream(), partitions),
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


# --------------------------------------------------------------------------- the handler


@dataclass(slots=True)
class Place:
    """Where the ingest stands in one stream it follows."""

    identity: StreamIdentity
    position: int
    """The last sequence mapped: ahead of :attr:`stored` while batches make nothing."""
    stored: int
    """The position as the database holds it."""
    stored_at: float
    mapped: Interest
    """What the commits after the stored position were mapped by."""


class Ingest:
    """Follows streams of one kind (the game partitions, or the leagues) into the outbox: a
    :class:`~services.runtime.follower.Handler`, one follower per stream held."""

    def __init__(
        self,
        kind: str,
        js: JetStreamContext,
        store: Store,
        folds: Folds[Any, Any],
        watch: EndpointWatch,
        wake: Callable[[], None],
        *,
        clock: Callable[[], float] = time.time,
        position_every_s: float = POSITION_EVERY_S,
    ) -> None:
        self.kind = kind
        self.js = js
        self.store = store
        self.folds = folds
        self.watch = watch
        self.wake = wake
        self.clock = clock
        self.position_every_s = position_every_s
        self.places: dict[str, Place] = {}
        """Per stream followed now, by name."""
        self.log = log.bind(kind=kind)

    def transient(self, error: BaseException) -> bool:
        return is_store_trouble(error)

    async def open(self, opened: Opened) -> int:
        """Where to follow the stream from (see :meth:`start_position`), once an endpoint
        exists: while none does, the stream is not followed, and once one is registered, the
        stream is looked at again (it has grown meanwhile) and followed at once."""
        stream = opened.partition.stream
        self.places.pop(stream, None)
        start = await self.start_position(opened)
        while not self.watch.endpoints:
            self.log.info("webhooks waiting for an endpoint", stream=stream, after=start)
            await self.watch.until_any()
            info = await self.js.stream_info(stream)
            opened = Opened(opened.partition, StreamIdentity.of(info), info.state.last_seq or 0)
            start = await self.start_position(opened)
        interest = self.watch.interest(stream)
        self.places[stream] = Place(opened.identity, start, start, self.clock(), interest)
        return start

    async def start_position(self, opened: Opened) -> int:
        """Where to follow the stream from, recorded: the stored position if it belongs to the
        stream found (or where every endpoint's interest begins, if that is later), else where
        the endpoints' interest begins (see the module's docstring)."""
        stream, found = opened.partition.stream, opened.identity
        async with self.store.writing() as conn:
            held = await outbox.lock_position(conn, stream)
            last = await end_after(self.js, opened, held.position)
            same = held.known and held.stream_created == found.created and held.position <= last
            # Where an endpoint asks for more than the stream holds, it was registered on
            # another stream: it hears of this one from its end.
            endpoints = await every_endpoint(conn, hold=True)
            endpoints = await _placed(
                conn,
                endpoints,
                stream,
                given=held.position if same else last,
                most=None if same else last,
            )
            self.watch.saw(endpoints)
            asked = min(interest_of(endpoints, stream).values(), default=last)
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
            await outbox.set_position(conn, stream, start, found.created, known=held.known)
        return start

    async def apply(self, opened: Opened, batch: Sequence[Message]) -> bool:
        """Record the deliveries of a batch and move the position past it; False when the
        batch does not follow the position or the endpoints want what was mapped without them
        (follow again from the stored position), or when none is left (follow again once there
        is one)."""
        stream = opened.partition.stream
        place = self.places[stream]
        fresh = await after(self.js, opened.partition, place.position, batch)
        if fresh is None:
            self.log.warning(
                "a batch that does not follow the position: opening the stream again",
                stream=stream,
                position=place.position,
                first=batch[0].sequence,
                last=batch[-1].sequence,
            )
            return False
        if not fresh:
            return True
        interest = self.watch.interest(stream)
        if interest != place.mapped:
            if place.stored < place.position and not covers(place.mapped, interest, place.position):
                return False
            place.mapped = interest
        made: list[tuple[int, str, Made]] = []
        keys: list[str] = []
        for message in fresh:
            try:
                made += await self._made(message, interest, keys)
            except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as error:
                self.log.error(
                    "a stream message made no webhook",
                    stream=stream,
                    sequence=message.sequence,
                    error=repr(error),
                )
        last = fresh[-1].sequence
        if made or self.clock() - place.stored_at >= self.position_every_s:
            try:
                recorded = await self._record(stream, place, last, made)
            except BaseException:
                self.folds.forget(keys)  # their states ran ahead of what was recorded
                raise
            if recorded is None:
                self.folds.forget(keys)
                return False
            if recorded:
                self.wake()
        place.position = last
        return await self._still_wanted(stream, place)

    async def idle(self, opened: Opened) -> bool:
        """The stream is quiet: store the position mapped so far."""
        stream = opened.partition.stream
        place = self.places[stream]
        stored = place.stored >= place.position
        if not stored and await self._record(stream, place, place.position, []) is None:
            return False
        return await self._still_wanted(stream, place)

    async def _still_wanted(self, stream: str, place: Place) -> bool:
        """Whether any endpoint is left; if none, the position is stored and the stream is
        left until one is registered."""
        if self.watch.endpoints:
            return True
        if place.stored < place.position:
            await self._record(stream, place, place.position, [])
        return False

    async def _made(
        self, message: Message, interested: Interest, keys: list[str]
    ) -> list[tuple[int, str, Made]]:
        sequence = message.sequence
        remembered = self.folds.remembered(message.subject)
        if remembered is not None and sequence <= interested.get(remembered[1], sequence):
            self.folds.drop(remembered[0])  # no endpoint of its platform wants it: not decoded
            return []
        stored = self.folds.decode(sequence, message.subject, message.data)
        if not stored.commit.events:
            return []  # a refusal: nothing happened
        key = self.folds.key(stored)
        platform = await self.folds.platform(stored)
        if sequence <= interested.get(platform, sequence):
            self.folds.drop(key)  # no endpoint of its platform wants it: keep nothing
            return []
        keys.append(key)
        return [(sequence, platform, made) for made in await self.folds.made(stored)]

    async def _record(
        self, stream: str, place: Place, last: int, made: list[tuple[int, str, Made]]
    ) -> int | None:
        """Record ``made`` and move the stored position to ``last``, in one transaction; the
        deliveries pending, or None (nothing recorded) when the endpoints held want what the
        commits since the stored position were mapped without."""
        now = self.clock()
        async with self.store.writing() as conn:
            held = await outbox.lock_position(conn, stream)
            if held.stream_created != place.identity.created:
                raise RuntimeError("the position was moved to another stream meanwhile")
            if held.position >= last:
                return 0  # recorded already (by this process, or by the partition's new holder)
            endpoints = await every_endpoint(conn, hold=True)
            endpoints = await _placed(conn, endpoints, stream, given=held.position)
            self.watch.saw(endpoints)
            if not covers(place.mapped, interest_of(endpoints, stream), last):
                self.log.info(
                    "webhooks mapping again for new endpoints", stream=stream, after=held.position
                )
                return None
            pending: list[outbox.Pending] = []
            for sequence, platform, one in made:
                if sequence <= held.position:
                    continue
                kind = type_of(one.webhook)
                body = encode_webhook(one.webhook)
                identifier = message_id()
                for endpoint in endpoints:
                    if _wants(endpoint, stream, platform, kind, sequence):
                        status = outbox.PENDING if endpoint.enabled else outbox.SKIPPED
                        pending.append(
                            outbox.Pending(endpoint.id, identifier, kind, one.chain, body, status)
                        )
            await outbox.record(conn, pending, now)
            await outbox.set_position(conn, stream, last, place.identity.created, known=held.known)
        place.stored, place.stored_at = last, now
        return sum(delivery.status == outbox.PENDING for delivery in pending)


async def _placed(
    conn: AsyncConnection,
    endpoints: list[Endpoint],
    stream: str,
    *,
    given: int,
    most: int | None = None,
) -> list[Endpoint]:
    """The endpoints, each with a starting point in ``stream``: ``given`` where it had none, and
    at most ``most`` (the stream's end, for a stream other than the one it was registered on);
    those changed are written."""
    placed: list[Endpoint] = []
    for endpoint in endpoints:
        after = endpoint.after(stream)
        start = given if after is None else after if most is None else min(after, most)
        if start != after:
            endpoint = replace(endpoint, starts={**endpoint.starts, stream: start})
            await set_starts(conn, endpoint.id, endpoint.starts)
        placed.append(endpoint)
    return placed


def _wants(endpoint: Endpoint, stream: str, platform: str, kind: str, sequence: int) -> bool:
    after = endpoint.after(stream)
    return (
        endpoint.platform == platform
        and kind in endpoint.events
        and after is not None
        and sequence > after
    )
