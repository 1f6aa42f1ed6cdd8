"""``spades bench timers``: thousands of clocks running at once, and what firing them costs;
with ``--history N``, what a restart costs after N finished games.

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

The restart (:func:`run_restart`): the game stream is filled with N finished one-hand games on a
clock, appended directly (:func:`finished_histories`, :func:`fill`), and one table plays on a
short clock with nobody acting. A timer worker starts on that stream with no checkpoint (it
surveys the games by their last commits), then is killed with SIGKILL and another started at
once: how soon after the kill the new one holds the partitions (the killed one's leases run
out first), and how soon the table moves again. A restart reads the games on the clock named
by the checkpoint, never the history, so the last figure should not grow with N.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import nats.js.errors
from msgspec.structs import replace
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api

from benchmarks.commands import Broker, _nats, wait_for_engine
from benchmarks.e2e import stop
from contracts.partitions import Partitions
from contracts.wire import (
    COMMAND_SUBJECTS,
    GAME_SUBJECTS,
    GAMES_STREAM,
    GENESIS,
    ActRequest,
    Commit,
    CreateGameRequest,
    TakeSeatRequest,
    TimeOutRequest,
    commit_seconds,
    encode_commit,
    read_commit,
    request_decoder,
)
from domain.clock import Clock, rfc3339
from domain.commands import CreateGame, TakeSeat, to_api
from domain.events import AnyEvent, GameCreated, TimedOut
from domain.game import DiscardDue, PassDue, decide, evolve, legal_actions, seat_to_act
from domain.shuffle import SeededDeal
from domain.state import Game, cards_held
from domain.timing import apply_commit, deadlines
from services.bots.stand_in import stand_in_actions
from services.runtime.broker_users import CHECKPOINTS_BUCKET, CLAIMS_BUCKET
from services.runtime.checkpoints import Checkpoint
from services.runtime.engine_client import EngineClient, EngineUnavailable
from services.runtime.nats_server import EmbeddedNats
from services.timers.worker import KIND as TIMERS

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
def service(
    broker: Broker, name: str, settings: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``spades serve <name>`` as its own process (with ``settings`` in its environment),
    stopped on exit."""
    env = {
        **os.environ,
        "SPADES_NATS_URL": broker.url,
        "SPADES_LOG_LEVEL": "WARNING",
        **(settings or {}),
    }
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


# --------------------------------------------------------------------------- the restart

HISTORY_CLOCK = Clock(turn_s=60.0, on_timeout="auto")
FILL_WINDOW = 4096
"""Publishes awaiting their acknowledgement at once while the stream is filled."""
POLL_S = 0.02
"""How often the restart's figures look at the claims and checkpoint buckets (another
process's state: nothing to await)."""


class RestartFigures(msgspec.Struct):
    history_games: int
    partitions: int
    history_messages: int
    fill_s: float
    """Appending the history (made and published by the bench)."""
    first_start_s: float
    """A timer worker started on the history with no checkpoint, until every partition's
    checkpoint reaches the history's end (it surveys the games by their last commits)."""
    claimed_s: float
    """From the SIGKILL of that worker to another, started at once, holding the table's
    partition (the killed one's lease runs out first)."""
    moved_s: float
    """From the SIGKILL to the table's next commit (a timeout the new worker fired)."""
    restart_s: float
    """``moved_s - claimed_s``: the new holder's own part (resume the clocks from the
    checkpoint, fire what is due)."""


def played_template(seed: int = 1) -> list[Commit]:
    """One partnership game of one hand on :data:`HISTORY_CLOCK`, played out with random legal
    moves, as the engine would commit it (times 1.5 s apart, from 2026-01-01)."""
    rng = random.Random(seed)
    game_id = "template"
    commits: list[Commit] = []
    state: Game | None = None
    previous = GENESIS
    at = commit_seconds("2026-01-01T00:00:00.000Z")

    def commit(events: list[AnyEvent]) -> Game:
        nonlocal state, previous, at
        at += 1.5
        version = (state.version if state else 0) + len(events)
        made = Commit(
            game_id=game_id,
            version=version,
            command_id=f"{game_id}-{len(commits) + 1}",
            time=rfc3339(at),
            previous=previous,
            events=events,
        )
        previous = hashlib.sha256(encode_commit(made)).hexdigest()
        commits.append(made)
        state = apply_commit(state, events, at, evolve)
        assert state is not None
        return state

    rules = {"preset": "partnership", "max_hands": 1}
    game = commit(decide(None, CreateGame(game_id, rules, dealer=3, clock=HISTORY_CLOCK)))
    for seat in range(game.rules.players):
        game = commit(decide(game, TakeSeat(f"p{seat}", seat), deal=SeededDeal(rng.randbytes(32))))
    deal = SeededDeal(rng.randbytes(32))
    while game.status != "finished":
        turn = seat_to_act(game)
        assert turn is not None
        action: Any = rng.choice(legal_actions(game, turn))
        if isinstance(action, PassDue | DiscardDue):
            hand = game.hand
            assert hand is not None
            action = action.choose(tuple(rng.sample(cards_held(hand, turn), action.count)))
        game = commit(decide(game, action, deal=deal))
    return commits


