"""The AsyncAPI 3 document of what a platform reaches without asking: a game's event stream
(server-sent events) and the webhooks its endpoints receive.

Its schemas are the OpenAPI document's (:mod:`services.gateway.openapi`), which takes them from
the domain's structs and the webhooks' (:mod:`contracts.webhooks`): one source for each shape.
AsyncAPI's schema object wants ``discriminator`` as a property name where OpenAPI has an
object; the members of each union name their ``type`` as a constant, so it is left out here.
The engine's NATS subjects, which no platform reaches, are in ``nats-asyncapi.json``.
"""

from __future__ import annotations

from typing import Any, get_args

import msgspec

from contracts.webhooks import AnyWebhook, WebhookType
from domain.events import AnyEvent
from services.gateway.feed import StreamEnd
from services.gateway.openapi import SERVERS, reached_from, refs_of

STREAM_PATH = "/v1/games/{game_id}/events/stream"

STREAM = f"""\
`GET {STREAM_PATH}` with `Accept: text/event-stream` (a seat token, the platform's key, or
nothing for a public game). Frames, in order:

- `state` first, with `id:` the game's version: the public state, or the seat's view to a seat
  token;
- then each event as it is committed, `event:` its type, `id:` its version (1 for the game's
  first), its `data` as `GET .../events` shows it to the same reader (another seat's cards are
  never in it);
- in a game with a clock, a `clock` frame after each commit, with `id:` the commit's last
  version (the id of the event frame just before it);
- `receipt`, where a worker keeps the audit log, after a hand ends while the stream is open:
  the hand's receipt (the signed checkpoint, its inclusion proof, the deal's commitment), once
  the log holds the hand (up to 10 s after), with `id:` the last version sent before it; a
  client that was away then reads it in the hand's record;
- `end`, last: `{"reason", "version"}`, why the stream ends (`game_over`, `token_expired`,
  `token_revoked`), with `id:` the last version sent; the server then closes the stream;
- a `: keep-alive` comment when nothing else was sent for a while.

Ids: a client that reconnects with `Last-Event-ID: N` (the last id it saw) gets every event
after version N and no `state`: nothing missed, nothing sent twice. An id the game has not
reached, or one that is not a version, gets a fresh `state` first.

The end: a seat's stream ends when its token expires (at that second) or is revoked (right
after the `seat_token_reissued` event that revokes it); every stream ends once the game has
ended (after its `game_ended` event), each with an `end` frame, and when the server stops
(without one). A client that got `end` does not reconnect; one that did not reconnects with
`Last-Event-ID`. A reconnection after a finished game's last version is answered
`204 No Content`, which stops an `EventSource`."""

WEBHOOKS = """\
`POST` to each endpoint a platform registered (`POST /v1/webhooks`) for the event types it
asked for, `Content-Type: application/json`, signed as Standard Webhooks 1.0 says: verify
`webhook-signature` with the endpoint's secret before trusting the body. A delivery that gets
no 2xx in time is tried again, later, with the same `webhook-id`: deduplicate on it. Deliveries
of one game come in the order of its events; no payload ever holds a card."""

_HEADERS = {
    "type": "object",
    "required": ["webhook-id", "webhook-timestamp", "webhook-signature"],
    "properties": {
        "webhook-id": {
            "type": "string",
            "description": "The event's id: the same on every try and every endpoint.",
        },
        "webhook-timestamp": {
            "type": "string",
            "pattern": "^[0-9]+$",
            "description": "Unix seconds of this try; refuse one far from now (replays).",
        },
        "webhook-signature": {
            "type": "string",
            "description": 'Space-separated `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`.',
        },
    },
}


def without_discriminator_objects(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: without_discriminator_objects(value)
            for key, value in node.items()
            if not (key == "discriminator" and isinstance(value, dict))
        }
    if isinstance(node, list):
        return [without_discriminator_objects(item) for item in node]
    return node


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _message(name: str, title: str, summary: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "title": title, "summary": summary, "payload": payload}


