"""The league's answers, a seat taken and a watch link have one source: the structs of
:mod:`contracts.leagues` and :mod:`contracts.answers`. The routes answer with them, the Python
client decodes into them, and ``contracts/openapi.json`` publishes their JSON Schemas under the
names the document always gave them (tests/clients generate code from those names)."""

from __future__ import annotations

import inspect
import json
from typing import Any

import msgspec
from pydantic import BaseModel

from contracts import answers, leagues
from services.cli.contracts import CONTRACTS
from services.gateway import models
from services.gateway.openapi import LEAGUE_ANSWERS
from services.gateway.routes import watch_links

DOCUMENT: dict[str, Any] = json.loads((CONTRACTS / "openapi.json").read_text())
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
ANSWERING = {
    "takeSeat",
    "reissueToken",
    "createGameWatchLink",
    "createLeagueWatchLink",
}
"""The operations outside ``/v1/leagues`` whose answer is one of these structs."""


def _structs(module: object) -> dict[str, type[msgspec.Struct]]:
    return {
        name: value
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, msgspec.Struct)
        and value.__module__ == getattr(module, "__name__", None)
    }


def _answer_of(operation: dict[str, Any]) -> str | None:
    """The component a successful JSON answer of the operation refers to, if any."""
    for status, response in operation["responses"].items():
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        if status.startswith("2") and schema is not None:
            ref: str = schema["$ref"]
            return ref.rsplit("/", 1)[-1]
    return None


def test_every_league_answer_is_a_contracts_struct() -> None:
    league_structs = _structs(leagues)
    named: dict[str, str | None] = {}
    for path, operations in DOCUMENT["paths"].items():
        for operation in operations.values():
            if path.startswith("/v1/leagues") or operation["operationId"] in ANSWERING:
                named[operation["operationId"]] = _answer_of(operation)
    assert set(named) >= ANSWERING | {"createLeague", "getLeague", "standings", "withdraw"}
    answered = {name for name in named.values() if name is not None}
    assert answered <= set(league_structs) | {"SeatTaken", "WatchLink"}, answered
    assert {named["takeSeat"], named["reissueToken"]} == {"SeatTaken"}
    assert {named["createGameWatchLink"], named["createLeagueWatchLink"]} == {"WatchLink"}
    assert {struct.__name__ for struct in LEAGUE_ANSWERS} == answered | {"LeagueResults"}


def test_the_document_publishes_the_structs_own_schemas() -> None:
    """Each component the answers are made of is the struct's msgspec JSON Schema (every
    field required, as the server always sends it): nothing mirrors them by hand."""
    roots, components = msgspec.json.schema_components(
        LEAGUE_ANSWERS, ref_template="#/components/schemas/{name}"
    )
    assert {root["$ref"].rsplit("/", 1)[-1] for root in roots} == {
        struct.__name__ for struct in LEAGUE_ANSWERS
    }
    own = set(_structs(leagues)) | {"SeatTaken", "WatchLink"}
    assert own <= set(components)
    for name, made in components.items():
        published, generated = SCHEMAS[name], json.loads(json.dumps(made))  # tuples as lists
        assert {k: v for k, v in published.items() if k != "required"} == {
            k: v for k, v in generated.items() if k != "required"
        }, name
        assert set(generated.get("required", [])) <= set(published.get("required", [])), name
        if name in own:
            assert set(published["required"]) == set(published["properties"]), name


def test_the_seat_taken_answer_and_event_keep_their_names() -> None:
    """Both structs are named ``SeatTaken``: the answer keeps the name, the event is
    ``SeatTakenEvent``, and each reference goes to the right one."""
    answer, event = SCHEMAS["SeatTaken"], SCHEMAS["SeatTakenEvent"]
    assert set(answer["properties"]) == {
        field.name for field in msgspec.structs.fields(answers.SeatTaken)
    }
    assert set(answer["properties"]) == {"seat", "player", "token", "expires_at"}
    assert event["properties"]["type"]["enum"] == ["seat_taken"]
    assert "token" not in event["properties"]
    events = {option["$ref"] for option in SCHEMAS["Event"]["anyOf"]}
    assert "#/components/schemas/SeatTakenEvent" in events
    assert "#/components/schemas/SeatTaken" not in events
    seats = SCHEMAS["StartedTable"]["properties"]["seats"]
    assert seats["items"] == {"$ref": "#/components/schemas/SeatTaken"}
    assert not [name for name in SCHEMAS if "." in name], "a name msgspec qualified is left"


def test_no_pydantic_model_mirrors_these_answers() -> None:
    mirrored = set(_structs(leagues)) | {"SeatTaken", "WatchLink"}
    for module in (models, watch_links):
        pydantic = {
            name
            for name, value in vars(module).items()
            if inspect.isclass(value) and issubclass(value, BaseModel)
        }
        assert not pydantic & mirrored, (module.__name__, pydantic & mirrored)
