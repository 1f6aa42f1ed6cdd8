"""Input no server should choke on: a lone surrogate anywhere in a JSON body (a value, a key, a
player's name, deep in the rules), odd characters in an Idempotency-Key. Each is a 400
``malformed`` at the edge: no 5xx, and nothing reaches NATS."""

from __future__ import annotations

import logging

import httpx
import pytest
import structlog
from nats.aio.client import Client

from tests.security.tenants import (
    ACME,
    assert_problem,
    bearer,
    open_table,
    record,
    sentinel,
    unchanged,
    watching_commands,
)

pytestmark = pytest.mark.integration

LONE_SURROGATES: list[tuple[str, str, bytes]] = [
    ("a rule's value", "/v1/games", rb'{"rules": {"preset": "\ud800"}}'),
    ("a rule's name", "/v1/games", rb'{"rules": {"\udfff": 1, "preset": "solo"}}'),
    ("deep in a list", "/v1/games", rb'{"rules": {"preset": "solo", "deck_remove": ["\uDBFF"]}}'),
    ("the entropy", "/v1/games", rb'{"rules": {"preset": "solo"}, "entropy": "ab\ud801"}'),
    ("a league's name", "/v1/leagues", rb'{"name": "\udc00", "rules": {}, "players": ["a", "b"]}'),
    (
        "a league's player",
        "/v1/leagues",
        rb'{"name": "n", "rules": {}, "players": ["\ud83d", "b"]}',
    ),
    ("a low half first", "/v1/games", rb'{"rules": {"preset": "\ude00\ud83d"}}'),
]
"""Where a lone surrogate may hide, and where it is posted (the seat, the action and the
re-issue are added below, on a real table)."""


async def test_a_lone_surrogate_anywhere_in_a_body_is_400_before_nats(
    http: httpx.AsyncClient, house: Client
) -> None:
    table = await open_table(http, ACME, seated=3)
    seat = await open_table(http, ACME)
    turn = await seat.seat_to_act()
    before = {t.game_id: await record(house, t.game_id) for t in (table, seat)}
    posts = [
        *((name, path, body, bearer(ACME)) for name, path, body in LONE_SURROGATES),
        ("a player's name", f"{table.url}/seats", rb'{"player": "\ud800"}', bearer(ACME)),
        ("a substitute", f"{table.url}/seats/0/token", rb'{"player": "x\udbff"}', bearer(ACME)),
        ("a card", f"{seat.url}/actions", rb'{"type": "play", "card": "\ud800"}',
         bearer(seat.tokens[turn])),
        ("an unknown field", f"{seat.url}/actions", rb'{"type": "look", "\ud800": 1}',
         bearer(seat.tokens[turn])),
    ]  # fmt: skip
    async with watching_commands(house) as watch:
        for name, path, body, credential in posts:
            headers = {**credential, "Content-Type": "application/json"}
            answer = await http.post(path, content=body, headers=headers)
            assert_problem(answer, 400, "malformed")
            assert "surrogate" in answer.json()["detail"], name
        await sentinel(http, watch)
    assert len(watch.seen) == 1, watch.subjects()  # the sentinel's command, and nothing else
    for t in (table, seat):
        await unchanged(house, t, before[t.game_id])


async def test_surrogates_in_a_url_are_no_server_error(http: httpx.AsyncClient) -> None:
    """UTF-8 bytes of a surrogate, percent-encoded in a path or a query: read as the
    replacement character at worst, and answered without a 5xx."""
    surrogate = "%ED%A0%80"
    answers = [
        await http.get(f"/v1/games/{surrogate}", headers=bearer(ACME)),
        await http.get(f"/v1/games?player={surrogate}&league={surrogate}", headers=bearer(ACME)),
        await http.get(f"/v1/leagues/{surrogate}/standings", headers=bearer(ACME)),
        await http.get(f"/v1/games?cursor={surrogate}", headers=bearer(ACME)),
    ]
    assert [a.status_code for a in answers] == [404, 200, 404, 400]
    assert answers[1].json()["games"] == []


