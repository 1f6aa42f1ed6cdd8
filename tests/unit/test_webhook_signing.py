"""Standard Webhooks signatures: the worker's signing and the client's verification agree with
each other and with the specification's published test vector."""

from __future__ import annotations

import base64

import pytest

from services.client.webhooks import WebhookVerificationError, verify_webhook
from services.runtime.webhook_signing import SECRET_PREFIX, headers, new_secret, signature

VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TIME = 1614265330
VECTOR_BODY = b'{"test": 2432232314}'
VECTOR_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_signature_reproduces_the_standard_webhooks_test_vector() -> None:
    assert signature(VECTOR_SECRET, VECTOR_ID, VECTOR_TIME, VECTOR_BODY) == VECTOR_SIGNATURE


def test_the_client_verifies_the_test_vector_and_returns_the_body() -> None:
    sent = {
        "webhook-id": VECTOR_ID,
        "webhook-timestamp": str(VECTOR_TIME),
        "webhook-signature": VECTOR_SIGNATURE,
    }
    assert verify_webhook(VECTOR_SECRET, sent, VECTOR_BODY, now=VECTOR_TIME + 10) == {
        "test": 2432232314
    }


def test_a_new_secret_is_whsec_and_the_base64_of_32_random_bytes() -> None:
    first, second = new_secret(), new_secret()
    assert first.startswith(SECRET_PREFIX)
    assert len(base64.b64decode(first.removeprefix(SECRET_PREFIX), validate=True)) == 32
    assert first != second


def signed(secret: str, body: bytes, at: int = 1_700_000_000) -> dict[str, str]:
    return headers(secret, "msg_1", at, body)


def test_a_delivery_signed_by_the_worker_verifies_with_its_secret_in_any_header_case() -> None:
    secret, body = new_secret(), b'{"type":"game.turn","timestamp":"t","data":{}}'
    sent = {name.upper(): value for name, value in signed(secret, body).items()}
    assert verify_webhook(secret, sent, body, now=1_700_000_000)["type"] == "game.turn"
    assert verify_webhook(secret, sent, body.decode(), now=1_700_000_000)["type"] == "game.turn"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("secret", "no v1 signature matches"),
        ("body", "no v1 signature matches"),
        ("id", "no v1 signature matches"),
        ("old", "beyond the tolerance"),
        ("future", "beyond the tolerance"),
        ("no signature", "no webhook-signature header"),
        ("bad timestamp", "not a number"),
    ],
)
def test_a_delivery_that_is_not_exactly_what_was_signed_is_refused(
    change: str, reason: str
) -> None:
    secret, body = new_secret(), b'{"type":"game.created"}'
    sent = signed(secret, body)
    at = 1_700_000_000.0
    if change == "secret":
        secret = new_secret()
    elif change == "body":
        body = b'{"type":"game.finished"}'
    elif change == "id":
        sent["webhook-id"] = "msg_2"
    elif change == "old":
        at += 301
    elif change == "future":
        at -= 301
    elif change == "no signature":
        del sent["webhook-signature"]
    elif change == "bad timestamp":
        sent["webhook-timestamp"] = "soon"
    with pytest.raises(WebhookVerificationError, match=reason):
        verify_webhook(secret, sent, body, now=at)


def test_one_matching_signature_among_several_is_enough_as_when_secrets_rotate() -> None:
    secret, body = new_secret(), b"{}"
    sent = signed(secret, body)
    other = signature(new_secret(), "msg_1", 1_700_000_000, body)
    sent["webhook-signature"] = f"{other} v2,ignored {sent['webhook-signature']}"
    assert verify_webhook(secret, sent, body, now=1_700_000_000) == {}


def test_the_tolerance_is_the_callers_to_choose() -> None:
    secret, body = new_secret(), b"{}"
    sent = signed(secret, body)
    assert verify_webhook(secret, sent, body, tolerance_s=3600, now=1_700_003_000) == {}
    with pytest.raises(WebhookVerificationError):
        verify_webhook(secret, sent, body, tolerance_s=60, now=1_700_000_061)
