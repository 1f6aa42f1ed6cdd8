"""``spades bench http``: the HTTP action path of the whole stack, against a bare FastAPI app.

The service is ``spades up`` (every process of ``make run``: the embedded nats-server, the
engine, the projection and webhooks workers, the gateway) on free ports, its data in a
temporary directory. Its peer, in the same run, is :mod:`benchmarks.http_peer`: the same
FastAPI, uvicorn and nats-py, whose action appends one message to a JetStream file stream and
waits for the acknowledgement, and whose view answers a small JSON (its own nats-server).

Both are driven by the same lean client (:mod:`benchmarks.http_client`) in a process of its
own: G games at once, each a view then one of its legal actions, over and over. Measured over a
window after a warm-up: actions/s, the latency of every request of that path (p50, p99), the
errors, and each server process's CPU in the window (from ``/proc``: per action, per
process). The service's window also samples the projection lag (the time from an action's
answer until the read models show it). With ``--profile DIR``, py-spy records every Python
process of each side during its window (``DIR/<side>-<process>.txt``, collapsed stacks) and
the figures name the functions where each spends its time.

The service is then driven again at a fixed low rate (``low_rate`` actions per second, evenly
spaced): the projection workers' CPU per event at both loads, and the lag when nothing queues.
Events are the game stream's messages appended in the window (its last sequence at either end).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import msgspec

from benchmarks.e2e import spades_up_process, stop
from benchmarks.http_client import ClientFigures
from contracts.wire import GAMES_STREAM
from services.runtime.broker_users import ADMIN
from services.runtime.discovery import find_stack
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats, free_port
from services.runtime.settings import Settings

READY_TIMEOUT_S = 60.0
PROFILE_RATE = 100
"""py-spy samples per second."""
LOW_RATE = 50.0
"""Actions per second of the service's second, quiet window: one every 20 ms."""
_TICKS = os.sysconf("SC_CLK_TCK")


class ProcessCpu(msgspec.Struct):
    name: str
    cpu_s: float
    """CPU seconds (user + system) in the window."""
    cores: float
    """The same per second of the window: the share of one core it kept busy."""
    ms_per_action: float


class SideFigures(msgspec.Struct):
    name: str
    actions: int
    seconds: float
    actions_per_s: float
    requests_per_action: float
    p50_ms: float
    p99_ms: float
    action_p50_ms: float
    action_p99_ms: float
    errors: int
    error_samples: list[str]
    games_finished: int
    processes: list[ProcessCpu]
    lag_samples: int = 0
    lag_p50_ms: float | None = None
    lag_p99_ms: float | None = None
    rate: float | None = None
    """The pace asked of the client (actions/s); None: as fast as the server answers."""
    events: int | None = None
    """Messages appended to the game stream in the window (the service only)."""
    hot: dict[str, list[str]] = msgspec.field(default_factory=dict)
    """With ``--profile``: per process, its costliest functions (inclusive share of samples)."""


class HttpFigures(msgspec.Struct):
    games: int
    preset: str
    warmup_s: float
    seconds: float
    service: SideFigures
    peer: SideFigures
    ratio: float
    """Actions/s of the service over the peer's."""
    quiet: SideFigures | None
    """The service again, at ``LOW_RATE`` (or the rate asked)."""
    load_before: list[float]
    load_after: list[float]
    """The machine's load average (1, 5, 15 min) before and after: it is shared."""


def percentile(values: list[float], percent: int) -> float:
    if not values:
        return 0.0
    if len(values) < 2:
        return round(values[0], 2)
    return round(statistics.quantiles(values, n=100, method="inclusive")[percent - 1], 2)


# --------------------------------------------------------------------------- processes


def _stat(pid: int) -> tuple[int, float] | None:
    """A process's parent and its CPU seconds so far (None once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICKS


def descendants(root: int) -> list[int]:
    """``root`` and every process under it."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = stat[0]
    found = [root]
    for pid in found:
        found.extend(child for child, parent in parents.items() if parent == pid)
    return found


