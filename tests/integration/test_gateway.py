"""The HTTP gateway over real HTTP: a real uvicorn, a real nats-server, a real engine process.

Everything a client does goes through the API; the house's view of a game (its commits with
every card) is read from JetStream only to check what the API shows against the truth.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import uvicorn
from nats.aio.client import Client

from contracts.wire import command_subject
from services.gateway.app import create_app
from services.gateway.commands import command_id_for
from services.gateway.server import gateway_config
from services.runtime.game_stream import StoredCommit
from services.runtime.nats_server import EmbeddedNats, free_port
from services.runtime.settings import Settings
from tests.integration import stack
from tests.integration.support import (
    EngineProcess,
    connected,
    credentials_of,
    history,
)

pytestmark = pytest.mark.integration

SIGNING_KEY = "gateway-tests-signing-key"
KEEP_ALIVE_S = 0.3
MIN_VERSION_WAIT_S = 10.0
"""How long a read waits for the read models to reach ``min_version``: reads that reach it are
answered as soon as they do, so only a busy machine (two test workers, a projection batch of
20 ms) ever waits long; a version the game has not reached is refused at once."""
PROBLEM_FIELDS = {"type", "title", "status", "detail", "code"}
CARD = re.compile(r"^(?:[2-9TJQKA][CDHS]|BJ|LJ)$")


# --------------------------------------------------------------------------- the stack


class ServedGateway:
    """``create_app`` under a real uvicorn on a free port, in a thread with its own loop."""

    def __init__(self, settings: Settings, **options: float) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = gateway_config(
            create_app(settings, **options),
            settings,
            "127.0.0.1",
            self.port,
            loop="auto",
            timeout_graceful_shutdown=1,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ServedGateway:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:  # uvicorn offers no event to wait on
            assert self.thread.is_alive(), "the gateway did not start"
            assert time.monotonic() < deadline, "the gateway did not start in time"
            time.sleep(0.01)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


UNLIMITED = "platform=100000/s,seat=100000/s,anonymous=100000/s,audit=100000/s"
"""Rate limits no test of the API's behaviour reaches (tests/security has its own)."""


def gateway_settings(nats_url: str, data_dir: Path, **changes: Any) -> Settings:
    options: dict[str, Any] = {"rate_limit": UNLIMITED, **changes}
    return Settings(
        nats_url=nats_url,
        data_dir=data_dir,
        secret_key=SIGNING_KEY,
        nats_creds=credentials_of("gateway"),
        **options,
    )


engine = stack.engine
data_dir = stack.data_dir
projections = stack.projections
house = stack.house


gateway = stack.served_gateway(
    {"keep_alive_s": KEEP_ALIVE_S, "min_version_wait_s": MIN_VERSION_WAIT_S}
)


@pytest.fixture
async def client(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=10) as http:
        yield http


# --------------------------------------------------------------------------- a table


def uuid4_hex() -> str:
    return uuid.uuid4().hex


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json", response.headers
    problem: dict[str, Any] = response.json()
    assert set(problem) == PROBLEM_FIELDS, problem
    assert (problem["status"], problem["code"]) == (status, code), problem
    return problem


