"""Every handler of the shared follower (:mod:`services.runtime.follower`), as the contract suite
(``test_follower_contract.py``) drives it: how a process holding the partition makes one, what
to append to its stream, what it has applied, and where its stored position stands.

Each :class:`Harness` is one worker kind on a real nats-server and its real stores: the read
models and the webhooks' outbox in SQLite, the round watch's and the timers' checkpoints in the
NATS key-value bucket. Every message the suite appends through :meth:`Harness.append` has an
effect of its own the harness can see, under the name the suite gave it:

- projections: the ``games`` row of a game created;
- webhooks: the ``game.created`` delivery of a game created, recorded for an endpoint;
- webhooks of the leagues: the ``league.round_started`` delivery of a league's first round;
- the round watch: the round end it asks the league engine for when a league's table ends;
- the timers: the running clock of a game created on the clock, in the partition's checkpoint.

Only store trouble is ever made up (:class:`Trouble`): the handlers, their stores and the
streams are those the workers run.
"""

from __future__ import annotations

import itertools
import shutil
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import msgspec
import nats.errors
import sqlalchemy as sa
from nats.aio.client import Client
from sqlalchemy.ext.asyncio import AsyncConnection

from benchmarks.projections import GameWriter
from contracts.partitions import ONE
from contracts.wire import (
    CreateLeagueRequest,
    LeagueCommandRequest,
    LeagueRequestBody,
    ScheduleRoundRequest,
)
from domain.clock import Clock
from domain.commands import CreateGame, TakeSeat
from domain.events import AnyEvent, GameEnded
from domain.game import decide
from domain.shuffle import SeededDeal
from services.engine.engine import Engine
from services.engine.league_engine import LeagueEngine
from services.engine.round_watch import KIND as ROUND_WATCH
from services.engine.round_watch import RoundWatch
from services.engine.service import ensure_streams
from services.projections.registry import READ_MODELS
from services.projections.service import Projections
from services.projections.worker import KIND as PROJECTIONS
from services.runtime.checkpoints import Checkpoint, Checkpoints
from services.runtime.follower import Handler, Partition
from services.runtime.game_stream import GameStream, game_partitions
from services.runtime.league_stream import LeagueStream
from services.runtime.stream_identity import StreamIdentity
from services.runtime.webhook_signing import new_secret
from services.store import positions
from services.store.database import Statements, Store, open_store
from services.store.migrations import migrate
from services.store.schema import games, webhook_deliveries
from services.store.webhook_endpoints import LOCAL_PLATFORM, Endpoint, add
from services.timers.clocks import RunningClocks
from services.timers.worker import KIND as TIMERS
from services.timers.worker import Timers
from services.webhooks import outbox
from services.webhooks.ingest import (
    GAMES_KIND,
    LEAGUES,
    LEAGUES_KIND,
    POSITION_EVERY_S,
    Folds,
    Ingest,
    game_folds,
    league_folds,
)
from services.webhooks.interest import EndpointWatch
from tests.integration.conftest_projections import TESTS_KEY

[GAMES] = game_partitions(ONE)
TWO_PLAYERS = {"preset": "two-player", "max_hands": 1}
FAR_CLOCK = Clock(turn_s=3600.0)
"""A clock no test waits for: the timers hold its game and fire nothing."""
EVERY_LOOK_S = 3600.0
"""How far a :func:`ticking` clock moves at each look: past any checkpoint's interval."""

AnotherStream = Literal["refuses", "replays", "surveys"]
"""What a handler does with a stream its position does not belong to (another stream of the
name, or one whose end comes before the position): it refuses to follow it (it opens at None),
replays it from its start (0), or surveys what it holds and follows it from its end."""


@dataclass(slots=True)
class Trouble:
    """Store trouble to come: once :attr:`armed`, the next ``times`` writes of a handler's
    store fail as a store fails for a while (locked, unreachable)."""

    times: int
    armed: bool = False
    met: int = 0

    def meet(self, error: Exception) -> None:
        if self.armed and self.met < self.times:
            self.met += 1
            raise error


