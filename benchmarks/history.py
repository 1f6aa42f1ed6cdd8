"""``spades bench history``: what a long history costs the processes that start on it.

For each size N (0, 10,000 and 100,000 finished games by default) a stack of its own: a
nats-server on free ports with a fresh store, SQLite read models in a temporary directory, and
one process of every kind, each ``spades serve <kind>`` with its own broker user and metrics
port (the league night's :class:`~benchmarks.league_night.Fleet`). Then:

1. The game stream is filled with N finished one-hand games on a clock, appended directly,
   without the engine (:func:`~benchmarks.timers.finished_histories`,
   :func:`~benchmarks.timers.fill`): valid histories, each game its own hash chain. A sample of
   them is audited (the chain, then a replay).
2. The fleet starts on that stream once, and every follower reads it to its end: the read
   models, the engines' round watch and the timers' survey. Those seconds are reported apart:
   they are a first start's (the read models' part is a rebuild's cost, which ``spades bench
   projections`` measures), not a restart's.
3. One table on a 1 s clock whose seats nobody plays: the timer worker plays every turn. The
   whole stack is stopped (SIGTERM, the server last) and started again (the server first) while
   the table's clock runs, and that restart is measured: the nats-server's start until it is
   healthy (its streams recovered) and its RSS; for each kind, from its process's start until
   it is ready (a worker holds every partition of its work, per its ``/metrics``; the gateway
   answers ``/readyz``, which waits for the read models) and its RSS then; from the timer
   worker's start until the table's first timeout is in the stream; the stream's bytes per
   game and the database's (its SQLite files).
4. The timer worker is killed with SIGKILL just after a timeout and started again at once: from
   the kill until it holds the table's partition (the killed worker's lease runs out first),
   and until the table moves again.

Each figure is set against N: its slope per 10,000 games (least squares over the sizes), which
should be near zero for everything a restart does (it reads what runs, never what ended).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import msgspec
from nats.js import JetStreamContext, api

from benchmarks.league_night import (
    KINDS,
    Fleet,
    _admin,
    _caught_up,
    _history_problems,
    _timed_out_twice,
)
from benchmarks.timers import (
    TableWatch,
    _open,
    _seat,
    fill,
    finished_histories,
    rss_mb,
    until_checkpointed,
    until_held_by,
)
from contracts.partitions import Partitions
from domain.clock import Clock
from domain.events import TimedOut
from services.engine.round_watch import KIND as ROUND_WATCH
from services.runtime.engine_client import EngineClient
from services.runtime.game_stream import GameStream, ensure_partitions
from services.runtime.nats_server import EmbeddedNats
from services.store.database import Store, open_store
from services.timers.worker import KIND as TIMERS

SIZES = (0, 10_000, 100_000)
AUDITED = 16
"""Games of the history audited (spread over it)."""
TABLE = "history-table"
DATABASE = "read_models.db"
PER = 10_000
"""The slopes are per this many games."""


class KindFigures(msgspec.Struct):
    start_s: float
    """From the process's start until it was ready (the restart, not the first start)."""
    rss_mb: float
    """Its RSS once every process was ready and the table had timed out."""


class SizeFigures(msgspec.Struct):
    games: int
    messages: int
    """Commits appended for the history."""
    fill_s: float
    fill_messages_per_s: float | None
    audited: int
    """Games of the history audited, and the table."""
    problems: list[str]
    """Audited games not sound or not clean, and turns of the table timed out twice."""
    first_catch_up_s: dict[str, float]
    """The first start on the history: from the fleet's start until each follower (the read
    models, the engines' round watch, the timers) stood at the history's end."""
    kinds: dict[str, KindFigures]
    first_timeout_s: float
    """From the timer worker's start until the table's first timeout was in the stream."""
    nats_start_s: float
    """The nats-server's restart: from its start until it is healthy (its streams recovered)."""
    nats_rss_mb: float
    stream_bytes: int
    database_bytes: int
    killed_held_s: float
    """From the timer worker's SIGKILL until the one started at once held the table's
    partition."""
    killed_moved_s: float
    """From the SIGKILL until the table's next commit (a timeout the new worker fired)."""
    load: tuple[float, float, float]
    """The machine's load average at the end (other work on it skews every time above)."""

    @property
    def stream_bytes_per_game(self) -> float | None:
        return self.stream_bytes / self.games if self.games else None

    @property
    def database_bytes_per_game(self) -> float | None:
        return self.database_bytes / self.games if self.games else None


class HistoryReport(msgspec.Struct):
    partitions: int
    turn_s: float
    sizes: list[SizeFigures]
    figures: dict[str, list[float | None]]
    """Each figure by name, one value a size (in the order of ``sizes``)."""
    per_10k: dict[str, float | None]
    """Each figure's slope against N, per 10,000 games (None: fewer than two sizes)."""


