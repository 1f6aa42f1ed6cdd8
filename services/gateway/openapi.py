"""The OpenAPI document: problem responses as ``application/problem+json``, codes per status.

FastAPI documents a 422 ``HTTPValidationError`` for every route with parameters; here a
request that fails validation is a 400 problem, and 422 is a problem too (a refused action), so
every error response is rewritten to the one Problem schema after FastAPI generates the rest.

The document is for tools nobody here wrote (client generators with their default options), so
the tidying also gives every operation a readable, stable ``operationId`` (one table,
:data:`OPERATION_IDS`, keyed by method and path, the API's public names, so that a refactor of
the handlers changes nothing), every schema a unique title, answers' fields (always sent) as
required and requests' defaults as prose (``openapi-typescript`` makes a field with a
``default`` required), and adds the webhooks a platform receives (OpenAPI 3.1 ``webhooks``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, get_args

import msgspec
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from contracts import leagues
from contracts.answers import (
    Acted,
    CreatedWebhook,
    DeliveryPage,
    EventPage,
    GameList,
    HandRecords,
    HandRecordWithReceipt,
    Health,
    Problem,
    Readiness,
    Replayed,
    Scoreboard,
    SeatTaken,
    WatchLink,
    WebhookList,
)
from contracts.audit_log import ConsistencyProof, InclusionProof, Logs
from contracts.webhooks import AnyWebhook, WebhookType
from domain.events import AnyEvent, GameCreated
from domain.rules import Rules
from domain.views import ClockView, PublicState, SeatInfo, SeatView, TrickCard
from services.audit.report import AuditReport
from services.gateway.feed import StreamEnd
from services.gateway.models import DOMAIN_SCHEMA
from services.gateway.problems import PROBLEM_JSON

_CODES: dict[int, str] = {
    400: "`malformed`: the request cannot be read (body, parameters, headers).",
    401: "`unauthorized`: no valid platform key or seat token (expired and revoked tokens "
    "included).",
    403: "`forbidden`: the seat token is for another game or seat, or the caller may read the "
    "game but not do this (sit at a platform's table, issue its tokens), or a webhook URL's "
    "address is one webhooks may not reach.",
    404: "`game_not_found`, `hand_not_found`, `league_not_found`, `round_not_found`, "
    "`webhook_not_found`, or `not_found`.",
    409: "`not_your_turn`, `wrong_phase`, `game_over`, `seat_taken`, or `conflict` (an "
    "`expected_version` the game has moved past, a `min_version` it has not reached, a "
    "command still in flight).",
    422: "Every other docs/rules.md code, `invalid_rules` (a league's cap included), "
    "`idempotency_key_reused`.",
    429: "`rate_limited`: over the caller's rate limit; retry after `Retry-After` seconds.",
    503: "`unavailable`: the engine or NATS did not answer in time; retry (see Retry-After).",
}

OPTIONAL_CREDENTIAL: dict[str, Any] = {"security": [{}]}
"""``openapi_extra`` of a route whose bearer credential may be left out: FastAPI lists its
bearer scheme as required, and this adds the anonymous alternative beside it."""

_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying.",
        "schema": {"type": "integer"},
    }
}
_RATE_LIMITED = {
    **_RETRY_AFTER,
    "RateLimit-Policy": {
        "description": "The caller's quota policies (IETF draft structured field), e.g. "
        '`"platform";q=200;w=1`.',
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": 'What is left of them, e.g. `"platform";r=0;t=1`.',
        "schema": {"type": "string"},
    },
}


def _event_types() -> list[str]:
    return sorted(str(kind.__struct_config__.tag) for kind in get_args(AnyEvent))


def _sse_event(
    name: dict[str, Any], data: dict[str, Any], what: str, id_is: str = "Its version."
) -> dict[str, Any]:
    return {
        "type": "object",
        "description": what,
        "required": ["event", "data", "id"],
        "properties": {
            "event": name,
            "id": {"type": "string", "pattern": "^[0-9]+$", "description": id_is},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": data,
            },
        },
    }


def event_stream_schema() -> dict[str, Any]:
    """Each server-sent event of a game's stream (OpenAPI 3.1: the schema of one event, its
    ``data`` JSON typed by ``contentSchema``): first ``state``, the public state or the seat's
    view, then each event, named by its type, as ``GET .../events`` shows it to the reader, and
    in a game with a clock a ``clock`` after each commit (its id the commit's last version), a
    ``receipt`` after a hand ends (where the audit log is kept), and last an ``end``. The same
    frames, with the stream's id rules, are in ``asyncapi.json``."""
    state = {
        "anyOf": [
            {"$ref": "#/components/schemas/SeatView"},
            {"$ref": "#/components/schemas/PublicState"},
        ]
    }
    return {
        "oneOf": [
            _sse_event({"const": "state"}, state, "The table as the reader sees it."),
            _sse_event(
                {"enum": _event_types()},
                {"$ref": "#/components/schemas/Event"},
                "An event as it is committed, as the reader may see it.",
            ),
            _sse_event(
                {"const": "clock"},
                {"$ref": "#/components/schemas/ClockState"},
                "A clocked game's clock after a commit: each seat's bank, whether it is away, "
                "the deadline of the seat on turn.",
                "The commit's last version: the id of the event just before it, so that "
                "`Last-Event-ID` resumes exactly.",
            ),
            _sse_event(
                {"const": "receipt"},
                {"$ref": "#/components/schemas/Receipt"},
                "A hand's receipt from the audit log, after the hand ends while the stream is "
                "open, once the log holds it (where a worker keeps the log; up to 10 s after).",
                "The last version sent before it, as for `clock`.",
            ),
            _sse_event(
                {"const": "end"},
                _STREAM_END,
                "The last frame: the server closes the stream after it, and a client should "
                "not reconnect.",
                "The last version sent.",
            ),
        ]
    }


_STREAM_END: dict[str, Any] = msgspec.json.schema(StreamEnd)["$defs"]["StreamEnd"]
"""The ``end`` frame's data, from the struct the stream encodes."""


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route that can answer these problem statuses."""
    documented: dict[int | str, dict[str, Any]] = {}
    for status in (400, *statuses):
        entry: dict[str, Any] = {"description": _CODES[status], "content": _problem_content()}
        if status == 503:
            entry["headers"] = _RETRY_AFTER
        if status == 429:
            entry["headers"] = _RATE_LIMITED
        documented[status] = entry
    return documented


def _problem_content() -> dict[str, Any]:
    return {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}


OPERATION_IDS: dict[str, str] = {
    "GET /healthz": "health",
    "GET /readyz": "readiness",
    "GET /metrics": "metrics",
    "GET /v1/games": "listGames",
    "POST /v1/games": "createGame",
    "GET /v1/games/{game_id}": "getGame",
    "GET /v1/games/{game_id}/view": "view",
    "POST /v1/games/{game_id}/actions": "act",
    "GET /v1/games/{game_id}/events": "events",
    "GET /v1/games/{game_id}/events/stream": "eventStream",
    "GET /v1/games/{game_id}/hands": "listHands",
    "GET /v1/games/{game_id}/hands/{hand}": "getHand",
    "GET /v1/games/{game_id}/scoreboard": "scoreboard",
    "GET /v1/games/{game_id}/audit": "audit",
    "POST /v1/games/{game_id}/seats": "takeSeat",
    "POST /v1/games/{game_id}/seats/{seat}/away": "markAway",
    "POST /v1/games/{game_id}/seats/{seat}/token": "reissueToken",
    "POST /v1/leagues": "createLeague",
    "GET /v1/leagues/{league_id}": "getLeague",
    "POST /v1/leagues/{league_id}/rounds": "startRound",
    "GET /v1/leagues/{league_id}/rounds/{round_number}": "getRound",
    "GET /v1/leagues/{league_id}/standings": "standings",
    "GET /v1/leagues/{league_id}/boards": "leagueBoards",
    "GET /v1/leagues/{league_id}/integrity": "leagueIntegrity",
    "GET /v1/leagues/{league_id}/exports/results": "exportResults",
    "GET /v1/leagues/{league_id}/exports/standings": "exportStandings",
    "POST /v1/leagues/{league_id}/substitutions": "substitute",
    "POST /v1/leagues/{league_id}/withdrawals": "withdraw",
    "POST /v1/leagues/{league_id}/adjustments": "adjustScore",
    "POST /v1/leagues/{league_id}/voids": "voidTable",
    "GET /v1/webhooks": "listWebhooks",
    "POST /v1/webhooks": "createWebhook",
    "DELETE /v1/webhooks/{endpoint_id}": "deleteWebhook",
    "GET /v1/webhooks/{endpoint_id}/deliveries": "listDeliveries",
    "POST /v1/webhooks/{endpoint_id}/replay": "replayDeliveries",
    "POST /v1/games/{game_id}/watch-links": "createGameWatchLink",
    "DELETE /v1/games/{game_id}/watch-links": "revokeGameWatchLinks",
    "POST /v1/leagues/{league_id}/watch-links": "createLeagueWatchLink",
    "DELETE /v1/leagues/{league_id}/watch-links": "revokeLeagueWatchLinks",
    "GET /v1/log": "listLogs",
    "GET /v1/log/{partition}/checkpoint": "getLogCheckpoint",
    "GET /v1/log/{partition}/proofs/inclusion": "getInclusionProof",
    "GET /v1/log/{partition}/proofs/consistency": "getConsistencyProof",
    "GET /v1/games/{game_id}/hands/{hand}/receipt": "getHandReceipt",
}
"""Each operation's ``operationId``, the name a generated client gives its function (``act``,
``take_seat``): chosen here once, so that it stays the same whatever the handler is called."""

TAGS: list[dict[str, str]] = [
    {"name": "games", "description": "Create games, list them, read one as a watcher or a seat."},
    {"name": "seats", "description": "Seat players and issue their seat tokens."},
    {"name": "actions", "description": "A seat's bids, plays, passes, draws and looks."},
    {"name": "events", "description": "A game's events, read or followed as they happen."},
    {"name": "hands", "description": "Finished hands, as dealt, played and scored."},
    {"name": "audit", "description": "Check a game's whole history: deals, replay, scores."},
    {"name": "leagues", "description": "Leagues of many tables: rounds, standings, ratings."},
    {"name": "webhooks", "description": "A platform's webhook endpoints and their deliveries."},
    {"name": "service", "description": "Liveness, readiness and metrics, for the operator."},
    {"name": "deliveries", "description": "What a platform's webhook endpoint receives."},
    {"name": "watch links", "description": "Signed links that let anyone watch a private game."},
    {"name": "log", "description": "The audit log: signed checkpoints, proofs, hands' receipts."},
]
SERVERS: list[dict[str, str]] = [
    {"url": "http://127.0.0.1:8000", "description": "`spades up` on this machine (its default)."}
]
STREAM_ANSWER = (
    "A `state` event (`id:` the game's version), then every event as it is committed (`id:` its "
    "version), in a game with a clock a `clock` event after each commit, a `receipt` after a "
    "hand ends (where the audit log is kept), and an `end` last. "
    "`asyncapi.json` gives each frame, the `Last-Event-ID` rules and when the stream ends."
)
_OPEN_PATHS = ("/healthz", "/readyz", "/metrics")
"""Paths that need no credential at all: their ``security`` says so (an empty list)."""


def _tidy(document: dict[str, Any]) -> dict[str, Any]:
    for path_name, path in document.get("paths", {}).items():
        for method, operation in path.items():
            operation["operationId"] = _operation_id(method, path_name, operation)
            _optional_body(operation)
            if path_name in _OPEN_PATHS:
                operation["security"] = []
            for status, response in operation.get("responses", {}).items():
                stream = response.get("content", {}).get("text/event-stream", {})
                if "oneOf" in stream.get("schema", {}):  # FastAPI adds its `string` beside
                    stream["schema"].pop("type", None)
                    response["description"] = STREAM_ANSWER
                if int(status) >= 400:
                    response["content"] = _problem_content()
                    response["description"] = _CODES.get(int(status), response["description"])
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Problem"] = msgspec.json.schema(Problem)["$defs"]["Problem"]
    _add_domain_schemas(schemas)
    document["webhooks"] = _webhooks(schemas)
    document["servers"] = SERVERS
    document["tags"] = TAGS
    tidied: dict[str, Any] = _point_at_domain_schemas(document)
    _settle_required(tidied)
    for name, schema in tidied["components"]["schemas"].items():
        schema["title"] = name  # unique: a generator names its class after the title
    return tidied


def _optional_body(operation: dict[str, Any]) -> None:
    """An optional body is its model, not ``anyOf [model, null]`` (FastAPI's ``X | None``):
    the body may be left out, which ``required: false`` says already, and a generated Python
    client then leaves it out (for the ``null`` alternative, ``openapi-python-client`` sends
    its ``UNSET`` marker as the body and fails)."""
    body = operation.get("requestBody", {})
    if body.get("required"):
        return
    for media in body.get("content", {}).values():
        options = media.get("schema", {}).get("anyOf", [])
        models = [option for option in options if option != {"type": "null"}]
        if len(options) == 2 and len(models) == 1:
            media["schema"] = models[0]


def _operation_id(method: str, path: str, operation: dict[str, Any]) -> str:
    """The table's name; for a route the table does not know yet, its summary in camel case
    (``Create Game``: ``createGame``), and a unit test says to add it to the table."""
    named = OPERATION_IDS.get(f"{method.upper()} {path}")
    if named is not None:
        return named
    first, *rest = str(operation.get("summary", f"{method} {path}")).split()
    return first.lower() + "".join(word.title() for word in rest)


def _add_components(
    schemas: dict[str, Any], types: list[Any], rename: Callable[[str], str]
) -> list[Any]:
    """The JSON Schemas of msgspec types, their components added to ``schemas`` under
    ``rename(name)`` (a name the document has already gets ``rename``'s)."""
    roots, components = msgspec.json.schema_components(
        types, ref_template="#/components/schemas/{name}"
    )
    renames = {name: rename(name) for name in components}
    text = json.dumps({"roots": roots, "components": components})
    for old, new in renames.items():
        text = text.replace(f'"#/components/schemas/{old}"', f'"#/components/schemas/{new}"')
    moved = json.loads(text)
    for name, schema in moved["components"].items():
        schemas[renames[name]] = schema
    found: list[Any] = moved["roots"]
    return found


ANSWERS = (
    EventPage,
    Acted,
    HandRecords,
    HandRecordWithReceipt,
    GameList,
    Scoreboard,
    AuditReport,
    CreatedWebhook,
    WebhookList,
    DeliveryPage,
    Replayed,
    Health,
    Readiness,
)
"""The answers of :mod:`contracts.answers` (events and actions, hand records, the read models',
the webhook endpoints', the service's) and the audit's report, their schemas put in as the
domain's."""
LOG_ANSWERS = (Logs, InclusionProof, ConsistencyProof)
"""The audit log's answers (:mod:`contracts.audit_log`; a hand record carries its receipt)."""
LEAGUE_ANSWERS = (
    leagues.League,
    leagues.RoundStarted,
    leagues.LeagueRound,
    leagues.Standings,
    leagues.LeagueResults,
    leagues.Withdrawn,
    leagues.Substituted,
    leagues.Adjustment,
    leagues.VoidedTable,
    leagues.IntegrityReport,
    leagues.LeagueBoards,
    SeatTaken,
    WatchLink,
)
"""The answers of :mod:`contracts.leagues`, a seat taken (also each seat of a round's table) and
a watch link, put in as the domain's too."""

DOMAIN_NAMES = {
    "ClockView": "ClockState",
    "SeatClockView": "SeatClock",
    "AuditReport": "Audit",
    "HandReport": "HandAudit",
    "Problem": "AuditProblem",
    "ScoredHandRecord": "HandRecord",
    # Two structs of one name: msgspec names each by its module. The answer to taking a seat
    # keeps ``SeatTaken``, and the event that records it is ``SeatTakenEvent``.
    "contracts.answers.SeatTaken": "SeatTaken",
    "domain.events.SeatTaken": "SeatTakenEvent",
}
"""Domain structs whose component keeps the name the document gave it first."""


def _add_domain_schemas(schemas: dict[str, Any]) -> None:
    """``Event`` and ``Rules``, the table as anyone sees it and as a seat does (``PublicState``,
    ``SeatView``, its legal actions, a seat, a card of the trick, the clock): the JSON Schemas
    of the domain's structs, with the components they need, and the answers' (renamed
    ``<name>Event`` where the document has a schema of that name, and as :data:`DOMAIN_NAMES`
    says where two structs share one: ``SeatTaken`` is the answer to taking a seat)."""
    taken = set(schemas)

    def rename(name: str) -> str:
        return DOMAIN_NAMES.get(name) or (f"{name}Event" if name in taken else name)

    answers = [*ANSWERS, *LEAGUE_ANSWERS]
    (event, *_shown) = _add_components(
        schemas,
        [
            AnyEvent,
            Rules,
            SeatInfo,
            TrickCard,
            ClockView,
            PublicState,
            SeatView,
            *answers,
            *LOG_ANSWERS,
        ],
        rename,
    )
    schemas["Event"] = event
    for name, schema in schemas.items():
        if name != "Event":
            schemas[name] = _named(schema, event, "#/components/schemas/Event")


def _named(node: Any, schema: dict[str, Any], ref: str) -> Any:
    """``node`` with each copy of ``schema`` in it a ``$ref`` to it (msgspec writes a union
    out in every struct that holds one: an ``EventRecord``'s event is the ``Event``)."""
    if node == schema:
        return {"$ref": ref}
    if isinstance(node, dict):
        return {key: _named(value, schema, ref) for key, value in node.items()}
    if isinstance(node, list):
        return [_named(item, schema, ref) for item in node]
    return node


_WEBHOOK_HEADERS = {
    "webhook-id": "The event's id: the same on every try and every endpoint (deduplicate on it).",
    "webhook-timestamp": "Unix seconds of this try.",
    "webhook-signature": '`v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with the '
    "endpoint's secret (Standard Webhooks 1.0).",
}


def _webhooks(schemas: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.1 ``webhooks``: one ``POST`` per event type a platform's endpoint receives,
    its body the :mod:`contracts.webhooks` struct (components ``<Name>Webhook``, but for the
    answers' own structs a body carries as they are, such as a hand's ``Receipt``)."""
    kinds = get_args(AnyWebhook)
    bodies = {kind.__name__ for kind in kinds} | {"Webhook"}
    _, components = msgspec.json.schema_components(
        kinds, ref_template="#/components/schemas/{name}"
    )
    shared = {name for name, schema in components.items() if schemas.get(name) == schema}
    taken = set(schemas) - shared  # an answer's struct a body carries too (``Receipt``) is one

    def rename(name: str) -> str:
        return f"{name}Webhook" if name in bodies or name in taken else name

    _add_components(schemas, list(kinds), rename)
    hooks: dict[str, Any] = {}
    for kind in kinds:
        tag: WebhookType = kind.__struct_config__.tag
        data = next(field.type for field in msgspec.structs.fields(kind) if field.name == "data")
        first, *rest = tag.replace("_", ".").split(".")
        hooks[tag] = {
            "post": {
                "operationId": first + "".join(word.title() for word in rest),
                "summary": f"`{tag}`",
                "description": " ".join((data.__doc__ or kind.__doc__ or tag).split()),
                "tags": ["deliveries"],
                "security": [],
                "parameters": [
                    {
                        "name": header,
                        "in": "header",
                        "required": True,
                        "description": what,
                        "schema": {"type": "string"},
                    }
                    for header, what in _WEBHOOK_HEADERS.items()
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": f"#/components/schemas/{rename(kind.__name__)}"}
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "Received. Any 2xx will do; anything else, or no "
                        "answer in time, is retried with the same `webhook-id`."
                    }
                },
            }
        }
    return hooks


def refs_of(node: Any) -> set[str]:
    """The component names a schema refers to, directly."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= refs_of(value)
        return found
    if isinstance(node, list):
        return set().union(*(refs_of(item) for item in node))
    return set()


def reached_from(roots: set[str], schemas: dict[str, Any]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name not in seen and name in schemas:
            seen.add(name)
            todo.extend(refs_of(schemas[name]))
    return seen


LEFT_OUT_WHEN_UNSET: dict[str, frozenset[str]] = {
    "GameCreated": frozenset(
        field.name
        for field in msgspec.structs.fields(GameCreated)
        if field.default is msgspec.UNSET
    )
}
"""The fields an answer leaves out rather than sending a default (``msgspec.UNSET``): a game
created before duplicate events and knockout tie rules existed is recorded, and shown, exactly
as it was."""


def _settle_required(document: dict[str, Any]) -> None:
    """Answers send every field (the domain's structs and the answers' models omit none), so
    every property of a schema only answers use is required; a request's field with a default
    may be left out, and its default is said in words: ``openapi-typescript`` (default options)
    makes a property with a ``default`` required, which would refuse the README's bodies."""
    schemas = document["components"]["schemas"]
    sent: set[str] = set()
    received: set[str] = set()
    for path in document["paths"].values():
        for operation in path.values():
            received |= refs_of(operation.get("requestBody", {}))
            sent |= refs_of(operation.get("responses", {}))
    for hook in document["webhooks"].values():
        sent |= refs_of(hook["post"]["requestBody"])
    requests = reached_from(received, schemas)
    for name in reached_from(sent, schemas) - requests:
        schema = schemas[name]
        if "properties" in schema:
            left_out = LEFT_OUT_WHEN_UNSET.get(name, frozenset())
            schema["required"] = [field for field in schema["properties"] if field not in left_out]
    for name in requests:
        _defaults_in_words(schemas[name])


def _defaults_in_words(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _defaults_in_words(item)
    if not isinstance(node, dict):
        return
    for field in node.get("properties", {}).values():
        if "default" in field:
            default = json.dumps(field.pop("default"))
            said = field.get("description", "").rstrip()
            field["description"] = f"{said} Default: `{default}`.".lstrip()
    for value in node.values():
        _defaults_in_words(value)


def _point_at_domain_schemas(node: Any) -> Any:
    """Replace each ``{DOMAIN_SCHEMA: name}`` placeholder with a ``$ref`` to the component."""
    if isinstance(node, dict):
        if DOMAIN_SCHEMA in node:
            return {"$ref": f"#/components/schemas/{node[DOMAIN_SCHEMA]}"}
        return {key: _point_at_domain_schemas(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_point_at_domain_schemas(item) for item in node]
    return node


def install_openapi(app: FastAPI) -> None:
    """Serve the tidied document at ``/openapi.json`` (generated once, then kept)."""

    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _tidy(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                )
            )
        return app.openapi_schema

    app.openapi = document  # type: ignore[method-assign]