class TroubledStore(Store):
    """The harness's database, through whose writing transactions :class:`Trouble` comes."""

    def __init__(self, store: Store, trouble: Trouble) -> None:
        self.__dict__.update(store.__dict__)  # the same engines, and the same writers' turn
        self.trouble = trouble

    @staticmethod
    def _locked() -> Exception:
        return sa.exc.OperationalError(
            "BEGIN IMMEDIATE", None, sqlite3.OperationalError("database is locked")
        )

    def writing(self) -> AbstractAsyncContextManager[AsyncConnection]:
        self.trouble.meet(self._locked())
        return super().writing()

    def applying(self) -> AbstractAsyncContextManager[Statements]:
        self.trouble.meet(self._locked())
        return super().applying()


class TroubledCheckpoints(Checkpoints):
    """The checkpoint bucket, whose writes :class:`Trouble` makes time out."""

    def __init__(self, checkpoints: Checkpoints, trouble: Trouble) -> None:
        super().__init__(checkpoints.js, checkpoints.kind, checkpoints.replicas)
        self.trouble = trouble

    async def write(self, checkpoint: Checkpoint) -> None:
        self.trouble.meet(nats.errors.TimeoutError())
        await super().write(checkpoint)


def ticking() -> Callable[[], float]:
    """A monotonic clock that moves :data:`EVERY_LOOK_S` at every look: a handler that stores
    its position at most every so often stores it with every batch."""
    looks = itertools.count()
    return lambda: next(looks) * EVERY_LOOK_S


class Harness(ABC):
    """One worker kind's handler on its partition, and what the contract suite reads of it."""

    kind: ClassVar[str]
    partition: ClassVar[Partition] = GAMES
    on_another_stream: ClassVar[AnotherStream]
    repeats_when_shared: ClassVar[bool] = False
    """Whether, while two processes hold the partition at once, both may apply one message
    (each applying, in order, what follows its own position)."""

    def __init__(self, client: Client, tmp_path: Path, migrated: Path | None = None) -> None:
        self.client = client
        self.js = client.jetstream()
        self.tmp_path = tmp_path
        self.migrated = migrated
        """A read-model database migrated already, to copy rather than migrate one."""

    async def setup(self) -> None:
        await ensure_streams(self.js)

    async def teardown(self) -> None:
        """Release what :meth:`setup` opened."""
        return None

    @abstractmethod
    def handler(self, trouble: Trouble | None = None, *, every_batch: bool = False) -> Handler:
        """A new handler, as a process that gains the partition makes it: nothing in memory,
        the stores as they are. ``trouble`` comes through its store; with ``every_batch``, a
        handler that stores its position at most every so often stores it with every batch."""

    async def close(self, handler: Handler) -> None:
        """End what the handler runs beside its follower (its process loses the partition)."""
        return None

    async def prepare(self, names: Sequence[str]) -> None:
        """Append what the messages of :meth:`append` need before them (by default nothing)."""
        return None

    @abstractmethod
    async def append(self, names: Sequence[str]) -> list[int]:
        """Append one message with an effect per name, in order; their sequences."""

    @abstractmethod
    async def effects(self) -> list[str]:
        """The names whose messages' effects the stores hold, in the order they were made (the
        projections' rows keep no order: theirs come in the names' order)."""

    @abstractmethod
    async def position(self) -> int:
        """The handler's position in the partition's stream, as stored."""

    @abstractmethod
    async def place(self, position: int) -> None:
        """Store ``position`` as the handler's, in the stream as it is now."""

    async def refusal(self) -> str | None:
        """Why the handler refuses the stream, as it records it (None: it records none)."""
        return None

    async def last(self) -> int:
        """The stream's last sequence."""
        info = await self.js.stream_info(self.partition.stream)
        return int(info.state.last_seq or 0)

    async def created(self) -> str:
        """When the server made the stream, as positions and checkpoints record it."""
        info = await self.js.stream_info(self.partition.stream)
        return StreamIdentity.of(info).created

    async def replace_stream(self) -> None:
        """Delete the partition's stream and make it again: another stream of the name, empty,
        as a reset of NATS or a restore leaves it."""
        await self.js.delete_stream(self.partition.stream)
        await ensure_streams(self.js)


