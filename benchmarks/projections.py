"""``spades bench projections``: replay a stream of finished games into fresh read models.

The games are random legal play through the domain (:func:`domain.game.decide` and
:func:`~domain.game.evolve`, as :mod:`benchmarks.engine` plays them), each command's events one
:class:`~contracts.wire.Commit` exactly as the engine writes it (versions, command ids, times and
the hash chain), published to a fresh embedded NATS stream, many games interleaved as live
tables would be. Then the projection workers (one per read model) replay the stream into a
fresh SQLite store, and a fresh PostgreSQL schema when one is reachable, timed from start until
every model's position reaches the end of the stream.

The ceiling is the same commits decoded once and replayed through the domain alone
(``evolve`` for every event, a :class:`~domain.records.HandRecorder` per game), with no store
and no NATS: what the events cost before anyone keeps anything. A second reference is NATS
alone: each of the consumers bringing every commit into the process and decoding it, with
no store, which is what the workers' transport costs. The same delivery is measured again through
FastStream's batch pull subscriber (nats-py's ``fetch`` inside), the transport the workers would
have on FastStream: the figure that keeps their own pull loop (:class:`PullFeed`) honest.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import sqlalchemy as sa
from nats.aio.client import Client
from nats.aio.msg import Msg

from contracts.partitions import ONE
from contracts.wire import (
    GAME_SUBJECTS,
    GAMES_STREAM,
    GENESIS,
    Commit,
    encode_commit,
    game_subject,
    read_commit,
)
from domain.commands import AnyCommand, CreateGame, TakeSeat
from domain.events import AnyEvent
from domain.game import DiscardDue, PassDue, decide, evolve, legal_actions, seat_to_act
from domain.records import HandRecorder
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held
from services.projections.registry import READ_MODELS, seal_hands
from services.projections.service import Projections
from services.projections.worker import BATCH_SIZE, Received
from services.runtime.broker_users import ADMIN
from services.runtime.consumer import (
    consumer_config,
    consumer_name,
    open_consumer,
)
from services.runtime.credentials import faststream_security
from services.runtime.event_store import stream_sequence
from services.runtime.game_stream import games_stream_config
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats
from services.store import positions
from services.store.database import Store, open_store, store_url
from services.store.migrations import migrate

PRESETS = ("partnership", "solo", "cutthroat", "three-player-house", "two-player")
LEAGUES = (None, None, "north", "south")
PLAYER_NAMES = tuple(f"player-{n:03d}" for n in range(200))
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
CHUNK = 200
"""Games generated, timed through the domain and published at a time (memory stays bounded)."""


@dataclass(slots=True)
class GameLog:
    """One game's history as the stream holds it: the commits and their exact bytes."""

    game_id: str
    commits: list[Commit] = field(default_factory=list)
    payloads: list[bytes] = field(default_factory=list)

    @property
    def events(self) -> list[AnyEvent]:
        return [event for commit in self.commits for event in commit.events]


class GameWriter:
    """Writes a game as the engine would: each command's events one commit, chained."""

    def __init__(self, game_id: str, start: datetime = EPOCH) -> None:
        self.log = GameLog(game_id)
        self.state: Game | None = None
        self.clock = start
        self.previous = GENESIS

    def commit(self, events: list[AnyEvent]) -> Game:
        """Append one command's events (none: no commit); return the game's state after them."""
        if not events and self.state is not None:
            return self.state
        version = (self.state.version if self.state else 0) + len(events)
        self.clock += timedelta(milliseconds=1500)
        commit = Commit(
            game_id=self.log.game_id,
            version=version,
            command_id=f"{self.log.game_id}-{len(self.log.commits) + 1}",
            time=self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            previous=self.previous,
            events=events,
        )
        data = encode_commit(commit)
        self.previous = hashlib.sha256(data).hexdigest()
        self.log.commits.append(commit)
        self.log.payloads.append(data)
        for event in events:
            self.state = evolve(self.state, event)
        assert self.state is not None
        return self.state


