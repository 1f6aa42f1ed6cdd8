"""Webhooks: a platform registers endpoints, lists and deletes them, reads their deliveries and
has them sent again (docs/api.md, "Webhooks"; the worker that delivers is :mod:`services.webhooks`).

Every route is the platform's: with platform keys configured it needs one, and another
platform's endpoint is answered exactly as an unknown one (404 `webhook_not_found`). Without
keys (local development) the one platform there is may register endpoints too.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Annotated, Any

import msgspec
import nats.js.errors
import structlog
from fastapi import APIRouter, Path, Query, Response

from contracts.answers import CreatedWebhook as CreatedShown
from contracts.answers import Delivery, DeliveryPage, Webhook
from contracts.answers import Replayed as ReplayedShown
from contracts.answers import WebhookList as WebhookListShown
from contracts.wire import LEAGUES_STREAM
from services.gateway.deps import Platform, Services
from services.gateway.openapi import OPTIONAL_CREDENTIAL, problems
from services.gateway.problems import ProblemError
from services.gateway.views import as_json
from services.gateway.webhook_models import (
    CreatedWebhook,
    CreateWebhook,
    Deliveries,
    Replay,
    Replayed,
    WebhookList,
)
from services.runtime.logging import get_logger
from services.runtime.sealing import WEBHOOK_SECRETS, Sealer
from services.runtime.webhook_addresses import AddressRefused, InvalidUrl, Unresolvable, checked_url
from services.runtime.webhook_signing import new_secret
from services.store import webhook_endpoints as endpoints
from services.store.webhook_endpoints import rfc3339

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])

log = get_logger("spades.gateway")

MAX_ENDPOINTS = 16
"""Endpoints one platform may have."""
PAGE = 50
MAX_PAGE = 500
_ENDPOINT_ID = re.compile(r"^ep_[0-9a-f]{24}$")
_CURSOR = re.compile(r"^[0-9]{1,18}$")
_LOCATION = {"description": "The endpoint's URL.", "schema": {"type": "string"}}

EndpointId = Annotated[str, Path(description="The endpoint's id, as registering it returned.")]


def _unknown(endpoint_id: str) -> ProblemError:
    return ProblemError("webhook_not_found", f"no webhook endpoint {endpoint_id}")


def _time(unix_seconds: float | None) -> str | None:
    return rfc3339(unix_seconds) if unix_seconds is not None else None


def _fields(endpoint: endpoints.Endpoint) -> dict[str, Any]:
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "events": list(endpoint.events),
        "created_at": rfc3339(endpoint.created_at),
        "disabled": not endpoint.enabled,
        "disabled_at": _time(endpoint.disabled_at),
        "disabled_reason": endpoint.disabled_reason,
    }


def _shown(endpoint: endpoints.Endpoint) -> Webhook:
    return Webhook(**_fields(endpoint))


async def _last_sequence(services: Services, stream: str) -> int:
    try:
        info = await services.js.stream_info(stream)
    except nats.js.errors.NotFoundError:
        return 0  # made later: all of it comes after the endpoint
    return int(info.state.last_seq or 0)


async def _starts(services: Services) -> dict[str, int]:
    """Where a new endpoint's interest begins: every stream's last sequence now (each partition
    of the games, and the leagues)."""
    streams = (*services.stream.partitions.streams, LEAGUES_STREAM)
    lasts = await asyncio.gather(*(_last_sequence(services, stream) for stream in streams))
    return dict(zip(streams, lasts, strict=True))


async def _owned(services: Services, platform: str | None, endpoint_id: str) -> endpoints.Endpoint:
    if not _ENDPOINT_ID.match(endpoint_id):
        raise _unknown(endpoint_id)
    async with services.store.reading() as conn:
        found = await endpoints.find(conn, endpoints.platform_key(platform), endpoint_id)
    if found is None:
        raise _unknown(endpoint_id)
    return found


@router.post(
    "",
    status_code=201,
    response_model=CreatedWebhook,
    responses={**problems(401, 403, 409, 429, 503), 201: {"headers": {"Location": _LOCATION}}},
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def create_webhook(
    body: CreateWebhook, services: Services, platform: Platform, response: Response
) -> Any:
    """Register an endpoint of the caller's platform for these event types. The answer holds
    its secret, `whsec_...`, this once: every delivery is signed with it (Standard Webhooks).
    It hears of the platform's games and leagues from now on. A URL the schema does not allow
    is 400 `malformed`; one whose host does not resolve, or resolves to a loopback, link-local
    or private address, is 403 `forbidden` (the latter unless the server sets
    `SPADES_WEBHOOK_ALLOW_PRIVATE=1`); a
    platform has at most 16 endpoints (409 `conflict`)."""
    try:
        url = checked_url(body.url)
        await services.webhook_policy.addresses(url.host, url.port or _default_port(url.scheme))
    except InvalidUrl as error:
        raise ProblemError("malformed", str(error)) from None
    except Unresolvable as error:  # an address webhooks cannot reach, as a refused one
        raise ProblemError("forbidden", str(error)) from None
    except AddressRefused as error:
        raise ProblemError("forbidden", str(error)) from None
    owner = endpoints.platform_key(platform)
    # Kept sealed (the webhooks worker opens it to sign); shown in the clear this once.
    endpoint_id, secret = endpoints.new_endpoint_id(), new_secret()
    sealer = Sealer(services.secret, WEBHOOK_SECRETS)
    endpoint = endpoints.Endpoint(
        id=endpoint_id,
        platform=owner,
        url=str(url),
        events=tuple(dict.fromkeys(body.events)),
        secret=sealer.seal_text(secret, endpoint_id),
        created_at=time.time(),
        starts=await _starts(services),
    )
    async with services.store.writing() as conn:
        if await endpoints.count_of(conn, owner) >= MAX_ENDPOINTS:
            raise ProblemError(
                "conflict", f"a platform has at most {MAX_ENDPOINTS} endpoints: delete one first"
            )
        await endpoints.add(conn, endpoint)
    structlog.contextvars.bind_contextvars(webhook=endpoint.id)
    log.info("webhook endpoint registered", events=list(endpoint.events))
    response.headers["Location"] = f"{router.prefix}/{endpoint.id}"
    return as_json(CreatedShown(**_fields(endpoint), secret=secret))


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


@router.get(
    "",
    response_model=WebhookList,
    responses=problems(401, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def list_webhooks(services: Services, platform: Platform) -> Any:
    """The caller's platform's endpoints, oldest first (their secrets are never shown again)."""
    async with services.store.reading() as conn:
        found = await endpoints.endpoints_of(conn, endpoints.platform_key(platform))
    return as_json(WebhookListShown([_shown(endpoint) for endpoint in found]))


@router.delete(
    "/{endpoint_id}",
    status_code=204,
    response_class=Response,
    response_model=None,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def delete_webhook(
    endpoint_id: EndpointId, services: Services, platform: Platform
) -> Response:
    """Delete an endpoint and its delivery log: nothing more is sent to it."""
    if not _ENDPOINT_ID.match(endpoint_id):
        raise _unknown(endpoint_id)
    async with services.store.writing() as conn:
        if not await endpoints.remove(conn, endpoints.platform_key(platform), endpoint_id):
            raise _unknown(endpoint_id)
    log.info("webhook endpoint deleted", webhook=endpoint_id)
    return Response(status_code=204)


@router.get(
    "/{endpoint_id}/deliveries",
    response_model=Deliveries,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def deliveries(
    endpoint_id: EndpointId,
    services: Services,
    platform: Platform,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="Deliveries per page.")] = PAGE,
    cursor: Annotated[
        str | None,
        Query(
            pattern=_CURSOR.pattern,
            max_length=18,
            description="`next_cursor` of the page before.",
        ),
    ] = None,
) -> Any:
    """The endpoint's recent deliveries, newest first: the event, its `webhook-id`, the tries
    made, the last answer's status, when the next try is due; and the endpoint itself, with why
    it was disabled if it was."""
    endpoint = await _owned(services, platform, endpoint_id)
    if cursor is not None and not _CURSOR.match(cursor):
        raise ProblemError("malformed", "cursor: not a cursor this list gave")
    async with services.store.reading() as conn:
        page = await endpoints.deliveries_of(
            conn, endpoint.id, limit=limit, before=int(cursor) if cursor else None
        )
    shown = DeliveryPage(
        webhook=_shown(endpoint),
        deliveries=[
            msgspec.convert(  # the store's texts, checked as the answer's types
                {
                    "id": delivery.message_id,
                    "event": delivery.event_type,
                    "subject": delivery.chain,
                    "status": delivery.status,
                    "attempts": delivery.attempts,
                    "last_status": delivery.last_status,
                    "last_error": delivery.last_error,
                    "created_at": rfc3339(delivery.created_at),
                    "last_attempt_at": _time(delivery.last_attempt_at),
                    "next_try": _time(delivery.next_try),
                },
                Delivery,
            )
            for delivery in page
        ],
        next_cursor=str(page[-1].id) if len(page) == limit else None,
    )
    return as_json(shown)


@router.post(
    "/{endpoint_id}/replay",
    status_code=202,
    response_model=Replayed,
    responses=problems(401, 404, 429, 503),
    openapi_extra=OPTIONAL_CREDENTIAL,
)
async def replay(
    endpoint_id: EndpointId, body: Replay, services: Services, platform: Platform
) -> Any:
    """Send again what was sent to the endpoint since `since` (delivered, failed, or skipped
    while it was disabled; as long as the log keeps it), each event once, with its first
    `webhook-id`, after whatever is still queued. A disabled endpoint is enabled again."""
    since = body.moment()
    if since is None:
        raise ProblemError("malformed", "since: not an RFC 3339 time with its offset")
    endpoint = await _owned(services, platform, endpoint_id)
    async with services.store.writing() as conn:
        count = await endpoints.replay(conn, endpoint, since.timestamp(), time.time())
    log.info("webhook deliveries replayed", webhook=endpoint.id, deliveries=count)
    return as_json(ReplayedShown(count))
