"""The committed contracts are what the code generates (``make contracts`` writes them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.cli.contracts import CONTRACTS, documents, render

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


def test_the_asyncapi_document_describes_commands_and_commits() -> None:
    document = json.loads((CONTRACTS / "asyncapi.json").read_text())
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