def play_game(
    rng: random.Random,
    game_id: str,
    *,
    preset: str = "partnership",
    max_hands: int = 2,
    league: str | None = None,
    players: list[str] | None = None,
    start: datetime = EPOCH,
) -> GameLog:
    """A finished game of random legal actions, committed as the engine commits."""
    writer = GameWriter(game_id, start)
    rules = {"preset": preset, "max_hands": max_hands}
    game = writer.commit(decide(None, CreateGame(game_id, rules, league=league)))
    for name in players or rng.sample(PLAYER_NAMES, game.rules.players):
        game = writer.commit(decide(game, TakeSeat(name), deal=SeededDeal(rng.randbytes(32))))
    deal = SeededDeal(rng.randbytes(32))
    while game.status != "finished":
        seat = seat_to_act(game)
        assert seat is not None
        action: Any = rng.choice(legal_actions(game, seat))
        if type(action) is PassDue or type(action) is DiscardDue:
            hand = game.hand
            assert hand is not None
            action = action.choose(tuple(rng.sample(cards_held(hand, seat), action.count)))
        command: AnyCommand = action
        played = game.hands_played
        game = writer.commit(decide(game, command, deal=deal))
        if game.hands_played != played:
            deal = SeededDeal(rng.randbytes(32))
    return writer.log


def random_games(count: int, seed: int, *, prefix: str = "g") -> Iterator[GameLog]:
    """``count`` finished games of every preset, 1 to 3 hands each, some in leagues."""
    rng = random.Random(seed)
    for number in range(count):
        yield play_game(
            rng,
            f"{prefix}{number:06d}",
            preset=PRESETS[number % len(PRESETS)],
            max_hands=rng.randint(1, 3),
            league=rng.choice(LEAGUES),
            start=EPOCH + timedelta(minutes=number),
        )


def interleaved(logs: list[GameLog]) -> Iterator[tuple[str, bytes]]:
    """The games' commits as tables playing at once would write them: round-robin."""
    queues = [(game_subject(log.game_id), iter(log.payloads)) for log in logs]
    while queues:
        still = []
        for subject, payloads in queues:
            payload = next(payloads, None)
            if payload is not None:
                yield subject, payload
                still.append((subject, payloads))
        queues = still


def domain_replay(payloads: list[bytes]) -> int:
    """The ceiling's work for one game: decode, evolve, record hands. Returns events seen."""
    state: Game | None = None
    recorder = HandRecorder()
    events = 0
    for data in payloads:
        for event in read_commit(data).events:
            state = evolve(state, event)
            recorder.feed(event)
            events += 1
    return events


# --------------------------------------------------------------------------- figures


class StoreFigures(msgspec.Struct):
    store: str
    seconds: float
    events_per_s: float
    commits_per_s: float
    ratio: float
    """Events per second as a share of the ceiling's."""


class ProjectionFigures(msgspec.Struct):
    games: int
    commits: int
    events: int
    ceiling_events_per_s: float
    """The domain alone: decode, evolve, record hands."""
    delivery_events_per_s: float
    """NATS alone: every commit brought to each worker and decoded, not stored."""
    faststream_delivery_events_per_s: float
    """The same, through FastStream's batch pull subscribers instead of the workers' own."""
    stores: list[StoreFigures]
    postgres: str
    """``measured``, or why PostgreSQL was left out."""


@dataclass(slots=True)
class _Stream:
    """What was published, and what replaying it through the domain alone took."""

    commits: int = 0
    events: int = 0
    domain_s: float = 0.0
    last_sequence: int = 0

    @property
    def ceiling(self) -> float:
        return self.events / self.domain_s


