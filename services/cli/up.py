"""``spades up``: the whole stack on one machine, from one command.

Starts the embedded nats-server (unless ``SPADES_NATS_URL`` names a server), then the engine,
the projection workers and the gateway, each as its own process (``spades serve ...``) with the
same settings. A child that dies is started again after a pause; Ctrl-C or SIGTERM stops every
child, then the server, and waits for them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from services.runtime.logging import get_logger
from services.runtime.nats_server import EmbeddedNats
from services.runtime.settings import Settings

log = get_logger("spades.up")

RESTART_PAUSE_S = 2.0
STOP_TIMEOUT_S = 10.0


@dataclass
class Child:
    """One service process of the stack."""

    name: str
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    restarts: int = field(default=0)

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, env=self.env)
        log.info("started", service=self.name, pid=self.process.pid)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout_s: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("did not stop in time; killing it", service=self.name)
            self.process.kill()
            self.process.wait()


def _spades(*args: str) -> list[str]:
    return [sys.executable, "-m", "services.cli.main", *args]


def children(settings: Settings, nats_url: str) -> list[Child]:
    env = {
        **os.environ,
        "SPADES_NATS_URL": nats_url,
        "SPADES_DATA_DIR": str(settings.data_dir.absolute()),
    }
    return [
        Child("engine", _spades("serve", "engine"), env),
        Child("projections", _spades("serve", "projections"), env),
        Child(
            "gateway",
            _spades("serve", "gateway", "--host", settings.host, "--port", str(settings.port)),
            env,
        ),
    ]


def run_stack(settings: Settings) -> int:
    """Run until a signal; return the exit status."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    settings.signing_key()  # made once here, so every child reads the same key file
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    server: EmbeddedNats | None = None
    nats_url = settings.nats_url
    if nats_url is None:
        server = EmbeddedNats(Path(settings.nats_store_dir), port=settings.nats_port)
        server.start()
        nats_url = server.url
        log.info("embedded nats-server", url=nats_url, store=str(settings.nats_store_dir))
    stack = children(settings, nats_url)
    try:
        for child in stack:
            child.start()
        log.info("ready", url=f"http://{settings.host}:{settings.port}")
        while not stopping.wait(0.5):
            for child in stack:
                if child.process is not None and child.process.poll() is not None:
                    code = child.process.returncode
                    log.warning("exited; starting it again", service=child.name, code=code)
                    child.restarts += 1
                    time.sleep(RESTART_PAUSE_S)
                    if not stopping.is_set():
                        child.start()
    finally:
        for child in reversed(stack):
            child.stop()
        for child in reversed(stack):
            child.wait(STOP_TIMEOUT_S)
        if server is not None:
            server.stop()
        log.info("stopped")
    return 0
