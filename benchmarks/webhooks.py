"""``spades bench webhooks``: deliveries to a local receiver, against raw POSTs to it.

The stack is ``spades up`` in a child process (private addresses allowed, its data in a
temporary directory), unless a URL names a running one that allows them. A receiver
(:class:`~benchmarks.webhook_receiver.Receiver`) on 127.0.0.1 acknowledges everything; the
platform registers it for every event type. Then:

1. Live: N bot games, C at a time, are played through the API. Each action's latency is timed
   (the request's start to the answer's headers), and each delivery's lag: from the commit (the
   body's ``timestamp``, the engine's clock) to its arrival at the receiver (the same machine's
   clock).
2. Drain: the endpoint's deliveries are replayed (``POST /v1/webhooks/{id}/replay``): all of
   them queued at once, one chain per game, sent in order per game; deliveries per second is
   how many arrived over the time from the replay to the last one.
3. The peer: the same bodies POSTed straight to the same receiver by one httpx client, one
   sequence per game at the same concurrency, in order: what the receiver takes at most. The
   ratio is the worker's rate over that.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import msgspec

from benchmarks.e2e import ActionClock, percentile_ms, spades_up
from benchmarks.webhook_receiver import Received, Receiver
from contracts.webhooks import EVENT_TYPES
from services.bots.runner import GameOutcome, play_games
from services.bots.strategy import Bot
from services.client import SpadesClient
from services.client.webhooks import WebhookClient

WAIT_S = 300.0
STACK_SETTINGS = {"SPADES_WEBHOOK_ALLOW_PRIVATE": "1"}


class WebhookFigures(msgspec.Struct):
    games: int
    concurrency: int
    preset: str
    deliveries: int
    """Webhooks the live games made (each arrived, and once more in the drain)."""
    lag_p50_ms: float
    lag_p99_ms: float
    """From the commit to the arrival at the receiver, while the games were played."""
    actions: int
    action_p50_ms: float
    action_p99_ms: float
    drain_seconds: float
    deliveries_per_s: float
    """Replayed deliveries over the time they took to arrive."""
    raw_posts_per_s: float
    """The same bodies POSTed straight to the receiver, at the same concurrency."""
    ratio: float
    """``deliveries_per_s / raw_posts_per_s``."""


def _commit_time(request: Received) -> float:
    stamp = str(request.json["timestamp"]).replace("Z", "+00:00")
    return datetime.fromisoformat(stamp).astimezone(UTC).timestamp()


def _chain(request: Received) -> str:
    data = request.json["data"]
    return str(data.get("game_id") or data.get("league_id"))


async def _live(
    url: str,
    api_key: str | None,
    receiver: Receiver,
    games: int,
    concurrency: int,
    rules: dict[str, object],
) -> tuple[str, list[GameOutcome], list[float], float]:
    """Register the receiver, play the games; the endpoint, outcomes, action latencies, and
    when the games began."""
    clock = ActionClock(httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=None)))
    async with SpadesClient(url, api_key=api_key, transport=clock) as client:
        endpoint = await WebhookClient(client).create(receiver.url, EVENT_TYPES)
        began = time.time()
        outcomes = await play_games(client, rules, games, Bot, concurrency=concurrency)
    return endpoint.id, outcomes, clock.latencies, began


def _finished(game_ids: set[str]) -> Callable[[list[Received]], bool]:
    def done(received: list[Received]) -> bool:
        ended = {r.json["data"]["game_id"] for r in received if r.type == "game.finished"}
        return game_ids <= ended

    return done


async def _drain(
    url: str, api_key: str | None, receiver: Receiver, endpoint: str, since: float, expected: int
) -> float:
    """Replay every delivery; the seconds until the last one arrived."""
    before = len(receiver.received)
    async with SpadesClient(url, api_key=api_key) as client:
        start = time.time()
        queued = await WebhookClient(client).replay(
            endpoint, datetime.fromtimestamp(since - 1, UTC)
        )
    if queued != expected:
        raise RuntimeError(f"replay queued {queued} deliveries, not {expected}")
    received = await asyncio.to_thread(
        receiver.wait_for, lambda got: len(got) >= before + expected, WAIT_S
    )
    return received[before + expected - 1].at - start


async def _raw(receiver: Receiver, bodies: dict[str, list[bytes]], concurrency: int) -> float:
    """POST every chain's bodies in order, ``concurrency`` chains at once; posts per second."""
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits) as http:

        async def chain(items: list[bytes]) -> None:
            async with gate:
                for body in items:
                    answer = await http.post(
                        receiver.url, content=body, headers={"content-type": "application/json"}
                    )
                    answer.raise_for_status()

        start = time.perf_counter()
        await asyncio.gather(*(chain(items) for items in bodies.values()))
        return sum(len(items) for items in bodies.values()) / (time.perf_counter() - start)


async def measure(
    url: str, api_key: str | None, games: int, concurrency: int, preset: str, hands: int
) -> WebhookFigures:
    rules: dict[str, object] = {"preset": preset, "max_hands": hands}
    with Receiver() as receiver:
        endpoint, outcomes, latencies, began = await _live(
            url, api_key, receiver, games, concurrency, rules
        )
        game_ids = {outcome.game_id for outcome in outcomes}
        live = await asyncio.to_thread(receiver.wait_for, _finished(game_ids), WAIT_S)
        live = [r for r in live if _chain(r) in game_ids]
        lags = [r.at - _commit_time(r) for r in live]
        drain_s = await _drain(url, api_key, receiver, endpoint, began, len(live))
        bodies: dict[str, list[bytes]] = defaultdict(list)
        for request in live:
            bodies[_chain(request)].append(request.body)
        raw_per_s = await _raw(receiver, bodies, concurrency)
        with contextlib.suppress(Exception):
            async with SpadesClient(url, api_key=api_key) as client:
                await WebhookClient(client).delete(endpoint)
    rate = len(live) / drain_s
    return WebhookFigures(
        games=games,
        concurrency=concurrency,
        preset=preset,
        deliveries=len(live),
        lag_p50_ms=percentile_ms(lags, 50),
        lag_p99_ms=percentile_ms(lags, 99),
        actions=len(latencies),
        action_p50_ms=percentile_ms(latencies, 50),
        action_p99_ms=percentile_ms(latencies, 99),
        drain_seconds=round(drain_s, 2),
        deliveries_per_s=round(rate, 1),
        raw_posts_per_s=round(raw_per_s, 1),
        ratio=round(rate / raw_per_s, 3),
    )


def run(
    games: int,
    concurrency: int,
    preset: str = "partnership",
    hands: int = 1,
    *,
    url: str | None = None,
    api_key: str | None = None,
) -> WebhookFigures:
    """Measure on ``url`` (a stack that allows private webhook addresses), or on a stack
    started for the run."""
    with contextlib.ExitStack() as stack:
        target = url or stack.enter_context(spades_up(STACK_SETTINGS))
        return asyncio.run(measure(target, api_key, games, concurrency, preset, hands))