def process_name(pid: int) -> str:
    """What a process of the stack is: ``gateway``, ``engine``, ``nats-server``..."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return str(pid)
    words = [part.decode(errors="replace") for part in argv if part]
    if words and words[0].endswith("nats-server"):
        return "nats-server"
    if "serve" in words:
        return words[words.index("serve") + 1]
    if "up" in words:
        return "spades-up"
    if "benchmarks.http_peer" in words:
        return "peer"
    if "benchmarks.relay" in words:
        return "relay"
    return Path(words[0]).name if words else str(pid)


def cpu_of(pids: dict[str, int]) -> dict[str, float]:
    return {name: stat[1] for name, pid in pids.items() if (stat := _stat(pid)) is not None}


def ms_per_event(side: SideFigures, process: str) -> float | None:
    """CPU milliseconds of ``process`` per game-stream message appended in the window."""
    cpu = next((p.cpu_s for p in side.processes if p.name == process), None)
    if cpu is None or not side.events:
        return None
    return round(cpu * 1000 / side.events, 3)


def stream_counter(data_dir: Path) -> Callable[[], int]:
    """How many messages the game stream of the stack in ``data_dir`` holds now (its last
    sequence), asked as the operator's tools ask."""
    record = find_stack(data_dir)
    credentials = Settings(data_dir=data_dir).nats_credentials(ADMIN)

    async def last_sequence() -> int:
        client = await connect(record.nats_url, "spades-bench-http", credentials=credentials)
        try:
            info = await client.jetstream().stream_info(GAMES_STREAM)
            return int(info.state.last_seq or 0)
        finally:
            await client.close()

    return lambda: asyncio.run(last_sequence())


def _is_python(pid: int) -> bool:
    try:
        return "python" in os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return False


# --------------------------------------------------------------------------- profiles


def _py_spy() -> str:
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("py-spy is not installed: pip install -e '.[bench]'")
    return found