def _stream_messages(events: dict[str, str]) -> dict[str, Any]:
    messages = {
        "state": _message(
            "state",
            "state",
            "The table as the reader sees it (`id:` the game's version); sent first, and again "
            "after a `Last-Event-ID` the game has not reached.",
            {"anyOf": [_ref("SeatView"), _ref("PublicState")]},
        ),
        "clock": _message(
            "clock",
            "clock",
            "A clocked game's clock after a commit (`id:` the commit's last version): each "
            "seat's bank, whether it is away, the deadline of the seat on turn.",
            _ref("ClockState"),
        ),
        "receipt": _message(
            "receipt",
            "receipt",
            "A hand's receipt from the audit log (`id:` the last version sent before it): "
            "after the hand ends, once the log holds it.",
            _ref("Receipt"),
        ),
        "end": _message(
            "end",
            "end",
            "The last frame (`id:` the last version sent): why the stream ends; the server "
            "closes it after this.",
            msgspec.json.schema(StreamEnd)["$defs"]["StreamEnd"],
        ),
    }
    for kind in get_args(AnyEvent):
        tag = str(kind.__struct_config__.tag)
        doc = " ".join((kind.__doc__ or "").split()) or f"A `{tag}` event."
        payload = {"$ref": events[tag]}
        messages[tag] = _message(tag, tag, f"`id:` its version. {doc}", payload)
    return messages


def _webhook_messages() -> dict[str, Any]:
    messages: dict[str, Any] = {}
    for kind in get_args(AnyWebhook):
        tag: WebhookType = kind.__struct_config__.tag
        key = tag.replace(".", "_")
        messages[key] = {
            **_message(
                key, tag, f"The body of a `{tag}` delivery.", _ref(f"{kind.__name__}Webhook")
            ),
            "contentType": "application/json",
            "headers": _HEADERS,
        }
    return messages


def asyncapi_document(openapi: dict[str, Any]) -> dict[str, Any]:
    """The document, from the OpenAPI document's components."""
    schemas = openapi["components"]["schemas"]
    stream = _stream_messages(schemas["Event"]["discriminator"]["mapping"])
    hooks = _webhook_messages()
    used = reached_from(refs_of([stream, hooks]), schemas)
    gateway = SERVERS[0]["url"].split("://", 1)
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Spades: the event stream and the webhooks",
            "version": openapi["info"]["version"],
            "description": "What a platform receives from Spades without asking for each "
            "thing: a game's events as server-sent events, and signed webhooks. Requests and "
            "answers are in `openapi.json`.",
            "license": {"name": "MIT"},
            "tags": [
                {"name": "stream", "description": "A game's events as server-sent events."},
                {"name": "webhooks", "description": "Signed deliveries to a platform."},
            ],
        },
        "defaultContentType": "application/json",
        "servers": {
            "gateway": {
                "host": gateway[1],
                "protocol": gateway[0],
                "description": "The gateway (`spades up`), serving the event stream.",
            },
            "platform": {
                "host": "{host}",
                "protocol": "https",
                "description": "A platform's webhook endpoint, as it registered it.",
                "variables": {"host": {"description": "The endpoint's host."}},
            },
        },
        "channels": {
            "gameEvents": {
                "address": STREAM_PATH,
                "title": "A game's event stream",
                "description": STREAM,
                "servers": [{"$ref": "#/servers/gateway"}],
                "parameters": {"game_id": {"description": "The game's id."}},
                "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in stream},
            },
            "webhooks": {
                "address": None,
                "title": "Webhook deliveries",
                "description": WEBHOOKS,
                "servers": [{"$ref": "#/servers/platform"}],
                "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in hooks},
            },
        },
        "operations": {
            "sendGameEvents": {
                "action": "send",
                "title": "Stream a game",
                "summary": "Frames of a game's event stream, in order.",
                "description": "The frames one reader is sent, as `channels.gameEvents` says.",
                "tags": [{"name": "stream"}],
                "channel": {"$ref": "#/channels/gameEvents"},
                "messages": [{"$ref": f"#/channels/gameEvents/messages/{name}"} for name in stream],
            },
            "sendWebhooks": {
                "action": "send",
                "title": "Deliver webhooks",
                "summary": "A signed POST of each event a platform's endpoint asked for.",
                "description": "One delivery per event type the endpoint asked for.",
                "tags": [{"name": "webhooks"}],
                "channel": {"$ref": "#/channels/webhooks"},
                "messages": [{"$ref": f"#/channels/webhooks/messages/{name}"} for name in hooks],
            },
        },
        "components": {
            "messages": {**stream, **hooks},
            "schemas": without_discriminator_objects(
                {name: schemas[name] for name in sorted(used)}
            ),
        },
    }
