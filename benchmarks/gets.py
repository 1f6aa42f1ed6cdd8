"""``spades bench gets``: what a view's one question to the game stream costs the server.

Every view of a game asks the stream whether its subject holds anything after the commit the
gateway knows ("anything after?"), and the answer is nearly always "no message". The service's
reads (:class:`services.runtime.event_store.JetStreamEventStore`) ask it as a JetStream direct
get wherever the stream allows one (a stream of one replica, as ``spades up`` runs); the peer,
in the same run on the same server, is the shape before: the same store on a stream of the same
commits that does not allow direct gets, so that every get is the leader's ``STREAM.MSG.GET``,
a JSON API request. Rounds alternate between the two; the best of each counts.

Each side gets the CPU its processes spent per get, from ``/proc``: the embedded nats-server
and this process (the asking tasks). Measured on an embedded nats-server unless
``SPADES_NATS_URL`` names one.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time

import msgspec
from nats.js import JetStreamContext

from benchmarks.commands import Broker, CpuMeter, _fresh_stream, _nats
from services.runtime.event_store import History, JetStreamEventStore, history_stream_config


class GetSide(msgspec.Struct):
    gets_per_s: float
    cpu_us: dict[str, float]
    """CPU microseconds per get, by process (``nats-server``, ``client``)."""


class GetFigures(msgspec.Struct):
    subjects: int
    gets: int
    concurrency: int
    rounds: int
    direct: GetSide
    leader: GetSide
    ratio: float
    """The server's CPU per get through the leader over its CPU per direct get."""


def _text(data: bytes) -> str:
    return data.decode()


async def _filled(
    js: JetStreamContext, name: str, direct: bool, subjects: int, commits: int
) -> tuple[JetStreamEventStore[str], dict[str, int]]:
    """A fresh stream of ``subjects`` histories of ``commits`` commits each, interleaved as
    games' are, and each history's last stream sequence."""
    tag = secrets.token_hex(4)
    history = History(name, lambda key: f"spades.bench-gets.{tag}.{key}", _text)
    config = history_stream_config(name, f"spades.bench-gets.{tag}.>", replicas=1)
    config.allow_direct = direct
    await _fresh_stream(js, config)
    store = JetStreamEventStore(js, history)
    last = dict.fromkeys((f"g{number}" for number in range(subjects)), 0)
    body = b"x" * 400
    for number in range(commits):
        sequences = await asyncio.gather(
            *(
                store.append(key, body, expected=last[key], command_id=f"{key}-{number}")
                for key in last
            )
        )
        last = dict(zip(last, sequences, strict=True))
    return store, last


async def _asked(
    store: JetStreamEventStore[str], last: dict[str, int], gets: int, concurrency: int
) -> GetSide:
    """``gets`` questions "anything after?" at ``concurrency`` at once, each of one history
    past its last commit (one get each, answered "no message")."""
    keys = list(last)
    per_task = gets // concurrency

    async def ask(task: int) -> None:
        for number in range(per_task):
            key = keys[(task * per_task + number) % len(keys)]
            if await store.read(key, after=last[key]):
                raise RuntimeError(f"{key} grew while it was asked")

    await store.read(keys[0], after=last[keys[0]])  # the store looks at its stream first
    meter = CpuMeter()
    start = time.perf_counter()
    await asyncio.gather(*(ask(task) for task in range(concurrency)))
    seconds = time.perf_counter() - start
    asked = per_task * concurrency
    return GetSide(round(asked / seconds, 1), meter.per(asked))


def _best(sides: list[GetSide]) -> GetSide:
    """The round whose server spent the least per get."""
    return min(sides, key=lambda side: side.cpu_us.get("nats-server", 0.0))


async def _measure(
    broker: Broker, subjects: int, commits: int, gets: int, concurrency: int, rounds: int
) -> GetFigures:
    connection = await broker.connect()
    js = connection.jetstream()
    try:
        direct, direct_last = await _filled(js, "SPADES_BENCH_GETS_DIRECT", True, subjects, commits)
        leader, leader_last = await _filled(
            js, "SPADES_BENCH_GETS_LEADER", False, subjects, commits
        )
        direct_sides: list[GetSide] = []
        leader_sides: list[GetSide] = []
        for _ in range(rounds):
            direct_sides.append(await _asked(direct, direct_last, gets, concurrency))
            leader_sides.append(await _asked(leader, leader_last, gets, concurrency))
        for name in ("SPADES_BENCH_GETS_DIRECT", "SPADES_BENCH_GETS_LEADER"):
            await js.delete_stream(name)
    finally:
        await connection.close()
    best_direct, best_leader = _best(direct_sides), _best(leader_sides)
    server_direct = best_direct.cpu_us.get("nats-server", 0.0)
    server_leader = best_leader.cpu_us.get("nats-server", 0.0)
    return GetFigures(
        subjects=subjects,
        gets=(gets // concurrency) * concurrency,
        concurrency=concurrency,
        rounds=rounds,
        direct=best_direct,
        leader=best_leader,
        ratio=round(server_leader / server_direct, 2) if server_direct else 0.0,
    )


def run(
    subjects: int = 500,
    commits: int = 8,
    gets: int = 20_000,
    concurrency: int = 16,
    rounds: int = 3,
) -> GetFigures:
    with _nats(os.environ.get("SPADES_NATS_URL")) as broker:
        return asyncio.run(_measure(broker, subjects, commits, gets, concurrency, rounds))