class Games:
    """Games written as the engine commits them, each commit appended to its partition."""

    def __init__(self, client: Client) -> None:
        self.stream = GameStream(client.jetstream())
        self.writers: dict[str, GameWriter] = {}
        self.sequences: dict[str, int] = {}

    async def commit(self, game_id: str, events: list[AnyEvent]) -> int:
        """Append one commit of the game's events; its sequence."""
        writer = self.writers.setdefault(game_id, GameWriter(game_id))
        writer.commit(events)
        sequence = await self.stream.append(
            game_id,
            writer.log.payloads[-1],
            expected=self.sequences.get(game_id, 0),
            command_id=writer.log.commits[-1].command_id,
        )
        self.sequences[game_id] = sequence
        return sequence

    async def create(self, game_id: str, clock: Clock | None = None) -> int:
        """A two-player game created (on ``clock``) for the local platform."""
        command = CreateGame(game_id, TWO_PLAYERS, league=None, clock=clock)
        return await self.commit(game_id, decide(None, command))

    def forget(self) -> None:
        """The stream was made again: every game starts anew."""
        self.writers.clear()
        self.sequences.clear()


# --------------------------------------------------------------------------- databases


async def migrate_once(path: Path) -> Path:
    """A read-model database, migrated, at ``path``: each test copies it (it is made once)."""
    store = open_store(f"sqlite:///{path}")
    try:
        await migrate(store, secret=TESTS_KEY)  # as a service, with its key: every step
    finally:
        await store.close()
    return path


class DatabaseHarness(Harness):
    """A handler whose position is a row of the read-model database (SQLite here)."""

    def __init__(self, client: Client, tmp_path: Path, migrated: Path | None = None) -> None:
        super().__init__(client, tmp_path, migrated)
        self.path = tmp_path / "read_models.db"
        self.store = open_store(f"sqlite:///{self.path}")
        self.games = Games(client)

    async def setup(self) -> None:
        await super().setup()
        if self.migrated is None:
            await migrate(self.store, secret=TESTS_KEY)
        else:
            shutil.copyfile(self.migrated, self.path)

    async def teardown(self) -> None:
        await self.store.close()

    def store_for(self, trouble: Trouble | None) -> Store:
        return self.store if trouble is None else TroubledStore(self.store, trouble)

    async def replace_stream(self) -> None:
        await super().replace_stream()
        self.games.forget()


class ProjectionsHarness(DatabaseHarness):
    """Every read model, as the steady worker of a projections process follows them."""

    kind = PROJECTIONS
    on_another_stream = "refuses"

    def handler(self, trouble: Trouble | None = None, *, every_batch: bool = False) -> Handler:
        crew = Projections(self.store_for(trouble), self.client)
        return crew.steady

    async def append(self, names: Sequence[str]) -> list[int]:
        return [await self.games.create(name) for name in names]

    async def effects(self) -> list[str]:
        async with self.store.reading() as conn:
            found = await conn.execute(sa.select(games.c.game_id).order_by(games.c.game_id))
            return list(found.scalars())

    async def _positions(self) -> dict[str, positions.Position]:
        async with self.store.reading() as conn:
            return await positions.read_all(conn, list(READ_MODELS), self.partition.index)

    async def position(self) -> int:
        return min(stored.position for stored in (await self._positions()).values())

    async def place(self, position: int) -> None:
        async with self.store.writing() as conn:
            await positions.advance(conn, list(READ_MODELS), self.partition.index, position, "")

    async def refusal(self) -> str | None:
        refused = [stored.refusal for stored in (await self._positions()).values()]
        return next((reason for reason in refused if reason is not None), None)


