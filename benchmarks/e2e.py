"""``spades bench e2e``: bot games through the HTTP API of the whole stack, against the engine
over NATS without HTTP (``spades bench commands``, the ceiling).

The stack is ``spades up`` in a child process (a free port, its data in a temporary directory),
unless a URL names a running one. N games of bots (:func:`services.bots.runner.play_games`), C
at a time, play through one HTTP client whose transport times every ``POST .../actions`` from
the request's start to the answer's headers. Meanwhile ``/readyz`` is sampled for each read
model's lag (stream messages it has yet to apply). After the last action it is polled until
every model holds the whole stream: that wait is the catch-up time (an upper bound, within the
sampling period when the models catch up while the last games are still closing). Then the
commands benchmark runs at the same concurrency (its own embedded server and engine, the stack
stopped) for as many commands as the bots sent actions; the ratio is actions/s over commands/s.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import msgspec

from benchmarks import commands
from services.bots.runner import GameOutcome, play_games
from services.bots.strategy import Bot
from services.client import ApiError, SpadesClient
from services.runtime.nats_server import free_port

READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
SAMPLE_EVERY_S = 0.1
"""How often ``/readyz`` is sampled while the games run."""
CATCH_UP_POLL_S = 0.01
CATCH_UP_TIMEOUT_S = 120.0
LOG_TAIL_CHARS = 3000

_BEHIND = re.compile(r"(\S+) (\d+)")
"""A model and its lag in ``/readyz``'s refusal: "read models behind the stream: games 1200"."""


class E2EFigures(msgspec.Struct):
    games: int
    concurrency: int
    preset: str
    actions: int
    """Actions the bots had accepted."""
    refused: int
    """Actions refused (the table had moved on, or the service was unavailable) and sent again."""
    seconds: float
    actions_per_s: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_lag: int
    """The most stream messages any read model had yet to apply, over the samples of the run."""
    lag_at_end: int
    """The same, in the first sample after the last action."""
    catch_up_ms: float
    """From the last action's answer until every read model held the whole stream."""
    commands_per_s: float
    commands_p50_ms: float
    commands_p99_ms: float
    ratio: float
    """``actions_per_s / commands_per_s``: what HTTP, the bots and the read side leave of the
    engine's own throughput."""


class ActionClock(httpx.AsyncBaseTransport):
    """A transport that times each ``POST .../actions`` (to the answer's headers)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner
        self.latencies: list[float] = []
        self.refused = 0
        self.last_accepted_at = 0.0
        """``time.perf_counter()`` when the last accepted action was answered."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST" or not request.url.path.endswith("/actions"):
            return await self._inner.handle_async_request(request)
        start = time.perf_counter()
        response = await self._inner.handle_async_request(request)
        answered = time.perf_counter()
        self.latencies.append(answered - start)
        if response.is_success:
            self.last_accepted_at = answered
        else:
            self.refused += 1
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class LagSamples:
    """``/readyz`` samples: when each was answered, and the largest lag in it."""

    taken: list[tuple[float, int]] = field(default_factory=list)

    async def take(self, client: SpadesClient) -> int | None:
        """One sample; None when the service could not say (not connected, say)."""
        try:
            lags = list((await client.readyz()).projections.values())
        except ApiError as error:  # a 503 names the models more than READY_LAG behind
            lags = [int(count) for _, count in _BEHIND.findall(error.detail.partition(":")[2])]
            if not lags:
                return None
        except httpx.TransportError:
            return None
        lag = max(lags, default=0)
        self.taken.append((time.perf_counter(), lag))
        return lag

    async def follow(self, client: SpadesClient, every_s: float = SAMPLE_EVERY_S) -> None:
        """Sample until cancelled."""
        while True:
            await self.take(client)
            await asyncio.sleep(every_s)  # a sampling period: there is nothing to await

    def after(self, moment: float) -> list[tuple[float, int]]:
        return [(at, lag) for at, lag in self.taken if at >= moment]

    async def caught_up_at(self, client: SpadesClient, moment: float) -> float:
        """When a sample answered after ``moment`` first showed no lag (polling for one)."""
        deadline = time.perf_counter() + CATCH_UP_TIMEOUT_S
        while True:
            caught = [at for at, lag in self.after(moment) if lag == 0]
            if caught:
                return caught[0]
            if time.perf_counter() > deadline:
                raise TimeoutError(f"read models not caught up {CATCH_UP_TIMEOUT_S} s after")
            await self.take(client)
            await asyncio.sleep(CATCH_UP_POLL_S)  # polling another process's progress


@dataclass(frozen=True)
class Played:
    """What the bots did, as the client saw it."""

    outcomes: list[GameOutcome]
    seconds: float
    clock: ActionClock
    lags: LagSamples
    caught_up_at: float

    @property
    def actions(self) -> int:
        return sum(outcome.actions for outcome in self.outcomes)