def figures_of(size: SizeFigures) -> dict[str, float | None]:
    """The size's figures by name, as the table shows them and the slopes are taken."""
    named: dict[str, float | None] = {
        "fill: messages/s": size.fill_messages_per_s,
        **{
            f"first start, reading the history: {follower} s": seconds
            for follower, seconds in size.first_catch_up_s.items()
        },
    }
    for kind, figures in size.kinds.items():
        named[f"restart: {kind} start-up s"] = figures.start_s
    named["restart: nats-server start-up s"] = size.nats_start_s
    named["restart: timers start -> first timeout s"] = size.first_timeout_s
    named["timers kill -9 -> partition held s"] = size.killed_held_s
    named["timers kill -9 -> table moves s"] = size.killed_moved_s
    for kind, figures in size.kinds.items():
        named[f"{kind} RSS MB"] = figures.rss_mb
    named["nats-server RSS MB"] = size.nats_rss_mb
    named["stream bytes/game"] = size.stream_bytes_per_game
    named["database bytes/game"] = size.database_bytes_per_game
    return named


def slope(points: Iterable[tuple[int, float | None]]) -> float | None:
    """The least-squares slope of the values against N, per :data:`PER` games (None: fewer
    than two sizes with a value)."""
    known = [(n, value) for n, value in points if value is not None]
    if len({n for n, _ in known}) < 2:
        return None
    mean_n = sum(n for n, _ in known) / len(known)
    mean_v = sum(v for _, v in known) / len(known)
    spread = sum((n - mean_n) ** 2 for n, _ in known)
    return sum((n - mean_n) * (v - mean_v) for n, v in known) / spread * PER


def report(layout: Partitions, turn_s: float, sizes: list[SizeFigures]) -> HistoryReport:
    by_size = [figures_of(size) for size in sizes]
    names = list(dict.fromkeys(name for figures in by_size for name in figures))
    figures = {name: [figures.get(name) for figures in by_size] for name in names}
    return HistoryReport(
        partitions=layout.count,
        turn_s=turn_s,
        sizes=sizes,
        figures=figures,
        per_10k={
            name: slope(zip((s.games for s in sizes), values, strict=True))
            for name, values in figures.items()
        },
    )


def sampled(
    histories: Iterator[tuple[str, list[bytes]]], count: int, every: int
) -> tuple[Iterator[tuple[str, list[bytes]]], list[str]]:
    """The histories as they come, and the ids of every ``every``-th one (up to ``count``),
    filled in as they pass."""
    chosen: list[str] = []

    def passing() -> Iterator[tuple[str, list[bytes]]]:
        for number, (game_id, payloads) in enumerate(histories):
            if number % every == 0 and len(chosen) < count:
                chosen.append(game_id)
            yield game_id, payloads

    return passing(), chosen


async def stream_ends(js: JetStreamContext, layout: Partitions) -> dict[int, int]:
    """Each partition's last sequence."""
    return {
        p: int((await js.stream_info(layout.stream(p))).state.last_seq or 0) for p in layout.indexes
    }


