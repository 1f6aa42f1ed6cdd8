"""The rules the API's schema states are the rules the server checks, from one definition each:
the rule set's options, player names, entropy, webhook URLs, list cursors, and the methods a
405 allows. (``tests/e2e/test_openapi.py`` runs Schemathesis against the whole document.)"""

from __future__ import annotations

import re
from typing import Any

import httpx
import jsonschema_rs
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import InvalidRules
from domain.rules import PRESETS, Rules, resolve_rules, rule_set_schema
from domain.seating import ENTROPY_PATTERN, GAME_ID, PLAYER_NAME_PATTERN, is_player_name
from services.gateway.app import create_app
from services.gateway.webhook_models import WEBHOOK_URL_PATTERN
from services.runtime.settings import Settings
from services.runtime.webhook_addresses import checked_url
from services.store.queries import GAME_CURSOR_PATTERN, _cursor, _read_cursor

SCHEMA = rule_set_schema()


def test_the_rule_set_schema_names_every_option_and_nothing_else() -> None:
    assert set(SCHEMA["properties"]) == set(Rules.__struct_fields__)
    assert SCHEMA["additionalProperties"] is False
    assert SCHEMA["properties"]["preset"]["enum"] == sorted(PRESETS)
    assert all(
        "type" in option or "enum" in option or "anyOf" in option
        for option in SCHEMA["properties"].values()
    )


@pytest.mark.parametrize(
    "outside",
    [
        {"no_such_option": 1},
        {"players": 5},
        {"decks": 3},
        {"min_bid": -1},
        {"target": 0},
        {"bag_limit": 0},
        {"nil_value": -5},
        {"target": 10**7},
        {"deck_remove": [" 2C"]},
        {"jokers": "yes"},
    ],
)
def test_a_rule_set_outside_the_schema_is_refused_by_the_domain(outside: dict[str, Any]) -> None:
    assert not jsonschema_rs.validator_for(SCHEMA).is_valid(outside)
    with pytest.raises(InvalidRules):
        resolve_rules(outside)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(Rules.__struct_fields__)), st.integers(-3, 60)))
def test_a_rule_set_the_schema_allows_is_played_or_refused_as_invalid_rules(
    rules: dict[str, Any],
) -> None:
    """Whatever the schema allows resolves, or is a combination no table can have: never a
    type error or an unknown option."""
    if not jsonschema_rs.validator_for(SCHEMA).is_valid(rules):
        return
    detail = ""
    try:
        resolve_rules(rules)
    except InvalidRules as refused:
        detail = refused.detail
    assert "unknown option" not in detail
    assert "expected" not in detail.lower(), detail


def test_integral_numbers_are_integers_as_json_schema_counts_them() -> None:
    assert resolve_rules({"target": 300.0}).target == 300
    assert resolve_rules({"deck_remove": ["10c"], "out_of_play": 3}).deck_remove == ("TC",)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=70))
def test_python_and_json_schema_read_a_player_name_alike(name: str) -> None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no JSON text carries it (refused at the edge)
        return
    schema = {"type": "string", "pattern": PLAYER_NAME_PATTERN, "minLength": 1, "maxLength": 64}
    assert jsonschema_rs.validator_for(schema).is_valid(name) == is_player_name(name)


@pytest.mark.parametrize(
    ("name", "fine"),
    [
        ("ada", True),
        ("Zoë K", True),
        ("日本", True),
        ("", False),
        ("a\nb", False),
        ("a\u00a0b", False),
        ("\u200bx", False),
        ("x" * 64, True),
        ("x" * 65, False),
    ],
)
def test_a_player_name_is_printable_and_short(name: str, fine: bool) -> None:
    assert is_player_name(name) is fine


def test_entropy_is_whole_bytes_of_hex() -> None:
    entropy = re.compile(ENTROPY_PATTERN)
    assert entropy.fullmatch("")
    assert entropy.fullmatch("ab" * 128)
    for refused in ("a", "ab cd", "zz", "ab" * 129, "ab\n"):
        assert entropy.fullmatch(refused) is None


def test_one_game_id_rule() -> None:
    assert GAME_ID.fullmatch("a" * 64)
    assert GAME_ID.fullmatch("a" * 65) is None
    assert GAME_ID.fullmatch("abc\n") is None


@settings(max_examples=500, deadline=None)
@given(st.from_regex(WEBHOOK_URL_PATTERN, fullmatch=True))
def test_every_webhook_url_the_schema_allows_is_a_url_the_server_takes(url: str) -> None:
    checked_url(url)  # raises InvalidUrl for one it does not take


def test_a_cursor_handed_out_is_one_the_schema_allows_and_any_such_is_a_place() -> None:
    class Row(msgspec.Struct):
        created_at: str
        game_id: str

    cursor = _cursor(Row("2026-12-01T12:00:00.123Z", "g-1"))  # type: ignore[arg-type]
    assert re.fullmatch(GAME_CURSOR_PATTERN, cursor)
    assert _read_cursor(cursor) == ("2026-12-01T12:00:00.123Z", "g-1")


async def test_a_405_lists_every_method_of_its_path_in_allow() -> None:
    app = create_app(Settings(nats_url="nats://127.0.0.1:1", secret_key="k"))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        refused = await http.request("PATCH", "/v1/games")
        assert refused.status_code == 405
        assert refused.headers["content-type"] == "application/problem+json"
        assert set(refused.headers["allow"].split(", ")) >= {"GET", "POST"}
        other = await http.request("DELETE", "/v1/games/some-game/view")
        assert other.status_code == 405
        assert "GET" in other.headers["allow"]
        assert "POST" not in other.headers["allow"]
