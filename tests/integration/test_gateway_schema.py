"""The OpenAPI document: valid, in step with the domain's shapes, and true of the running API.

The last test is schemathesis against the app in process (its ASGI transport runs the app's
lifespan), with a real nats-server and a real engine behind it: no request it makes may get a
server error, and every response must match the document.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.python.asgi import shutdown_lifespans
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from contracts import answers, audit_log, log_entries
from contracts.wire import CreateGameRequest, TakeSeatRequest
from domain import events, views
from domain.clock import Clock
from domain.commands import CreateGame, TakeSeat
from domain.game import decide, fold
from domain.rules import Rules
from domain.shuffle import SeededDeal
from services.audit import report
from services.audit.history import Problem
from services.gateway.app import create_app
from services.gateway.auth import SeatTokens
from services.gateway.openapi import DOMAIN_NAMES
from services.runtime.nats_server import EmbeddedNats
from services.runtime.settings import Settings
from tests.integration import stack
from tests.integration.support import EngineProcess, connected, credentials_of, ready_client
from tests.integration.test_gateway import UNLIMITED

SIGNING_KEY = "gateway-schema-tests-key"


def test_the_openapi_document_is_valid_and_its_errors_are_problems() -> None:
    document = create_app(Settings(nats_url="nats://127.0.0.1:1", secret_key="k")).openapi()
    schemathesis.openapi.from_dict(document).validate()
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert "Problem" in schemas
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    assert list(response["content"]) == ["application/problem+json"], (
                        path,
                        method,
                        status,
                    )
    act = document["paths"]["/v1/games/{game_id}/actions"]["post"]
    assert set(act["responses"]) == {
        "200",
        "400",
        "401",
        "403",
        "404",
        "409",
        "422",
        "429",
        "503",
    }
    assert "Retry-After" in act["responses"]["503"]["headers"]
    assert {"Retry-After", "RateLimit-Policy", "RateLimit"} <= set(
        act["responses"]["429"]["headers"]
    )


def test_the_document_takes_events_and_rules_from_the_domain() -> None:
    document = create_app(Settings(nats_url="nats://127.0.0.1:1", secret_key="k")).openapi()
    schemas = document["components"]["schemas"]
    (event, rules), defs = msgspec.json.schema_components(
        [events.AnyEvent, Rules], ref_template="#/components/schemas/{name}"
    )
    served_rules = dict(schemas["Rules"])
    # an answer sends every option of the rule set: each one is required there
    assert served_rules.pop("required") == list(defs["Rules"]["properties"])
    domain_rules = json.loads(json.dumps(defs["Rules"]))
    domain_rules.pop("required", None)
    assert served_rules == domain_rules
    tags = {str(kind.__struct_config__.tag) for kind in get_args(events.AnyEvent)}
    assert set(schemas["Event"]["discriminator"]["mapping"]) == tags
    assert len(schemas["Event"]["anyOf"]) == len(event["anyOf"]) == len(tags)
    served = schemas["EventRecord"]["properties"]["event"]
    assert served["$ref"] == "#/components/schemas/Event"
    assert schemas["PublicState"]["properties"]["rules"] == {"$ref": "#/components/schemas/Rules"}
    assert rules == {"$ref": "#/components/schemas/Rules"}


@pytest.mark.parametrize(
    ("component", "struct"),
    [
        ("SeatInfo", views.SeatInfo),
        ("TrickCard", views.TrickCard),
        ("ClockState", views.ClockView),
        ("SeatClock", views.SeatClockView),
        ("Clock", Clock),
        ("PublicState", views.PublicState),
        ("SeatView", views.SeatView),
        ("LegalBid", views.LegalBid),
        ("LegalPass", views.LegalPass),
        ("GameList", answers.GameList),
        ("GameSummary", answers.GameSummary),
        ("Scoreboard", answers.Scoreboard),
        ("HandScore", answers.HandScore),
        ("Audit", report.AuditReport),
        ("HandAudit", report.HandReport),
        ("AuditProblem", Problem),
        ("EventPage", answers.EventPage),
        ("Acted", answers.Acted),
        ("HandRecord", answers.ScoredHandRecord),
        ("HandRecordWithReceipt", answers.HandRecordWithReceipt),
        ("HandRecords", answers.HandRecords),
        ("ScoreLine", answers.ScoreLine),
        ("Receipt", audit_log.Receipt),
        ("DealCommitment", audit_log.DealCommitment),
        ("HandEnd", log_entries.HandEnd),
        ("Logs", audit_log.Logs),
        ("LogHead", audit_log.LogHead),
        ("InclusionProof", audit_log.InclusionProof),
        ("ConsistencyProof", audit_log.ConsistencyProof),
        ("Health", answers.Health),
        ("Readiness", answers.Readiness),
    ],
)
def test_the_document_takes_the_tables_shapes_from_the_domain(
    component: str, struct: type[msgspec.Struct]
) -> None:
    """The table's state, a seat's view, its legal actions, seats, trick cards and clocks are
    the domain's structs, not mirrors."""
    document = create_app(Settings(nats_url="nats://127.0.0.1:1", secret_key="k")).openapi()
    schemas = document["components"]["schemas"]
    (_ref,), defs = msgspec.json.schema_components(
        [struct], ref_template="#/components/schemas/{name}"
    )
    text = json.dumps(defs[struct.__name__])
    for old, new in DOMAIN_NAMES.items():
        text = text.replace(f'/{old}"', f'/{new}"')
    own = json.loads(text)
    own.pop("title", None)
    own.pop("required", None)
    served = {key: value for key, value in schemas[component].items() if key != "title"}
    # every field is sent, so every field is required in an answer (defaults or not)
    assert set(served.pop("required")) == set(own["properties"])
    assert served == own


