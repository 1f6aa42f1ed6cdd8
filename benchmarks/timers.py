"""``spades bench timers``: thousands of clocks running at once, and what firing them costs.

An embedded nats-server, one engine and one timer worker (``spades serve timers``), each its own
process. N games are opened with ``clock: {turn_s: T, on_timeout: auto}`` and three of their
four seats taken; then their last seats are taken one after another over T seconds, so their
clocks start spread evenly and from then on all N run at once, due at a steady N / T a second.
In most of them
nobody ever acts, so every turn ends in a timeout the worker fires and the engine plays with
its bot; in a share of them (``acting``) each seat acts slowly, at a random moment between half
its turn and a little past its deadline, so players race the timer.

Once every clock has run a whole turn the measurement window starts. Over it:

- the timer worker's CPU (user + system, from ``/proc``) per timeout in the stream;
- when the worker sends each timeout, past the deadline (its own lateness: the bench hears the
  request on its way to the engines);
- the lateness of each timeout: its commit's time (the engine's clock when it decided it) past
  the seat's deadline, reckoned as the engine does from the commit that gave the turn (p50,
  p99);
- the peer: the engine's CPU per timeout over the same window (deciding the timeout, choosing
  the bot's move, appending it), the work each timeout exists to trigger. The ratio is the
  worker's CPU per timeout over the engine's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import msgspec
from nats.aio.msg import Msg
from nats.js import api

from benchmarks.commands import Broker, _nats, wait_for_engine
from benchmarks.e2e import stop
from contracts.wire import (
    COMMAND_SUBJECTS,
    GAME_SUBJECTS,
    GAMES_STREAM,
    ActRequest,
    CreateGameRequest,
    TakeSeatRequest,
    TimeOutRequest,
    commit_seconds,
    read_commit,
    request_decoder,
)
from domain.clock import Clock
from domain.commands import to_api
from domain.events import TimedOut
from domain.game import evolve
from domain.state import Game
from domain.timing import apply_commit, deadlines
from services.bots.stand_in import stand_in_actions
from services.runtime.engine_client import EngineClient, EngineUnavailable

OPENING_AT_ONCE = 64
SUBJECT_PREFIX = GAME_SUBJECTS[:-1]


class TimerFigures(msgspec.Struct):
    games: int
    acting_games: int
    turn_s: float
    window_s: float
    timeouts: int
    """Timeouts in the stream over the window."""
    timeouts_per_s: float
    own_moves: int
    """Moves the acting seats made themselves over the window."""
    timer_cpu_s: float
    timer_cpu_per_timeout_us: float
    timer_rss_mb: float
    fired_p50_ms: float
    fired_p99_ms: float
    """When the worker sent each timeout, past its deadline (the worker's own lateness)."""
    lateness_p50_ms: float
    lateness_p99_ms: float
    lateness_max_ms: float
    """When the engine decided each timeout, past its deadline (what a player sees)."""
    engine_cpu_per_timeout_us: float
    """The peer: the engine's CPU over the window per timeout."""
    ratio: float
    """``timer_cpu_per_timeout_us / engine_cpu_per_timeout_us``."""


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@contextlib.contextmanager
def service(broker: Broker, name: str) -> Iterator[subprocess.Popen[bytes]]:
    """``spades serve <name>`` as its own process, stopped on exit."""
    env = {**os.environ, "SPADES_NATS_URL": broker.url, "SPADES_LOG_LEVEL": "WARNING"}
    credentials = broker.credentials(name)
    if credentials is not None:
        env["SPADES_NATS_CREDS"] = str(credentials)
    process = subprocess.Popen(
        [sys.executable, "-m", "services.cli.main", "serve", name],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        stop(process)


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Observer:
    """Folds every game of the stream with its commit times, as the engine and the worker do:
    the timeouts and their lateness; and, for the acting games, the slow seats' moves."""

    def __init__(self, client: EngineClient, acting: set[str], turn_s: float, seed: int) -> None:
        self.client = client
        self.acting = acting
        self.turn_s = turn_s
        self.rng = random.Random(seed)
        self.games: dict[str, Game] = {}
        self.lateness: list[tuple[float, float]] = []
        """(when seen, seconds past the deadline) of each timeout."""
        self.own_moves: list[float] = []
        self.fired: list[tuple[float, float]] = []
        """(when sent, seconds past the deadline) of each timeout request the worker sent."""
        self.tasks: set[asyncio.Task[None]] = set()

    async def receive(self, msg: Msg) -> None:
        game_id = msg.subject[len(SUBJECT_PREFIX) :]
        commit = read_commit(msg.data)
        if not commit.events:
            return
        before = self.games.get(game_id)
        at = commit_seconds(commit.time)
        first = commit.events[0]
        if isinstance(first, TimedOut) and before is not None and before.timing is not None:
            due = before.timing.deadline(first.seat)
            if due is not None:
                self.lateness.append((time.time(), at - due))
        state = apply_commit(before, commit.events, at, evolve)
        if state is None:
            return
        if state.status == "finished":
            self.games.pop(game_id, None)
            return
        self.games[game_id] = state
        if game_id in self.acting:
            for seat in deadlines(state):
                delay = self.turn_s * self.rng.uniform(0.5, 1.1)
                task = asyncio.create_task(self.act(game_id, seat, state.version, delay))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)

    async def request(self, msg: Msg) -> None:
        """A command on its way to the engines: a timer's timeout is timed on arrival."""
        now = time.time()
        try:
            request = request_decoder.decode(msg.data)
        except msgspec.DecodeError:
            return
        body = request.body
        if not isinstance(body, TimeOutRequest):
            return
        state = self.games.get(request.game_id)
        if state is None or state.timing is None or state.version != body.expected_version:
            return
        due = state.timing.deadline(body.seat)
        if due is not None:
            self.fired.append((now, now - due))

    async def act(self, game_id: str, seat: int, version: int, delay: float) -> None:
        await asyncio.sleep(delay)
        state = self.games.get(game_id)
        if state is None or state.version != version:
            return  # the timer was first
        for action in stand_in_actions(state, seat):
            request = ActRequest(seat=seat, action=to_api(action), expected_version=None)
            with contextlib.suppress(EngineUnavailable):
                reply = await self.client.send(game_id, request)
                if not reply.ok:
                    return
        self.own_moves.append(time.time())


async def _open(client: EngineClient, game_id: str, clock: Clock) -> None:
    """Create the game and seat three of its four players: its clock is not running yet."""
    created = await client.send(
        game_id, CreateGameRequest(rules={"preset": "partnership"}, dealer=3, clock=clock)
    )
    if not created.ok:
        raise RuntimeError(f"game {game_id} not created: {created.code} {created.detail}")
    for seat in range(3):
        await _seat(client, game_id, seat)


async def _seat(client: EngineClient, game_id: str, seat: int) -> None:
    taken = await client.send(game_id, TakeSeatRequest(player=f"p{seat}", seat=seat))
    if not taken.ok:
        raise RuntimeError(f"seat {seat} of {game_id} not taken: {taken.code}")


async def measure(
    broker: Broker,
    engine_pid: int,
    timer_pid: int,
    games: int,
    acting_share: float,
    turn_s: float,
    window_s: float,
    seed: int,
) -> TimerFigures:
    connection = await broker.connect()
    try:
        client = EngineClient(connection, timeout_s=30)
        await wait_for_engine(client)
        rng = random.Random(seed)
        run = f"{rng.getrandbits(32):08x}"
        ids = [f"clock-{run}-{n}" for n in range(games)]
        acting = {game for game in ids if rng.random() < acting_share}
        observer = Observer(client, acting, turn_s, seed)
        subscription = await connection.jetstream().subscribe(
            GAME_SUBJECTS,
            stream=GAMES_STREAM,
            cb=observer.receive,
            ordered_consumer=True,
            deliver_policy=api.DeliverPolicy.NEW,
            pending_msgs_limit=-1,
            pending_bytes_limit=-1,
        )
        requests = await connection.subscribe(COMMAND_SUBJECTS, cb=observer.request)
        clock = Clock(turn_s=turn_s, on_timeout="auto")
        gate = asyncio.Semaphore(OPENING_AT_ONCE)

        async def one(game_id: str) -> None:
            async with gate:
                await _open(client, game_id, clock)

        await asyncio.gather(*(one(game_id) for game_id in ids))
        # The last seat of each game, one after another over a whole turn: the clocks start
        # spread evenly, so from then on every game is on the clock at once and the deadlines
        # come at a steady rate (games / turn_s a second), not all in one burst.
        began = time.monotonic()
        seating: list[asyncio.Task[None]] = []
        for index, game_id in enumerate(ids):
            delay = began + index * turn_s / games - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            seating.append(asyncio.create_task(_seat(client, game_id, 3)))
        await asyncio.gather(*seating)
        await asyncio.sleep(max(0.0, began + turn_s - time.monotonic()))
        start = time.time()
        timer_cpu, engine_cpu = cpu_seconds(timer_pid), cpu_seconds(engine_pid)
        await asyncio.sleep(window_s)
        timer_used = cpu_seconds(timer_pid) - timer_cpu
        engine_used = cpu_seconds(engine_pid) - engine_cpu
        end = time.time()
        memory = rss_mb(timer_pid)
        await subscription.unsubscribe()
        await requests.unsubscribe()
        for task in list(observer.tasks):
            task.cancel()
        late = [late for seen, late in observer.lateness if start <= seen <= end]
        moves = sum(start <= at <= end for at in observer.own_moves)
        fired = [late for sent, late in observer.fired if start <= sent <= end]
        count = max(1, len(late))
        timer_per = timer_used / count * 1e6
        engine_per = engine_used / count * 1e6
        return TimerFigures(
            games=games,
            acting_games=len(acting),
            turn_s=turn_s,
            window_s=round(end - start, 3),
            timeouts=len(late),
            timeouts_per_s=len(late) / (end - start),
            own_moves=moves,
            timer_cpu_s=round(timer_used, 3),
            timer_cpu_per_timeout_us=timer_per,
            timer_rss_mb=memory,
            fired_p50_ms=percentile(fired, 0.50) * 1000,
            fired_p99_ms=percentile(fired, 0.99) * 1000,
            lateness_p50_ms=percentile(late, 0.50) * 1000,
            lateness_p99_ms=percentile(late, 0.99) * 1000,
            lateness_max_ms=max(late, default=0.0) * 1000,
            engine_cpu_per_timeout_us=engine_per,
            ratio=timer_per / engine_per if engine_per else 0.0,
        )
    finally:
        await connection.close()


def run(
    games: int = 5000,
    acting_share: float = 0.1,
    turn_s: float = 60.0,
    window_s: float = 60.0,
    seed: int = 1,
    nats_url: str | None = None,
) -> TimerFigures:
    """Start the server, an engine and a timer worker; open the games; measure the window."""
    with (
        _nats(nats_url) as broker,
        service(broker, "engine") as engine,
        service(broker, "timers") as timers,
    ):
        figures: Any = asyncio.run(
            measure(broker, engine.pid, timers.pid, games, acting_share, turn_s, window_s, seed)
        )
        result: TimerFigures = figures
        return result
