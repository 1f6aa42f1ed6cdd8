"""``spades up``: the whole stack on one machine, from one command.

Starts the embedded nats-server (unless ``SPADES_NATS_URL`` names a server), then the engine,
the projection workers, the webhooks worker, the timer worker and the gateway, each as its own
process (``spades serve ...``) with the same settings and its own broker credentials
(``SPADES_NATS_CREDS``: the path of its seed file).

It owns what it starts. A child or the server that dies is started again after a pause (the
services reconnect to the server by themselves). Ctrl-C, SIGTERM or SIGHUP stops every child,
then the server, and waits for them; the server runs in a process group of its own, so a Ctrl-C
in the terminal does not stop it before the services that use it. If ``spades up`` itself dies
(``kill -9``, of it or of its process group), the kernel stops them all (``PR_SET_PDEATHSIG``,
Linux). A second ``spades up`` on a data directory where one runs is refused.

Each worker (engine, projections, webhooks, timers) serves its Prometheus metrics on a free port
of its own (``SPADES_METRICS_PORT``, chosen at start and kept across its restarts); the gateway
serves its own on its HTTP port. Once the gateway answers, it logs "ready" and records where its
parts listen, metrics included, in ``<data_dir>/stack.json`` (see
:mod:`services.runtime.discovery`), which every other command reads; a clean stop removes the
record first.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from services.runtime.discovery import (
    StackRunning,
    connectable_url,
    holding_stack_lock,
    record_for,
    remove_record,
    write_record,
)
from services.runtime.logging import get_logger
from services.runtime.nats_server import (
    EmbeddedNats,
    EmbeddedNatsError,
    StoreInUse,
    free_ports,
)
from services.runtime.orphans import dies_with_parent
from services.runtime.private import private_dir, private_umask
from services.runtime.settings import Settings

log = get_logger("spades.up")

RESTART_PAUSE_S = 2.0
STOP_TIMEOUT_S = 10.0
SUPERVISE_EVERY_S = 0.5
READY_PROBE_EVERY_S = 0.05
READY_PROBE_TIMEOUT_S = 1.0


@dataclass
class Child:
    """One service process of the stack."""

    name: str
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    restarts: int = field(default=0)

    def start(self) -> None:
        # preexec_fn is unsafe only with other threads running; `spades up` has none.
        self.process = subprocess.Popen(
            self.argv,
            env=self.env,
            preexec_fn=dies_with_parent(),  # noqa: PLW1509
        )
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
        log.info("service stopped", service=self.name, code=self.process.returncode)


def _spades(*args: str) -> list[str]:
    return [sys.executable, "-m", "services.cli.main", *args]


WORKERS = ("engine", "projections", "webhooks", "timers")
"""The kinds of process that serve no HTTP of their own: each gets a metrics port."""
SERVICES = (*WORKERS, "gateway")
"""Every kind of process the stack runs, one of each (``deploy/`` runs the same kinds)."""


def children(
    settings: Settings,
    nats_url: str,
    server: EmbeddedNats | None,
    metrics_ports: Mapping[str, int] | None = None,
) -> list[Child]:
    """The services, each with the credentials of its own broker user (the embedded server's
    seed file for it, or what ``SPADES_NATS_CREDS`` gives for an external server) and, for a
    worker, its port in ``metrics_ports``."""
    env = {
        **os.environ,
        "SPADES_NATS_URL": nats_url,
        "SPADES_DATA_DIR": str(settings.data_dir.absolute()),
    }
    env.pop("SPADES_METRICS_PORT", None)  # one port is no use to four processes

    def child(name: str, *argv: str) -> Child:
        own = dict(env)
        credentials = (
            server.credentials_for(name) if server is not None else settings.nats_credentials(name)
        )
        if credentials is not None:
            own["SPADES_NATS_CREDS"] = str(credentials)
        if metrics_ports and name in metrics_ports:
            own["SPADES_METRICS_PORT"] = str(metrics_ports[name])
        return Child(name, _spades(*argv), own)

    gateway = ("--host", settings.host, "--port", str(settings.port))
    return [
        child(name, "serve", name, *(gateway if name == "gateway" else ())) for name in SERVICES
    ]


def _keep_server_running(server: EmbeddedNats, stopping: threading.Event) -> None:
    """Start the server again if it has died; the services reconnect to it on their own."""
    if server.is_running or stopping.is_set():
        return
    log.warning("nats-server exited; starting it again", pid=server.pid)
    try:
        server.start()
    except EmbeddedNatsError as error:
        log.error("nats-server did not start again; retrying", error=str(error))
        stopping.wait(RESTART_PAUSE_S)
        return
    log.info("nats-server started again", pid=server.pid, url=server.url)


def gateway_listens(url: str) -> bool:
    """Whether the gateway at ``url`` answers ``/healthz`` (it is up; ``/readyz`` also waits
    for the engine and the read models)."""
    parts = url.removeprefix("http://").rsplit(":", 1)
    host, port = parts[0].strip("[]"), int(parts[1])
    connection = http.client.HTTPConnection(host, port, timeout=READY_PROBE_TIMEOUT_S)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def run_stack(settings: Settings) -> int:
    """Run until a signal; return the exit status."""
    private_umask()  # every file of the stack, nats-server's and the services', is its user's
    private_dir(settings.data_dir)
    settings.signing_key()  # made once here, so every child reads the same key file
    settings.log_signer(create=True)  # the audit log's key too, unless SPADES_LOG_KEY gives one
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        stopping.set()

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)

    server: EmbeddedNats | None = None
    nats_url = settings.nats_url
    credentials = settings.nats_creds
    if nats_url is None:
        server = EmbeddedNats(
            Path(settings.nats_store_dir),
            port=settings.nats_port,
            exit_with_parent=True,
            partitions=settings.layout,
        )
        try:
            server.start()
        except StoreInUse as error:
            print(f"error: {error}", file=sys.stderr)  # one line, before anything started
            return 1
        nats_url = server.url
        credentials = server.credentials.directory
        log.info(
            "embedded nats-server",
            url=nats_url,
            store=str(settings.nats_store_dir),
            pid=server.pid,
            credentials=str(server.credentials.directory),
        )
    try:
        # After the embedded server's own lock, which names the server that holds the store;
        # this one also holds for a stack on an external NATS.
        with holding_stack_lock(settings.data_dir):
            return _supervise(settings, stopping, nats_url, credentials, server)
    except StackRunning as error:
        print(f"error: {error}", file=sys.stderr)  # one line, before any service started
        if server is not None:
            server.stop()
        return 1


def _supervise(
    settings: Settings,
    stopping: threading.Event,
    nats_url: str,
    credentials: Path | None,
    server: EmbeddedNats | None,
) -> int:
    """Start the services, announce the stack once its gateway answers, and keep it running
    until ``stopping`` is set; then stop it all, the server last."""
    remove_record(settings.data_dir)  # left by a stack that died: not ours to announce
    gateway_url = connectable_url(settings.host, settings.port)
    metrics_ports = dict(zip(WORKERS, free_ports(len(WORKERS)), strict=True))
    stack = children(settings, nats_url, server, metrics_ports)
    ready = False
    try:
        for child in stack:
            child.start()
        while not stopping.wait(SUPERVISE_EVERY_S if ready else READY_PROBE_EVERY_S):
            if not ready and gateway_listens(gateway_url):
                ready = True
                write_record(
                    settings.data_dir,
                    record_for(
                        settings,
                        nats_url=nats_url,
                        nats_credentials=credentials,
                        gateway_url=gateway_url,
                        metrics_ports=metrics_ports,
                    ),
                )
                log.info("ready", url=gateway_url)
            if server is not None:
                _keep_server_running(server, stopping)
            for child in stack:
                if child.process is not None and child.process.poll() is not None:
                    code = child.process.returncode
                    log.warning("exited; starting it again", service=child.name, code=code)
                    child.restarts += 1
                    time.sleep(RESTART_PAUSE_S)
                    if not stopping.is_set():
                        child.start()
    finally:
        remove_record(settings.data_dir)  # first: no command should find a stack going away
        for child in reversed(stack):
            child.stop()
        for child in reversed(stack):
            child.wait(STOP_TIMEOUT_S)
        if server is not None:
            server.stop()  # last: the services used it until they were gone
            log.info("nats-server stopped")
        log.info("stopped")
    return 0