async def play(
    url: str,
    api_key: str | None,
    games: int,
    concurrency: int,
    preset: str,
    on_game: Callable[[GameOutcome], None] | None = None,
) -> Played:
    """Play the games through ``url``, timing actions and sampling the read models' lag."""
    # Each seat holds an event stream open beside its requests: no cap on connections.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    clock = ActionClock(httpx.AsyncHTTPTransport(limits=limits))
    lags = LagSamples()
    async with SpadesClient(url, api_key=api_key, transport=clock) as client:
        sampler = asyncio.create_task(lags.follow(client))
        try:
            start = time.perf_counter()
            outcomes = await play_games(
                client, {"preset": preset}, games, Bot, concurrency=concurrency, on_game=on_game
            )
            seconds = time.perf_counter() - start
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
        caught_up_at = await lags.caught_up_at(client, clock.last_accepted_at)
    return Played(outcomes, seconds, clock, lags, caught_up_at)


@contextlib.contextmanager
def spades_up(settings: dict[str, str] | None = None) -> Iterator[str]:
    """``spades up`` on a free port with its data in a temporary directory (and these
    ``SPADES_*`` ``settings``); its URL."""
    with spades_up_process(settings) as (url, _process, _data_dir):
        yield url


@contextlib.contextmanager
def spades_up_process(
    settings: dict[str, str] | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """As :func:`spades_up`, with the ``spades up`` process (whose children are the stack) and
    its data directory."""
    with tempfile.TemporaryDirectory(prefix="spades-bench-e2e-") as data_dir:
        port = free_port()
        # Only the benchmark's own settings: none of the machine's SPADES_* leaks in.
        env = {key: value for key, value in os.environ.items() if not key.startswith("SPADES_")}
        # The shipped configuration (the default log level, INFO, and its access record), as a
        # deployment runs it.
        # The figures are of the engine and the API, not of the limits a server keeps to
        # protect itself from one caller (the bots all play from one address).
        env["SPADES_RATE_LIMIT"] = "off"
        env.update(settings or {})
        log_path = Path(data_dir) / "stack.log"
        argv = [sys.executable, "-m", "services.cli.main", "up"]
        argv += ["--port", str(port), "--data-dir", data_dir]
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_until_ready(url, process, log_path)
            yield url, process, Path(data_dir)
        finally:
            stop(process)


def _wait_until_ready(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(base_url=url, timeout=2.0) as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
                raise RuntimeError(f"`spades up` exited before it was ready:\n{tail}")
            with contextlib.suppress(httpx.TransportError):
                if http.get("/readyz").status_code == 200:
                    return
            time.sleep(0.1)  # readiness of another process: nothing to await but time
    raise RuntimeError(f"`spades up` was not ready within {READY_TIMEOUT_S} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (``spades up`` stops its children, then its server; a service stops itself);
    SIGKILL if it hangs."""
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def percentile_ms(latencies: list[float], percent: int) -> float:
    """The ``percent``-th percentile, in milliseconds."""
    if len(latencies) < 2:
        return round(latencies[0] * 1000, 2) if latencies else 0.0
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return round(cuts[percent - 1] * 1000, 2)


def run(
    games: int,
    concurrency: int,
    preset: str = "partnership",
    *,
    url: str | None = None,
    api_key: str | None = None,
    on_game: Callable[[GameOutcome], None] | None = None,
) -> E2EFigures:
    """Play the games (on ``url``, or on a stack started for the run), then the commands
    benchmark at the same concurrency; the figures of both."""
    with contextlib.ExitStack() as stack:
        target = url or stack.enter_context(spades_up())
        played = asyncio.run(play(target, api_key, games, concurrency, preset, on_game))
    ceiling = commands.run(concurrency, max(played.actions, concurrency), 1, preset)
    return figures_of(played, ceiling, preset, concurrency)


def figures_of(
    played: Played, ceiling: commands.CommandFigures, preset: str, concurrency: int
) -> E2EFigures:
    latencies = played.clock.latencies
    last_action = played.clock.last_accepted_at
    during = [lag for _, lag in played.lags.taken]
    after = played.lags.after(last_action)
    rate = played.actions / played.seconds
    return E2EFigures(
        games=len(played.outcomes),
        concurrency=concurrency,
        preset=preset,
        actions=played.actions,
        refused=played.clock.refused,
        seconds=round(played.seconds, 2),
        actions_per_s=round(rate, 1),
        p50_ms=percentile_ms(latencies, 50),
        p95_ms=percentile_ms(latencies, 95),
        p99_ms=percentile_ms(latencies, 99),
        max_lag=max(during, default=0),
        lag_at_end=after[0][1] if after else 0,
        catch_up_ms=round((played.caught_up_at - last_action) * 1000, 1),
        commands_per_s=ceiling.commands_per_s,
        commands_p50_ms=ceiling.p50_ms,
        commands_p99_ms=ceiling.p99_ms,
        ratio=round(rate / ceiling.commands_per_s, 3),
    )
