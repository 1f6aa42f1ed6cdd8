"""Another platform, or no platform at all, tries a platform's games and leagues: reading,
listing, sitting, acting, re-issuing tokens, starting rounds, attaching a game to a league.
Each attack fails, answered as if the game or league did not exist, and changes nothing."""

from __future__ import annotations

import secrets
import statistics
import time
import uuid
from typing import Any

import httpx
import pytest
from nats.aio.client import Client

from services.gateway.commands import created_id
from services.runtime.game_stream import GameStream
from tests.security.tenants import (
    ACME,
    ACME_ROTATED,
    PLATFORM_OF,
    RIVAL,
    SIGNING_KEY,
    assert_problem,
    bearer,
    open_table,
    record,
    same_problem,
    sentinel,
    unchanged,
    watching_commands,
)

pytestmark = pytest.mark.integration

READS = ["", "/events", "/events/stream", "/hands", "/hands/1", "/scoreboard", "/audit"]
"""Every read of a game, after ``/v1/games/{id}``."""


def unknown_id() -> str:
    return secrets.token_hex(8)  # the shape of every id the gateway gives


async def get(http: httpx.AsyncClient, path: str, headers: dict[str, str]) -> httpx.Response:
    if path.endswith("/stream"):  # a refused stream is an ordinary answer, read whole
        async with http.stream("GET", path, headers=headers) as answer:
            await answer.aread()
            return answer
    return await http.get(path, headers=headers)


async def test_another_platform_reads_nothing_of_a_private_game(
    http: httpx.AsyncClient, house: Client
) -> None:
    table = await open_table(http, ACME)
    await table.step()
    before = await record(house, table.game_id)
    for stranger in (bearer(RIVAL), {}):
        for read in READS:
            answer = await get(http, f"{table.url}{read}", stranger)
            assert_problem(answer, 404, "game_not_found")
    # and its own platform, under either of its keys, reads all of it
    for key in (ACME, ACME_ROTATED):
        assert (await http.get(table.url, headers=bearer(key))).status_code == 200
    await unchanged(house, table, before)


async def test_a_foreign_id_answers_exactly_like_an_unknown_one(
    http: httpx.AsyncClient, house: Client
) -> None:
    table = await open_table(http, ACME)
    before = await record(house, table.game_id)
    nobody = unknown_id()
    for stranger in (bearer(RIVAL), {}):
        for read in READS:
            foreign = await get(http, f"{table.url}{read}", stranger)
            unknown = await get(http, f"/v1/games/{nobody}{read}", stranger)
            assert foreign.status_code == 404, foreign.text
            same_problem(foreign, unknown, (table.game_id, nobody))
        writes = (("/seats", {"player": "eve"}), ("/seats/0/token", None), ("/seats/0/away", None))
        for write, body in writes:
            foreign = await http.post(f"{table.url}{write}", json=body, headers=stranger)
            unknown = await http.post(f"/v1/games/{nobody}{write}", json=body, headers=stranger)
            assert foreign.status_code == 404, foreign.text
            same_problem(foreign, unknown, (table.game_id, nobody))
    await unchanged(house, table, before)


async def test_a_foreign_id_takes_as_long_as_an_unknown_one(
    http: httpx.AsyncClient, house: Client
) -> None:
    """Both load the game from the stream: neither answers a class faster than the other."""
    table = await open_table(http, ACME)
    before = await record(house, table.game_id)

    async def median_ms(game_id: str) -> float:
        times = []
        for _ in range(40):
            start = time.perf_counter()
            answer = await http.get(f"/v1/games/{game_id}", headers=bearer(RIVAL))
            times.append((time.perf_counter() - start) * 1000)
            assert answer.status_code == 404
        return statistics.median(times)

    await median_ms(unknown_id())  # warm both paths up
    foreign, unknown = await median_ms(table.game_id), await median_ms(unknown_id())
    assert 1 / 4 < foreign / unknown < 4, (foreign, unknown)
    await unchanged(house, table, before)


