"""The bodies of ``/v1/webhooks``: registering an endpoint, listing them, their deliveries."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from contracts.webhooks import WebhookType
from services.gateway.models import DOMAIN_SCHEMA
from services.runtime.webhook_addresses import MAX_URL_LENGTH

_LABEL = "[A-Za-z](?:-?[A-Za-z0-9]){0,62}"
"""A host name's label: a letter first, single hyphens (so never an IDNA ``xn--`` label)."""
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_H = "[0-9A-Fa-f]{1,4}"
_IPV6 = (
    f"(?:(?:{_H}:){{7}}{_H}|(?:{_H}:){{1,7}}:|(?:{_H}:){{1,6}}:{_H}"
    f"|(?:{_H}:){{1,5}}(?::{_H}){{1,2}}|(?:{_H}:){{1,4}}(?::{_H}){{1,3}}"
    f"|(?:{_H}:){{1,3}}(?::{_H}){{1,4}}|(?:{_H}:){{1,2}}(?::{_H}){{1,5}}"
    f"|{_H}:(?::{_H}){{1,6}}|:(?:(?::{_H}){{1,7}}|:)|::(?:[Ff]{{4}}:){_IPV4})"
)
_PORT = "(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
WEBHOOK_URL_PATTERN = (
    rf"^https?://(?:{_LABEL}(?:\.{_LABEL})*\.?|{_IPV4}|\[{_IPV6}\])"
    rf"(?::{_PORT})?(?:/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)?$"
)
"""A webhook URL as the API takes it; the host's addresses are checked when it is registered
and again at every delivery."""


class CreateWebhook(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    url: str = Field(
        min_length=1,
        max_length=MAX_URL_LENGTH,
        pattern=WEBHOOK_URL_PATTERN,
        description="Where deliveries are POSTed: `http` or `https`, a host name or address, a "
        "port and a path, no user, query or fragment. Its host must resolve to public "
        "addresses (loopback and private ones are refused unless the server allows them): "
        "403 `forbidden` otherwise.",
        examples=["https://platform.example/spades/webhooks"],
    )
    events: list[WebhookType] = Field(
        min_length=1,
        max_length=16,
        description="The event types to receive.",
        examples=[["game.turn", "game.finished"]],
    )


class Replay(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    since: str = Field(
        max_length=40,
        description="RFC 3339, with its offset: what was sent since then is sent again.",
        examples=["2026-01-31T12:00:00Z"],
        json_schema_extra={"format": "date-time"},
    )

    def moment(self) -> datetime | None:
        """``since`` as an aware datetime; None when it is not RFC 3339 with an offset."""
        try:
            moment = datetime.fromisoformat(self.since)
        except ValueError:
            return None
        return moment if moment.tzinfo is not None and "T" in self.since.upper() else None


CreatedWebhook = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "CreatedWebhook"})]
"""A new endpoint and its secret: :class:`contracts.answers.CreatedWebhook`."""
WebhookList = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "WebhookList"})]
"""A platform's endpoints: :class:`contracts.answers.WebhookList`."""
Deliveries = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "DeliveryPage"})]
"""An endpoint and a page of its deliveries: :class:`contracts.answers.DeliveryPage`."""
Replayed = Annotated[dict[str, Any], WithJsonSchema({DOMAIN_SCHEMA: "Replayed"})]
"""Deliveries queued again: :class:`contracts.answers.Replayed`."""