async def measure(
    games: int,
    layout: Partitions,
    turn_s: float,
    root: Path,
    progress: Callable[[str], None],
) -> SizeFigures:
    database_url = f"sqlite:///{root / DATABASE}"
    with EmbeddedNats(root / "nats", partitions=layout) as server:
        fleet = Fleet([server], layout, database_url, root, per_kind=1)
        admin = await _admin([server])
        store = open_store(database_url)
        try:
            js = admin.jetstream()
            await ensure_partitions(js, layout)
            histories, chosen = sampled(
                finished_histories(games), AUDITED, max(1, games // AUDITED)
            )
            began = time.monotonic()
            messages = await fill(admin, layout, histories)
            fill_s = time.monotonic() - began
            progress(f"{games:,} games: {messages:,} messages appended in {fill_s:.1f} s")
            stream = GameStream(js, layout)
            problems = _history_problems({game: await stream.read(game) for game in chosen})

            first = await _first_start(fleet, store, js, layout, 120 + messages / 1000)
            progress(f"{games:,} games: the first start read the history ({first})")
            client = EngineClient(admin, timeout_s=30, partitions=layout)
            watch, subscription = await _watch_table(js, layout)
            await _open(client, TABLE, Clock(turn_s=turn_s, on_timeout="auto"))
            await _seat(client, TABLE, 3)
            await watch.until(lambda w: w.timeouts >= 1, timeout_s=30 + 4 * turn_s)
            await subscription.unsubscribe()

            # The whole stack stops, the server last, and starts again, the server first (as
            # `spades up` does); the table's clock runs on, so a turn is overdue by then.
            fleet.stop()
            await admin.close()
            server.stop()
            began = time.monotonic()
            await asyncio.to_thread(server.start)
            await asyncio.to_thread(server.wait_until_healthy)
            nats_start_s = time.monotonic() - began
            admin = await _admin([server])
            js = admin.jetstream()
            watch, subscription = await _watch_table(js, layout)  # nothing commits yet
            fleet.start()
            ready = await fleet.until_ready()
            (timers,) = fleet.of("timers")
            await watch.until(lambda w: w.timeouts >= 1, timeout_s=60)
            first_timeout_s = _first_timeout(watch) - timers.started
            kinds = {
                kind: KindFigures(start_s=round(ready[kind], 2), rss_mb=round(rss_mb(p.pid), 1))
                for kind in KINDS
                for p in fleet.of(kind)
            }
            nats_rss = rss_mb(server.pid or 0)
            progress(f"{games:,} games: restarted ({ready}), first timeout {first_timeout_s:.2f} s")

            held_s, moved_s = await _kill_timers(fleet, js, layout, watch)
            await subscription.unsubscribe()
            table = {TABLE: await GameStream(js, layout).read(TABLE)}
            problems += _timed_out_twice(table) + _history_problems(table)
            stream_bytes = 0
            for p in layout.indexes:
                stream_bytes += int((await js.stream_info(layout.stream(p))).state.bytes or 0)
        finally:
            fleet.stop()
            await store.close()
            await admin.close()
    return SizeFigures(
        games=games,
        messages=messages,
        fill_s=round(fill_s, 2),
        fill_messages_per_s=round(messages / fill_s) if messages else None,
        audited=len(chosen) + 1,
        problems=problems,
        first_catch_up_s=first,
        kinds=kinds,
        first_timeout_s=round(first_timeout_s, 2),
        nats_start_s=round(nats_start_s, 2),
        nats_rss_mb=round(nats_rss, 1),
        stream_bytes=stream_bytes,
        database_bytes=database_bytes(root),
        killed_held_s=round(held_s, 2),
        killed_moved_s=round(moved_s, 2),
        load=os.getloadavg(),
    )


async def _first_start(
    fleet: Fleet, store: Store, js: JetStreamContext, layout: Partitions, timeout_s: float
) -> dict[str, float]:
    """Start the fleet on the history: seconds from its start until each follower stood at the
    history's end (the read models, the engines' round watch, the timers), and it was ready."""
    ends = {
        p: int((await js.stream_info(layout.stream(p))).state.last_seq or 0) for p in layout.indexes
    }
    fleet.start()
    started = time.time()

    async def caught_up(follower: str) -> tuple[str, float]:
        if follower == "projections":
            await fleet.ready_after("projections", timeout_s)  # the schema is made
            await _caught_up(store, js, layout, timeout_s)
        else:
            await until_checkpointed(js, layout, ends, timeout_s, kind=follower)
        return follower, round(time.time() - started, 2)

    first = dict(await asyncio.gather(*map(caught_up, ("projections", ROUND_WATCH, TIMERS))))
    await fleet.until_ready(timeout_s)
    return first


async def _watch_table(
    js: JetStreamContext, layout: Partitions
) -> tuple[TableWatch, JetStreamContext.PushSubscription]:
    """The table's commits from now on, as they arrive (and the subscription, to end)."""
    watch = TableWatch()
    subscription = await js.subscribe(
        layout.game_subject(TABLE),
        stream=layout.stream(layout.of(TABLE)),
        cb=watch.receive,
        ordered_consumer=True,
        deliver_policy=api.DeliverPolicy.NEW,
    )
    return watch, subscription


def database_bytes(root: Path) -> int:
    """The read models' SQLite files (the database, its WAL and shared memory)."""
    return sum(path.stat().st_size for path in root.glob(f"{DATABASE}*"))


def _first_timeout(watch: TableWatch) -> float:
    """When the table's first timeout watched arrived (``time.time()``)."""
    return next(
        arrived
        for arrived, commit in watch.arrivals
        if commit.events and isinstance(commit.events[0], TimedOut)
    )


async def _kill_timers(
    fleet: Fleet, js: JetStreamContext, layout: Partitions, watch: TableWatch
) -> tuple[float, float]:
    """Kill the timer worker with SIGKILL just after one of the table's timeouts (its next
    deadline is a whole turn away) and start it again at once: seconds from the kill until it
    holds the table's partition, and until the table moves."""
    (timers,) = fleet.of("timers")
    seen = watch.timeouts
    await watch.until(lambda w: w.timeouts > seen, timeout_s=30)
    timers.kill()
    killed = time.time()
    moves = len(watch.arrivals)
    timers.start()
    await until_held_by(js, TIMERS, layout.of(TABLE), timers.pid, timeout_s=60)
    held = time.time() - killed
    await watch.until(lambda w: len(w.arrivals) > moves, timeout_s=60)
    return held, watch.arrivals[moves][0] - killed


def run(
    sizes: Iterable[int] = SIZES,
    partitions: int = 1,
    turn_s: float = 1.0,
    progress: Callable[[str], None] | None = None,
) -> HistoryReport:
    """Each size on a fresh stack of its own, one after another."""
    layout = Partitions(partitions)
    measured = []
    for games in sizes:
        with tempfile.TemporaryDirectory(prefix="spades-bench-history-") as root:
            measured.append(
                asyncio.run(measure(games, layout, turn_s, Path(root), progress or _quiet))
            )
    return report(layout, turn_s, measured)


def _quiet(_: str) -> None:
    pass