async def test_a_surrogate_pair_is_a_character_not_an_attack(http: httpx.AsyncClient) -> None:
    """The control: an escaped pair is one character (here a playing card, U+1F0A1)."""
    table = await open_table(http, ACME, seated=0)
    sat = await http.post(
        f"{table.url}/seats",
        content=rb'{"player": "ace \ud83c\udca1"}',
        headers={**bearer(ACME), "Content-Type": "application/json"},
    )
    assert sat.status_code == 201, sat.text
    assert sat.json()["player"] == "ace \U0001f0a1"


async def test_odd_idempotency_keys_are_400_before_nats(
    http: httpx.AsyncClient, house: Client
) -> None:
    table = await open_table(http, ACME)
    turn = await table.seat_to_act()
    before = await record(house, table.game_id)
    odd_keys: list[bytes] = [b"caf\xe9", b"tab\there", b"\xff\xfe", b"k" * 256]
    async with watching_commands(house) as watch:
        for key in odd_keys:
            for path, body, credential in (
                (f"{table.url}/actions", b'{"type": "look"}', bearer(table.tokens[turn])),
                ("/v1/games", b'{"rules": {"preset": "solo"}}', bearer(ACME)),
                (f"{table.url}/seats/0/token", b"{}", bearer(ACME)),
            ):
                headers = [
                    (b"content-type", b"application/json"),
                    *((k.encode(), v.encode()) for k, v in credential.items()),
                    (b"idempotency-key", key),
                ]
                answer = await http.post(path, content=body, headers=headers)
                assert_problem(answer, 400, "malformed")
        await sentinel(http, watch)
    assert len(watch.seen) == 1, watch.subjects()
    await unchanged(house, table, before)


NOT_UTF8: list[tuple[str, bytes]] = [
    ("a surrogate's raw UTF-8 bytes", b'{"rules": {"preset": "solo", "\xed\xa0\x80": 1}}'),
    ("UTF-16 little-endian", '{"rules": {"preset": "solo"}}'.encode("utf-16-le")),
    ("UTF-16 with its mark", '{"rules": {"preset": "solo"}}'.encode("utf-16")),
    ("UTF-32 big-endian", '{"rules": {"preset": "solo"}}'.encode("utf-32-be")),
    ("UTF-32 with its mark", '{"rules": {"preset": "solo"}}'.encode("utf-32")),
]
"""Bodies Python's JSON parser reads (it guesses UTF-16 and UTF-32, and lets a surrogate's own
bytes through) that are not the UTF-8 JSON text RFC 8259 section 8.1 asks for."""


async def test_a_body_that_is_not_utf8_is_400_before_nats_and_logs_no_error(
    http: httpx.AsyncClient, house: Client, caplog: pytest.LogCaptureFixture
) -> None:
    """Each was a 503, and an error with a traceback of some 5 KB in the log, per request."""
    caplog.set_level("WARNING")
    with structlog.testing.capture_logs() as logged:
        async with watching_commands(house) as watch:
            for name, body in NOT_UTF8:
                headers = {**bearer(ACME), "Content-Type": "application/json"}
                answer = await http.post("/v1/games", content=body, headers=headers)
                assert_problem(answer, 400, "malformed")
                assert "UTF-8" in answer.json()["detail"], name
            await sentinel(http, watch)
    assert len(watch.seen) == 1, watch.subjects()
    errors = [e for e in logged if e["log_level"] in ("error", "critical") or "exc_info" in e]
    assert not errors, errors
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_a_utf8_body_beyond_ascii_is_still_read(http: httpx.AsyncClient) -> None:
    """The control: UTF-8 beyond ASCII (a card, U+1F0A1, as its four bytes) is accepted."""
    table = await open_table(http, ACME, seated=0)
    sat = await http.post(
        f"{table.url}/seats",
        content='{"player": "ace \U0001f0a1"}'.encode(),
        headers={**bearer(ACME), "Content-Type": "application/json"},
    )
    assert sat.status_code == 201, sat.text
    assert sat.json()["player"] == "ace \U0001f0a1"
