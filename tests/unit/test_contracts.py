"""The committed contracts are what the code generates (``make contracts`` writes them)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

import pytest

from contracts.webhooks import EVENT_TYPES
from domain.events import AnyEvent
from services.cli.contracts import CONTRACTS, documents, render
from services.gateway.openapi import OPERATION_IDS

GENERATED = documents()


@pytest.mark.parametrize(
    "path", sorted(GENERATED), ids=[str(p.relative_to(CONTRACTS)) for p in sorted(GENERATED)]
)
def test_the_committed_contract_is_what_the_code_generates(path: Path) -> None:
    assert path.exists(), f"{path} is missing: run `make contracts`"
    assert path.read_text(encoding="utf-8") == render(GENERATED[path]), (
        f"{path.relative_to(CONTRACTS.parent)} is stale: run `make contracts` and commit it"
    )


def test_the_openapi_document_names_every_endpoint_of_the_api() -> None:
    paths = set(json.loads((CONTRACTS / "openapi.json").read_text())["paths"])
    assert {
        "/v1/games",
        "/v1/games/{game_id}",
        "/v1/games/{game_id}/seats",
        "/v1/games/{game_id}/view",
        "/v1/games/{game_id}/actions",
        "/v1/games/{game_id}/events",
        "/v1/games/{game_id}/events/stream",
        "/v1/games/{game_id}/hands",
        "/v1/games/{game_id}/hands/{hand}",
        "/v1/games/{game_id}/scoreboard",
        "/v1/games/{game_id}/audit",
        "/healthz",
        "/readyz",
        "/metrics",
    } <= paths


def _document(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((CONTRACTS / name).read_text())
    return found


def test_every_operation_has_its_own_readable_operation_id() -> None:
    document = _document("openapi.json")
    named = {
        f"{method.upper()} {path}": operation["operationId"]
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }
    assert named == OPERATION_IDS
    hooks = [hook["post"]["operationId"] for hook in document["webhooks"].values()]
    ids = [*named.values(), *hooks]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z][A-Za-z]*", name) for name in ids), ids


def test_every_schema_has_a_title_of_its_own() -> None:
    for name in ("openapi.json", "asyncapi.json"):
        schemas = _document(name)["components"]["schemas"]
        assert all(schema["title"] == key for key, schema in schemas.items() if "title" in schema)
    assert _document("openapi.json")["components"]["schemas"]["SeatTakenEvent"]["title"] == (
        "SeatTakenEvent"
    )


def test_answers_require_every_field_and_requests_state_no_default() -> None:
    """Generators with their default options: a field always sent is not optional in an
    answer, and a field a request may leave out is not required (``openapi-typescript``
    makes a property with a ``default`` required)."""
    schemas = _document("openapi.json")["components"]["schemas"]
    assert set(schemas["HandLooked"]["required"]) == set(schemas["HandLooked"]["properties"])
    assert "cards" in schemas["HandLooked"]["required"]
    assert "clock" in schemas["PublicState"]["required"]
    create = schemas["CreateGame"]["properties"]
    assert schemas["CreateGame"]["required"] == ["rules"]
    assert not [name for name, field in create.items() if "default" in field]
    assert 'Default: `"platform"`.' in create["seating"]["description"]


def test_the_openapi_document_has_every_webhook_servers_and_tags() -> None:
    document = _document("openapi.json")
    assert set(document["webhooks"]) == set(EVENT_TYPES)
    for kind, hook in document["webhooks"].items():
        body = hook["post"]["requestBody"]["content"]["application/json"]["schema"]
        schema = document["components"]["schemas"][body["$ref"].rsplit("/", 1)[-1]]
        assert schema["properties"]["type"]["enum"] == [kind]
    assert document["servers"]
    used = {
        tag for path in document["paths"].values() for op in path.values() for tag in op["tags"]
    }
    assert used <= {tag["name"] for tag in document["tags"]}
    for open_path in ("/healthz", "/readyz", "/metrics"):
        assert document["paths"][open_path]["get"]["security"] == []


def test_the_asyncapi_document_describes_the_stream_and_the_webhooks() -> None:
    document = _document("asyncapi.json")
    assert document["asyncapi"].startswith("3.")
    frames = set(document["channels"]["gameEvents"]["messages"])
    events = {str(kind.__struct_config__.tag) for kind in get_args(AnyEvent)}
    assert frames == {"state", "clock", "receipt", "end"} | events
    webhooks = document["components"]["messages"]
    assert {webhooks[name]["title"] for name in document["channels"]["webhooks"]["messages"]} == (
        set(EVENT_TYPES)
    )
    assert "discriminator" not in json.dumps(document)


def test_the_nats_asyncapi_document_describes_commands_and_commits() -> None:
    document = _document("nats-asyncapi.json")
    assert set(document["channels"]) == {
        "spades.commands.{game_id}",
        "spades.games.{game_id}",
        "spades.league-commands.{league_id}",
        "spades.leagues.{league_id}",
        "spades.timeouts.{game_id}",
    }
    schemas = document["components"]["schemas"]
    assert {
        "CommandRequest",
        "CommandReply",
        "Commit",
        "LeagueCommandRequest",
        "LeagueCommandReply",
        "LeagueCommit",
    } <= set(schemas)
