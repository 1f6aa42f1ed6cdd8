"""Settings of every Spades process, read from `SPADES_*` environment variables."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contracts.partitions import MAX_PARTITIONS, Partitions
from services.runtime.private import private_dir
from services.transparency.note import COSIGNATURE, NoteError, Signer, Verifier

SIGNING_KEY_BYTES = 32
SIGNING_KEY_FILENAME = "secret.key"
LOG_KEY_FILENAME = "log.key"
CREDENTIALS_DIRNAME = "credentials"
CREDENTIALS_SUFFIXES = (".creds", ".nk")

LogFormat = Literal["auto", "json", "console"]


class Settings(BaseSettings):
    """One process's configuration; every field can be set as `SPADES_<FIELD>`."""

    model_config = SettingsConfigDict(env_prefix="SPADES_", extra="ignore")

    nats_url: str | None = None
    """NATS server to use (several, comma-separated, for a cluster); None starts the embedded
    server."""
    data_dir: Path = Path("var")
    host: str = "127.0.0.1"
    port: int = 8000
    nats_port: int | None = None
    """Port of the embedded server; None picks a free one."""
    nats_creds: Path | None = None
    """NATS credentials: a ``.creds`` file (JWT deployments) or an nkey seed file, or a
    directory of them, one per user (``<user>.creds`` or ``<user>.nk``). None: the embedded
    server's, under ``data_dir/nats/credentials``, when they are there."""
    database_url: str | None = None
    """Read-model database; None means SQLite under `data_dir`."""
    # repr=False: secrets must not reach logs or tracebacks through a printed Settings.
    api_keys: str = Field(default="", repr=False)
    """Comma-separated platform keys: ``platform:key`` entries (several keys may name one
    platform), or bare keys; unset, the gateway runs for local development (no platforms)."""
    seat_token_ttl: int = Field(default=86_400, ge=1, le=366 * 86_400)
    """Seconds a seat token is valid for after it is issued."""
    watch_link_max_ttl: int = Field(default=30 * 86_400, ge=60, le=30 * 86_400)
    """The longest a watch link a platform issues may be valid for, in seconds (at most the
    30 days the API's schema allows)."""
    frame_origins: str = ""
    """The sites that may show a platform's pages in a frame, ``platform=ORIGIN ORIGIN``
    entries separated by ``;`` (a bare list of origins: the games of a server without
    platform keys); unset, no site may (``frame-ancestors 'none'``)."""
    rate_limit: str = ""
    """Token buckets per caller, e.g. ``platform=200/s,anonymous=20/s,audit=2/s`` (names left
    out keep their defaults; ``off`` turns limiting off): see the gateway's ``limits``."""
    max_league_players: int = Field(default=256, ge=2)
    """The most players a league may have."""
    max_round_tables: int = Field(default=64, ge=1)
    """The most tables one round of a league may seat."""
    max_games_going_on: int = Field(default=1000, ge=1)
    """A platform's quota of games not finished at once (a league round's tables included);
    past it, a new game or round is 429 ``rate_limited``."""
    max_leagues_going_on: int = Field(default=100, ge=1)
    """A platform's quota of leagues not finished at once; past it, a new league is 429
    ``rate_limited``."""
    max_commands_per_minute: int = Field(default=12_000, ge=1)
    """A platform's engine commands a minute on each engine (its players' actions, its
    rounds' tables, its timeouts and the bots' moves for away seats): past it, a player's
    command is 429 ``rate_limited`` (:mod:`services.engine.budget`)."""
    min_turn_s: float = Field(default=3.0, ge=0)
    """The shortest turn a game's or a league's clock may give (a timeout is a command the
    service makes: a tiny ``turn_s`` with ``auto`` is a bot game nobody plays)."""
    trusted_proxies: str = ""
    """Comma-separated addresses of proxies whose ``X-Forwarded-For`` names the client (the
    rate limit's per-address buckets); unset, the connection's own address counts."""
    max_header_bytes: int = Field(default=32 * 1024, ge=1024)
    """The most bytes a request's head (request line and headers) may have: past it, 431."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """The longest a request's head may take to arrive, from its first byte (or from the
    connection's opening): past it, 408 and the connection closed."""
    max_connections_per_address: int = Field(default=256, ge=0)
    """Open connections one client address may hold on a gateway (0: no cap; the trusted
    proxies are never capped)."""
    max_streams: str = ""
    """Open event streams per caller, e.g. ``platform=256,seat=4,anonymous=16`` (names left
    out keep their defaults): see the gateway's ``limits``."""
    max_waits: str = ""
    """``min_version`` reads waiting at once per caller, e.g. ``platform=32,seat=2,anonymous=2``
    (names left out keep their defaults): see the gateway's ``limits``."""
    secret_key: str | None = Field(default=None, repr=False)
    """Key that signs seat tokens; None keeps a generated one in `data_dir/secret.key`."""
    log_key: str | None = Field(default=None, repr=False)
    """The audit log's Ed25519 key, as signer text (``PRIVATE+KEY+<name>+<id>+<base64>``);
    None: the key file ``data_dir/log.key`` if there is one (``spades up`` makes it), else
    the log keeps its checkpoints unsigned."""
    log_origin: str = Field(default="spades.localhost/log", pattern=r"^[^\s+]+$")
    """The audit log's origin: partition ``p``'s log is ``<log_origin>/<p>``, its checkpoints'
    first line and its key's name."""
    log_witnesses: str = ""
    """The witnesses the audit log offers each new checkpoint to (C2SP ``tlog-witness``), so
    that receipts carry their cosignatures: ``<url> <verifier key>`` entries separated by
    ``,``, each a witness's address and the key it names at ``GET /``
    (``witness.example.org+<id>+<base64>``). Unset: the log has no witness."""
    log_witness_timeout_s: float = Field(default=5.0, gt=0, le=60)
    """The longest one offer to a witness may take: a slow witness holds up nothing else."""
    log_witness_retry_s: float = Field(default=30.0, gt=0, le=3600)
    """The longest wait before a witness that failed is offered the log's checkpoint again (the
    waits double from a second up to it)."""
    log_format: LogFormat = "auto"
    log_level: str = "INFO"
    command_timeout_s: float = 5.0
    stream_replicas: int = 1
    partitions: int = Field(default=1, ge=1, le=MAX_PARTITIONS)
    """K, the partitions of the game stream (``contracts.partitions``): chosen when a deployment
    is made, the same for every process of it (one that finds other streams will not start)."""
    metrics_port: int = Field(default=0, ge=0, le=65535)
    """Where a worker process (engine, projections, webhooks, timers) serves ``/metrics``;
    0 serves none. The gateway serves its own on its HTTP port."""
    projections_auto_rebuild: bool = False
    """Let a projection worker that refuses the stream it finds (its positions belong to
    another stream, or the stream was rewound) rebuild its read model, rather than wait for
    `spades projections rebuild --all`."""
    engine_queue: str = "engine"
    webhook_allow_private: bool = False
    """Let webhook endpoints be on loopback, link-local and private addresses (tests, a
    receiver on the same machine); off, such a URL is refused at registration and at every
    delivery."""
    webhook_schedule: str = "5s,5m,30m,2h,5h,10h,10h"
    """The waits between a webhook's tries, each the most a full jitter draws from; after the
    last, the delivery has failed and its endpoint is disabled (``s``, ``m``, ``h``)."""
    webhook_concurrency: int = Field(default=64, ge=1, le=4096)
    """Deliveries in flight at once in a webhooks process."""
    webhook_endpoint_concurrency: int = Field(default=8, ge=1, le=1024)
    """Deliveries in flight at once to one endpoint: a slow receiver holds no more."""
    webhook_timeout_s: float = Field(default=10.0, gt=0, le=120)
    """The longest one delivery may take, from connecting to the end of the answer read."""
    webhook_retention_s: int = Field(default=7 * 86_400, ge=60)
    """How long finished deliveries stay in the log (and may be replayed)."""
    stream_receipt_wait_s: float = Field(default=10.0, ge=0, le=120)
    """How long after a hand's end an open event stream waits for the audit log to hold the
    hand (and, where it has witnesses, for one to cosign it), to send its ``receipt`` frame;
    past it, the frame carries what the log holds, or none comes (the hand record has it)."""
    webhook_receipt_wait_s: float = Field(default=10.0, ge=0, le=120)
    """How long after a hand's end its ``hand.scored`` webhook waits for the audit log to hold
    the hand (and, where it has witnesses, for one to cosign it), to carry its receipt; past
    it, the webhook goes with what the log holds, or without one."""

    @property
    def layout(self) -> Partitions:
        """The game stream's partitions."""
        return Partitions(self.partitions)

    @property
    def platform_keys(self) -> dict[str, str]:
        """Every configured key, and the platform it names (see ``api_keys``)."""
        return parse_api_keys(self.api_keys)

    @property
    def api_key_set(self) -> frozenset[str]:
        return frozenset(self.platform_keys)

    @property
    def nats_store_dir(self) -> Path:
        """Where the embedded server keeps its JetStream files."""
        return self.data_dir / "nats"

    @property
    def nats_credentials_dir(self) -> Path:
        """Where the embedded server's users keep their nkey seeds."""
        return self.nats_store_dir / CREDENTIALS_DIRNAME

    def nats_credentials(self, user: str) -> Path | None:
        """The credentials a process connecting as ``user`` (a broker user) presents."""
        given = self.nats_creds
        if given is not None and not given.is_dir():
            return given  # a file: as it is (a missing one is reported when connecting)
        directory = given if given is not None else self.nats_credentials_dir
        for suffix in CREDENTIALS_SUFFIXES:
            candidate = directory / f"{user}{suffix}"
            if candidate.is_file():
                return candidate
        return None

    @property
    def read_model_database_url(self) -> str:
        """`database_url`, or the default SQLite file under `data_dir`."""
        if self.database_url is not None:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'read_models.db').absolute()}"

    def signing_key(self) -> bytes:
        """The key that signs seat tokens: `secret_key`, else the key file (created once)."""
        if self.secret_key is not None:
            return self.secret_key.encode()
        return _read_or_create_key_file(self.data_dir / SIGNING_KEY_FILENAME)

    @property
    def witnesses(self) -> list[WitnessAddress]:
        """``log_witnesses``, read; raises ValueError for an entry that is not a URL and a
        witness's key."""
        return parse_witnesses(self.log_witnesses)

    def log_signer(self, *, create: bool = False) -> Signer | None:
        """The audit log's key: ``log_key``, else the key file (made now with ``create``),
        else None."""
        if self.log_key is not None:
            return Signer.parse(self.log_key)
        path = self.data_dir / LOG_KEY_FILENAME
        if create and not path.exists():
            private_dir(path.parent)
            _create_key_file(path, Signer.generate(self.log_origin).text().encode())
        if not path.exists():
            return None
        return Signer.parse(path.read_text())


