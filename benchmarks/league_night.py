"""A league night on the cluster: the whole system, two of every process, one of each killed.

Three ``nats-server`` nodes on loopback form a cluster with K partitions (R3, their leaders on
different nodes); two engines, two projection workers, two webhooks workers, two timers workers
and two gateways run against it, each ``spades serve <kind>`` of its own with its own broker
user, on one PostgreSQL read-model database. A league of bots that think for a while, with some
idle players and a clock (an idle seat's turns run out and the service plays them), plays round
after round over both gateways, and a platform's receiver takes every webhook.

During one round, one process of every worker kind is killed with SIGKILL, one after another,
and then the NATS node that leads a partition. The night then checks what the service promises:

- every round ends (the league records it over);
- every game's history is sound and audits clean;
- the read models equal a rebuild from the streams, row for row;
- every webhook event arrives (what each game's history makes, byte for byte), in order per
  game, and none twice by ``webhook-id`` but what the killed webhooks process had in flight;
- every timeout is one action: no turn of any game timed out twice;

and measures how long each kind took to fail over (from the kill until the survivor holds every
partition, read from the processes' ``/metrics``; for the node, until every partition has a
leader again and a command is answered).

``tests/integration/test_league_night.py`` runs a short night in CI; ``spades bench
league-night`` a long one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import nats.errors
import sqlalchemy as sa
from nats.aio.client import Client

from benchmarks.partitions import cluster
from benchmarks.webhook_receiver import Receiver
from contracts.leagues import StartedTable
from contracts.partitions import Partitions
from contracts.webhooks import EVENT_TYPES, encode_webhook, read_webhook
from domain.events import TimedOut
from services.audit.history import chain_problems
from services.audit.replay import audit_game
from services.bots.runner import play_game
from services.bots.strategy import Bot
from services.client import SpadesClient
from services.client.leagues import LeagueClient
from services.client.webhooks import WebhookClient
from services.runtime.broker_users import ADMIN
from services.runtime.credentials import connect_options
from services.runtime.game_stream import GameStream, StoredCommit
from services.runtime.leaders import leaders
from services.runtime.nats_server import EmbeddedNats, free_ports
from services.store.database import Store, open_store
from services.store.schema import webhook_deliveries
from services.webhooks.events import Seen, game_webhooks

WORKERS = ("engine", "projections", "webhooks", "timers")
KINDS = (*WORKERS, "gateway")
PLATFORM, API_KEY = "night", "league-night-platform-key"
HELD = re.compile(r'^spades_partitions_held\{kind="([a-z-]+)"\} ([0-9.e+]+)$', re.MULTILINE)
WORKS = {
    "engine": ("engine",),
    "projections": ("projections",),
    "webhooks": ("webhooks", "webhooks-leagues"),
    "timers": ("timers",),
}
"""The work each worker kind claims partitions of (``spades_partitions_held``'s label)."""
READY_POLL_S = 0.1
QUICK_SCHEDULE = "1s,1s,2s,2s,5s,5s,10s"


SECRET_KEY = "5" * 64
"""The processes' shared key (seat tokens, and the hands in progress they seal)."""


@dataclass(frozen=True)
class NightPlan:
    players: int = 64
    rounds: int = 3
    partitions: int = 3
    idle: float = 0.1
    """Share of the players who never act: their clocks play their seats."""
    turn_s: float = 1.0
    think_s: tuple[float, float] = (0.02, 0.25)
    """A bot thinks a random while in this range before each action it sends."""
    kill_round: int = 2
    kill_every_s: float = 2.0
    """Seconds between the kills, from the kill round's start."""
    concurrency: int = 16
    seed: int = 7
    round_timeout_s: float = 600.0


class Failover(msgspec.Struct):
    kind: str
    killed: str
    seconds: float | None
    """From the kill until the survivors hold every partition (None: they did not in time)."""


class NightReport(msgspec.Struct):
    plan: dict[str, Any]
    seconds: float
    rounds_finished: int
    games: int
    commits: int
    timeouts: int
    failovers: list[Failover]
    history_problems: list[str]
    """Games whose history is not sound or does not audit clean, with the first problem."""
    timed_out_twice: list[str]
    """Turns (game, version, seat) that timed out more than once."""
    read_model_differences: list[str]
    """Tables whose rows differ from a rebuild from the streams."""
    webhooks_expected: int
    webhooks_received: int
    webhooks_missing: list[str]
    webhooks_out_of_order: list[str]
    webhooks_twice: int
    """webhook-ids received more than once."""
    webhooks_twice_not_in_flight: list[str]
    """Of those, ids the killed webhooks process did not hold when it was killed."""
    actions: int

    @property
    def ok(self) -> bool:
        return (
            self.rounds_finished == self.plan["rounds"]
            and not self.history_problems
            and not self.timed_out_twice
            and not self.read_model_differences
            and not self.webhooks_missing
            and not self.webhooks_out_of_order
            and not self.webhooks_twice_not_in_flight
            and all(f.seconds is not None for f in self.failovers)
        )


# --------------------------------------------------------------------------- processes


class Process:
    """``spades serve <kind>``, its log in a file of its own."""

    def __init__(self, kind: str, number: int, port: int, env: dict[str, str], logs: Path):
        self.kind = kind
        self.name = f"{kind}-{number}"
        self.port = port
        self.env = env
        self.log_path = logs / f"{self.name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        """When it was last started (``time.time()``)."""

    def start(self) -> None:
        self.started = time.time()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "services.cli.main", "serve", self.kind],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class Fleet:
    """``per_kind`` of every process kind (two by default), on the nodes given (a cluster's, or
    one server); the streams have as many replicas as there are nodes, three at most."""

    def __init__(
        self,
        nodes: list[EmbeddedNats],
        layout: Partitions,
        database_url: str,
        root: Path,
        per_kind: int = 2,
    ) -> None:
        self.nodes = nodes
        self.layout = layout
        self.database_url = database_url
        self.root = root
        self.per_kind = per_kind
        self.processes: list[Process] = []

    @property
    def nats_url(self) -> str:
        return ",".join(node.url for node in self.nodes)

    def env(self, kind: str, number: int, port: int) -> dict[str, str]:
        data = self.root / f"{kind}-{number}"
        data.mkdir(parents=True, exist_ok=True)
        credentials = self.nodes[0].credentials_for(kind)
        assert credentials is not None
        own = (
            {"SPADES_PORT": str(port)} if kind == "gateway" else {"SPADES_METRICS_PORT": str(port)}
        )
        return {
            **os.environ,
            "SPADES_NATS_URL": self.nats_url,
            "SPADES_NATS_CREDS": str(credentials),
            "SPADES_DATA_DIR": str(data),
            "SPADES_PARTITIONS": str(self.layout.count),
            "SPADES_STREAM_REPLICAS": str(min(3, len(self.nodes))),
            "SPADES_DATABASE_URL": self.database_url,
            "SPADES_API_KEYS": f"{PLATFORM}:{API_KEY}",
            "SPADES_SECRET_KEY": SECRET_KEY,
            "SPADES_RATE_LIMIT": "off",
            # one platform plays the whole night: its engine budget is the organiser's to size
            "SPADES_MAX_COMMANDS_PER_MINUTE": "1000000",
            "SPADES_WEBHOOK_ALLOW_PRIVATE": "1",
            "SPADES_WEBHOOK_TIMEOUT_S": "5",
            "SPADES_WEBHOOK_SCHEDULE": QUICK_SCHEDULE,
            "SPADES_LOG_FORMAT": "json",
            "SPADES_LOG_LEVEL": "INFO",
            **own,
        }

    def start(self) -> None:
        """Start every process: made on the first call, the same ones again (their ports, data
        directories and logs) once stopped."""
        if not self.processes:
            ports = iter(free_ports(self.per_kind * len(KINDS)))
            logs = self.root / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            for kind in KINDS:
                for number in range(self.per_kind):
                    port = next(ports)
                    env = self.env(kind, number, port)
                    self.processes.append(Process(kind, number, port, env, logs))
        for process in self.processes:
            if not process.alive:
                process.start()

    def stop(self) -> None:
        for process in self.processes:
            process.stop()

    def of(self, kind: str) -> list[Process]:
        return [p for p in self.processes if p.kind == kind]

    def alive(self, kind: str) -> list[Process]:
        return [p for p in self.of(kind) if p.alive]

    async def held(self, work: str) -> int:
        """Partitions of ``work`` held now, over the live processes that do it."""
        kind = "webhooks" if work == "webhooks-leagues" else work
        total = 0
        async with httpx.AsyncClient(timeout=2.0) as http:
            for process in self.alive(kind):
                with contextlib.suppress(httpx.HTTPError):
                    text = (await http.get(f"{process.url}/metrics")).text
                    total += sum(int(float(v)) for k, v in HELD.findall(text) if k == work)
        return total

    async def until_held(self, work: str, count: int, timeout_s: float) -> float | None:
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            if await self.held(work) == count:
                return time.monotonic() - started
            await asyncio.sleep(0.1)  # other processes' state, read from their metrics
        return None

    async def until_ready(self, timeout_s: float = 90.0) -> dict[str, float]:
        """Until every kind is ready (each watched at once): the seconds from each kind's
        last start until it was."""
        took = await asyncio.gather(*(self.ready_after(kind, timeout_s) for kind in KINDS))
        return dict(zip(KINDS, took, strict=True))

    async def ready_after(self, kind: str, timeout_s: float) -> float:
        """Seconds from the last start of ``kind``'s processes until they are ready: a worker
        kind's live processes hold every partition of its work between them (their
        ``/metrics``), every gateway answers ``/readyz`` (the engine and the read models
        caught up)."""
        started = max(process.started for process in self.of(kind))
        deadline = time.monotonic() + timeout_s
        while not await self._ready(kind):
            if time.monotonic() > deadline:
                held = {work: await self.held(work) for work in WORKS.get(kind, ())}
                raise RuntimeError(f"{kind} is not ready (partitions held: {held})")
            await asyncio.sleep(READY_POLL_S)  # other processes' state, read over HTTP
        return time.time() - started

    def wanted(self, work: str) -> int:
        """The partitions of ``work``: the leagues' stream is one."""
        return 1 if work == "webhooks-leagues" else self.layout.count

    async def _ready(self, kind: str) -> bool:
        if kind in WORKS:
            return all([await self.held(work) == self.wanted(work) for work in WORKS[kind]])
        async with httpx.AsyncClient(timeout=2.0) as http:
            for gateway in self.of(kind):
                try:
                    if (await http.get(f"{gateway.url}/readyz")).status_code != 200:
                        return False
                except httpx.HTTPError:
                    return False
        return True