async def test_another_platform_lists_none_of_its_games(http: httpx.AsyncClient) -> None:
    private = [await open_table(http, ACME, seated=0) for _ in range(3)]
    public = await open_table(http, ACME, seated=0, visibility="public")
    theirs = await open_table(http, RIVAL, seated=0)
    for game in [*private, public, theirs]:  # the list is a read model: wait for each game
        seen = await http.get(
            f"{game.url}/scoreboard", params={"min_version": 1}, headers=bearer(game.owner)
        )
        assert seen.status_code == 200, seen.text

    async def every_page(headers: dict[str, str]) -> list[dict[str, Any]]:
        games: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 2}
        while True:
            page = (await http.get("/v1/games", params=params, headers=headers)).json()
            games += page["games"]
            if page["next_cursor"] is None:
                return games
            params["cursor"] = page["next_cursor"]

    acme_ids = {game.game_id for game in [*private, public]}
    rival_sees = {g["game_id"] for g in await every_page(bearer(RIVAL))}
    anyone_sees = {g["game_id"] for g in await every_page({})}
    acme_sees = {g["game_id"] for g in await every_page(bearer(ACME_ROTATED))}
    assert theirs.game_id in rival_sees
    assert rival_sees.isdisjoint(acme_ids)  # not even acme's public game: its own only
    assert public.game_id in anyone_sees
    assert anyone_sees.isdisjoint({game.game_id for game in [*private, theirs]})
    assert acme_ids <= acme_sees
    assert theirs.game_id not in acme_sees
    waiting = await http.get("/v1/games", params={"status": "waiting"}, headers=bearer(RIVAL))
    assert acme_ids.isdisjoint(g["game_id"] for g in waiting.json()["games"])


async def test_no_one_else_sits_at_a_platforms_table(
    http: httpx.AsyncClient, house: Client
) -> None:
    private = await open_table(http, ACME, seated=1)
    public = await open_table(http, ACME, seated=1, visibility="public")
    befores = {t.game_id: await record(house, t.game_id) for t in (private, public)}
    sit = {"player": "squatter"}
    for stranger in (bearer(RIVAL), {}):
        key = {"Idempotency-Key": str(uuid.uuid4())}
        squat = await http.post(f"{private.url}/seats", json=sit, headers={**stranger, **key})
        assert_problem(squat, 404, "game_not_found")
        # a public table may be watched by anyone, and is still seated by its platform
        squat = await http.post(f"{public.url}/seats", json=sit, headers={**stranger, **key})
        assert_problem(squat, 403, "forbidden")
    for table in (private, public):
        await unchanged(house, table, befores[table.game_id])
        assert [s["player"] for s in (await table.state())["seats"]] == ["ann", None, None, None]


async def test_an_open_table_seats_anyone(http: httpx.AsyncClient) -> None:
    """The control: ``seating: open`` is the lobby the platform chose."""
    lobby = await open_table(http, ACME, seated=1, visibility="public", seating="open")
    key = {"Idempotency-Key": str(uuid.uuid4())}
    for stranger in (bearer(RIVAL), key):
        sat = await http.post(f"{lobby.url}/seats", json={"player": "guest"}, headers=stranger)
        assert sat.status_code == 201, sat.text


async def test_another_platform_cannot_act_or_reissue_a_seats_token(
    http: httpx.AsyncClient, house: Client
) -> None:
    table = await open_table(http, ACME)
    mine = await open_table(http, RIVAL)
    seat = await table.seat_to_act()
    before = await record(house, table.game_id)
    bid = {"type": "bid", "bid": 3}
    act = f"{table.url}/actions"
    assert_problem(await http.post(act, json=bid, headers=bearer(RIVAL)), 401, "unauthorized")
    foreign_token = bearer(mine.tokens[seat])
    assert_problem(await http.post(act, json=bid, headers=foreign_token), 403, "forbidden")
    for stranger in (bearer(RIVAL), {}):
        stolen = await http.post(f"{table.url}/seats/{seat}/token", headers=stranger)
        assert_problem(stolen, 404, "game_not_found")
    # a seat's own token may not say another seat (or its own) is away: only the platform may
    for marked in (seat, (seat + 1) % 4):
        away = await http.post(
            f"{table.url}/seats/{marked}/away", headers=bearer(table.tokens[seat])
        )
        assert_problem(away, 403, "forbidden")
    await unchanged(house, table, before)
    # the seat's own token still acts
    answer = await http.post(act, json=bid, headers=bearer(table.tokens[seat]))
    assert answer.status_code == 200, answer.text