async def _fill_stream(client: Client, games: int, seed: int) -> _Stream:
    """Generate the games chunk by chunk: time each chunk's domain replay, then publish it."""
    js = client.jetstream(publish_async_max_pending=8000)
    await js.add_stream(games_stream_config())
    stream = _Stream()
    logs = random_games(games, seed)
    while chunk := [log for _, log in zip(range(CHUNK), logs, strict=False)]:
        for log in chunk:
            started = time.perf_counter()
            stream.events += domain_replay(log.payloads)
            stream.domain_s += time.perf_counter() - started
            stream.commits += len(log.payloads)
        for subject, payload in interleaved(chunk):
            await js.publish_async(subject, payload, stream=GAMES_STREAM)
    await js.publish_async_completed()
    stream.last_sequence = int((await js.stream_info(GAMES_STREAM)).state.last_seq or 0)
    return stream


async def _replay_seconds(store: Store, client: Client, last: int) -> float:
    """Seconds for fresh read models to reach stream sequence ``last``."""
    started = time.perf_counter()
    # A fresh database: the migrations' sealing step has nothing to seal, and any key takes it.
    async with Projections(store, client, secret=secrets.token_bytes(32)):
        while True:
            async with store.reading() as conn:
                stored = await positions.all_positions(conn)
            reached = [p.position for model in stored.values() for p in model.values()]
            if len(reached) == len(READ_MODELS) and min(reached) >= last:
                return time.perf_counter() - started
            await asyncio.sleep(0.05)


async def _delivery_seconds(client: Client, last: int) -> float:
    """Seconds for one consumer per read model to bring every commit into this process and
    decode it, storing nothing: what NATS delivery alone costs the workers."""

    async def read_to_end(model: str) -> None:
        feed = await open_consumer(client, f"bench-{model}", 0, max_ack_pending=4 * BATCH_SIZE)
        try:
            while True:
                messages = await feed.fetch(BATCH_SIZE, 5.0)
                for message in messages:
                    _decoded(message)
                await messages[-1].ack()
                if stream_sequence(messages[-1].reply) >= last:
                    return
        finally:
            await feed.close()

    started = time.perf_counter()
    await asyncio.gather(*(read_to_end(model) for model in READ_MODELS))
    return time.perf_counter() - started


def _decoded(message: Msg) -> Received:
    """A delivered message as a worker holds it (decoded once)."""
    return Received(stream_sequence(message.reply), message.subject, message.data, ONE)


async def _faststream_delivery_seconds(server: EmbeddedNats, client: Client, last: int) -> float:
    """Seconds for the same delivery through FastStream: one batch pull subscriber per read
    model (``PullSub(batch=True)``, manual acknowledgement, as a worker would need)."""
    from faststream import AckPolicy
    from faststream.nats import JStream, NatsBroker, PullSub

    broker = NatsBroker(
        server.url, logger=None, security=faststream_security(server.credentials_for(ADMIN))
    )
    js = client.jetstream()
    reached = [asyncio.Event() for _ in READ_MODELS]
    for model, done in zip(READ_MODELS, reached, strict=True):
        name = f"bench-faststream-{model}"
        await js.add_consumer(GAMES_STREAM, consumer_config(name, 0, 4 * BATCH_SIZE))
        subscriber = broker.subscriber(
            GAME_SUBJECTS,
            stream=JStream(GAMES_STREAM, declare=False),
            durable=consumer_name(name),
            pull_sub=PullSub(batch_size=BATCH_SIZE, timeout=0.05, batch=True),
            ack_policy=AckPolicy.MANUAL,
        )
        subscriber(_batch_reader(last, done))
    started = time.perf_counter()
    await broker.start()
    try:
        await asyncio.gather(*(done.wait() for done in reached))
        return time.perf_counter() - started
    finally:
        await broker.stop()


def _batch_reader(last: int, done: asyncio.Event) -> Callable[..., Any]:
    from faststream import Context
    from faststream.nats.message import NatsBatchMessage

    async def read(message: NatsBatchMessage = Context("message")) -> None:  # noqa: B008
        batch = message.raw_message
        for msg in batch:
            _decoded(msg)
        await batch[-1].ack()
        if stream_sequence(batch[-1].reply) >= last:
            done.set()

    return read


