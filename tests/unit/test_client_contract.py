"""The Python client decodes into the very structs the server encodes from (the domain's and
``contracts``'): each one it uses is checked here against the published contract,
``contracts/openapi.json``, as committed, field by field. Every field the client reads is in the
document with the same JSON shape, and every field the client requires is one the server always
sends: a document regenerated without being committed, or edited by hand, is caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts import answers, leagues
from services import client

DOCUMENT = json.loads(
    (Path(__file__).resolve().parents[2] / "contracts" / "openapi.json").read_text()
)
COMPONENTS: dict[str, Any] = DOCUMENT["components"]["schemas"]


def shape(schema: Any, defs: dict[str, Any]) -> Any:
    """The JSON types, nesting and nulls of a schema (a named object is ``object``)."""
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        return "object" if "properties" in target or "anyOf" in target else shape(target, defs)
    for union in ("anyOf", "oneOf"):
        if union in schema:
            options: set[Any] = set()
            for option in schema[union]:
                found = shape(option, defs)
                options |= found if isinstance(found, frozenset) else {found}
            return next(iter(options)) if len(options) == 1 else frozenset(options)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return {str: "string", int: "integer", bool: "boolean"}[type(values[0])]
    kind = schema.get("type")
    if kind == "array":
        return ("array", shape(schema.get("items", {}), defs))
    if kind == "object" or "properties" in schema:
        return "object"
    return kind or "any"


def client_fields(struct: type[msgspec.Struct]) -> tuple[dict[str, Any], set[str]]:
    (ref,), defs = msgspec.json.schema_components([struct])
    own = defs[ref["$ref"].rsplit("/", 1)[-1]]
    fields = {name: shape(field, defs) for name, field in own["properties"].items()}
    return fields, set(own.get("required", []))


def accepts(read: Any, sent: Any) -> bool:
    """Whether what the client reads takes whatever is sent (it may take more, e.g. a null an
    older server sent)."""
    if read == sent:
        return True
    if isinstance(read, frozenset):
        return sent <= read if isinstance(sent, frozenset) else sent in read
    return False


PAIRS: list[tuple[type[msgspec.Struct], str]] = [
    (client.SeatInfo, "SeatInfo"),
    (client.TrickCard, "TrickCard"),
    (client.PublicState, "PublicState"),
    (client.SeatView, "SeatView"),
    (client.SeatTaken, "SeatTaken"),
    (client.Scoreboard, "Scoreboard"),
    (client.AuditProblem, "AuditProblem"),
    (client.AuditedHand, "HandAudit"),
    (client.Audit, "Audit"),
    (client.GameSummary, "GameSummary"),
    (client.GameList, "GameList"),
    (leagues.League, "League"),
    (leagues.StartedTable, "StartedTable"),
    (leagues.RoundStarted, "RoundStarted"),
    (leagues.RoundTable, "RoundTable"),
    (leagues.LeagueRound, "LeagueRound"),
    (leagues.Rating, "Rating"),
    (leagues.PlayerStanding, "PlayerStanding"),
    (leagues.Standings, "Standings"),
    (leagues.Withdrawn, "Withdrawn"),
    (leagues.Substituted, "Substituted"),
    (leagues.IntegrityReport, "IntegrityReport"),
    (answers.WatchLink, "WatchLink"),
    (answers.Webhook, "Webhook"),
    (answers.CreatedWebhook, "CreatedWebhook"),
    (answers.WebhookList, "WebhookList"),
    (answers.Delivery, "Delivery"),
    (answers.DeliveryPage, "DeliveryPage"),
    (answers.Replayed, "Replayed"),
    (client.Acted, "Acted"),
    (client.EventPage, "EventPage"),
    (client.ScoredHandRecord, "HandRecord"),
    (client.HandRecordWithReceipt, "HandRecordWithReceipt"),
    (client.ScoreLine, "ScoreLine"),
    (client.Receipt, "Receipt"),
    (client.DealCommitment, "DealCommitment"),
    (client.Readiness, "Readiness"),
]


@pytest.mark.parametrize(("struct", "component"), PAIRS, ids=[c for _, c in PAIRS])
def test_the_client_reads_what_the_contract_says_the_server_sends(
    struct: type[msgspec.Struct], component: str
) -> None:
    served = COMPONENTS[component]
    sent = {name: shape(field, COMPONENTS) for name, field in served["properties"].items()}
    always = set(served.get("required", []))
    fields, required = client_fields(struct)
    assert set(fields) <= set(sent), (
        f"the client reads fields never sent: {set(fields) - set(sent)}"
    )
    for name, kind in fields.items():
        assert accepts(kind, sent[name]), (name, kind, sent[name])
    assert required <= always, f"the client requires fields not always sent: {required - always}"