# --------------------------------------------------------------------------- the players


class ThinkingClient(SpadesClient):
    """A client whose actions come after a while of thought."""

    def __init__(self, base_url: str, think_s: tuple[float, float], rng: random.Random) -> None:
        super().__init__(base_url, api_key=API_KEY)
        self._think_s = think_s
        self._rng = rng
        self.actions = 0

    async def act(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(self._rng.uniform(*self._think_s))
        self.actions += 1
        return await super().act(*args, **kwargs)


# --------------------------------------------------------------------------- the night


class Night:
    def __init__(self, plan: NightPlan, database_url: str, root: Path) -> None:
        self.plan = plan
        self.layout = Partitions(plan.partitions)
        self.database_url = database_url
        self.root = root
        self.failovers: list[Failover] = []
        self.in_flight_at_kill: set[str] = set()
        self.game_ids: list[str] = []
        self.rounds_finished = 0

    async def run(self) -> NightReport:
        started = time.monotonic()
        with cluster(self.root / "nats", self.layout) as nodes:
            fleet = Fleet(nodes, self.layout, self.database_url, self.root)
            fleet.start()
            store = open_store(self.database_url)
            admin = await _admin(nodes)
            receiver = Receiver().start()
            try:
                await fleet.until_ready()
                await _spread(admin, self.layout)
                clients = [
                    ThinkingClient(g.url, self.plan.think_s, random.Random(self.plan.seed + n))
                    for n, g in enumerate(fleet.of("gateway"))
                ]
                await WebhookClient(clients[0]).create(receiver.url, EVENT_TYPES)
                await self._league(fleet, nodes, admin, store, clients)
                for client in clients:
                    await client.aclose()
                return await self._report(fleet, admin, store, receiver, started, clients)
            finally:
                receiver.stop()
                await admin.close()
                await store.close()
                fleet.stop()

    async def _league(
        self,
        fleet: Fleet,
        nodes: list[EmbeddedNats],
        admin: Client,
        store: Store,
        clients: list[ThinkingClient],
    ) -> None:
        plan = self.plan
        names = [f"player {n}" for n in range(1, plan.players + 1)]
        idle = frozenset(random.Random(plan.seed).sample(names, round(plan.idle * len(names))))
        leagues = LeagueClient(clients[0])
        clock = {"turn_s": plan.turn_s, "on_timeout": "auto", "away_after": 1}
        rules = {"preset": "partnership", "max_hands": 1}
        league = await leagues.create_league(
            "league night", rules, names, rounds=plan.rounds, clock=clock, idempotency_key="night"
        )
        gate = asyncio.Semaphore(plan.concurrency)
        for number in range(1, plan.rounds + 1):
            started = await leagues.start_round(
                league.league_id, number, idempotency_key=f"night-{number}"
            )
            self.game_ids += [table.game_id for table in started.tables]
            playing = [
                self._play(table, clients[n % len(clients)], idle, gate)
                for n, table in enumerate(started.tables)
            ]
            faults = [self._faults(fleet, nodes, admin, store)] if number == plan.kill_round else []
            async with asyncio.timeout(plan.round_timeout_s):
                await asyncio.gather(*playing, *faults)
                # the league records the round over itself: its state is polled over HTTP
                while not (await leagues.round(league.league_id, number)).finished:  # noqa: ASYNC110
                    await asyncio.sleep(0.25)
            self.rounds_finished += 1

    async def _play(
        self,
        table: StartedTable,
        client: SpadesClient,
        idle: frozenset[str],
        gate: asyncio.Semaphore,
    ) -> None:
        active = {seat.seat: seat.token for seat in table.seats if seat.player not in idle}
        async with gate:
            if active:
                await play_game(client, table.game_id, active, Bot, patience_s=120.0)

    async def _faults(
        self, fleet: Fleet, nodes: list[EmbeddedNats], admin: Client, store: Store
    ) -> None:
        """Kill one process of each worker kind, then a node leading a partition, one after
        another, and measure each fail-over."""
        for kind in WORKERS:
            await asyncio.sleep(self.plan.kill_every_s)
            victim = fleet.alive(kind)[0]
            if kind == "webhooks":
                self.in_flight_at_kill = await _claimed_by(store, victim.pid)
            victim.kill()
            if kind == "webhooks":
                # what it claimed between the first look and the kill was in flight too
                self.in_flight_at_kill |= await _claimed_by(store, victim.pid)
            for work in WORKS[kind]:
                took = await fleet.until_held(work, fleet.wanted(work), 60.0)
                self.failovers.append(Failover(kind=work, killed=victim.name, seconds=took))
        await asyncio.sleep(self.plan.kill_every_s)
        placed = await leaders(admin.jetstream(), self.layout)
        target = placed.get(1) or placed.get(0)
        node = next(n for n in nodes if n.server_name == target)
        killed_at = time.monotonic()
        assert node._process is not None
        node._process.kill()
        node._process.wait(timeout=10)
        took = await _until_led(admin, self.layout, target or "", 60.0)
        self.failovers.append(
            Failover(kind="nats-node", killed=f"{target} (a partition leader)", seconds=took)
        )
        if took is not None:
            self.failovers[-1].seconds = time.monotonic() - killed_at

    async def _report(
        self,
        fleet: Fleet,
        admin: Client,
        store: Store,
        receiver: Receiver,
        started: float,
        clients: list[ThinkingClient],
    ) -> NightReport:
        js = admin.jetstream()
        stream = GameStream(js, self.layout)
        histories = {game: await _history(stream, game) for game in self.game_ids}
        problems = _history_problems(histories)
        twice = _timed_out_twice(histories)
        expected = {game: _truth(history) for game, history in histories.items()}
        received = await _all_delivered(store, receiver, sum(map(len, expected.values())))
        differences = await _rebuilt_differences(fleet, store, js, self.layout)
        by_game: dict[str, list[bytes]] = {}
        ids = Counter(request.id for request in received)
        seen_ids: set[str] = set()
        for request in received:
            game = request.json.get("data", {}).get("game_id")
            if game in expected and request.id not in seen_ids:
                by_game.setdefault(game, []).append(_as_made(request.body))
            seen_ids.add(request.id)
        missing, out_of_order = [], []
        for game, bodies in expected.items():
            got = by_game.get(game, [])
            if sorted(got) != sorted(bodies):
                missing.append(f"{game}: {len(got)} of {len(bodies)}")
            elif got != bodies:
                out_of_order.append(game)
        repeated = {i for i, n in ids.items() if n > 1}
        return NightReport(
            plan=msgspec.structs.asdict(_plain(self.plan)),
            seconds=round(time.monotonic() - started, 1),
            rounds_finished=self.rounds_finished,
            games=len(histories),
            commits=sum(map(len, histories.values())),
            timeouts=sum(_timeouts(h) for h in histories.values()),
            failovers=self.failovers,
            history_problems=problems,
            timed_out_twice=twice,
            read_model_differences=differences,
            webhooks_expected=sum(map(len, expected.values())),
            webhooks_received=len(received),
            webhooks_missing=missing,
            webhooks_out_of_order=out_of_order,
            webhooks_twice=len(repeated),
            webhooks_twice_not_in_flight=sorted(repeated - self.in_flight_at_kill),
            actions=sum(client.actions for client in clients),
        )


class _Plan(msgspec.Struct):
    players: int
    rounds: int
    partitions: int
    idle: float
    turn_s: float
    kill_round: int


def _plain(plan: NightPlan) -> _Plan:
    return _Plan(
        players=plan.players,
        rounds=plan.rounds,
        partitions=plan.partitions,
        idle=plan.idle,
        turn_s=plan.turn_s,
        kill_round=plan.kill_round,
    )


async def _admin(nodes: list[EmbeddedNats]) -> Client:
    import nats

    return await nats.connect(
        [node.url for node in nodes],
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.2,
        **connect_options(nodes[0].credentials_for(ADMIN)),
    )


async def _spread(admin: Client, layout: Partitions, timeout_s: float = 60.0) -> None:
    """Until the partitions lead from as many nodes as they can (the engines move them)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            placed = await leaders(admin.jetstream(), layout)
            if None not in placed.values() and len(set(placed.values())) == min(layout.count, 3):
                return
        await asyncio.sleep(0.5)
    raise RuntimeError("the partitions' leaders were not spread over the nodes")


async def _until_led(
    admin: Client, layout: Partitions, gone: str, timeout_s: float
) -> float | None:
    """Seconds until every partition has a leader that is not ``gone``."""
    started = time.monotonic()
    js = admin.jetstream(timeout=1.0)  # a stream mid-election does not answer: ask again soon
    while time.monotonic() - started < timeout_s:
        with contextlib.suppress(Exception):
            placed = await leaders(js, layout)
            if all(leader and leader != gone for leader in placed.values()):
                return time.monotonic() - started
        await asyncio.sleep(0.1)
    return None


async def _claimed_by(store: Store, pid: int) -> set[str]:
    table = webhook_deliveries
    async with store.reading() as conn:
        found = await conn.execute(
            sa.select(table.c.message_id).where(
                table.c.status == "pending", table.c.claim.like(f"%-{pid}-%")
            )
        )
        return set(found.scalars())


async def _history(stream: GameStream, game: str, tries: int = 10) -> list[StoredCommit]:
    """A game's history, read again while the cluster answers a read as unavailable (after the
    node's kill, a read's consumer may meet a stream or consumer still finding its leader)."""
    for _ in range(tries - 1):
        try:
            return await stream.read(game)
        except nats.errors.Error as error:
            print(f"reading {game} again: {error!r}", file=sys.stderr)
            await asyncio.sleep(1.0)
    return await stream.read(game)


def _history_problems(histories: Mapping[str, list[StoredCommit]]) -> list[str]:
    problems = []
    for game, history in histories.items():
        if not history:
            problems.append(f"{game}: no history")
            continue
        chain = chain_problems(history)
        if chain:
            problems.append(f"{game}: {chain[0]}")
            continue
        report = audit_game(history)
        if not report.ok:
            problems.append(f"{game}: {report.problems[0] if report.problems else 'not ok'}")
    return problems


def _timeouts(history: list[StoredCommit]) -> int:
    return sum(isinstance(e, TimedOut) for stored in history for e in stored.commit.events)


def _timed_out_twice(histories: Mapping[str, list[StoredCommit]]) -> list[str]:
    """Turns timed out more than once: a timeout at a version the game's history already timed
    out at for that seat (the turn's version is the one before the commit's first event)."""
    twice = []
    for game, history in histories.items():
        seen: set[tuple[int, int]] = set()
        for stored in history:
            commit = stored.commit
            for event in commit.events:
                if isinstance(event, TimedOut):
                    turn = (commit.version - len(commit.events), event.seat)
                    if turn in seen:
                        twice.append(f"{game} v{turn[0]} seat {turn[1]}")
                    seen.add(turn)
    return twice


def _as_made(body: bytes) -> bytes:
    """A received webhook as the game's history made it: a ``hand.scored`` without the receipt
    the webhooks worker adds from the audit log when it sends it."""
    webhook = msgspec.json.decode(body)
    if webhook.get("type") == "hand.scored" and isinstance(webhook.get("data"), dict):
        webhook["data"]["receipt"] = None
    return encode_webhook(read_webhook(msgspec.json.encode(webhook)))


def _truth(history: list[StoredCommit]) -> list[bytes]:
    """The webhook bodies the game's history makes, in order."""
    seen: Seen | None = None
    bodies: list[bytes] = []
    for stored in history:
        seen, made = game_webhooks(seen, stored.commit)
        bodies += [encode_webhook(one.webhook) for one in made]
    return bodies


