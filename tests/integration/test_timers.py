"""Clocks against a real nats-server: the engine and timer workers as their own processes.

Nobody at these tables acts (unless a test says so): the timer workers fire every timeout,
the engine acts for the seats (``auto``) or ends the game (``forfeit``). Every game is then
audited from its stored commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from nats.aio.client import Client
from nats.js import api
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.commands import wait_for_engine
from benchmarks.timers import (
    fill,
    finished_histories,
    lease_holder,
    member_pid,
    until_checkpointed,
    until_held_by,
)
from contracts.partitions import ANY_ENGINE_TIMEOUT_SUBJECTS, ONE, Partitions
from contracts.wire import (
    ActRequest,
    CommandRequest,
    Commit,
    CreateGameRequest,
    TakeSeatRequest,
    TimeOutRequest,
    commit_seconds,
    read_commit,
    reply_decoder,
    request_decoder,
)
from domain.clock import Clock
from domain.commands import to_api
from domain.events import (
    BidPlaced,
    CardPlayed,
    CardsPassed,
    GameEnded,
    HandLooked,
    HandScored,
    SeatAway,
    SeatReturned,
    TimedOut,
)
from domain.game import evolve
from domain.state import Game
from domain.timing import apply_commit, deadlines, on_clock
from services.audit.replay import audit_game
from services.bots.stand_in import stand_in_actions
from services.engine.engine import Engine
from services.runtime.broker_users import CLAIMS_BUCKET
from services.runtime.claims import RENEW_S, assignment
from services.runtime.engine_client import EngineClient
from services.runtime.game_stream import GameStream, StoredCommit
from services.runtime.nats_server import EmbeddedNats, free_port
from tests.integration.support import (
    EngineProcess,
    ServiceProcess,
    broker_credentials,
    connected,
    forfeit_on_time,
    history,
    ready_client,
)

pytestmark = pytest.mark.integration

RULES = {"preset": "partnership", "max_hands": 1}
MOVES = (BidPlaced, CardPlayed, CardsPassed)


class TimersProcess(ServiceProcess):
    """``spades serve timers``."""

    service = "timers"


@pytest.fixture
def timers(nats_url: str, tmp_path: Path, engine: EngineProcess) -> Iterator[TimersProcess]:
    process = TimersProcess(nats_url, tmp_path, "timers-a")
    process.start()
    process.wait_ready("timers ready")
    yield process
    process.stop()


class Watch:
    """A game's commits as they are appended, folded with their times as the engine does."""

    def __init__(self, connection: Client, game_id: str, partitions: Partitions = ONE) -> None:
        self.connection = connection
        self.game_id = game_id
        self.partitions = partitions
        self.state: Game | None = None
        self.commits: list[Commit] = []
        self.changed = asyncio.Event()

    async def __aenter__(self) -> Watch:
        js = self.connection.jetstream()
        self.subscription = await js.subscribe(
            self.partitions.game_subject(self.game_id),
            ordered_consumer=True,
            deliver_policy=api.DeliverPolicy.ALL,
            cb=self._take,
        )
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.subscription.unsubscribe()

    async def _take(self, msg: Any) -> None:
        commit = read_commit(msg.data)
        self.commits.append(commit)
        if commit.events:
            self.state = apply_commit(
                self.state, commit.events, commit_seconds(commit.time), evolve
            )
        self.changed.set()

    async def until(self, test: Any, timeout_s: float = 60.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not test(self):
                self.changed.clear()
                await self.changed.wait()

    @property
    def ended(self) -> bool:
        return self.state is not None and self.state.status == "finished"

    @property
    def timeouts(self) -> int:
        return sum(bool(c.events) and isinstance(c.events[0], TimedOut) for c in self.commits)


async def open_table(client: EngineClient, game_id: str, clock: Clock) -> None:
    created = await client.send(game_id, CreateGameRequest(rules=RULES, dealer=3, clock=clock))
    assert created.ok, created
    for seat in range(4):
        taken = await client.send(game_id, TakeSeatRequest(player=f"p{seat}", seat=seat))
        assert taken.ok, taken


def moves_and_timeouts(commits: list[StoredCommit]) -> tuple[int, int]:
    events = [event for stored in commits for event in stored.commit.events]
    moves = sum(isinstance(event, MOVES) for event in events)
    return moves, sum(isinstance(event, TimedOut) for event in events)


def assert_every_move_timed_out_once(commits: list[StoredCommit]) -> None:
    """Each move was the service's, made once: one TimedOut per move, each commit of a
    timeout holding one move, the record replaying clean. A game of one hand whose sides are
    level after it plays another (a tie on top plays on): 56 moves a hand, 4 bids and 52
    cards."""
    moves, timeouts = moves_and_timeouts(commits)
    scored = [e for stored in commits for e in stored.commit.events if isinstance(e, HandScored)]
    hands = len(scored)
    assert hands >= 1
    assert all(len(set(hand.scores)) == 1 for hand in scored[:-1])  # each played on for a tie
    assert moves == timeouts == (4 + 52) * hands
    for stored in commits:
        events = stored.commit.events
        if events and isinstance(events[0], TimedOut):
            assert sum(isinstance(event, MOVES) for event in events) == 1
    report = audit_game(commits, reveal_open_hand=True)
    assert report.ok, report.problems
    assert all(hand.replayed for hand in report.hands)


async def test_a_table_nobody_touches_is_played_out_by_the_service(
    timers: TimersProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    async with Watch(connection, "idle-auto") as watch:
        await open_table(client, "idle-auto", Clock(turn_s=0.05, on_timeout="auto"))
        await watch.until(lambda w: w.ended)
    commits = await history(connection, "idle-auto")
    assert_every_move_timed_out_once(commits)
    # Every timeout came at or after its seat's deadline, never before.
    state: Game | None = None
    for stored in commits:
        commit = stored.commit
        at = commit_seconds(commit.time)
        if commit.events and isinstance(commit.events[0], TimedOut) and state is not None:
            assert state.timing is not None
            deadline = state.timing.deadline(commit.events[0].seat)
            assert deadline is not None
            assert at >= deadline - 0.001
        if commit.events:
            state = apply_commit(state, commit.events, at, evolve)


async def test_forfeit_ends_the_game_at_the_first_deadline_with_the_other_unit_winning(
    timers: TimersProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    async with Watch(connection, "idle-forfeit") as watch:
        await open_table(client, "idle-forfeit", Clock(turn_s=0.2, on_timeout="forfeit"))
        await watch.until(lambda w: w.ended)
    commits = await history(connection, "idle-forfeit")
    last = commits[-1].commit
    assert last.events == [TimedOut(0), GameEnded((1,), (0, 0), forfeited=0)]
    seated = commits[-2].commit
    late = commit_seconds(last.time) - commit_seconds(seated.time)
    assert 0.2 - 0.001 <= late < 2.0
    assert audit_game(commits, reveal_open_hand=True).ok


async def test_a_seat_that_comes_back_after_being_away_acts_for_itself(
    timers: TimersProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    game = "away-back"
    clock = Clock(turn_s=0.3, on_timeout="auto", away_after=1)
    async with Watch(connection, game) as watch:
        await open_table(client, game, clock)

        def away(w: Watch) -> bool:
            timing = w.state.timing if w.state is not None else None
            return timing is not None and timing.seats[0].away

        await watch.until(away)
        assert any(
            event == SeatAway(0, "timeouts") for commit in watch.commits for event in commit.events
        )
        back = await client.send(game, ActRequest(seat=0, action={"type": "back"}))
        assert back.ok, back
        assert [record.event for record in back.events] == [SeatReturned(0)]

        def seat_0_on_turn(w: Watch) -> bool:
            return w.state is not None and 0 in on_clock(w.state)

        await watch.until(seat_0_on_turn)
        state = watch.state
        assert state is not None
        sent = [
            await client.send(
                game, ActRequest(seat=0, action=to_api(action), expected_version=None)
            )
            for action in stand_in_actions(state, 0)
        ]
        assert all(reply.ok for reply in sent), sent
        own = [record.event for reply in sent for record in reply.events]
        assert not any(isinstance(event, TimedOut) for event in own)
        assert watch.state is not None
        await watch.until(lambda w: w.ended)
    commits = await history(connection, game)
    report = audit_game(commits, reveal_open_hand=True)
    assert report.ok, report.problems
    moves, timeouts = moves_and_timeouts(commits)
    assert timeouts == moves - 1  # all but seat 0's own move


@contextlib.asynccontextmanager
async def watching(
    connection: Client, games: list[str], partitions: Partitions = ONE
) -> AsyncIterator[list[Watch]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(Watch(connection, game, partitions)) for game in games
        ]


async def test_a_timer_killed_while_games_are_overdue_fires_each_timeout_once_after_restart(
    nats_url: str, tmp_path: Path, engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    first = TimersProcess(nats_url, tmp_path, "timers-killed")
    first.start()
    first.wait_ready("timers ready")
    games = [f"killed-{n}" for n in range(4)]
    clock = Clock(turn_s=0.1, on_timeout="auto")
    try:
        async with watching(connection, games) as watches:
            for game in games:
                await open_table(client, game, clock)
            for watch in watches:  # the worker is firing: a few moves made in every game
                await watch.until(lambda w: sum(bool(c.events) for c in w.commits) > 8)
            first.kill()
            # Let every game go overdue while no timer runs (the clocks are in the stream); a
            # timeout the killed worker sent just before it died may still land meanwhile.
            await asyncio.sleep(0.5)
            assert all(not watch.ended for watch in watches)
            stalled = [len(watch.commits) for watch in watches]
            restarted_at = time.time()
            for watch in watches:
                assert watch.state is not None
                due = deadlines(watch.state)
                assert due
                assert max(due.values()) < restarted_at  # overdue
            second = TimersProcess(nats_url, tmp_path, "timers-restarted")
            second.start()
            try:
                second.wait_ready("timers ready")
                for watch, before in zip(watches, stalled, strict=True):
                    await watch.until(lambda w, n=before: len(w.commits) > n)
                    fired = watch.commits[before]
                    assert commit_seconds(fired.time) >= restarted_at - 0.001
                    assert isinstance(fired.events[0], TimedOut)  # fired after the restart
                for watch in watches:
                    await watch.until(lambda w: w.ended, timeout_s=120)
            finally:
                second.stop()
    finally:
        first.stop()
    for game in games:
        assert_every_move_timed_out_once(await history(connection, game))


async def test_two_timer_workers_at_once_make_one_action_per_timeout(
    nats_url: str, tmp_path: Path, timers: TimersProcess, connection: Client
) -> None:
    other = TimersProcess(nats_url, tmp_path, "timers-b")
    other.start()
    try:
        other.wait_ready("timers ready")
        client = await ready_client(connection)
        games = [f"twin-{n}" for n in range(3)]
        async with watching(connection, games) as watches:
            for game in games:
                await open_table(client, game, Clock(turn_s=0.05, on_timeout="auto"))
            for watch in watches:
                await watch.until(lambda w: w.ended, timeout_s=120)
    finally:
        other.stop()
    for game in games:
        commits = await history(connection, game)
        assert_every_move_timed_out_once(commits)
        assert all(stored.commit.refusal is None for stored in commits)


async def test_a_worker_sleeps_until_the_earliest_deadline_of_all_it_holds(
    nats_url: str, engine: EngineProcess, connection: Client
) -> None:
    """Many far clocks and one near: the worker holds them all, fires only the near one when
    it is due, and sends nothing for the others (it looks at no game to find what is due).
    It starts on a stream whose checkpoint is another stream's (a restore): it holds what a
    survey of the stream finds running on a clock, not what the checkpoint names."""
    from services.runtime.checkpoints import Checkpoint, Checkpoints
    from services.runtime.follower import Following
    from services.runtime.game_stream import game_partitions
    from services.runtime.nats import connect as connect_as
    from services.timers.clocks import RunningClocks
    from services.timers.worker import KIND, PACE, Timers
    from tests.integration.support import credentials_of

    client = await ready_client(connection)
    far = [f"far-{n}" for n in range(20)]
    for game in far:
        await open_table(client, game, Clock(turn_s=3600, on_timeout="auto"))
    for game in ("no-clock", "no-clock-either"):  # running, but on no clock: not held
        created = await client.send(game, CreateGameRequest(rules=RULES, dealer=3))
        assert created.ok, created
    await open_table(client, "over", Clock(turn_s=3600, on_timeout="forfeit"))
    await forfeit_on_time(connection, "over", 0)  # ended: not held, though the checkpoint says so
    admin = connection.jetstream()
    bogus = Checkpoint(
        position=1,
        stream=ONE.stream(0),
        stream_created="2000-01-01T00:00:00Z",  # another stream of that name
        state=msgspec.Raw(msgspec.json.encode(RunningClocks(games={"over": 1}))),
    )
    await Checkpoints(admin, KIND).write(bogus)
    timers_connection = await connect_as(
        nats_url, "pytest-timers", user="timers", credentials=credentials_of("timers")
    )
    js = timers_connection.jetstream()
    timers = Timers(timers_connection, GameStream(js), Checkpoints(js, KIND))
    following = Following(timers_connection, timers, game_partitions(ONE), PACE)
    try:
        await following.gain(0)
        await asyncio.wait_for(timers.opened.wait(), 30)
        assert set(timers.keepers[0].clocks.games) == set(far)
        async with Watch(connection, "near") as watch:
            await open_table(client, "near", Clock(turn_s=0.2, on_timeout="forfeit"))
            await watch.until(lambda w: w.ended)
        async with asyncio.timeout(10):
            await timers.until(
                lambda t: t.timeouts.observed >= 1 and t.timeouts.fired + t.timeouts.lost >= 1
            )
        figures = timers.timeouts.stats()
        assert figures["fired"] == 1
        assert figures["lost"] == 0
        assert timers.clocks == len(far)  # the finished game is forgotten
        assert figures["sent_late_p50_ms"] is not None
        assert figures["sent_late_p50_ms"] < 1000
    finally:
        await following.stop()
        await timers.stop()
        await timers_connection.close()
    for game in far:  # nothing was sent for them
        commits = await history(connection, game)
        assert not any(stored.commit.events and isinstance(stored.commit.events[0], TimedOut)
                       for stored in commits)  # fmt: skip


async def test_an_engine_whose_copy_is_behind_reads_on_and_takes_the_timeout(
    engine: EngineProcess, connection: Client
) -> None:
    """A timeout often reaches an engine whose copy of the game is behind (another engine
    appended the last commits): it reads them and takes the timeout, never refusing it as
    stale, for the timer would not send it again and the table would stall."""
    client = await ready_client(connection)
    game = "behind"
    await open_table(client, game, Clock(turn_s=0.05, on_timeout="auto"))
    behind = Engine(GameStream(connection.jetstream()))  # no follower: it reads only on demand
    held = await behind.games.get(game)
    seated = held.version
    async with Watch(connection, game) as watch:  # the process engine moves the game on
        bid = await client.send(game, ActRequest(seat=0, action={"type": "bid", "bid": 3}))
        assert bid.ok, bid
        await watch.until(lambda w: w.state is not None and w.state.version > seated)
        current = watch.state
    assert current is not None
    assert held.version == seated  # this engine has not seen the bid
    await asyncio.sleep(0.06)  # seat 1's clock runs out
    request = CommandRequest(
        command_id="timeout-behind",
        game_id=game,
        body=TimeOutRequest(seat=1, expected_version=current.version),
    )
    reply = reply_decoder.decode(await behind.handle(msgspec.json.encode(request)))
    assert reply.ok, reply
    assert isinstance(reply.events[0].event, TimedOut)
    # The timer is answered as the public sees the table: the look the service made for the
    # seat shows no card.
    looked = [r.event for r in reply.events if isinstance(r.event, HandLooked)]
    assert looked
    assert all(event.cards is None for event in looked)


async def test_two_engines_and_a_timer_play_tables_out(
    timers: TimersProcess, second_engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    games = [f"two-engines-{n}" for n in range(2)]
    async with watching(connection, games) as watches:
        for game in games:
            await open_table(client, game, Clock(turn_s=0.03, on_timeout="auto"))
        for watch in watches:
            await watch.until(lambda w: w.ended, timeout_s=120)
    for game in games:
        assert_every_move_timed_out_once(await history(connection, game))


# --------------------------------------------------------------------------- partitions

K3 = Partitions(3)
TURN_S = 1.0
ON_TIME_S = 2.0
"""How late past its deadline a timeout may be decided while its partition's holder lives."""
TAKEOVER_S = 2 * RENEW_S + 4.0
"""How late past its deadline a timeout may be decided when its partition's holder was killed
(a renewal or two finds it gone, another takes the partition, resumes its clocks and fires)."""
RESTART_S = 5.0
"""From a kill to the table moving again, a new worker's start included: a few seconds, however
long the history."""
HISTORY_GAMES = 2_000
"""Finished games in the stream of the restart test (242,000 commits, some 4 s to append here).
What it holds to does not grow with them: the worker reads none of them, and the table moves
within a second of the new holder's claim. ``spades bench history`` measures ten and a hundred
thousand, where issue 28's 28 s were."""


def games_in_every_partition(partitions: Partitions, each: int, prefix: str) -> list[str]:
    """Game ids, ``each`` of them in every partition."""
    games: list[str] = []
    counts = Counter[int]()
    for number in itertools.count():
        game_id = f"{prefix}-{number}"
        partition = partitions.of(game_id)
        if counts[partition] < each:
            games.append(game_id)
            counts[partition] += 1
        if len(games) == each * partitions.count:
            return games
    raise AssertionError("unreachable")


class Requests:
    """A copy of every timeout request on its way to the engines (this subscriber answers
    none: the engines' queue group does)."""

    def __init__(self) -> None:
        self.timeouts = Counter[tuple[str, str]]()

    async def take(self, msg: Any) -> None:
        request = request_decoder.decode(msg.data)
        if isinstance(request.body, TimeOutRequest):
            self.timeouts[(request.game_id, request.command_id)] += 1


async def settled(connection: Client, kind: str, count: int, members: int) -> dict[int, str]:
    """Once ``members`` members of ``kind`` live and each partition is held by the one it is
    assigned to: the holders (polled: the state of other processes)."""
    js = connection.jetstream()
    prefix = f"$KV.{CLAIMS_BUCKET}.{kind}.members."
    async with asyncio.timeout(30):
        while True:
            info = await js.stream_info(f"KV_{CLAIMS_BUCKET}", subjects_filter=f"{prefix}>")
            live = {subject[len(prefix) :] for subject in info.state.subjects or {}}
            holders = {p: await lease_holder(js, kind, p) for p in range(count)}
            if len(live) == members and holders == assignment(kind, count, live):
                return {p: holder for p, holder in holders.items() if holder is not None}
            await asyncio.sleep(0.1)


def lateness(commits: list[StoredCommit]) -> list[tuple[float, float]]:
    """Each timeout of a game: when it was decided, and how long past its seat's deadline."""
    late: list[tuple[float, float]] = []
    state: Game | None = None
    for stored in commits:
        commit = stored.commit
        at = commit_seconds(commit.time)
        if commit.events and isinstance(commit.events[0], TimedOut) and state is not None:
            assert state.timing is not None
            deadline = state.timing.deadline(commit.events[0].seat)
            assert deadline is not None
            late.append((at, at - deadline))
        if commit.events:
            state = apply_commit(state, commit.events, at, evolve)
    return late


def assert_each_timeout_is_one_action(commits: list[StoredCommit]) -> None:
    """Every move of the game was a timeout's, each timeout one move, nothing refused, and the
    record replays clean."""
    moves, timeouts = moves_and_timeouts(commits)
    assert moves == timeouts > 0
    for stored in commits:
        events = stored.commit.events
        assert stored.commit.refusal is None
        if events and isinstance(events[0], TimedOut):
            assert sum(isinstance(event, MOVES) for event in events) == 1
    report = audit_game(commits, reveal_open_hand=True)
    assert report.ok, report.problems


@pytest.fixture
def partitioned_nats(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A server whose broker users are those of a deployment of three partitions."""
    with EmbeddedNats(tmp_path / "nats", credentials=broker_credentials(), partitions=K3) as server:
        yield server


async def test_one_of_two_timer_workers_killed_on_three_partitions_misses_nor_doubles_a_timeout(
    partitioned_nats: EmbeddedNats, tmp_path: Path
) -> None:
    """Two ``spades serve timers`` share three partitions; the one holding partition 0 is
    killed with SIGKILL. The other takes its partitions over within seconds and resumes their
    clocks from their checkpoints: every timeout of every table is decided once, one action,
    none sent twice, and none later than the take-over."""
    nats_url = partitioned_nats.url
    settings = {"SPADES_PARTITIONS": str(K3.count)}
    engine = EngineProcess(nats_url, tmp_path, "engine-k3", env=settings)
    workers = [TimersProcess(nats_url, tmp_path, f"timers-k3-{n}", env=settings) for n in "ab"]
    requests = Requests()
    games = games_in_every_partition(K3, 2, "three")
    connection = await connected(nats_url)
    try:
        engine.start()
        for worker in workers:
            worker.start()
        engine.wait_ready()
        for worker in workers:
            worker.wait_ready("timers ready")
        client = EngineClient(connection, 5.0, K3)
        await wait_for_engine(client)
        holders = await settled(connection, "timers", K3.count, members=2)
        victim = next(w for w in workers if w.pid == member_pid(holders[0]))
        survivor = next(w for w in workers if w is not victim)
        taken_over = {p for p, member in holders.items() if member_pid(member) == victim.pid}
        copies = [
            await connection.subscribe(subjects, cb=requests.take)
            for subjects in ("spades.part.*.timeouts.*", ANY_ENGINE_TIMEOUT_SUBJECTS)
        ]
        async with watching(connection, games, K3) as watches:
            for game in games:
                await open_table(client, game, Clock(turn_s=TURN_S, on_timeout="auto"))
            for watch in watches:
                await watch.until(lambda w: w.timeouts >= 2, timeout_s=30)
            victim.kill()
            killed = time.time()
            before = {watch.game_id: watch.timeouts for watch in watches}
            for watch in watches:
                await watch.until(lambda w: w.timeouts >= before[w.game_id] + 3, timeout_s=60)
            js = connection.jetstream()
            for partition in K3.indexes:
                holder = await lease_holder(js, "timers", partition)
                assert holder is not None
                assert member_pid(holder) == survivor.pid
            survivor.stop()  # no timeout is sent after this
        for copy in copies:
            await copy.unsubscribe()
        commits = {game: await history(connection, game, K3) for game in games}
    finally:
        for process in (*workers, engine):
            process.stop()
        await connection.close()
    worst_takeover = 0.0
    for game in games:
        assert_each_timeout_is_one_action(commits[game])
        late = lateness(commits[game])
        assert all(past >= -0.001 for _, past in late)  # never before the deadline
        after_kill = [past for at, past in late if at >= killed]
        assert after_kill
        if K3.of(game) in taken_over:
            first, *rest = after_kill
            worst_takeover = max(worst_takeover, first)
            assert first < TAKEOVER_S
            assert all(past < ON_TIME_S for past in rest)
            assert all(past < ON_TIME_S for at, past in late if at < killed)
        else:
            assert all(past < ON_TIME_S for _, past in late)
    sent_twice = {key: n for key, n in requests.timeouts.items() if n > 1}
    assert not sent_twice
    assert requests.timeouts
    print(
        f"\npartitions taken over: {sorted(taken_over)}; their first timeouts after the kill "
        f"decided at most {worst_takeover:.2f} s past the deadline"
    )


async def scraped(port: int, ready: Callable[[dict[str, float]], bool]) -> dict[str, float]:
    """A process's ``/metrics`` by sample (``name{label="value",...}``), once ``ready`` holds
    of it (polled: another process's state)."""
    async with httpx.AsyncClient() as http, asyncio.timeout(10):
        while True:
            text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
            samples = {
                sample.name
                + (
                    "{" + ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items())) + "}"
                    if sample.labels
                    else ""
                ): sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples
            }
            if ready(samples):
                return samples
            await asyncio.sleep(0.1)


def opened_clocks(worker: TimersProcess) -> dict[str, Any]:
    """What a worker's log says of the first partition it opened (games read, clocks held)."""
    for line in worker.log_path.read_text().splitlines():
        if "partition's clocks opened" in line:
            opened: dict[str, Any] = json.loads(line)
            return opened
    raise AssertionError(f"{worker.log_path.name} opened no partition")


async def test_a_killed_timer_worker_is_replaced_without_reading_the_games_history(
    nats_url: str, tmp_path: Path, engine: EngineProcess, connection: Client
) -> None:
    """Two thousand finished games in the stream, and a timer worker started on it with no
    checkpoint: it surveys the games (their last commits) and reads none. Then one table on a
    1 s clock; the worker is killed with SIGKILL and another started at once. The new one reads
    the running clock the checkpoint names, not the history: once it holds the partition the
    table moves within a second, and the kill's whole cost is the killed worker's lease running
    out."""
    js = connection.jetstream()
    client = await ready_client(connection)
    first = TimersProcess(nats_url, tmp_path, "timers-first")
    metrics_port = free_port()
    second = TimersProcess(
        nats_url, tmp_path, "timers-second", env={"SPADES_METRICS_PORT": str(metrics_port)}
    )
    table = "after-history"
    began = time.monotonic()
    await fill(connection, ONE, finished_histories(HISTORY_GAMES))
    filled_s = time.monotonic() - began
    end = int((await js.stream_info(ONE.stream(0))).state.last_seq or 0)
    try:
        first.start()  # no checkpoint yet: it surveys the stream
        first.wait_ready("timers ready")
        started = time.monotonic()
        await until_checkpointed(js, ONE, {0: end}, timeout_s=120)
        first_start_s = time.monotonic() - started
        async with Watch(connection, table) as watch:
            await open_table(client, table, Clock(turn_s=TURN_S, on_timeout="auto"))
            await watch.until(lambda w: w.timeouts >= 2, timeout_s=30)
            table_at = await GameStream(js).last_sequence(table)
            await until_checkpointed(js, ONE, {0: table_at}, timeout_s=30)
            seen = watch.timeouts
            await watch.until(lambda w: w.timeouts > seen, timeout_s=30)
            first.kill()  # just after a timeout: the table's next deadline is a turn away
            killed = time.time()
            moves = len(watch.commits)
            second.start()
            await until_held_by(js, "timers", 0, second.pid, timeout_s=30)
            claimed = time.time()
            await watch.until(lambda w: len(w.commits) > moves, timeout_s=30)
            moved = time.time()
            fired = watch.commits[moves]
            metrics = await scraped(
                metrics_port, lambda m: m.get("spades_timer_lateness_seconds_count", 0) >= 1
            )
    finally:
        second.stop()
        first.stop()
    print(
        f"\n{HISTORY_GAMES:,} finished games ({end:,} commits, appended in {filled_s:.1f} s); "
        f"a first start, surveying them: checkpointed past them in {first_start_s:.2f} s; "
        f"after the kill: the partition held again at {claimed - killed:.2f} s, the table "
        f"moved at {moved - killed:.2f} s (the new holder's own part {moved - claimed:.3f} s, "
        f"its partition opened in {opened_clocks(second)['took_ms']} ms)"
    )
    assert fired.events
    assert isinstance(fired.events[0], TimedOut)
    assert moved - claimed < 1.0
    assert moved - killed < RESTART_S
    assert metrics["spades_timeouts_fired_total"] >= 1
    assert metrics["spades_timers_clocks"] == 1
    assert "spades_timers_overdue" in metrics
    assert metrics['spades_partitions_held{kind="timers"}'] == 1
    surveyed, resumed = (opened_clocks(worker) for worker in (first, second))
    assert surveyed["resumed"] is False
    assert surveyed["read"] == 0  # every game of the history ended: none read
    assert resumed["resumed"] is True
    assert resumed["read"] == resumed["clocks"] == 1  # the table, named by the checkpoint
    assert_each_timeout_is_one_action(await history(connection, table))
