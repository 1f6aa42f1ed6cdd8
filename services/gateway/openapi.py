"""The OpenAPI document: problem responses as ``application/problem+json``, codes per status.

FastAPI documents a 422 ``HTTPValidationError`` for every route with parameters; here a
request that fails validation is a 400 problem, and 422 is a problem too (a refused action), so
every error response is rewritten to the one Problem schema after FastAPI generates the rest.
"""

from __future__ import annotations

import json
from typing import Any, get_args

import msgspec
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from domain.events import AnyEvent
from domain.rules import Rules
from services.gateway.feed import StreamEnd
from services.gateway.models import DOMAIN_SCHEMA, Problem
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
    view, then each event, named by its type, as ``GET .../events`` shows it to the reader."""
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
                "A clocked game's clock after each commit (each seat's bank, away, the deadline "
                "of the seat on turn).",
                "The commit's last version: the id of the event just before it, so that "
                "`Last-Event-ID` resumes exactly.",
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
        entry: dict[str, Any] = {"model": Problem, "description": _CODES[status]}
        if status == 503:
            entry["headers"] = _RETRY_AFTER
        if status == 429:
            entry["headers"] = _RATE_LIMITED
        documented[status] = entry
    return documented


def _problem_content() -> dict[str, Any]:
    return {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}


def _tidy(document: dict[str, Any]) -> dict[str, Any]:
    for path in document.get("paths", {}).values():
        for operation in path.values():
            for status, response in operation.get("responses", {}).items():
                stream = response.get("content", {}).get("text/event-stream", {})
                if "oneOf" in stream.get("schema", {}):  # FastAPI adds its `string` beside
                    stream["schema"].pop("type", None)
                if int(status) >= 400:
                    response["content"] = _problem_content()
                    response["description"] = _CODES.get(int(status), response["description"])
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Problem"] = Problem.model_json_schema()
    _add_domain_schemas(schemas)
    tidied: dict[str, Any] = _point_at_domain_schemas(document)
    return tidied


def _add_domain_schemas(schemas: dict[str, Any]) -> None:
    """``Event`` and ``Rules``: the JSON Schemas of the domain's events and resolved rule set,
    from their msgspec structs, with the components they need (renamed ``<name>Event`` where
    the document has a schema of that name, e.g. ``SeatTaken``, the answer to taking a seat)."""
    (event, _rules), components = msgspec.json.schema_components(
        [AnyEvent, Rules], ref_template="#/components/schemas/{name}"
    )
    renames = {name: f"{name}Event" for name in components if name in schemas}
    text = json.dumps({"Event": event, **components})
    for old, new in renames.items():
        text = text.replace(f'"#/components/schemas/{old}"', f'"#/components/schemas/{new}"')
    for name, schema in json.loads(text).items():
        schemas[renames.get(name, name)] = schema


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
