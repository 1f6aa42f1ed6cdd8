"""Who may do what: seat tokens that grant one seat of one game, and platform keys.

A seat token is ``st1.<game_id>.<seat>.<nonce>.<mac>``: the MAC is HMAC-SHA256, under the
service's signing key, of everything before it, so the token names its game and seat in the
clear and cannot be altered. The nonce makes every token issued unique. Keys and MACs are
compared in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from contracts.wire import GAME_ID

_VERSION = "st1"
_NONCE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_SEAT = re.compile(r"^[0-9]$")


@dataclass(frozen=True, slots=True)
class SeatGrant:
    """What a valid seat token grants: one seat of one game."""

    game_id: str
    seat: int


def _mac(key: bytes, message: str) -> str:
    digest = hmac.digest(key, message.encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class SeatTokens:
    """Issues seat tokens and reads them back."""

    def __init__(self, signing_key: bytes) -> None:
        self._key = signing_key

    def issue(self, game_id: str, seat: int) -> str:
        body = f"{_VERSION}.{game_id}.{seat}.{secrets.token_urlsafe(16)}"
        return f"{body}.{_mac(self._key, body)}"

    def read(self, token: str) -> SeatGrant | None:
        """The grant of a token this service signed, or None for anything else."""
        body, _, mac = token.rpartition(".")
        parts = body.split(".")
        if len(parts) != 4 or parts[0] != _VERSION:
            return None
        _, game_id, seat, nonce = parts
        if not (GAME_ID.match(game_id) and _SEAT.match(seat) and _NONCE.match(nonce)):
            return None
        if not hmac.compare_digest(mac.encode(), _mac(self._key, body).encode()):
            return None
        return SeatGrant(game_id, int(seat))


class PlatformKeys:
    """The keys that may create games (``SPADES_API_KEYS``); none configured means anyone may."""

    def __init__(self, keys: Iterable[str]) -> None:
        # Hashed, so that comparing costs the same whatever the lengths.
        self._digests = [hashlib.sha256(key.encode()).digest() for key in keys]

    @property
    def required(self) -> bool:
        return bool(self._digests)

    def accepts(self, key: str) -> bool:
        given = hashlib.sha256(key.encode()).digest()
        matched = False
        for digest in self._digests:  # every key compared, none skipped
            matched |= hmac.compare_digest(given, digest)
        return matched