async def _time_store(name: str, store: Store, client: Client, stream: _Stream) -> StoreFigures:
    try:
        # Every step, the sealing ones too (fresh read models: any key seals their nothing).
        await migrate(store, secret=secrets.token_bytes(32))
        seconds = await _replay_seconds(store, client, stream.last_sequence)
    finally:
        if store.schema is not None:
            async with store.writing() as conn:
                await conn.execute(sa.schema.DropSchema(store.schema, cascade=True))
        await store.close()
    rate = stream.events / seconds
    return StoreFigures(
        store=name,
        seconds=round(seconds, 2),
        events_per_s=round(rate, 1),
        commits_per_s=round(stream.commits / seconds, 1),
        ratio=round(rate / stream.ceiling, 4),
    )


async def _postgres_store(url: str | None) -> tuple[Store | None, str]:
    """A fresh schema of the PostgreSQL at ``url``, or why there is none."""
    if url is None:
        return None, "no SPADES_TEST_POSTGRES_URL or SPADES_DATABASE_URL"
    schema = f"bench_{secrets.token_hex(4)}"
    store = open_store(f"{url}{'&' if '?' in url else '?'}schema={schema}")
    try:
        async with asyncio.timeout(5), store.reading() as conn:
            await conn.execute(sa.text("select 1"))
    except Exception as error:
        await store.close()
        return None, f"unreachable ({type(error).__name__})"
    return store, "measured"


async def measure(
    games: int,
    seed: int,
    postgres_url: str | None,
    progress: Callable[[str], None] | None = None,
) -> ProjectionFigures:
    say = progress or (lambda _: None)
    with tempfile.TemporaryDirectory(prefix="spades-bench-") as scratch:
        async with EmbeddedNats(Path(scratch) / "nats") as server:
            client = await connect(
                server.url, "spades-bench", credentials=server.credentials_for(ADMIN)
            )
            try:
                say(f"generating and publishing {games:,} games ...")
                stream = await _fill_stream(client, games, seed)
                say(f"{stream.commits:,} commits, {stream.events:,} events")
                delivery_s = await _delivery_seconds(client, stream.last_sequence)
                faststream_s = await _faststream_delivery_seconds(
                    server, client, stream.last_sequence
                )
                stores = [("sqlite", open_store(f"sqlite:///{scratch}/read_models.db"))]
                postgres, postgres_state = await _postgres_store(postgres_url)
                if postgres is not None:
                    stores.append(("postgresql", postgres))
                figures = []
                for name, store in stores:
                    figures.append(await _time_store(name, store, client, stream))
                    say(f"{name}: {figures[-1].events_per_s:,.0f} events/s")
            finally:
                await client.close()
    return ProjectionFigures(
        games=games,
        commits=stream.commits,
        events=stream.events,
        ceiling_events_per_s=round(stream.ceiling, 1),
        delivery_events_per_s=round(stream.events / delivery_s, 1),
        faststream_delivery_events_per_s=round(stream.events / faststream_s, 1),
        stores=figures,
        postgres=postgres_state,
    )


def postgres_url_from(environment: dict[str, str]) -> str | None:
    """The PostgreSQL to measure: ``SPADES_TEST_POSTGRES_URL``, else a PostgreSQL
    ``SPADES_DATABASE_URL``."""
    for variable in ("SPADES_TEST_POSTGRES_URL", "SPADES_DATABASE_URL"):
        url = environment.get(variable)
        if url and not store_url(url).is_sqlite:
            return url
    return None


def run(
    games: int,
    seed: int,
    postgres_url: str | None,
    progress: Callable[[str], None] | None = None,
) -> ProjectionFigures:
    seal_hands(secrets.token_bytes(32))  # fresh read models: any key seals their hands
    return asyncio.run(measure(games, seed, postgres_url, progress))