async def test_an_anonymous_caller_sees_nothing_of_a_private_game(
    http: httpx.AsyncClient, house: Client
) -> None:
    table = await open_table(http, ACME)
    await table.step()
    before = await record(house, table.game_id)
    for read in READS:
        assert_problem(await get(http, f"{table.url}{read}", {}), 404, "game_not_found")
    stream = f"{table.url}/events/stream"
    async with http.stream("GET", stream, params={"access_token": "nonsense"}) as answer:
        assert answer.status_code == 401
    listed = await http.get("/v1/games", params={"limit": 200})
    assert table.game_id not in {g["game_id"] for g in listed.json()["games"]}
    # the control: a seat reads its own game with its token, and only its own cards
    view = await table.view(0)
    assert view["seat"] == 0
    await unchanged(house, table, before)


async def league(http: httpx.AsyncClient, owner: str, **options: Any) -> str:
    body = {
        "name": "Isolated",
        "rules": {"preset": "solo", "max_hands": 1},
        "players": [f"p{n}" for n in range(8)],
        "rounds": 2,
        **options,
    }
    created = await http.post("/v1/leagues", json=body, headers=bearer(owner))
    assert created.status_code == 201, created.text
    league_id: str = created.json()["league_id"]
    return league_id


async def test_another_platform_neither_reads_a_league_nor_starts_its_rounds(
    http: httpx.AsyncClient, house: Client
) -> None:
    league_id = await league(http, ACME)
    path = f"/v1/leagues/{league_id}"
    round_key = {"Idempotency-Key": "round-1"}
    started = await http.post(f"{path}/rounds", headers={**bearer(ACME), **round_key})
    assert started.status_code == 201, started.text
    tokens = {seat["token"] for table in started.json()["tables"] for seat in table["seats"]}
    seen = (await http.get(path, headers=bearer(ACME))).json()
    nobody = f"{path}-none"

    async with watching_commands(house) as watch:
        for stranger in (bearer(RIVAL), {}):
            for read in ("", "/rounds/1", "/standings"):
                answer = await http.get(f"{path}{read}", headers=stranger)
                same_problem(
                    answer,
                    await http.get(f"{nobody}{read}", headers=stranger),
                    (league_id, f"{league_id}-none"),
                )
                assert_problem(answer, 404, "league_not_found")
        # the owner's round key, replayed with another platform's key or with none
        for stranger, status, code in (
            (bearer(RIVAL), 404, "league_not_found"),
            ({}, 401, "unauthorized"),
        ):
            replayed = await http.post(f"{path}/rounds", headers={**stranger, **round_key})
            assert_problem(replayed, status, code)
            assert not tokens & set(replayed.text.split('"'))
            fresh = await http.post(f"{path}/rounds", headers=stranger)
            assert_problem(fresh, status, code)
        await sentinel(http, watch)
    assert not [s for s in watch.subjects() if league_id in s]
    assert (await http.get(path, headers=bearer(ACME))).json() == seen
    # the games of its rounds are the league's platform's, private as the league is
    table = started.json()["tables"][0]
    assert_problem(
        await http.get(f"/v1/games/{table['game_id']}", headers=bearer(RIVAL)),
        404,
        "game_not_found",
    )
    again = await http.post(f"{path}/rounds", headers={**bearer(ACME), **round_key})
    assert again.json()["tables"][0]["game_id"] == table["game_id"]  # the owner's retry