async def _all_delivered(store: Store, receiver: Receiver, expected: int) -> list[Any]:
    """What the receiver got, once the outbox has nothing pending (or two minutes passed)."""
    table = webhook_deliveries
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        async with store.reading() as conn:
            pending = await conn.scalar(
                sa.select(sa.func.count()).select_from(table).where(table.c.status == "pending")
            )
        if not pending and len({r.id for r in receiver.received}) >= expected:
            break
        await asyncio.sleep(0.5)
    return list(receiver.received)


async def _rebuilt_differences(
    fleet: Fleet, store: Store, js: Any, layout: Partitions
) -> list[str]:
    """Stop the projection workers, dump the read models, rebuild them all from the streams
    with one worker, dump again, and name the tables whose rows differ."""
    from services.projections.rebuild import rebuild
    from services.projections.registry import READ_MODELS

    await _caught_up(store, js, layout)
    for process in fleet.alive("projections"):
        process.stop()
    tables = [table for model in READ_MODELS.values() for table in model.tables]
    before = {table.name: await _opened_rows(store, table) for table in tables}
    await rebuild(store, None, layout)
    survivor = fleet.of("projections")[-1]
    survivor.start()
    await _caught_up(store, js, layout)
    survivor.stop()
    differences = []
    for table in tables:
        after = await _opened_rows(store, table)
        if after != before[table.name]:
            differences.append(
                f"{table.name}: {len(before[table.name])} rows live, {len(after)} rebuilt, "
                f"{len(set(before[table.name]) ^ set(after))} differ"
            )
    return differences