PLATFORM_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""What a platform may be called in ``SPADES_API_KEYS``."""


def bare_key_platform(key: str) -> str:
    """The platform a bare key names: after a hash of itself, which does not reveal it."""
    return f"key-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def parse_api_keys(text: str) -> dict[str, str]:
    """``SPADES_API_KEYS`` as key -> platform. Entries are comma-separated ``platform:key``
    (split at the first colon) or a bare ``key``; raises ValueError for a bad platform name.
    Nothing of a key is ever put in an error."""
    keys: dict[str, str] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        platform, colon, key = entry.partition(":")
        if not colon:
            platform, key = bare_key_platform(entry), entry
        platform, key = platform.strip(), key.strip()
        if not PLATFORM_NAME.match(platform):
            raise ValueError(
                "SPADES_API_KEYS: a platform's name is 1 to 64 of A-Z a-z 0-9 _ . - "
                "(entries are platform:key or a bare key)"
            )
        if not key:
            raise ValueError(f"SPADES_API_KEYS: platform {platform} is given no key")
        keys[key] = platform
    return keys


@dataclass(frozen=True)
class WitnessAddress:
    """A witness of the audit log: where to offer it checkpoints, and its cosigning key."""

    url: str
    key: Verifier


def parse_witnesses(text: str) -> list[WitnessAddress]:
    """``SPADES_LOG_WITNESSES`` read: comma-separated ``<url> <verifier key>`` entries."""
    witnesses: list[WitnessAddress] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        url, _, key = entry.partition(" ")
        if not url.startswith(("http://", "https://")) or not key.strip():
            raise ValueError(
                "SPADES_LOG_WITNESSES: an entry is a witness's URL (http:// or https://), a "
                f"space and its verifier key, not {entry[:60]!r}"
            )
        try:
            verifier = Verifier.parse(key.strip())
        except NoteError as error:
            raise ValueError(f"SPADES_LOG_WITNESSES: the key of {url}: {error}") from None
        if verifier.kind != COSIGNATURE:
            raise ValueError(
                f"SPADES_LOG_WITNESSES: the key of {url} signs notes; a witness's key cosigns "
                "(`spades witness keys` makes one)"
            )
        witnesses.append(WitnessAddress(url.rstrip("/"), verifier))
    return witnesses


def get_settings() -> Settings:
    """Read the settings from the environment now (never cached, so tests can change it)."""
    return Settings()


def _read_or_create_key_file(path: Path) -> bytes:
    private_dir(path.parent)
    if not path.exists():
        _create_key_file(path)
    key = path.read_bytes()
    if len(key) != SIGNING_KEY_BYTES:
        raise ValueError(
            f"{path} holds {len(key)} bytes, expected {SIGNING_KEY_BYTES}; "
            "restore it or delete it to issue a new key (which invalidates every seat token)"
        )
    return key


def _create_key_file(path: Path, key: bytes | None = None) -> None:
    # Written to a private temporary file and linked into place: link() fails if the key
    # already exists, so two processes starting at once agree on one complete key.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as key_file:
            key_file.write(secrets.token_bytes(SIGNING_KEY_BYTES) if key is None else key)
        # Another process created the key first: its key wins.
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
