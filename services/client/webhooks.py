"""Webhooks for a platform: verifying what its receiver gets, and managing its endpoints.

:func:`verify_webhook` is what a receiver calls with the request's headers and raw body before
it trusts anything in it (Standard Webhooks 1.0: ``webhook-id``, ``webhook-timestamp``,
``webhook-signature``). It raises :class:`WebhookVerificationError` for a bad or missing
signature and for a timestamp more than ``tolerance_s`` away from now (an old request replayed),
and returns the body's JSON::

    event = verify_webhook(SECRET, request.headers, await request.body())
    if event["type"] == "game.turn":
        notify(event["data"]["player"], event["data"]["game_id"])

:class:`WebhookClient` wraps a :class:`~services.client.api.SpadesClient` holding the platform
key for the ``/v1/webhooks`` endpoints, as :class:`~services.client.leagues.LeagueClient` does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import msgspec

from contracts.answers import (
    CreatedWebhook,
    DeliveryPage,
    Replayed,
    Webhook,
    WebhookList,
)
from contracts.webhooks import WebhookType
from services.client.api import ClientError, SpadesClient

SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE_S = 300


class WebhookVerificationError(ClientError):
    """A webhook whose signature or timestamp does not verify: do not act on it."""


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise WebhookVerificationError(f"no {name} header")


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    *,
    now: float | None = None,
) -> dict[str, Any]:
    """Check a delivery's signature under the endpoint's ``secret`` (``whsec_...``) and that its
    timestamp is within ``tolerance_s`` of ``now`` (the clock by default); return its JSON.
    ``body`` must be the raw bytes received, before any parsing."""
    raw = body.encode() if isinstance(body, str) else bytes(body)
    message_id = _header(headers, "webhook-id")
    stamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number of seconds") from None
    moment = time.time() if now is None else now
    if abs(moment - timestamp) > tolerance_s:
        raise WebhookVerificationError(
            f"webhook-timestamp is {moment - timestamp:+.0f} s from now, "
            f"beyond the tolerance of {tolerance_s:g} s"
        )
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("the secret is not whsec_ and base64") from None
    signed = f"{message_id}.{timestamp}.".encode() + raw
    expected = base64.b64encode(hmac.digest(key, signed, hashlib.sha256))
    for candidate in signatures.split():
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value.encode(), expected):
            break
    else:
        raise WebhookVerificationError("no v1 signature matches: not signed with this secret")
    try:
        event: dict[str, Any] = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        raise WebhookVerificationError("the body is not JSON") from None
    return event


# --------------------------------------------------------------------------- endpoints

EventType = WebhookType
"""A webhook's event type (:data:`contracts.webhooks.EVENT_TYPES`)."""


def _path(endpoint_id: str, *rest: str) -> str:
    return "/".join(["/v1/webhooks", quote(endpoint_id, safe=""), *rest])


class WebhookClient:
    """The platform's webhook endpoints, through a client that holds its key."""

    def __init__(self, client: SpadesClient) -> None:
        self.client = client

    async def create(self, url: str, events: Sequence[str]) -> CreatedWebhook:
        """Register an endpoint; keep the answer's ``secret``: it is never shown again."""
        response = await self.client.request(
            "POST", "/v1/webhooks", body={"url": url, "events": list(events)}, retry=False
        )
        return self.client.decode(response, CreatedWebhook)

    async def list(self) -> list[Webhook]:
        response = await self.client.request("GET", "/v1/webhooks")
        return self.client.decode(response, WebhookList).webhooks

    async def delete(self, endpoint_id: str) -> None:
        await self.client.request("DELETE", _path(endpoint_id))

    async def deliveries(
        self, endpoint_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> DeliveryPage:
        """The endpoint's deliveries, newest first; ``next_cursor`` as ``cursor`` for more."""
        params = {k: v for k, v in (("limit", limit), ("cursor", cursor)) if v is not None}
        response = await self.client.request("GET", _path(endpoint_id, "deliveries"), params=params)
        return self.client.decode(response, DeliveryPage)

    async def replay(self, endpoint_id: str, since: datetime | str) -> int:
        """Send again what was sent since ``since`` (aware datetime or RFC 3339); how many."""
        moment = since.isoformat() if isinstance(since, datetime) else since
        response = await self.client.request(
            "POST", _path(endpoint_id, "replay"), body={"since": moment}, retry=False
        )
        return self.client.decode(response, Replayed).replayed