class WebhooksHarness(DatabaseHarness):
    """The webhooks' ingest of the games, for an endpoint of the local platform registered
    before the first game: every game's ``game.created`` is recorded for it."""

    kind = GAMES_KIND
    on_another_stream = "replays"
    events: ClassVar[tuple[str, ...]] = ("game.created",)
    endpoint_id = f"ep_{'contract':0>24}"

    async def setup(self) -> None:
        await super().setup()
        endpoint = Endpoint(
            id=self.endpoint_id,
            platform=LOCAL_PLATFORM,
            url="https://hooks.example/",
            events=self.events,
            secret=new_secret(),
            created_at=0.0,
            starts={self.partition.stream: 0},
        )
        async with self.store.writing() as conn:
            await add(conn, endpoint)

    def folds(self) -> Folds[Any, Any]:
        return game_folds(self.client, ONE)

    def handler(self, trouble: Trouble | None = None, *, every_batch: bool = False) -> Handler:
        store = self.store_for(trouble)
        watch = EndpointWatch(store)
        every_s = 0.0 if every_batch else POSITION_EVERY_S
        return Ingest(
            self.kind, self.js, store, self.folds(), watch, lambda: None, position_every_s=every_s
        )

    async def append(self, names: Sequence[str]) -> list[int]:
        return [await self.games.create(name) for name in names]

    async def effects(self) -> list[str]:
        table = webhook_deliveries
        async with self.store.reading() as conn:
            found = await conn.execute(
                sa.select(table.c.chain)
                .where(table.c.endpoint_id == self.endpoint_id)
                .order_by(table.c.id)
            )
            return [chain.partition(":")[2] for chain in found.scalars()]

    async def position(self) -> int:
        async with self.store.reading() as conn:
            return (await outbox.lock_position(conn, self.partition.stream)).position

    async def place(self, position: int) -> None:
        created = await self.created()
        async with self.store.writing() as conn:
            known = (await outbox.lock_position(conn, self.partition.stream)).known
            await outbox.set_position(conn, self.partition.stream, position, created, known=known)


class LeagueWebhooksHarness(WebhooksHarness):
    """The webhooks' ingest of the leagues' stream: each league's first round, scheduled by
    the league engine, is recorded as ``league.round_started`` for the endpoint."""

    kind = LEAGUES_KIND
    partition = LEAGUES
    events = ("league.round_started",)

    def folds(self) -> Folds[Any, Any]:
        return league_folds(self.client)

    def _engine(self) -> LeagueEngine:
        """The league engine, as one just started holds the leagues: none in memory."""
        return LeagueEngine(LeagueStream(self.js), Engine(GameStream(self.js)).games)

    @staticmethod
    async def _ask(engine: LeagueEngine, league_id: str, body: LeagueRequestBody) -> None:
        request = LeagueCommandRequest(
            command_id=f"{league_id}-{type(body).__name__}", league_id=league_id, body=body
        )
        reply = await engine.answer(msgspec.json.encode(request))
        assert reply.ok, (league_id, reply)

    async def prepare(self, names: Sequence[str]) -> None:
        """Each league created."""
        engine = self._engine()
        for name in names:
            players = ["ann", "bob"]
            await self._ask(
                engine, name, CreateLeagueRequest(name=name, rules=TWO_PLAYERS, players=players)
            )

    async def append(self, names: Sequence[str]) -> list[int]:
        """Each league's first round scheduled."""
        engine = self._engine()
        sequences = []
        for name in names:
            await self._ask(engine, name, ScheduleRoundRequest(round=1))
            sequences.append(await self.last())
        return sequences


# --------------------------------------------------------------------------- checkpoints


class CheckpointHarness(Harness):
    """A handler whose position is a checkpoint in the NATS key-value bucket."""

    def __init__(self, client: Client, tmp_path: Path, migrated: Path | None = None) -> None:
        super().__init__(client, tmp_path, migrated)
        self.games = Games(client)

    def checkpoints(self, trouble: Trouble | None = None) -> Checkpoints:
        checkpoints = Checkpoints(self.js, self.kind)
        return checkpoints if trouble is None else TroubledCheckpoints(checkpoints, trouble)

    async def checkpoint(self) -> Checkpoint:
        return await self.checkpoints().read(self.partition.stream)

    async def position(self) -> int:
        return (await self.checkpoint()).position

    async def place(self, position: int) -> None:
        checkpoints = self.checkpoints()
        held = await checkpoints.read(self.partition.stream)
        created = await self.created()
        placed = msgspec.structs.replace(
            held, position=position, stream=self.partition.stream, stream_created=created
        )
        await checkpoints.write(placed)

    async def replace_stream(self) -> None:
        await super().replace_stream()
        self.games.forget()


