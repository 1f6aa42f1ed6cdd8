"""Who may do what: platform keys that name a platform, and seat tokens that grant one seat.

A seat token is ``st2.<game_id>.<seat>.<issue>.<expires>.<nonce>.<mac>``: the MAC is
HMAC-SHA256, under the service's signing key, of everything before it, so the token names its
game, seat, issue and expiry (Unix seconds) in the clear and none can be altered. The nonce
makes every token issued unique. A token expires at ``expires``; it is revoked once its seat's
token is issued again (the game's history records each issue: :mod:`domain.platforms`), which
only a reader of that history can tell, so :meth:`SeatTokens.read` checks the signature and the
shape and leaves the issue to the caller.

``SPADES_API_KEYS`` holds ``platform:key`` entries (several keys may name one platform, for
rotation); a bare ``key`` names the platform ``key-<first 12 hex digits of sha256(key)>``.
Keys and MACs are compared in constant time, and never logged.

A watch link's token is ``wl1.<kind>.<id>.<generation>.<expires>.<nonce>.<mac>``, signed the
same way: ``kind`` is ``game`` or ``league``, and it lets its holder read that game (or the
league and its tables) as the public reads a public one, never a hidden card. The platform
revokes every link of a game or league at once by moving its generation on (the read-model
database holds it: :mod:`services.store.watch_links`), so, as for a seat token, the caller
checks the generation.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from domain.league import LEAGUE_ID
from domain.seating import GAME_ID
from services.runtime.settings import bare_key_platform

_VERSION = "st2"
_WATCH_VERSION = "wl1"
_GENERATION = re.compile(r"^(0|[1-9][0-9]{0,11})$")
_NONCE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_SEAT = re.compile(r"^[0-9]$")
_NUMBER = re.compile(r"^[1-9][0-9]{0,11}$")
VERIFIED_KEPT = 20_000
"""Verified tokens kept in memory (a few MB): about four per active game."""


@dataclass(frozen=True, slots=True)
class SeatGrant:
    """What a well-signed seat token names: one seat of one game, at one issue, until a time."""

    game_id: str
    seat: int
    issue: int
    expires: int
    """Unix seconds."""

    def expired(self, now: float) -> bool:
        return now >= self.expires


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str
    expires_at: str
    """RFC 3339, UTC."""


def rfc3339(unix_seconds: int) -> str:
    return datetime.fromtimestamp(unix_seconds, UTC).isoformat().replace("+00:00", "Z")


def _mac(key: bytes, message: str) -> str:
    digest = hmac.digest(key, message.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class SeatTokens:
    """Issues seat tokens and reads them back."""

    def __init__(
        self, signing_key: bytes, ttl_s: int, clock: Callable[[], float] = time.time
    ) -> None:
        self._key = signing_key
        self._ttl_s = ttl_s
        self._clock = clock
        self._read: dict[str, SeatGrant] = {}
        """Tokens already verified, and what they name (a token names the same forever)."""

    def now(self) -> float:
        return self._clock()

    def issue(self, game_id: str, seat: int, issue: int) -> IssuedToken:
        """A new token for the seat at this issue, valid for the configured lifetime."""
        expires = int(self._clock()) + self._ttl_s
        body = f"{_VERSION}.{game_id}.{seat}.{issue}.{expires}.{secrets.token_urlsafe(16)}"
        return IssuedToken(f"{body}.{_mac(self._key, body)}", rfc3339(expires))

    def read(self, token: str) -> SeatGrant | None:
        """What a token this service signed names, or None for anything else (expired and
        revoked tokens included: the caller checks those). A token's grant is kept once it is
        verified (the last :data:`VERIFIED_KEPT` of them): a seat presents the same token on
        every request, and the rate limit and the route both read it."""
        grant = self._read.get(token)
        if grant is not None:
            return grant
        grant = self._verify(token)
        if grant is not None:
            if len(self._read) >= VERIFIED_KEPT:
                del self._read[next(iter(self._read))]  # the oldest first
            self._read[token] = grant
        return grant

    def _verify(self, token: str) -> SeatGrant | None:
        body, _, mac = token.rpartition(".")
        parts = body.split(".")
        if len(parts) != 6 or parts[0] != _VERSION:
            return None
        _, game_id, seat, issue, expires, nonce = parts
        shaped = (
            GAME_ID.fullmatch(game_id)
            and _SEAT.match(seat)
            and _NUMBER.match(issue)
            and _NUMBER.match(expires)
            and _NONCE.match(nonce)
        )
        if not shaped:
            return None
        if not hmac.compare_digest(mac.encode(), _mac(self._key, body).encode()):
            return None
        return SeatGrant(game_id, int(seat), int(issue), int(expires))


WatchKind = Literal["game", "league"]


@dataclass(frozen=True, slots=True)
class WatchGrant:
    """What a well-signed watch token names: one game, or one league and its tables, at one
    generation of its links, until a time."""

    kind: WatchKind
    subject: str
    """The game's or the league's id."""
    generation: int
    expires: int
    """Unix seconds."""

    def expired(self, now: float) -> bool:
        return now >= self.expires

    def covers(self, game_id: str, league_id: str | None) -> bool:
        """Whether the link shows this game (itself, or a table of its league)."""
        if self.kind == "game":
            return self.subject == game_id
        return league_id is not None and self.subject == league_id


def is_watch_token(credential: str) -> bool:
    return credential.startswith(f"{_WATCH_VERSION}.")


class WatchTokens:
    """Issues watch tokens and reads them back (under the seat tokens' key: the version
    prefix keeps the two apart, so neither ever reads as the other)."""

    def __init__(self, signing_key: bytes, clock: Callable[[], float] = time.time) -> None:
        self._key = signing_key
        self._clock = clock

    def now(self) -> float:
        return self._clock()

    def issue(self, kind: WatchKind, subject: str, generation: int, ttl_s: int) -> IssuedToken:
        expires = int(self._clock()) + ttl_s
        nonce = secrets.token_urlsafe(12)
        body = f"{_WATCH_VERSION}.{kind}.{subject}.{generation}.{expires}.{nonce}"
        return IssuedToken(f"{body}.{_mac(self._key, body)}", rfc3339(expires))

    def read(self, token: str) -> WatchGrant | None:
        """What a watch token this service signed names, or None for anything else (expired
        and revoked ones included: the caller checks those)."""
        body, _, mac = token.rpartition(".")
        parts = body.split(".")
        if len(parts) != 6 or parts[0] != _WATCH_VERSION:
            return None
        _, kind, subject, generation, expires, nonce = parts
        subject_shape = GAME_ID if kind == "game" else LEAGUE_ID if kind == "league" else None
        shaped = (
            subject_shape is not None
            and subject_shape.fullmatch(subject)
            and _GENERATION.match(generation)
            and _NUMBER.match(expires)
            and _NONCE.match(nonce)
        )
        if not shaped:
            return None
        if not hmac.compare_digest(mac.encode(), _mac(self._key, body).encode()):
            return None
        watched: WatchKind = "game" if kind == "game" else "league"
        return WatchGrant(watched, subject, int(generation), int(expires))


class PlatformKeys:
    """The keys of ``SPADES_API_KEYS`` and the platforms they name; none configured means
    local development: no caller is a platform, and anyone may do what a platform does."""

    def __init__(self, keys: dict[str, str] | Iterable[str]) -> None:
        named = keys if isinstance(keys, dict) else {key: bare_key_platform(key) for key in keys}
        # Hashed, so that comparing costs the same whatever the lengths.
        self._digests = [
            (hashlib.sha256(key.encode()).digest(), platform) for key, platform in named.items()
        ]

    @property
    def required(self) -> bool:
        return bool(self._digests)

    def platform_of(self, key: str) -> str | None:
        """The platform a key names, or None; every key is compared, none skipped."""
        given = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
        found: str | None = None
        for digest, platform in self._digests:
            if hmac.compare_digest(given, digest):
                found = platform
        return found

    def accepts(self, key: str) -> bool:
        return self.platform_of(key) is not None