@pytest.mark.parametrize(
    "rules",
    [
        {"jokers": True, "trump_order": "jokers", "deck_remove": ["2C", "2D"]},
        {"preset": "six-player", "blind_bids": 6},
        {"preset": "jokers-54"},
    ],
    ids=["jokers", "six-player", "jokers-54"],
)
def test_a_dealt_table_decodes_as_the_structs_the_document_publishes(
    rules: dict[str, Any],
) -> None:
    """A dealt table through the domain, rendered as the API renders it, reads back strictly
    as the structs whose schemas the document publishes."""
    game = fold(decide(None, CreateGame("mirror", rules)))
    deal = SeededDeal(b"\x01" * 32)
    assert game is not None
    for seat in range(game.rules.players):
        game = fold(decide(game, TakeSeat(f"p{seat}"), deal=deal), game)
    assert game is not None
    public = msgspec.json.encode(views.public_view(game))
    assert msgspec.json.decode(public, type=views.PublicState, strict=True) == views.public_view(
        game
    )
    for seat in range(game.rules.players):
        shown = msgspec.json.encode(views.seat_view(game, seat))
        assert msgspec.json.decode(shown, type=views.SeatView, strict=True).legal


# --------------------------------------------------------------------------- schemathesis


async def _seated_game(nats_url: str) -> str:
    """A dealt game made over NATS, as any client of the engine would."""
    connection = await connected(nats_url)
    try:
        engine = await ready_client(connection, timeout_s=2.0)
        game_id = f"schema-{secrets.token_hex(6)}"
        await engine.send(game_id, CreateGameRequest(rules={"preset": "partnership"}, dealer=0))
        for seat in range(4):
            await engine.send(game_id, TakeSeatRequest(player=f"p{seat}", seat=seat))
    finally:
        await connection.close()
    return game_id


engine = stack.engine


@pytest.fixture(scope="module")
def seated_game(shared_nats: EmbeddedNats, engine: EngineProcess) -> str:
    return asyncio.run(_seated_game(shared_nats.url))


@pytest.fixture(scope="module")
def api(
    shared_nats: EmbeddedNats, seated_game: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[schemathesis.BaseSchema]:
    data_dir: Path = tmp_path_factory.mktemp("schema-gateway")
    app = create_app(
        Settings(
            nats_url=shared_nats.url,
            data_dir=data_dir,
            secret_key=SIGNING_KEY,
            nats_creds=credentials_of("gateway"),
            rate_limit=UNLIMITED,
        ),
        min_version_wait_s=0.05,
    )
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    # a stream never ends by itself: the event stream has tests of its own
    yield schema.exclude(path="/v1/games/{game_id}/events/stream")
    shutdown_lifespans()


def no_server_error(
    _ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case[Any]
) -> None:
    """Never a 500; and with NATS and an engine up, never a 503 either (a stray error would be
    one), except a read told to wait for a version that does not come (``min_version``), and
    the readiness probe: no projection worker runs here, so once the requests have put more
    than ``READY_LAG`` commits on the stream the read models are behind, and saying so is
    ``/readyz``'s whole job."""
    waited = "min_version" in (case.query or {})
    probe = case.path == "/readyz" and "read models behind the stream" in response.text
    assert response.status_code < 500 or (response.status_code == 503 and (waited or probe)), (
        response.text
    )


CHECKS = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


@pytest.mark.integration
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_request_gets_a_server_error_or_breaks_the_schema(
    api: schemathesis.BaseSchema, seated_game: str, mode: GenerationMode
) -> None:
    """Every operation, its game id pinned to a dealt game and its token to one of its seats,
    so requests reach the engine and get real answers."""
    token = SeatTokens(SIGNING_KEY.encode(), ttl_s=3600).issue(seated_game, 1, 1).token
    headers = {"Authorization": f"Bearer {token}"}
    cases = api.as_strategy(mode, path_parameters={"game_id": seated_game})

    @given(case=cases)
    @settings(
        max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    def answers_within_the_document(case: schemathesis.Case[Any]) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS, additional_checks=[no_server_error])

    answers_within_the_document()
