"""Secrets and signatures of Standard Webhooks 1.0.

A secret is ``whsec_`` and the base64 of random bytes; the key that signs is those bytes. A
delivery carries ``webhook-id`` (the same on every try), ``webhook-timestamp`` (Unix seconds of
the try) and ``webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">``.

>>> signature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
...           1614265330, b'{"test": 2432232314}')
'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE='
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
"""Standard Webhooks asks for 24 to 64 random bytes."""


def new_secret() -> str:
    """A fresh endpoint secret."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The bytes a secret signs with (the base64 after ``whsec_``)."""
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` of one try."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.digest(secret_key(secret), signed, hashlib.sha256)
    return "v1," + base64.b64encode(digest).decode()


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The headers of one try of a delivery."""
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, message_id, timestamp, body),
    }