async def _opened_rows(store: Store, table: sa.Table) -> list[tuple[Any, ...]]:
    """A table's rows, with each hand in progress opened (each sealing draws its own nonce)."""
    from services.projections.registry import opened_rows

    return opened_rows(table, await _rows(store, table), SECRET_KEY.encode())


async def _rows(store: Store, table: sa.Table) -> list[tuple[Any, ...]]:
    async with store.reading() as conn:
        result = await conn.execute(sa.select(table).order_by(*table.primary_key.columns))
        return [tuple(_hashable(v) for v in row) for row in result]


def _hashable(value: Any) -> Any:
    if isinstance(value, dict | list):
        return msgspec.json.encode(value)
    return value


async def _caught_up(store: Store, js: Any, layout: Partitions, timeout_s: float = 180.0) -> None:
    """Until every read model stands at every partition's last sequence."""
    from services.store import positions

    deadline = time.monotonic() + timeout_s
    lasts = {}
    for partition in layout.indexes:
        info = await js.stream_info(layout.stream(partition))
        lasts[partition] = int(info.state.last_seq or 0)
    while time.monotonic() < deadline:
        async with store.reading() as conn:
            stored = await positions.all_positions(conn)
        standing = {
            (model, partition): position.position
            for model, by_partition in stored.items()
            for partition, position in by_partition.items()
        }
        if _all_at(standing, lasts):
            return
        await asyncio.sleep(0.5)
    raise RuntimeError(f"read models did not catch up with {lasts}")


def _all_at(standing: Mapping[Any, int], lasts: Mapping[int, int]) -> bool:
    """Whether every (model, partition) position stands at its partition's last sequence."""
    from services.store.positions import READ_MODELS as NAMES

    for name in NAMES:
        for partition, last in lasts.items():
            if standing.get((name, partition), 0) < last:
                return False
    return True


def run(plan: NightPlan, database_url: str, keep: Path | None = None) -> NightReport:
    """Run a night; its processes' logs and data go to ``keep`` (kept), else a temporary
    directory (removed)."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        return asyncio.run(Night(plan, database_url, keep).run())
    with tempfile.TemporaryDirectory(prefix="spades-league-night-") as root:
        return asyncio.run(Night(plan, database_url, Path(root)).run())


def fresh_schema_url(base: str) -> str:
    """``base`` with a schema of its own (made on first use, ``services.store.database``)."""
    return f"{base}{'&' if '?' in base else '?'}schema=night_{secrets.token_hex(5)}"