def finished_histories(
    count: int, *, prefix: str = "finished", seed: int = 1
) -> Iterator[tuple[str, list[bytes]]]:
    """``count`` finished one-hand games on a clock: :func:`played_template` written again
    under each id (its own ids, command ids and hash chain: a valid history of its own)."""
    template = played_template(seed)
    for number in range(count):
        game_id = f"{prefix}-{number:06d}"
        previous = GENESIS
        payloads: list[bytes] = []
        for index, commit in enumerate(template, start=1):
            events = commit.events
            first = events[0] if events else None
            if isinstance(first, GameCreated):
                events = [replace(first, game_id=game_id), *events[1:]]
            data = encode_commit(
                replace(
                    commit,
                    game_id=game_id,
                    command_id=f"{game_id}-{index}",
                    previous=previous,
                    events=events,
                )
            )
            previous = hashlib.sha256(data).hexdigest()
            payloads.append(data)
        yield game_id, payloads


async def fill(
    connection: Client, partitions: Partitions, histories: Iterable[tuple[str, list[bytes]]]
) -> int:
    """Append the histories to their partitions' streams: JetStream publishes, up to
    :data:`FILL_WINDOW` awaiting their acknowledgement, every one acknowledged (a refusal
    raises). The messages appended."""
    window = asyncio.Semaphore(FILL_WINDOW)
    refusals: list[bytes] = []

    async def acknowledged(msg: Msg) -> None:
        if b'"error"' in msg.data or not msg.data:
            refusals.append(msg.data or b"no answer")
        window.release()

    inbox = connection.new_inbox()
    subscription = await connection.subscribe(inbox, cb=acknowledged)
    sent = 0
    try:
        for game_id, payloads in histories:
            subject = partitions.game_subject(game_id)
            for data in payloads:
                await window.acquire()
                await connection.publish(subject, data, reply=inbox)
                sent += 1
        for _ in range(FILL_WINDOW):  # every publish answered
            await asyncio.wait_for(window.acquire(), 30)
    finally:
        await subscription.unsubscribe()
    if refusals:
        raise RuntimeError(f"{len(refusals)} appends refused: {refusals[0]!r}")
    return sent


async def lease_holder(js: JetStreamContext, kind: str, partition: int) -> str | None:
    """The member holding a partition of ``kind``'s work now (None: nobody)."""
    try:
        kv = await js.key_value(CLAIMS_BUCKET)
        entry = await kv.get(f"{kind}.partitions.{partition}")
    except nats.js.errors.NotFoundError:
        return None
    return entry.value.decode() if entry.value else None


def member_pid(member: str) -> int:
    """The process id in a member's name (``<host>-<pid>-<random>``)."""
    return int(member.rsplit("-", 2)[1])


async def checkpointed_at(js: JetStreamContext, stream: str, kind: str = TIMERS) -> int:
    """The position of ``kind``'s checkpoint of ``stream`` (0: none yet); the timers' unless
    told (the engines' round watch keeps one too)."""
    try:
        kv = await js.key_value(CHECKPOINTS_BUCKET)
        entry = await kv.get(f"{kind}.{stream}")
    except nats.js.errors.NotFoundError:
        return 0
    return msgspec.json.decode(entry.value or b"{}", type=Checkpoint).position


async def until_checkpointed(
    js: JetStreamContext,
    partitions: Partitions,
    positions: dict[int, int],
    timeout_s: float,
    kind: str = TIMERS,
) -> None:
    """Until each partition's checkpoint of ``kind`` (the timers' unless told) is at or past its
    position in ``positions``."""
    async with asyncio.timeout(timeout_s):
        for partition, position in positions.items():
            stream = partitions.stream(partition)
            while await checkpointed_at(js, stream, kind) < position:  # noqa: ASYNC110
                await asyncio.sleep(POLL_S)


async def until_held_by(
    js: JetStreamContext, kind: str, partition: int, pid: int, timeout_s: float
) -> None:
    async with asyncio.timeout(timeout_s):
        while True:
            holder = await lease_holder(js, kind, partition)
            if holder is not None and member_pid(holder) == pid:
                return
            await asyncio.sleep(POLL_S)