class Told(LeagueEngine):
    """The league engine, keeping the command ids it is asked, in order."""

    def __init__(self, client: Client) -> None:
        js = client.jetstream()
        super().__init__(LeagueStream(js), Engine(GameStream(js)).games)
        self.asked: list[str] = []

    def read(self, data: bytes) -> LeagueCommandRequest:
        request = super().read(data)
        self.asked.append(request.command_id)
        return request


class RoundWatchHarness(CheckpointHarness):
    """An engine's round watch: a league's table that ends (its clock forfeits a seat) has it
    ask the league engine to finish the round (``round-end-<game>``). The league engine answers
    ``league_not_found`` here: what the watch asks is its effect, not the league's answer."""

    kind = ROUND_WATCH
    on_another_stream = "replays"
    repeats_when_shared = True
    """The league engine answers a command id once, whoever asks (see the round watch)."""

    def __init__(self, client: Client, tmp_path: Path, migrated: Path | None = None) -> None:
        super().__init__(client, tmp_path, migrated)
        self.told = Told(client)

    def handler(self, trouble: Trouble | None = None, *, every_batch: bool = False) -> Handler:
        checkpoints = self.checkpoints(trouble)
        if every_batch or trouble is not None:
            return RoundWatch(self.told, checkpoints, clock=ticking())
        return RoundWatch(self.told, checkpoints)

    async def close(self, handler: Handler) -> None:
        assert isinstance(handler, RoundWatch)
        await handler.stop()

    @staticmethod
    def table(name: str) -> str:
        """The game of round 1's table 1 in league ``name``."""
        return f"{name}-1-1"

    async def prepare(self, names: Sequence[str]) -> None:
        """Each league's table created and seated (its hand dealt)."""
        for name in names:
            game_id = self.table(name)
            await self.games.commit(
                game_id, decide(None, CreateGame(game_id, TWO_PLAYERS, league=name))
            )
            for player in ("ann", "bob"):
                state = self.games.writers[game_id].state
                deal = SeededDeal(bytes(32))
                await self.games.commit(game_id, decide(state, TakeSeat(player), deal=deal))

    async def append(self, names: Sequence[str]) -> list[int]:
        """Each table ended: its first seat forfeits on time."""
        sequences = []
        for name in names:
            game_id = self.table(name)
            state = self.games.writers[game_id].state
            assert state is not None
            ended = GameEnded(winners=(1,), scores=state.scores, forfeited=0)
            sequences.append(await self.games.commit(game_id, [ended]))
        return sequences

    async def effects(self) -> list[str]:
        return [
            asked.removeprefix("round-end-").removesuffix("-1-1")
            for asked in self.told.asked
            if asked.startswith("round-end-")
        ]


class TimersHarness(CheckpointHarness):
    """The timers: each game created on a clock is held running, in the partition's
    checkpoint."""

    kind = TIMERS
    on_another_stream = "surveys"

    def handler(self, trouble: Trouble | None = None, *, every_batch: bool = False) -> Handler:
        stream = GameStream(self.js)
        checkpoints = self.checkpoints(trouble)
        if every_batch or trouble is not None:
            return Timers(self.client, stream, checkpoints, clock=ticking())
        return Timers(self.client, stream, checkpoints)

    async def close(self, handler: Handler) -> None:
        assert isinstance(handler, Timers)
        await handler.stop()

    async def append(self, names: Sequence[str]) -> list[int]:
        return [await self.games.create(name, FAR_CLOCK) for name in names]

    async def effects(self) -> list[str]:
        """The running clocks the checkpoint holds, by the sequence each was learnt at."""
        state = (await self.checkpoint()).state
        held = msgspec.json.decode(state, type=RunningClocks | None)
        if held is None:
            return []
        return sorted(held.games, key=held.games.__getitem__)


HARNESSES: dict[str, type[Harness]] = {
    harness.kind: harness
    for harness in (
        ProjectionsHarness,
        WebhooksHarness,
        LeagueWebhooksHarness,
        RoundWatchHarness,
        TimersHarness,
    )
}
