"""Where the parts of a running ``spades up`` listen, recorded in its data directory, so that
every command beside it (``spades audit``, ``projections lag``, ``bots``, ...) finds them without
flags, and a Prometheus beside it finds every process's metrics.

``spades up`` holds an exclusive lock on ``<data_dir>/stack.lock`` for as long as it runs (a
second one on the same directory is refused), writes ``<data_dir>/stack.json`` once its gateway
listens (atomically: a reader sees a whole record or none; mode 0600, for a database URL may hold
a password), and removes the record when it stops cleanly. A record whose lock nobody holds was
left by a stack that died (``kill -9``, a power cut): it is stale and never used.

For every command a flag wins, then its ``SPADES_*`` variable, then the record. Reading the
record creates nothing: a command run where no stack ever ran leaves no ``var/`` behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from services.runtime.settings import Settings

RECORD_FILENAME = "stack.json"
LOCK_FILENAME = "stack.lock"
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


class StackRecord(msgspec.Struct, frozen=True, kw_only=True):
    """What a running ``spades up`` tells the commands beside it."""

    pid: int
    started_at: str
    data_dir: str
    nats_url: str
    """The NATS server(s) the stack uses, comma-separated for a cluster."""
    nats_credentials: str | None
    """The credentials directory (one seed file per broker user), or the credentials file."""
    gateway_url: str
    database_url: str
    """The read-model database."""
    metrics: dict[str, str] = {}
    """Where each kind of process serves its Prometheus metrics, by kind (``engine``,
    ``projections``, ``webhooks``, ``timers``: each on a port of its own; ``gateway``: on its
    HTTP port). Empty in a record written before processes had ports of their own."""


class StackNotFound(RuntimeError):
    """No running stack recorded in the data directory; the message is one line saying why."""


class StackRunning(RuntimeError):
    """Another ``spades up`` runs on the data directory."""


def record_path(data_dir: Path) -> Path:
    return data_dir / RECORD_FILENAME


def lock_path(data_dir: Path) -> Path:
    return data_dir / LOCK_FILENAME


def connectable_url(host: str, port: int) -> str:
    """The gateway's URL for a client on this machine (a wildcard bind is reached on loopback)."""
    if host in WILDCARD_HOSTS:
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def metrics_url(host: str, port: int) -> str:
    """Where a process bound to ``host`` serves its metrics on ``port``, for a client here."""
    return f"{connectable_url(host, port)}/metrics"


def record_for(
    settings: Settings,
    *,
    nats_url: str,
    nats_credentials: Path | None,
    gateway_url: str,
    metrics_ports: Mapping[str, int] | None = None,
) -> StackRecord:
    """The record of the stack this process runs; ``metrics_ports``: the port each worker kind
    serves its metrics on (bound to ``settings.host``, as the gateway is)."""
    metrics = {
        kind: metrics_url(settings.host, port) for kind, port in (metrics_ports or {}).items()
    }
    return StackRecord(
        pid=os.getpid(),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        data_dir=str(settings.data_dir.absolute()),
        nats_url=nats_url,
        nats_credentials=str(nats_credentials.absolute()) if nats_credentials else None,
        gateway_url=gateway_url,
        database_url=settings.read_model_database_url,
        metrics={**metrics, "gateway": f"{gateway_url}/metrics"},
    )


@contextlib.contextmanager
def holding_stack_lock(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's stack lock while the block runs; raise :class:`StackRunning`
    when another process holds it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(lock_path(data_dir), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "unknown"
            raise StackRunning(
                f"another `spades up` (pid {holder}) runs on the data directory {data_dir}"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def write_record(data_dir: Path, record: StackRecord) -> None:
    """Put the record in place whole (a temporary file renamed over it)."""
    target = record_path(data_dir)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(msgspec.json.format(msgspec.json.encode(record)) + b"\n")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def remove_record(data_dir: Path) -> None:
    record_path(data_dir).unlink(missing_ok=True)


def _lock_is_held(data_dir: Path) -> bool:
    try:
        descriptor = os.open(lock_path(data_dir), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # a shared lock we took is released with it
    return False


def find_stack(data_dir: Path) -> StackRecord:
    """The record of the stack running on ``data_dir``; :class:`StackNotFound` says why not."""
    path = record_path(data_dir)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise StackNotFound(
            f"no `spades up` runs on {data_dir.absolute()} (start one with `make run`, or set "
            "SPADES_DATA_DIR to its data directory)"
        ) from None
    except OSError as error:
        raise StackNotFound(f"{path} cannot be read ({error.strerror})") from None
    try:
        record = msgspec.json.decode(raw, type=StackRecord)
    except msgspec.DecodeError as error:
        raise StackNotFound(f"{path} is not a stack record ({error})") from None
    if not _lock_is_held(data_dir):
        raise StackNotFound(
            f"the stack recorded in {path} (pid {record.pid}) is no longer running "
            "(start it again with `make run`)"
        )
    return record


def running_stack(data_dir: Path) -> StackRecord | None:
    """The record of the stack running on ``data_dir``, or None."""
    try:
        return find_stack(data_dir)
    except StackNotFound:
        return None


def with_stack(settings: Settings, record: StackRecord) -> Settings:
    """``settings`` with what they leave unset taken from the running stack: its NATS server
    (and the credentials that go with it) and its read-model database."""
    changes: dict[str, object] = {}
    if settings.nats_url is None:
        changes["nats_url"] = record.nats_url
        if settings.nats_creds is None and record.nats_credentials is not None:
            changes["nats_creds"] = Path(record.nats_credentials)
    if settings.database_url is None:
        changes["database_url"] = record.database_url
    return settings.model_copy(update=changes)


def needs_stack(settings: Settings) -> bool:
    """Whether a command talking to NATS and the read models must find a stack to get them."""
    return settings.nats_url is None