async def test_another_platform_can_neither_withdraw_substitute_direct_nor_export(
    http: httpx.AsyncClient, house: Client
) -> None:
    league_id = await league(http, ACME)
    path = f"/v1/leagues/{league_id}"
    started = await http.post(f"{path}/rounds", headers=bearer(ACME))
    assert started.status_code == 201, started.text
    table = started.json()["tables"][0]
    player = table["seats"][0]["player"]
    seen = (await http.get(path, headers=bearer(ACME))).json()
    standings = (await http.get(f"{path}/standings", headers=bearer(ACME))).json()
    nobody = f"{path}-none"
    operations = [
        ("POST", "/withdrawals", {"player": player}),
        ("POST", "/substitutions", {"player": player, "substitute": "mole"}),
        ("POST", "/adjustments", {"player": player, "points": 50, "reason": "mole bonus"}),
        ("POST", "/voids", {"game_id": table["game_id"], "reason": "mole says so"}),
        ("GET", "/boards", None),
        ("GET", "/integrity", None),
        ("GET", "/exports/standings", None),
        ("GET", "/exports/results", None),
        ("GET", "/exports/results?format=csv", None),
    ]
    async with watching_commands(house) as watch:
        for method, operation, body in operations:
            for stranger in (bearer(RIVAL), {}):
                answer = await http.request(
                    method, f"{path}{operation}", json=body, headers=stranger
                )
                unknown = await http.request(
                    method, f"{nobody}{operation}", json=body, headers=stranger
                )
                # ``/boards`` is read by anyone a league's visibility lets read it: a private
                # league is unknown to a caller of no key, as to another platform
                if stranger or operation == "/boards":
                    assert_problem(answer, 404, "league_not_found")
                    same_problem(answer, unknown, (league_id, f"{league_id}-none"))
                else:
                    assert_problem(answer, 401, "unauthorized")
                assert "mole" not in answer.text
                assert "st2." not in answer.text
        await sentinel(http, watch)
    assert not [s for s in watch.subjects() if league_id in s]
    assert (await http.get(path, headers=bearer(ACME))).json() == seen
    # no adjustment, no void: the owner's standings are as they were
    assert (await http.get(f"{path}/standings", headers=bearer(ACME))).json() == standings
    # the owner, under either key, does all of it
    for key in (ACME, ACME_ROTATED):
        exported = await http.get(f"{path}/exports/standings?format=csv", headers=bearer(key))
        assert exported.status_code == 200, exported.text
        assert exported.text.startswith("rank,player,")
    subbed = await http.post(
        f"{path}/substitutions",
        json={"player": player, "substitute": "friend"},
        headers=bearer(ACME_ROTATED),
    )
    assert subbed.status_code == 201, subbed.text
    assert subbed.json()["token"].startswith("st2.")


async def test_a_game_cannot_join_a_league_at_creation(
    http: httpx.AsyncClient, house: Client
) -> None:
    league_id = await league(http, ACME)
    key = f"attach-{uuid.uuid4()}"
    for owner in (ACME, RIVAL):
        attached = await http.post(
            "/v1/games",
            json={"rules": {"preset": "solo"}, "league": league_id},
            headers={**bearer(owner), "Idempotency-Key": key},
        )
        assert_problem(attached, 422, "invalid_rules")
        # the game it would have been is nowhere in the stream
        would_be = created_id("game", SIGNING_KEY.encode(), PLATFORM_OF[owner], key)
        assert await GameStream(house.jetstream()).read(would_be) == []
    listed = await http.get("/v1/games", params={"league": league_id}, headers=bearer(ACME))
    assert listed.json()["games"] == []


async def test_a_seat_token_watches_only_its_own_game(http: httpx.AsyncClient) -> None:
    """A token of one game on another's stream: refused before that game is looked at."""
    table = await open_table(http, ACME)
    other = await open_table(http, ACME)
    stream = f"{other.url}/events/stream"
    async with http.stream("GET", stream, params={"access_token": table.tokens[0]}) as answer:
        assert answer.status_code == 403
