"""Helpers for the integration tests: engine processes and reading a game's whole record.

The servers the fixtures start are closed, as in production: every one admits the users of
:data:`~services.runtime.broker_users.BROKER_USERS` by the seeds in one directory made for the
session (:func:`broker_credentials`). Each service process connects as its own user; the tests'
own connections (which write test commits, subscribe to anything) connect as ``admin``.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nats
import nats.js.errors
from nats.aio.client import Client

from benchmarks.commands import wait_for_engine
from contracts.partitions import ONE, Partitions
from contracts.wire import Commit, encode_commit
from domain.events import GameEnded
from domain.game import fold as fold_game
from services.runtime.broker_users import ADMIN, CLAIMS_BUCKET
from services.runtime.credentials import BrokerCredentials, connect_options
from services.runtime.engine_client import EngineClient
from services.runtime.game_stream import GameStream, StoredCommit


@functools.cache
def broker_credentials() -> BrokerCredentials:
    """The seeds of every broker user, for every server the fixtures start this session."""
    directory = Path(tempfile.mkdtemp(prefix="spades-broker-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return BrokerCredentials(directory).ensure()


def credentials_of(user: str) -> Path:
    return broker_credentials().path(user)


TESTS_COMMANDS_PER_MINUTE = 10_000_000
"""A platform's engine budget no test of the rest reaches."""


class ServiceProcess:
    """``spades serve <service>`` as a child process, with its log in a file."""

    service = "engine"

    def __init__(
        self,
        nats_url: str,
        log_dir: Path,
        name: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.nats_url = nats_url
        self.log_path = log_dir / f"{name or self.service}.log"
        self.env = env or {}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "SPADES_NATS_URL": self.nats_url,
            "SPADES_NATS_CREDS": str(credentials_of(self.service)),
            "SPADES_LOG_FORMAT": "json",
            # the key the tests' own processes seal hands in progress with (tests/conftest.py):
            # every process of a deployment shares one
            "SPADES_SECRET_KEY": "the tests' service key",
            # the suites play whole games of one platform as fast as they can; tests/security
            # tries the budget (test_flood)
            "SPADES_MAX_COMMANDS_PER_MINUTE": str(TESTS_COMMANDS_PER_MINUTE),
            **self.env,
        }
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "services.cli.main", "serve", self.service],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, line: str = "engine ready", timeout_s: float = 30.0) -> None:
        """Return once the process has logged ``line`` (it subscribes before it says so)."""
        deadline = time.monotonic() + timeout_s
        while line not in self.log_path.read_text(errors="replace"):
            assert self.alive, f"{self.service} exited: {self.log_path.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"{self.service} did not get ready in time"
            time.sleep(0.05)

    def pause(self) -> None:
        """SIGSTOP: the process keeps its connections but answers nothing."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT, after :meth:`pause`."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: no chance to finish anything in hand."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class EngineProcess(ServiceProcess):
    """``spades serve engine``."""

    service = "engine"


class ProjectionsProcess(ServiceProcess):
    """``spades serve projections``; give it ``SPADES_DATA_DIR`` or ``SPADES_DATABASE_URL``."""

    service = "projections"


async def connected(url: str, user: str = ADMIN) -> Client:
    """A connection as ``user`` (the admin by default) that rides out server restarts; ``url``
    may list a cluster's nodes, comma-separated."""
    return await nats.connect(
        url.split(","),
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.2,
        **connect_options(credentials_of(user)),
    )


async def ready_client(connection: Client, timeout_s: float = 5.0) -> EngineClient:
    client = EngineClient(connection, timeout_s=timeout_s)
    await wait_for_engine(client)
    return client


async def holder_pid(connection: Client, kind: str, partition: int, timeout_s: float = 15.0) -> int:
    """The process id of the member that holds ``partition`` of ``kind``'s work now (a member
    is named ``<host>-<pid>-<random>``), once one does."""
    js = connection.jetstream()
    async with asyncio.timeout(timeout_s):
        while True:
            try:
                kv = await js.key_value(CLAIMS_BUCKET)
                entry = await kv.get(f"{kind}.partitions.{partition}")
            except nats.js.errors.NotFoundError:
                entry = None
            if entry is not None and entry.value:
                return int(entry.value.decode().rsplit("-", 2)[1])
            await asyncio.sleep(0.1)  # nothing to await but the claims' next renewal


async def history(
    connection: Client, game_id: str, partitions: Partitions = ONE
) -> list[StoredCommit]:
    return await GameStream(connection.jetstream(), partitions).read(game_id)


async def forfeit_on_time(connection: Client, game_id: str, unit: int) -> int:
    """End a running game as a ``forfeit`` clock does: ``unit`` lost on time, the others win,
    at the scores as they stand; appended after the game's last commit exactly as the engine
    appends (the hash chain, the version, the expected sequence). Until the clocks' timer
    writes such commits, this stands in for it. Returns the commit's stream sequence."""
    stored = await history(connection, game_id)
    game = fold_game(event for one in stored for event in one.commit.events)
    assert game is not None
    assert game.status == "playing"
    others = tuple(u for u in range(len(game.scores)) if u != unit)
    commit = Commit(
        game_id=game_id,
        version=game.version + 1,
        command_id="clock-forfeit",
        time="2026-12-01T12:00:00.000Z",
        previous=stored[-1].digest,
        events=[GameEnded(winners=others, scores=game.scores, forfeited=unit)],
    )
    return await GameStream(connection.jetstream()).append(
        game_id, encode_commit(commit), expected=stored[-1].sequence, command_id="clock-forfeit"
    )