def start_profiles(
    directory: Path, side: str, pids: dict[str, int], seconds: float
) -> list[subprocess.Popen[bytes]]:
    directory.mkdir(parents=True, exist_ok=True)
    spy = _py_spy()
    return [
        subprocess.Popen(
            [spy, "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))),
             "--rate", str(PROFILE_RATE), "--format", "raw", "--nonblocking",
             "--output", str(directory / f"{side}-{name}.txt")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in pids.items()
        if _is_python(pid) and name != "spades-up"
    ]  # fmt: skip


_IDLE = (
    "select (selectors.py",
    "run_forever (base_events.py",
    "_worker (thread.py",
    "_connection_worker_thread (core.py:59)",  # aiosqlite's thread waiting for work
    "wait (threading.py",
    # Under uvloop the loop itself is C: a sample whose last Python frame is the runner is
    # the loop waiting (mostly) or doing its own I/O; neither is the process's Python work.
    "Runner.run (runners.py",
)
"""Leaf frames of a process waiting for something to do (py-spy ``--nonblocking`` samples
them too): not time spent."""


def hottest(path: Path, top: int = 14) -> list[str]:
    """Where a process spends its busy samples (idle waits left out), from py-spy's collapsed
    stacks: the share of busy samples each function is on the stack for, and of those where
    it is the leaf. Frames on nearly every busy stack of their thread (the loop, the server,
    the command line) are left out."""
    if not path.exists():
        return []
    stacks: list[tuple[str, list[str], int]] = []
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if count_text.isdigit():
            thread, *frames = stack.split(";")
            stacks.append((thread, [_frame(frame) for frame in frames], int(count_text)))
    total = sum(count for _, _, count in stacks)
    busy_stacks = [
        (thread, frames, count)
        for thread, frames, count in stacks
        if frames and not any(mark in frames[-1] for mark in _IDLE)
    ]
    busy = sum(count for _, _, count in busy_stacks)
    if not busy:
        return []
    per_thread: Counter[str] = Counter()
    in_thread: Counter[tuple[str, str]] = Counter()
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for thread, frames, count in busy_stacks:
        per_thread[thread] += count
        for frame in set(frames):
            in_thread[thread, frame] += count
            inclusive[frame] += count
        own[frames[-1]] += count
    generic = {frame for (thread, frame), n in in_thread.items() if n >= 0.9 * per_thread[thread]}
    lines = [f"busy in {busy * 100 / total:.0f}% of {total} samples; share of the busy ones:"]
    for frame, count in inclusive.most_common():
        if len(lines) > top:
            break
        if frame not in generic:
            lines.append(
                f"{count * 100 / busy:5.1f}% (self {own[frame] * 100 / busy:4.1f}%)  {frame}"
            )
    return lines


def _frame(frame: str) -> str:
    """``function (path/to/file.py:12)`` as ``function (file.py:12)``."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit('/', 1)[-1]}"


# --------------------------------------------------------------------------- the runs


@dataclass(frozen=True)
class Target:
    name: str
    url: str
    processes: dict[str, int]
    """Every server process of this side, by what it is."""


def drive(
    target: Target,
    games: int,
    warmup_s: float,
    seconds: float,
    preset: str,
    lag_every_s: float | None,
    profile: Path | None,
    rate: float | None = None,
    stream: Callable[[], int] | None = None,
) -> SideFigures:
    """Run the lean client against one side (at ``rate`` actions/s, if given); its figures, its
    processes' CPU and, with ``stream`` (the game stream's length), the events of the window."""
    argv = [sys.executable, "-m", "benchmarks.http_client", target.url, "--games", str(games)]
    argv += ["--warmup", str(warmup_s), "--seconds", str(seconds), "--preset", preset]
    if lag_every_s is not None:
        argv += ["--lag-every", str(lag_every_s)]
    if rate is not None:
        argv += ["--rate", str(rate)]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert client.stdout is not None
    pids = {**target.processes, "client": client.pid}
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    spies: list[subprocess.Popen[bytes]] = []
    figures: ClientFigures | None = None
    appended: list[int] = []
    for line in client.stdout:
        if line.startswith("window-start"):
            before = cpu_of(pids)
            appended += [stream()] if stream is not None else []
            if profile is not None:
                spies = start_profiles(profile, target.name, pids, seconds)
        elif line.startswith("window-end"):
            after = cpu_of(pids)
            appended += [stream()] if stream is not None else []
        elif line.startswith("{"):
            figures = msgspec.json.decode(line, type=ClientFigures)
    if client.wait() != 0 or figures is None:
        raise RuntimeError(f"the client failed against {target.name} (exit {client.returncode})")
    for spy in spies:
        spy.wait()
    actions = max(figures.actions, 1)
    processes = [
        ProcessCpu(
            name=name,
            cpu_s=round(after[name] - before[name], 2),
            cores=round((after[name] - before[name]) / figures.seconds, 3),
            ms_per_action=round((after[name] - before[name]) * 1000 / actions, 3),
        )
        for name in pids
        if name in before and name in after
    ]
    lags = figures.lags_ms
    return SideFigures(
        name=target.name,
        actions=figures.actions,
        seconds=figures.seconds,
        actions_per_s=round(figures.actions / figures.seconds, 1),
        requests_per_action=round(figures.requests / actions, 2),
        p50_ms=percentile(figures.latencies_ms, 50),
        p99_ms=percentile(figures.latencies_ms, 99),
        action_p50_ms=percentile(figures.action_latencies_ms, 50),
        action_p99_ms=percentile(figures.action_latencies_ms, 99),
        errors=figures.errors,
        error_samples=figures.error_samples,
        games_finished=figures.games_finished,
        processes=processes,
        lag_samples=len(lags),
        lag_p50_ms=percentile(lags, 50) if lags else None,
        lag_p99_ms=percentile(lags, 99) if lags else None,
        rate=rate,
        events=appended[1] - appended[0] if len(appended) == 2 else None,
        hot={
            name: hottest(profile / f"{target.name}-{name}.txt")
            for name in pids
            if profile is not None and (profile / f"{target.name}-{name}.txt").exists()
        },
    )


@contextlib.contextmanager
def bare_peer() -> Iterator[Target]:
    """The bare app on a free port, with a nats-server of its own."""
    with (
        tempfile.TemporaryDirectory(prefix="spades-bench-peer-") as store,
        EmbeddedNats(Path(store)) as server,
    ):
        port = free_port()
        argv = [sys.executable, "-m", "benchmarks.http_peer", "--port", str(port)]
        argv += ["--nats-url", server.url, "--creds", str(server.credentials_for(ADMIN))]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_for(url + "/openapi.json", process)
            processes = {"peer": process.pid}
            if server.pid is not None:
                processes["nats-server"] = server.pid
            yield Target("peer", url, processes)
        finally:
            stop(process)


def _wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the bare peer exited before it was ready")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        time.sleep(0.1)  # readiness of another process: nothing to await but time
    raise RuntimeError(f"the bare peer was not ready within {READY_TIMEOUT_S} s")


def run(
    games: int = 16,
    seconds: float = 20.0,
    warmup_s: float = 3.0,
    preset: str = "partnership",
    lag_every_s: float = 0.1,
    profile: Path | None = None,
    low_rate: float | None = LOW_RATE,
) -> HttpFigures:
    """Both sides at full load, then (with ``low_rate``) the service at that rate."""
    load_before = list(os.getloadavg())
    settings = {"SPADES_RATE_LIMIT": "off"}
    with spades_up_process(settings) as (url, process, data_dir):
        processes = {process_name(pid): pid for pid in descendants(process.pid)}
        target = Target("service", url, processes)
        stream = stream_counter(data_dir)
        service = drive(
            target, games, warmup_s, seconds, preset, lag_every_s, profile, None, stream
        )
        quiet = None
        if low_rate is not None:
            quiet = drive(
                target, games, warmup_s, seconds, preset, lag_every_s, None, low_rate, stream
            )
    with bare_peer() as target:
        peer = drive(target, games, warmup_s, seconds, preset, None, profile)
    return HttpFigures(
        games=games,
        preset=preset,
        warmup_s=warmup_s,
        seconds=seconds,
        service=service,
        peer=peer,
        ratio=round(service.actions_per_s / max(peer.actions_per_s, 1e-9), 3),
        quiet=quiet,
        load_before=[round(x, 2) for x in load_before],
        load_after=[round(x, 2) for x in os.getloadavg()],
    )
