"""``spades bench memory``: the engine's and the gateway's resident memory with many games.

``spades up`` (every process, a temporary directory) is started; each process's RSS is read
once it is ready (its own peer: the same process holding no game). Then G games are created and
seated (four seats, the first hand dealt) through the engine over NATS, and each is read once
through the gateway (``GET /v1/games/{id}``), so both have met every game. RSS is read again.

Both hold games in an LRU cache of :data:`services.runtime.game_cache.CAPACITY` games; a game
pushed out is replayed from its stream when it is next asked for. So the RSS stops growing once
the caches are full, whatever the number of games: the figures say how much each cached game
costs and what the processes hold with G games.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from pathlib import Path
from urllib.parse import urlsplit

import msgspec
import nats

from benchmarks.commands import wait_for_engine
from benchmarks.e2e import spades_up_process
from benchmarks.http import descendants, process_name
from benchmarks.http_client import Connection
from contracts.wire import CreateGameRequest, TakeSeatRequest
from services.runtime.broker_users import ADMIN
from services.runtime.credentials import connect_options
from services.runtime.engine_client import EngineClient
from services.runtime.game_cache import CAPACITY
from services.runtime.settings import Settings

WATCHED = ("engine", "gateway")


class MemoryFigures(msgspec.Struct):
    games: int
    cache_capacity: int
    """Games each process holds at most (least recently used out)."""
    seconds: float
    rss_ready_mb: dict[str, float]
    """Each process's RSS once the stack is ready, holding no game: the peer."""
    rss_mb: dict[str, float]
    """The same after every game was created and read."""
    kb_per_cached_game: dict[str, float]
    """(rss - rss_ready) / the games held."""
    load: list[float]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


async def _create(
    url: str, nats_url: str, credentials: Path | None, games: int, width: int
) -> None:
    connection = await nats.connect(nats_url, **connect_options(credentials))
    engine = EngineClient(connection, timeout_s=30)
    await wait_for_engine(engine)
    rng = random.Random(1)
    ids = [f"mem{n:06d}" for n in range(games)]
    queue: asyncio.Queue[str] = asyncio.Queue()
    for game_id in ids:
        queue.put_nowait(game_id)

    async def create_some() -> None:
        while not queue.empty():
            game_id = queue.get_nowait()
            reply = await engine.send(game_id, CreateGameRequest(rules={"preset": "partnership"}))
            assert reply.ok, reply.detail
            for seat in range(4):
                sit = TakeSeatRequest(player=f"p{seat}", seat=seat, entropy=rng.randbytes(8).hex())
                reply = await engine.send(game_id, sit)
                assert reply.ok, reply.detail

    await asyncio.gather(*(create_some() for _ in range(width)))
    await connection.close()
    parts = urlsplit(url)
    for game_id in ids:
        queue.put_nowait(game_id)

    async def read_some() -> None:
        http = Connection(parts.hostname or "127.0.0.1", parts.port or 80)
        while not queue.empty():
            game_id = queue.get_nowait()
            status, body = await http.request("GET", f"/v1/games/{game_id}")
            assert status == 200, body
        await http.close()

    await asyncio.gather(*(read_some() for _ in range(width)))


def run(games: int = 10_000, width: int = 32) -> MemoryFigures:
    with spades_up_process({"SPADES_RATE_LIMIT": "off"}) as (url, process, data_dir):
        pids = {process_name(pid): pid for pid in descendants(process.pid)}
        watched = {name: pids[name] for name in WATCHED}
        ready = {name: rss_mb(pid) for name, pid in watched.items()}
        settings = Settings(data_dir=data_dir)
        nats_url = _nats_url(data_dir)
        start = time.perf_counter()
        asyncio.run(_create(url, nats_url, settings.nats_credentials(ADMIN), games, width))
        seconds = time.perf_counter() - start
        after = {name: rss_mb(pid) for name, pid in watched.items()}
    held = min(games, CAPACITY)
    return MemoryFigures(
        games=games,
        cache_capacity=CAPACITY,
        seconds=round(seconds, 1),
        rss_ready_mb=ready,
        rss_mb=after,
        kb_per_cached_game={
            name: round((after[name] - ready[name]) * 1024 / held, 1) for name in watched
        },
        load=[round(x, 2) for x in os.getloadavg()],
    )


def _nats_url(data_dir: Path) -> str:
    from services.runtime.discovery import find_stack

    return find_stack(data_dir).nats_url
