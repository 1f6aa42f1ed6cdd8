"""The whole stack as a user runs it: ``spades up`` as a child process, and its process tree.

Children are found through ``/proc`` (every process whose parent chain leads to ``spades up``),
so a test can tell that SIGTERM left nothing behind: no nats-server, no Python service.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from services.runtime.nats_server import free_port

UNLIMITED = "platform=100000/s,seat=100000/s,anonymous=100000/s,audit=100000/s"
"""Rate limits the suites that play whole games from one address never reach; None keeps the
server's defaults (tests/security tries those)."""
READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 40.0
_POLL_S = 0.1
_LOG_TAIL_CHARS = 4000


@dataclass(frozen=True)
class ProcessInfo:
    """One process, told apart from a later one with the same pid by its start time."""

    pid: int
    parent: int
    started: int
    state: str
    command: str

    @property
    def running(self) -> bool:
        """Still there and not a zombie (a zombie has exited; only its entry remains)."""
        now = read_process(self.pid)
        return now is not None and now.started == self.started and now.state != "Z"


def read_process(pid: int) -> ProcessInfo | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = stat[stat.rindex(")") + 2 :].split()
    return ProcessInfo(pid, int(fields[1]), int(fields[19]), fields[0], command)


def descendants(root: int) -> list[ProcessInfo]:
    """Every living process below ``root`` in the process tree."""
    processes = [
        p for entry in os.listdir("/proc") if entry.isdigit() and (p := read_process(int(entry)))
    ]
    children: dict[int, list[ProcessInfo]] = {}
    for process in processes:
        children.setdefault(process.parent, []).append(process)
    found: list[ProcessInfo] = []
    frontier = [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child.state != "Z":
                found.append(child)
            frontier.append(child.pid)
    return found


class Stack:
    """``spades up --port <free> --data-dir <dir>`` with JSON logs in ``<dir>/stack.log``."""

    def __init__(
        self,
        data_dir: Path,
        *,
        api_keys: str = "",
        rate_limit: str | None = UNLIMITED,
        env: dict[str, str] | None = None,
        source: Path | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.source = source
        """A tree of the project to run instead of this one (``python -m`` imports from the
        working directory first): an earlier release, unpacked; None runs this checkout."""
        self.port = free_port()
        self.api_keys = api_keys
        self.env = env or {}
        """``SPADES_*`` settings of this stack (the machine's own never leak in)."""
        self.rate_limit = rate_limit
        self.log_path = data_dir / "stack.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_key(self) -> str | None:
        return self.api_keys.split(",")[0] if self.api_keys else None

    def start(self, *, until: str | None = "/readyz") -> None:
        """Start it and return once ``until`` answers 200: ``/readyz`` (ready), or
        ``/healthz`` for a stack that is up but may not be ready; None: at once."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Only what the test chooses: no SPADES_* setting of the machine leaks in.
        env = {key: value for key, value in os.environ.items() if not key.startswith("SPADES_")}
        env["SPADES_LOG_FORMAT"] = "json"
        env["SPADES_MIN_TURN_S"] = "0"  # the clock tests play turns of tens of milliseconds
        env["SPADES_MAX_COMMANDS_PER_MINUTE"] = "10000000"  # the suites play games flat out
        if self.api_keys:
            env["SPADES_API_KEYS"] = self.api_keys
        if self.rate_limit is not None:
            env["SPADES_RATE_LIMIT"] = self.rate_limit
        env.update(self.env)
        argv = [sys.executable, "-m", "services.cli.main", "up"]
        argv += ["--port", str(self.port), "--data-dir", str(self.data_dir)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.source,
                # A process group of its own, as a shell gives a command: a test may kill the
                # group without killing pytest.
                process_group=0,
            )
        if until is not None:
            self._wait_until_ready(until)

    def _wait_until_ready(self, until: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        with httpx.Client(base_url=self.base_url, timeout=2.0) as http:
            while time.monotonic() < deadline:
                if self.process is None or self.process.poll() is not None:
                    raise RuntimeError(
                        f"`spades up` exited before it was ready:\n{self.log_tail()}"
                    )
                try:
                    if http.get(until).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(_POLL_S)  # polling readiness with a deadline: nothing to await
        self.terminate()
        raise RuntimeError(f"not ready within {READY_TIMEOUT_S} s:\n{self.log_tail()}")

    def children(self) -> list[ProcessInfo]:
        assert self.process is not None
        return descendants(self.process.pid)

    def terminate(self) -> tuple[int, list[ProcessInfo]]:
        """SIGTERM, as a service manager sends it; wait for the exit. Returns the exit status
        and the processes of the stack still running afterwards (none, when all is well)."""
        assert self.process is not None
        before = self.children()
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            status = -signal.SIGKILL
        left = [process for process in before if process.running]
        for process in left:  # clean up for the next tests, then let the caller fail
            os.kill(process.pid, signal.SIGKILL)
        return status, left

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-_LOG_TAIL_CHARS:]
        except FileNotFoundError:
            return "(no log)"