class TableWatch:
    """One table's commits as they arrive (when, and what)."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[float, Commit]] = []
        self.sequence = 0
        """The stream sequence of the last commit arrived."""
        self.changed = asyncio.Event()

    async def receive(self, msg: Msg) -> None:
        self.arrivals.append((time.time(), read_commit(msg.data)))
        self.sequence = msg.metadata.sequence.stream
        self.changed.set()

    @property
    def timeouts(self) -> int:
        return sum(bool(c.events) and isinstance(c.events[0], TimedOut) for _, c in self.arrivals)

    async def until(self, done: Callable[[TableWatch], bool], timeout_s: float) -> None:
        async with asyncio.timeout(timeout_s):
            while not done(self):
                self.changed.clear()
                await self.changed.wait()


@contextlib.contextmanager
def _server(url: str | None, partitions: Partitions) -> Iterator[Broker]:
    """The server given, or one of the bench's own whose users are those of ``partitions``."""
    if url or partitions.legacy:
        with _nats(url) as broker:
            yield broker
        return
    with (
        tempfile.TemporaryDirectory(prefix="spades-bench-") as store,
        EmbeddedNats(Path(store), partitions=partitions) as server,
    ):
        yield Broker(server.url, server.credentials_for)


async def measure_restart(
    broker: Broker, partitions: Partitions, history: int, turn_s: float
) -> RestartFigures:
    env = {"SPADES_PARTITIONS": str(partitions.count)}
    connection = await broker.connect()
    try:
        js = connection.jetstream()
        client = EngineClient(connection, timeout_s=30, partitions=partitions)
        await wait_for_engine(client)
        began = time.monotonic()
        messages = await fill(connection, partitions, finished_histories(history))
        fill_s = time.monotonic() - began
        ends = {
            p: int((await js.stream_info(partitions.stream(p))).state.last_seq or 0)
            for p in partitions.indexes
        }
        table_id = "restart-table"
        part = partitions.of(table_id)
        watch = TableWatch()
        subscription = await js.subscribe(
            partitions.game_subject(table_id),
            stream=partitions.stream(part),
            cb=watch.receive,
            ordered_consumer=True,
        )
        with service(broker, "timers", env) as first:
            started = time.monotonic()
            await until_checkpointed(js, partitions, ends, timeout_s=600)
            first_start_s = time.monotonic() - started
            created = await client.send(
                table_id,
                CreateGameRequest(
                    rules={"preset": "partnership"},
                    dealer=3,
                    clock=Clock(turn_s=turn_s, on_timeout="auto"),
                ),
            )
            assert created.ok, created
            for seat in range(4):
                await _seat(client, table_id, seat)
            await watch.until(lambda w: w.timeouts >= 2, timeout_s=30 + 4 * turn_s)
            table_end = max(ends[part], watch.sequence)
            await until_checkpointed(js, partitions, {part: table_end}, timeout_s=30)
            seen = watch.timeouts
            await watch.until(lambda w: w.timeouts > seen, timeout_s=30 + 4 * turn_s)
            first.kill()  # just after a timeout: the next deadline is a whole turn away
            killed = time.time()
            first.wait()
            moves = len(watch.arrivals)
            with service(broker, "timers", env) as second:
                await until_held_by(js, TIMERS, part, second.pid, timeout_s=60)
                claimed_s = time.time() - killed
                await watch.until(lambda w: len(w.arrivals) > moves, timeout_s=60)
                moved_s = watch.arrivals[moves][0] - killed
        await subscription.unsubscribe()
        return RestartFigures(
            history_games=history,
            partitions=partitions.count,
            history_messages=messages,
            fill_s=round(fill_s, 2),
            first_start_s=round(first_start_s, 2),
            claimed_s=round(claimed_s, 2),
            moved_s=round(moved_s, 2),
            restart_s=round(moved_s - claimed_s, 2),
        )
    finally:
        await connection.close()


def run_restart(
    history: int = 10_000,
    partitions: int = 1,
    turn_s: float = 1.0,
    nats_url: str | None = None,
) -> RestartFigures:
    """Start the server and an engine; fill the history; measure a timer worker's restart."""
    layout = Partitions(partitions)
    env = {"SPADES_PARTITIONS": str(partitions)}
    with _server(nats_url, layout) as broker, service(broker, "engine", env):
        figures: Any = asyncio.run(measure_restart(broker, layout, history, turn_s))
        result: RestartFigures = figures
        return result