def choose(view: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A random legal action of a seat (no blind nil; a look only when nothing else is legal)."""
    legal = [a for a in view["legal"] if a != {"type": "bid", "bid": "blind_nil"}]
    moves = [a for a in legal if a["type"] != "look"] or legal
    action = rng.choice(moves)
    if action["type"] == "pass":
        return {"type": "pass", "cards": view["hand"][: action["count"]]}
    return dict(action)


@dataclass
class Table:
    """One game, every seat played through the API by this object."""

    client: httpx.AsyncClient
    game_id: str
    tokens: dict[int, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"/v1/games/{self.game_id}"

    async def public(self) -> dict[str, Any]:
        response = await self.client.get(self.url)
        assert response.status_code == 200, response.text
        state: dict[str, Any] = response.json()
        return state

    async def view(self, seat: int) -> dict[str, Any]:
        response = await self.client.get(f"{self.url}/view", headers=bearer(self.tokens[seat]))
        assert response.status_code == 200, response.text
        state: dict[str, Any] = response.json()
        return state

    async def act(
        self, seat: int, action: dict[str, Any], key: str | None = None
    ) -> httpx.Response:
        headers = bearer(self.tokens[seat])
        if key is not None:
            headers["Idempotency-Key"] = key
        return await self.client.post(f"{self.url}/actions", json=action, headers=headers)

    async def events(self, seat: int | None = None, after: int = 0) -> list[dict[str, Any]]:
        headers = bearer(self.tokens[seat]) if seat is not None else {}
        response = await self.client.get(
            f"{self.url}/events", params={"after": after, "limit": 1000}, headers=headers
        )
        assert response.status_code == 200, response.text
        records: list[dict[str, Any]] = response.json()["events"]
        return records

    async def seat_to_act(self) -> int:
        state = await self.public()
        return int(state["passes_due"][0] if state["phase"] == "pass" else state["turn"])

    async def step(self, rng: random.Random) -> httpx.Response:
        seat = await self.seat_to_act()
        response = await self.act(seat, choose(await self.view(seat), rng))
        assert response.status_code == 200, response.text
        return response

    async def play_hand(self, rng: random.Random) -> None:
        """Act until the hand in progress is scored (or the game ends)."""
        start = (await self.public())["hand_number"]
        while True:
            state = await self.public()
            if state["status"] == "finished" or state["hand_number"] > start:
                return
            await self.step(rng)


async def open_table(
    client: httpx.AsyncClient,
    rules: dict[str, Any],
    *,
    dealer: int | None = 0,
    league: str | None = None,
    players: list[str] | None = None,
) -> Table:
    body: dict[str, Any] = {"rules": rules, "dealer": dealer}
    if league is not None:
        body["league"] = league
    created = await client.post("/v1/games", json=body)
    assert created.status_code == 201, created.text
    table = Table(client, created.json()["game_id"])
    count = created.json()["rules"]["players"]
    for seat, name in enumerate(players or [f"player {n}" for n in range(count)]):
        taken = await client.post(
            f"{table.url}/seats", json={"player": name, "seat": seat, "entropy": "ab" * seat}
        )
        assert taken.status_code == 201, taken.text
        table.tokens[seat] = taken.json()["token"]
    return table


# --------------------------------------------------------------------------- games


async def test_a_hand_played_through_the_api(client: httpx.AsyncClient) -> None:
    created = await client.post(
        "/v1/games", json={"rules": {"preset": "partnership", "max_hands": 1}, "dealer": 0}
    )
    assert created.status_code == 201
    state = created.json()
    game_id = state["game_id"]
    assert created.headers["location"] == f"/v1/games/{game_id}"
    assert (state["version"], state["status"], state["phase"]) == (1, "waiting", None)
    assert state["rules"]["players"] == 4
    assert state["rules"]["max_hands"] == 1

    table = Table(client, game_id)
    for seat in range(4):
        taken = await client.post(f"{table.url}/seats", json={"player": f"p{seat}"})
        assert taken.status_code == 201
        answer = taken.json()
        assert {k: v for k, v in answer.items() if k not in ("token", "expires_at")} == {
            "seat": seat,
            "player": f"p{seat}",
        }
        expires = datetime.fromisoformat(answer["expires_at"].replace("Z", "+00:00"))
        # the default lifetime, a day, counted from when it was issued
        assert abs((expires - datetime.now(UTC)).total_seconds() - 86_400) < 120
        table.tokens[seat] = answer["token"]
    dealt = await table.public()
    assert (dealt["status"], dealt["phase"], dealt["hand_number"], dealt["turn"]) == (
        "playing",
        "bid",
        1,
        1,
    )
    assert dealt["deal_commitment"]
    assert len(dealt["deal_commitment"]) == 64
    assert [s["player"] for s in dealt["seats"]] == ["p0", "p1", "p2", "p3"]

    view = await table.view(1)
    assert view["seat"] == 1
    assert view["hand"] is None
    assert {"type": "look"} in view["legal"]
    assert {"type": "bid", "bid": "nil"} in view["legal"]

    rng = random.Random(4)
    replies: dict[int, list[dict[str, Any]]] = {seat: [] for seat in range(4)}
    while (await table.public())["status"] != "finished":
        seat = await table.seat_to_act()
        reply = await table.act(seat, choose(await table.view(seat), rng))
        assert reply.status_code == 200, reply.text
        assert reply.json()["version"] == reply.json()["events"][-1]["version"]
        replies[seat].extend(reply.json()["events"])

    # what each action answered is what the events endpoint shows that seat
    for seat, answered in replies.items():
        shown = {record["version"]: record for record in await table.events(seat)}
        assert all(shown[record["version"]] == record for record in answered)

    final = await table.public()
    assert final["winners"]
    assert final["hand_number"] == 1
    seen = {"min_version": final["version"]}  # the read models are eventually consistent
    records = (await client.get(f"{table.url}/hands", params=seen)).json()["hands"]
    assert [record["hand"] for record in records] == [1]
    one = (await client.get(f"{table.url}/hands/1", params=seen)).json()
    assert "receipt" in one  # the audit log's, null until the log holds the hand
    assert {key: value for key, value in one.items() if key != "receipt"} == records[0]
    assert sorted(len(hand) for hand in one["deal"]["hands"]) == [13] * 4
    assert len(one["tricks"]) == 13
    assert one["deal"]["seed"]
    board = (await client.get(f"{table.url}/scoreboard", params=seen)).json()
    assert board["units"] == [[0, 2], [1, 3]]
    assert board["scores"] == final["scores"] == board["hands"][0]["scores"]
    assert board["game_over"] is True
    assert board["winners"] == final["winners"]
    report = (await client.get(f"{table.url}/audit")).json()
    assert report["ok"] is True, report
    assert report["chain"] is True
    assert report["events"] == final["version"]
    [hand] = report["hands"]
    assert {key: value for key, value in hand.items() if key != "arithmetic"} == {
        "hand": 1,
        "deal_verified": True,
        "replayed": True,
        "score_matches": True,
        "problems": [],
    }
    assert hand["arithmetic"], "the audit shows the hand's score line by line"
    assert report["first_problem"] is None
    over = await table.act(final["turn"] or 0, {"type": "bid", "bid": 3})
    assert_problem(over, 409, "game_over")


async def test_the_two_player_draw(client: httpx.AsyncClient) -> None:
    table = await open_table(client, {"preset": "two-player"}, dealer=0)
    view = await table.view(1)  # the seat left of the dealer draws first and sees the top card
    assert view["phase"] == "draw"
    assert view["drawn_card"] is not None
    assert {"type": "draw", "keep": True} in view["legal"]
    assert (await table.view(0))["drawn_card"] is None
    await table.play_hand(random.Random(2))
    seen = {"min_version": (await table.public())["version"]}
    record = (await table.client.get(f"{table.url}/hands/1", params=seen)).json()
    assert len(record["draws"]) == 52
    assert [len(hand) for hand in record["deal"]["hands"]] == [
        13,
        13,
    ]


async def test_the_game_list(client: httpx.AsyncClient) -> None:
    tag = secrets.token_hex(4)
    solo = f"solo-{tag}"
    names = [solo, *(f"{name}-{tag}" for name in "bcdef")]
    league = await client.post(
        "/v1/leagues",
        json={"name": "Listed", "rules": {"preset": "cutthroat"}, "players": names, "rounds": 1},
    )
    assert league.status_code == 201, league.text
    league_id = league.json()["league_id"]
    started = await client.post(f"/v1/leagues/{league_id}/rounds")
    assert started.status_code == 201, started.text
    tables = started.json()["tables"]
    assert len(tables) == 2
    waiting = await client.post("/v1/games", json={"rules": {"preset": "cutthroat"}})
    assert waiting.status_code == 201
    waiting_id = waiting.json()["game_id"]
    # the list is a read model: wait until it has every game as it stands
    for game_id in [waiting_id, *(t["game_id"] for t in tables)]:
        version = (await client.get(f"/v1/games/{game_id}")).json()["version"]
        seen = await client.get(f"/v1/games/{game_id}/scoreboard", params={"min_version": version})
        assert seen.status_code == 200
    listed = (await client.get("/v1/games", params={"league": league_id})).json()
    ids = [summary["game_id"] for summary in listed["games"]]
    assert sorted(ids) == sorted(t["game_id"] for t in tables)
    assert listed["next_cursor"] is None
    assert {s["league"] for s in listed["games"]} == {league_id}

    first = (await client.get("/v1/games", params={"league": league_id, "limit": 1})).json()
    assert len(first["games"]) == 1
    assert first["next_cursor"]
    rest = await client.get(
        "/v1/games", params={"league": league_id, "limit": 1, "cursor": first["next_cursor"]}
    )
    assert rest.json()["next_cursor"] is None
    assert [s["game_id"] for s in first["games"] + rest.json()["games"]] == ids

    (sat,) = [t for t in tables if solo in [seat["player"] for seat in t["seats"]]]
    mine = (await client.get("/v1/games", params={"player": solo})).json()["games"]
    assert [s["game_id"] for s in mine] == [sat["game_id"]]
    assert mine[0]["players"] == [seat["player"] for seat in sat["seats"]]
    assert mine[0]["status"] == "playing"
    still = await client.get("/v1/games", params={"league": league_id, "status": "waiting"})
    assert still.json()["games"] == []
    waiting_now = await client.get("/v1/games", params={"status": "waiting", "limit": 200})
    waiting_ids = {s["game_id"] for s in waiting_now.json()["games"]}
    assert waiting_id in waiting_ids
    assert waiting_ids.isdisjoint(t["game_id"] for t in tables)


async def test_reads_wait_for_min_version(client: httpx.AsyncClient) -> None:
    table = await open_table(client, {"preset": "solo"})
    version = (await table.public())["version"]
    now = await client.get(f"{table.url}/scoreboard", params={"min_version": version})
    assert now.status_code == 200
    ahead = await client.get(f"{table.url}/scoreboard", params={"min_version": version + 1})
    assert_problem(ahead, 409, "conflict")  # not reached yet: answered at once, no wait
    await table.step(random.Random(1))
    # the version an action answered: the read waits until the read models hold it
    later = await client.get(f"{table.url}/scoreboard", params={"min_version": version + 1})
    assert later.status_code == 200
    # A version the game has not reached is answered at once: no wait could make it visible.
    current = (await table.public())["version"]
    never = await client.get(f"{table.url}/hands", params={"min_version": current + 1000})
    assert "the game is at version" in assert_problem(never, 409, "conflict")["detail"]
    assert "retry-after" not in never.headers


# --------------------------------------------------------------------------- seat tokens


async def test_a_seat_token_grants_its_own_seat_of_its_own_game(
    client: httpx.AsyncClient,
) -> None:
    table = await open_table(client, {"preset": "partnership"})
    other = await open_table(client, {"preset": "partnership"})
    view, act, events = f"{table.url}/view", f"{table.url}/actions", f"{table.url}/events"
    look = {"type": "look"}
    for path in (view, f"{view}?x=1"):
        assert_problem(await client.get(path), 401, "unauthorized")
    assert_problem(await client.post(act, json=look), 401, "unauthorized")
    for garbled in ("nonsense", table.tokens[0] + "x", table.tokens[0].replace(".0.", ".1.", 1)):
        assert_problem(await client.get(view, headers=bearer(garbled)), 401, "unauthorized")
        assert_problem(await client.get(events, headers=bearer(garbled)), 401, "unauthorized")
    basic = {"Authorization": "Basic " + table.tokens[0]}
    assert_problem(await client.get(view, headers=basic), 401, "unauthorized")

    stranger = bearer(other.tokens[0])
    assert_problem(await client.get(view, headers=stranger), 403, "forbidden")
    assert_problem(await client.post(act, json=look, headers=stranger), 403, "forbidden")
    assert_problem(await client.get(events, headers=stranger), 403, "forbidden")
    stream = f"{table.url}/events/stream"
    denied = await client.get(stream, params={"access_token": other.tokens[1]})
    assert_problem(denied, 403, "forbidden")
    # a seat token acts for its seat only, even when the body names another
    assert_problem(await table.act(1, {"type": "look", "seat": 2}), 403, "forbidden")
    assert (await table.act(1, {"type": "look", "seat": 1})).status_code == 200

    one, two = await table.view(1), await table.view(2)
    assert one["hand"] is not None
    assert two["hand"] is None
    assert (await table.act(2, look)).status_code == 200
    assert set((await table.view(2))["hand"]).isdisjoint(one["hand"])


async def test_platform_keys_guard_game_creation(
    shared_nats: EmbeddedNats, engine: EngineProcess, tmp_path: Path
) -> None:
    settings = gateway_settings(shared_nats.url, tmp_path, api_keys="first-key, second-key")
    with ServedGateway(settings) as served:
        async with httpx.AsyncClient(base_url=served.url) as http:
            body = {"rules": {"preset": "solo"}}
            assert_problem(await http.post("/v1/games", json=body), 401, "unauthorized")
            wrong = bearer("third-key")
            assert_problem(
                await http.post("/v1/games", json=body, headers=wrong), 401, "unauthorized"
            )
            created = await http.post("/v1/games", json=body, headers=bearer("second-key"))
            assert created.status_code == 201
            game_id = created.json()["game_id"]
            # the game is the platform's (private by default): no one else sits, or sees it
            seats = f"/v1/games/{game_id}/seats"
            for stranger in ({}, bearer("first-key")):
                refused = await http.post(seats, json={"player": "ada"}, headers=stranger)
                assert_problem(refused, 404, "game_not_found")
            seat = await http.post(seats, json={"player": "ada"}, headers=bearer("second-key"))
            assert seat.status_code == 201, seat.text
            # one Idempotency-Key, two platforms: two games, each safe to retry
            games: dict[str, set[str]] = {}
            for platform in ("first-key", "second-key", "first-key"):
                headers = {**bearer(platform), "Idempotency-Key": "tournament-7"}
                keyed = await http.post("/v1/games", json=body, headers=headers)
                assert keyed.status_code == 201, keyed.text
                games.setdefault(platform, set()).add(keyed.json()["game_id"])
            assert len(games["first-key"]) == len(games["second-key"]) == 1
            assert games["first-key"] != games["second-key"]


# --------------------------------------------------------------------------- errors


async def test_every_refusal_is_a_problem_with_the_status_of_its_code(
    client: httpx.AsyncClient,
) -> None:
    table = await open_table(client, {"preset": "partnership", "nil": False})
    url = table.url
    bid_turn = (await table.public())["turn"]
    waiting = await client.post("/v1/games", json={"rules": {"preset": "solo"}})
    open_url = f"/v1/games/{waiting.json()['game_id']}"

    assert_problem(await table.act(bid_turn, {"type": "play", "card": "2C"}), 409, "wrong_phase")
    assert_problem(
        await table.act((bid_turn + 1) % 4, {"type": "bid", "bid": 3}), 409, "not_your_turn"
    )
    assert_problem(await table.act(bid_turn, {"type": "bid", "bid": 14}), 422, "invalid_bid")
    assert_problem(await table.act(bid_turn, {"type": "bid", "bid": "nil"}), 422, "nil_not_allowed")
    assert_problem(
        await table.act(bid_turn, {"type": "pass", "cards": ["2C", "3C"]}), 409, "wrong_phase"
    )
    taken = await client.post(f"{url}/seats", json={"player": "late", "seat": 0})
    assert_problem(taken, 409, "seat_taken")
    assert_problem(
        await client.post(f"{open_url}/seats", json={"player": "x", "seat": 9}), 400, "malformed"
    )
    invalid = await client.post("/v1/games", json={"rules": {"preset": "partnership", "bogus": 1}})
    assert_problem(invalid, 422, "invalid_rules")
    assert_problem(
        await client.post("/v1/games", json={"rules": {"preset": "nope"}}), 422, "invalid_rules"
    )
    assert_problem(
        await client.post("/v1/games", json={"rules": {}, "dealer": 7}), 400, "malformed"
    )
    assert_problem(
        await client.post("/v1/games", json={"rules": {}, "entropy": "xyz"}), 400, "malformed"
    )

    assert_problem(await client.get("/v1/games/no-such-game"), 404, "game_not_found")
    for odd in ("a.b", "*", ">", "%20", "a%00b", "x" * 65, "%F0%9F%82%A1", "a%3Eb"):
        assert_problem(await client.get(f"/v1/games/{odd}"), 404, "game_not_found")
        assert_problem(await client.get(f"/v1/games/{odd}/events"), 404, "game_not_found")
    assert_problem(await client.get("/v1/games/..%2F..%2Fetc"), 404, "not_found")
    assert_problem(
        await client.post("/v1/games/nope/seats", json={"player": "x"}), 404, "game_not_found"
    )
    seen = {"min_version": (await client.get(url)).json()["version"]}
    assert_problem(await client.get(f"{url}/hands/1", params=seen), 404, "hand_not_found")
    assert_problem(await client.get(f"{url}/hands/0", params=seen), 404, "hand_not_found")
    assert_problem(await client.get("/v1/games/nope/hands/1"), 404, "game_not_found")
    assert_problem(await client.get("/v1/games/nope/audit"), 404, "game_not_found")
    assert_problem(await client.get("/v1/games/nope/scoreboard"), 404, "game_not_found")
    assert_problem(await client.get("/v1/games/nope/events/stream"), 404, "game_not_found")
    assert_problem(await client.get("/v2/games"), 404, "not_found")
    assert_problem(await client.delete(url), 405, "method_not_allowed")


MALFORMED_BODIES: list[tuple[str, bytes, str]] = [
    ("not json", b"{not json", "application/json"),
    ("empty", b"", "application/json"),
    ("a list", b"[]", "application/json"),
    ("a string", b'"look"', "application/json"),
    ("no type", b"{}", "application/json"),
    ("unknown type", b'{"type": "shuffle"}', "application/json"),
    ("a field too many", b'{"type": "look", "cards": []}', "application/json"),
    ("a string bid", b'{"type": "bid", "bid": "3"}', "application/json"),
    ("a bool bid", b'{"type": "bid", "bid": true}', "application/json"),
    ("a float bid", b'{"type": "bid", "bid": 3.5}', "application/json"),
    ("a number keep", b'{"type": "draw", "keep": 1}', "application/json"),
    ("cards not a list", b'{"type": "pass", "cards": "2C"}', "application/json"),
    ("a card not a card", b'{"type": "play", "card": "ZZ"}', "application/json"),
    ("negative version", b'{"type": "look", "expected_version": -1}', "application/json"),
    ("plain text", b'{"type": "look"}', "text/plain"),
    ("form", b"type=look", "application/x-www-form-urlencoded"),
    ("bad utf-8", b'{"type": "\xff"}', "application/json"),
    ("deep", b"[" * 5000 + b"]" * 5000, "application/json"),
    ("huge", b'{"type": "look", "x": "' + b"a" * 70_000 + b'"}', "application/json"),
]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(body, kind) for _, body, kind in MALFORMED_BODIES],
    ids=[name for name, _, _ in MALFORMED_BODIES],
)
async def test_malformed_requests_are_400_never_500(
    client: httpx.AsyncClient, body: bytes, content_type: str
) -> None:
    table = await open_table(client, {"preset": "solo"})
    headers = {**bearer(table.tokens[1]), "Content-Type": content_type}
    answer = await client.post(f"{table.url}/actions", content=body, headers=headers)
    assert_problem(answer, 400, "malformed")
    create = await client.post("/v1/games", content=body, headers={"Content-Type": content_type})
    assert_problem(create, 400, "malformed")


async def test_malformed_parameters_and_headers_are_400(client: httpx.AsyncClient) -> None:
    table = await open_table(client, {"preset": "solo"})
    for params in ({"after": -1}, {"after": "x"}, {"limit": 0}, {"limit": 5000}):
        assert_problem(await client.get(f"{table.url}/events", params=params), 400, "malformed")
    assert_problem(await client.get("/v1/games", params={"status": "paused"}), 400, "malformed")
    assert_problem(await client.get("/v1/games", params={"cursor": "a.b"}), 400, "malformed")
    assert_problem(await client.get(f"{table.url}/hands/x"), 400, "malformed")
    assert_problem(await client.get(f"{table.url}/scoreboard?min_version=-3"), 400, "malformed")
    too_long = await table.act(1, {"type": "look"}, key="k" * 256)
    assert_problem(too_long, 400, "malformed")
    assert (await table.act(1, {"type": "look"}, key="k" * 255)).status_code == 200

    async def unannounced() -> AsyncIterator[bytes]:  # sent chunked: no Content-Length
        for part in (b'{"type": "look", "x": "', b"a" * 70_000, b'"}'):
            yield part

    chunked = await client.post(
        f"{table.url}/actions",
        content=unannounced(),
        headers={**bearer(table.tokens[1]), "Content-Type": "application/json"},
    )
    assert_problem(chunked, 400, "malformed")


# --------------------------------------------------------------------------- idempotency


async def test_an_idempotency_key_gets_the_first_answer(
    client: httpx.AsyncClient, engine: EngineProcess, house: Client
) -> None:
    table = await open_table(client, {"preset": "partnership"})
    seat = await table.seat_to_act()
    first = await table.act(seat, {"type": "bid", "bid": 3}, key="bid-1")
    again = await table.act(seat, {"type": "bid", "bid": 3}, key="bid-1")
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    reused = await table.act(seat, {"type": "bid", "bid": 4}, key="bid-1")
    assert_problem(reused, 422, "idempotency_key_reused")
    command_id = command_id_for(SIGNING_KEY.encode(), table.game_id, seat, 1, "bid-1")
    commits = await history(house, table.game_id)
    assert [c.commit.command_id for c in commits].count(command_id) == 1
    # a refusal is a first answer too
    early = await table.act(seat, {"type": "bid", "bid": 3}, key="bid-2")
    assert_problem(early, 409, "not_your_turn")
    assert (await table.act(seat, {"type": "bid", "bid": 3}, key="bid-2")).json() == early.json()

    # while the first request with a key is in flight, a second one is refused
    seat = await table.seat_to_act()
    watcher = await house.subscribe(command_subject(table.game_id))
    await house.flush()  # the watcher is in place before the request can be sent
    assert engine.process is not None
    engine.process.send_signal(signal.SIGSTOP)
    try:
        pending = asyncio.create_task(table.act(seat, {"type": "bid", "bid": 2}, key="bid-3"))
        await watcher.next_msg(timeout=5)  # the gateway has sent it: it is in flight
        clash = await table.act(seat, {"type": "bid", "bid": 2}, key="bid-3")
        assert_problem(clash, 409, "conflict")
    finally:
        engine.process.send_signal(signal.SIGCONT)
        await watcher.unsubscribe()
    answered = await pending
    assert answered.status_code == 200
    assert (await table.act(seat, {"type": "bid", "bid": 2}, key="bid-3")).json() == answered.json()


async def test_creating_a_game_and_taking_a_seat_are_safe_to_retry(
    client: httpx.AsyncClient, house: Client
) -> None:
    body = {"rules": {"preset": "solo"}, "dealer": 1}
    key = {"Idempotency-Key": f"create-{random.random()}"}
    first = await client.post("/v1/games", json=body, headers=key)
    again = await client.post("/v1/games", json=body, headers=key)
    assert first.status_code == again.status_code == 201, again.text
    assert again.json() == first.json()
    assert again.headers["location"] == first.headers["location"]
    game_id = first.json()["game_id"]
    other = {**body, "dealer": 2}
    assert_problem(
        await client.post("/v1/games", json=other, headers=key), 422, "idempotency_key_reused"
    )
    unkeyed = [(await client.post("/v1/games", json=body)).json()["game_id"] for _ in range(2)]
    assert len({game_id, *unkeyed}) == 3

    seats = f"/v1/games/{game_id}/seats"
    sit = {"player": "ann", "entropy": "0a"}
    # without a platform key, a seat's key is all that ties a retry to its caller: a secret
    ann_key, bob_key = {"Idempotency-Key": str(uuid.uuid4())}, {"Idempotency-Key": uuid4_hex()}
    taken = [await client.post(seats, json=sit, headers=ann_key) for _ in "ab"]
    assert [t.status_code for t in taken] == [201, 201], taken[1].text
    assert taken[0].json()["seat"] == taken[1].json()["seat"]
    # each answer carries a token of its own for that one seat, and both act for it
    assert taken[0].json()["token"] != taken[1].json()["token"]
    reused = await client.post(seats, json={**sit, "player": "bob"}, headers=ann_key)
    assert_problem(reused, 422, "idempotency_key_reused")
    bob = await client.post(seats, json={"player": "bob"}, headers=bob_key)
    assert bob.json()["seat"] != taken[0].json()["seat"]
    players = [s["player"] for s in (await client.get(f"/v1/games/{game_id}")).json()["seats"]]
    assert sorted(p for p in players if p) == ["ann", "bob"]
    commits = await history(house, game_id)
    assert sum(1 for c in commits if c.commit.refusal is None) == 3  # created, ann, bob


async def test_expected_version_refuses_a_stale_action(client: httpx.AsyncClient) -> None:
    table = await open_table(client, {"preset": "partnership"})
    seat = await table.seat_to_act()
    version = (await table.public())["version"]
    stale = await table.act(seat, {"type": "bid", "bid": 3, "expected_version": version - 1})
    assert_problem(stale, 409, "conflict")
    assert (await table.public())["version"] == version
    fresh = await table.act(seat, {"type": "bid", "bid": 3, "expected_version": version})
    assert fresh.status_code == 200
    assert fresh.json()["version"] > version


# --------------------------------------------------------------------------- what each reader sees


def cards_in(value: Any) -> set[str]:
    """Every card named anywhere in a JSON value."""
    if isinstance(value, str):
        return {value} if CARD.match(value) else set()
    if isinstance(value, dict):
        return set().union(*(cards_in(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(cards_in(item) for item in value))
    return set()


def assert_nothing_unseen(
    house: list[StoredCommit], shown: list[dict[str, Any]], reader: int | None
) -> None:
    """No event shown to ``reader`` names a card it could not see at the table: only its own
    cards (as dealt, drawn and received), cards played and face-up discards."""
    truth = {
        first + offset: msgspec.to_builtins(event)
        for stored in house
        for first in [stored.commit.first_version]
        for offset, event in enumerate(stored.commit.events)
    }
    own: set[str] = set()
    public: set[str] = set()
    for record in shown:
        event = truth[record["version"]]
        kind = event["type"]
        if kind == "hand_dealt":
            own = set(event["hands"][reader]) if reader is not None and event["hands"] else set()
        elif kind == "card_drawn" and event["seat"] == reader and event["kept"]:
            own.add(event["card"])
        elif kind == "card_drawn" and not event["kept"]:
            public.add(event["card"])
        elif kind == "cards_received" and event["seat"] == reader:
            own |= set(event["cards"])
        elif kind == "card_played":
            public.add(event["card"])
        if kind != "game_created":  # its rules name the cards taken out of the pack
            unseen = cards_in(record["event"]) - own - public
            assert not unseen, (reader, record)


async def test_events_show_each_reader_only_what_it_may_see(
    client: httpx.AsyncClient, house: Client
) -> None:
    # blind nil allowed at any score, so the blind nil pass happens too
    rules = {"preset": "partnership", "blind_nil_behind": None, "max_hands": 1}
    table = await open_table(client, rules)
    for seat in range(4):  # dealt, and nobody has looked: no seat sees a card
        assert (await table.view(seat))["hand"] is None
        assert not cards_in([r["event"] for r in await table.events(seat)][1:])
    dealt = next(r for r in await table.events(None) if r["event"]["type"] == "hand_dealt")
    assert dealt["event"]["hands"] == []
    assert dealt["event"]["deck"] is None
    assert dealt["event"]["seed"] is None
    assert dealt["event"]["commitment"]

    first = await table.seat_to_act()
    assert (await table.act(first, {"type": "bid", "bid": "blind_nil"})).status_code == 200
    assert (await table.view(first))["hand"] is not None  # bidding shows the bidder its cards
    rng = random.Random(9)
    while (await table.public())["phase"] == "bid":
        await table.step(rng)
    assert (await table.public())["phase"] == "pass"
    while (await table.public())["phase"] == "pass":
        await table.step(rng)
    await table.play_hand(rng)

    seen = {"min_version": (await table.public())["version"]}
    record = (await client.get(f"{table.url}/hands/1", params=seen)).json()
    assert len(record["passes"]) == 2
    commits = await history(house, table.game_id)
    for reader in (None, 0, 1, 2, 3):
        shown = await table.events(reader)
        assert len(shown) == commits[-1].commit.version
        assert_nothing_unseen(commits, shown, reader)
    public = await table.events(None)
    kinds = {r["event"]["type"]: r["event"] for r in public}
    assert kinds["cards_passed"]["cards"] is None
    assert kinds["cards_received"]["cards"] is None
    assert all(r["event"]["cards"] is None for r in public if r["event"]["type"] == "hand_looked")
    mine = [r["event"] for r in await table.events(first)]
    assert any(e["type"] == "cards_passed" and e["cards"] for e in mine)
    assert any(e["type"] == "hand_looked" and e["seat"] == first and e["cards"] for e in mine)


async def test_pages_of_events_make_up_the_whole_history(
    client: httpx.AsyncClient, house: Client
) -> None:
    """Any ``after`` and ``limit`` give the next events of the whole list, refusals (commits
    without events) and commits of several events included."""
    table = await open_table(client, {"preset": "partnership", "max_hands": 1})
    rng = random.Random(12)
    for _ in range(30):
        await table.step(rng)
        wrong = (await table.seat_to_act() + 1) % 4
        refused = await table.act(wrong, {"type": "bid", "bid": 3})
        assert refused.status_code in (409, 422), refused.text
    whole = await table.events(None)
    version = (await table.public())["version"]
    assert [record["version"] for record in whole] == list(range(1, version + 1))
    sizes = [len(stored.commit.events) for stored in await history(house, table.game_id)]
    assert sizes.count(0) == 30  # the refusals are commits of their own
    assert max(sizes) > 1

    for limit in (1, 3, 7, 50):
        after, pages = 0, []
        while True:
            response = await client.get(
                f"{table.url}/events", params={"after": after, "limit": limit}
            )
            assert response.status_code == 200, response.text
            assert response.json()["version"] == version
            page = response.json()["events"]
            if not page:
                break
            assert len(page) == min(limit, version - after)
            pages.extend(page)
            after = page[-1]["version"]
        assert pages == whole, limit
    beyond = await client.get(f"{table.url}/events", params={"after": version + 5})
    assert beyond.json() == {"version": version, "events": []}


# --------------------------------------------------------------------------- server-sent events


@dataclass
class Frame:
    event: str | None = None
    data: str = ""
    id: str | None = None
    comment: str | None = None

    @property
    def json(self) -> Any:
        return json.loads(self.data)


async def frames_of(response: httpx.Response) -> AsyncIterator[Frame]:
    frame = Frame()
    async for line in response.aiter_lines():
        if not line:
            yield frame
            frame = Frame()
        elif line.startswith(":"):
            frame.comment = line[1:].strip()
        else:
            name, _, value = line.partition(": ")
            if name == "data":
                frame.data += value
            elif name in ("event", "id"):
                setattr(frame, name, value)


async def next_event(frames: AsyncIterator[Frame]) -> Frame:
    """The next frame that is an event (keep-alives skipped)."""
    async with asyncio.timeout(5):
        async for frame in frames:
            if frame.comment is None:
                return frame
    raise AssertionError("the stream ended")


async def test_the_event_stream(client: httpx.AsyncClient) -> None:
    table = await open_table(client, {"preset": "partnership"})
    stream = f"{table.url}/events/stream"
    version = (await table.public())["version"]
    seat = await table.seat_to_act()
    token = {"access_token": table.tokens[seat]}
    async with (
        client.stream("GET", stream, params=token) as mine,
        client.stream("GET", stream) as public,
    ):
        assert mine.status_code == 200
        assert mine.headers["content-type"].startswith("text/event-stream")
        own, everyone = frames_of(mine), frames_of(public)
        state = await next_event(own)
        assert (state.event, state.id) == ("state", str(version))
        assert state.json["seat"] == seat
        assert state.json["hand"] is None
        assert state.json["legal"]
        watched = await next_event(everyone)
        assert watched.event == "state"
        assert "seat" not in watched.json
        assert (await table.act(seat, {"type": "look"})).status_code == 200
        looked = await next_event(own)
        assert (looked.event, looked.id) == ("hand_looked", str(version + 1))
        assert len(looked.json["cards"]) == 13
        seen = await next_event(everyone)
        assert (seen.event, seen.id, seen.json["cards"]) == ("hand_looked", str(version + 1), None)
        async with asyncio.timeout(5):  # idle: a keep-alive comment
            assert (await anext(own)).comment == "keep-alive"

    assert (await table.act(seat, {"type": "bid", "bid": 4})).status_code == 200
    resumed = {"Last-Event-ID": str(version), **bearer(table.tokens[seat])}
    async with client.stream("GET", stream, headers=resumed) as again:
        frames = frames_of(again)
        assert (await next_event(frames)).id == str(version + 1)  # no state: it resumes
        bid = await next_event(frames)
        assert (bid.event, bid.id, bid.json["bid"]) == ("bid_placed", str(version + 2), 4)
    for unusable in ("nonsense", str(version + 50)):
        headers = {"Last-Event-ID": unusable}
        async with client.stream("GET", stream, headers=headers) as fresh:
            state = await next_event(frames_of(fresh))
            assert (state.event, state.id) == ("state", str(version + 2))


def serve_gateway(
    nats_url: str, port: int, data_dir: Path, log_level: str = "INFO"
) -> subprocess.Popen[bytes]:
    """``spades serve gateway`` as its own process, logging JSON to ``data_dir/gateway.log``."""
    env = {
        **os.environ,
        "SPADES_LOG_FORMAT": "json",
        "SPADES_LOG_LEVEL": log_level,
        "SPADES_SECRET_KEY": SIGNING_KEY,
        "SPADES_DATA_DIR": str(data_dir),
        "SPADES_NATS_CREDS": str(credentials_of("gateway")),
    }
    command = [sys.executable, "-m", "services.cli.main", "serve", "gateway"]
    options = ["--port", str(port), "--nats-url", nats_url]
    with (data_dir / "gateway.log").open("wb") as log:
        return subprocess.Popen([*command, *options], env=env, stdout=log, stderr=log)


async def test_the_served_gateway_never_logs_a_query_string(
    shared_nats: EmbeddedNats, engine: EngineProcess, tmp_path: Path
) -> None:
    """The seat token of an EventSource request (``?access_token=``) and the Authorization
    header reach no log line of ``spades serve gateway``, even at DEBUG, where every request
    is written on its own line."""
    port = free_port()
    process = serve_gateway(shared_nats.url, port, tmp_path, log_level="DEBUG")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            await until_serving(http, process)
            table = await open_table(http, {"preset": "solo"})
            token = table.tokens[1]
            async with http.stream(
                "GET", f"{table.url}/events/stream", params={"access_token": token}
            ) as stream:
                assert (await next_event(frames_of(stream))).event == "state"
            assert (await http.get(f"{table.url}/view", headers=bearer(token))).status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=10)
    logged = (tmp_path / "gateway.log").read_text()
    assert f"{table.url}/events/stream" in logged  # requests are logged, by path
    assert "access_token" not in logged
    assert token not in logged
    assert token.rpartition(".")[2] not in logged


async def until_serving(http: httpx.AsyncClient, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while True:
        assert process.poll() is None, "the gateway exited"
        try:
            if (await http.get("/readyz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the gateway did not become ready"
        await asyncio.sleep(0.05)  # nothing to wait on before the socket listens


# --------------------------------------------------------------------------- outages


async def test_no_engine_is_503_with_retry_after(nats_server: EmbeddedNats, tmp_path: Path) -> None:
    settings = gateway_settings(nats_server.url, tmp_path, command_timeout_s=0.5)
    with ServedGateway(settings) as served:
        async with httpx.AsyncClient(base_url=served.url) as http:
            nobody = await http.post("/v1/games", json={"rules": {"preset": "solo"}})
            assert_problem(nobody, 503, "unavailable")
            assert nobody.headers["retry-after"] == "1"
            assert_problem(await http.get("/v1/games/some-game"), 404, "game_not_found")
            assert_problem(await http.get("/readyz"), 503, "unavailable")  # no stream yet

            silent = await connected(nats_server.url)  # an engine that never answers
            await silent.subscribe("spades.commands.*", queue="engine")
            try:
                hung = await http.post("/v1/games", json={"rules": {"preset": "solo"}})
                assert_problem(hung, 503, "unavailable")
                assert hung.headers["retry-after"] == "1"
                metrics = (await http.get("/metrics")).text
                assert "spades_engine_timeouts_total 2.0" in metrics
            finally:
                await silent.close()


async def test_nats_down_is_503(nats_server: EmbeddedNats, tmp_path: Path) -> None:
    settings = gateway_settings(nats_server.url, tmp_path, command_timeout_s=0.5)
    with ServedGateway(settings) as served:
        async with httpx.AsyncClient(base_url=served.url) as http:
            nats_server.stop()
            assert_problem(await http.get("/v1/games/some-game"), 503, "unavailable")
            assert_problem(await http.get("/v1/games/some-game/events"), 503, "unavailable")
            created = await http.post("/v1/games", json={"rules": {"preset": "solo"}})
            assert_problem(created, 503, "unavailable")
            assert_problem(await http.get("/readyz"), 503, "unavailable")
            assert (await http.get("/healthz")).json() == {"status": "ok"}
            nats_server.start()


# --------------------------------------------------------------------------- service


async def test_health_readiness_and_metrics(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = (await client.get("/readyz")).json()
    assert ready["status"] == "ok"
    assert set(ready["projections"]) == {
        "games",
        "scoreboard",
        "hands",
        "players",
        "standings",
        "log",
        "integrity",
    }
    table = await open_table(client, {"preset": "solo"})
    await client.get(table.url)
    metrics = await client.get("/metrics")
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert (
        'spades_http_requests_total{method="GET",route="/v1/games/{game_id}",status="200"}' in text
    )
    assert "spades_http_request_duration_seconds_bucket" in text
    assert table.game_id not in text  # one series per route, not per game


async def test_an_optional_body_is_left_out_or_an_object_never_null(
    client: httpx.AsyncClient,
) -> None:
    """The document describes an optional body as its object (``required: false``): one left
    out is taken, ``null`` is 400 ``malformed`` (FastAPI alone would take it for left out)."""
    table = await open_table(client, {"preset": "partnership"})
    json_body = {"Content-Type": "application/json"}
    for path in (f"{table.url}/seats/0/token", f"{table.url}/watch-links"):
        refused = await client.post(path, content=b" null ", headers=json_body)
        assert (refused.status_code, refused.json()["code"]) == (400, "malformed"), path
        taken = await client.post(path, headers=json_body)
        assert taken.status_code in (200, 201), (path, taken.text)
