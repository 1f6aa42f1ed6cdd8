"""Secrets at rest: what the read-model database keeps that no one reading it may learn.

A :class:`Sealer` encrypts with XChaCha20-Poly1305 (libsodium's AEAD, through PyNaCl) under a
key derived from the service's secret key (``SPADES_SECRET_KEY``, else ``secret.key`` in the
data directory: the seat-token key) and a purpose, one key per purpose. Each value is bound to
where it is kept (``context``: its row's id), so a sealed value copied into another row does
not open. What is sealed: each webhook endpoint's secret (:mod:`services.store.webhook_endpoints`)
and each game's hand in progress (:mod:`services.projections.hands`). A database without the
key tells nothing of either; with the key, as the service itself, everything opens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import nacl.exceptions
import nacl.secret

SEALED_PREFIX = "sealed1:"
"""How a sealed text begins (``sealed1:`` and the base64 of nonce and ciphertext)."""
WEBHOOK_SECRETS = "webhook-secrets"
HANDS_IN_PROGRESS = "hands-in-progress"


class Unsealable(ValueError):
    """A sealed value that does not open: another key sealed it, or it was altered."""


class Sealer:
    """Seals and opens values of one purpose under a key derived from the service's secret."""

    def __init__(self, secret: bytes, purpose: str) -> None:
        key = hmac.new(secret, f"spades-sealing\x00{purpose}".encode(), hashlib.sha256).digest()
        self._box = nacl.secret.Aead(key)

    def seal(self, data: bytes, context: str) -> bytes:
        """``data`` encrypted and authenticated, bound to ``context``: a fresh nonce, then the
        ciphertext."""
        return bytes(self._box.encrypt(data, context.encode()))

    def open(self, sealed: bytes, context: str) -> bytes:
        """What :meth:`seal` sealed under ``context``; raises :class:`Unsealable`."""
        try:
            return self._box.decrypt(sealed, context.encode())
        except (nacl.exceptions.CryptoError, ValueError) as error:
            raise Unsealable(f"a sealed value of {context} does not open") from error

    def seal_text(self, text: str, context: str) -> str:
        """``text`` sealed, as text (for a text column)."""
        return SEALED_PREFIX + base64.b64encode(self.seal(text.encode(), context)).decode()

    def open_text(self, stored: str, context: str) -> str:
        """What :meth:`seal_text` sealed. A text not sealed at all is given back as it is: one
        written by an earlier version (migration 10 seals them all, but a process of the
        earlier version may still be writing during a rolling upgrade)."""
        if not is_sealed(stored):
            return stored
        return self.open(base64.b64decode(stored.removeprefix(SEALED_PREFIX)), context).decode()


def is_sealed(stored: str) -> bool:
    return stored.startswith(SEALED_PREFIX)
