"""Which platform a game belongs to is that platform's business: a public game's watchers (no
credential), another platform and a seat read its events, as a page or as server-sent events,
its state and the public game list, and never find the platform's id. The platform itself
still reads it in its game's ``game_created``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from tests.integration.test_gateway import frames_of, next_event
from tests.security.tenants import ACME, PLATFORM_OF, RIVAL, Table, bearer, open_table

pytestmark = pytest.mark.integration

OWNER = PLATFORM_OF[ACME]


def platforms_named(value: Any) -> list[Any]:
    """Every non-null value of a ``platform`` key anywhere in a JSON document."""
    if isinstance(value, dict):
        own = [value["platform"]] if value.get("platform") is not None else []
        return own + [found for item in value.values() for found in platforms_named(item)]
    if isinstance(value, list):
        return [found for item in value for found in platforms_named(item)]
    return []


def assert_no_platform(name: str, text: str) -> None:
    document = json.loads(text)
    assert platforms_named(document) == [], f"{name} names the platform: {text[:400]}"
    assert f'"{OWNER}"' not in text, f"{name} holds {OWNER!r}: {text[:400]}"


async def created_frame(http: httpx.AsyncClient, table: Table, headers: dict[str, str]) -> str:
    """The ``game_created`` frame of the game's server-sent events, replayed from the start."""
    path = f"{table.url}/events/stream"
    async with http.stream("GET", path, headers={**headers, "Last-Event-ID": "0"}) as answer:
        assert answer.status_code == 200, await answer.aread()
        frame = await next_event(frames_of(answer))
    assert frame.event == "game_created", frame
    return frame.data


async def listed_publicly(http: httpx.AsyncClient, table: Table) -> httpx.Response:
    """The public game list once it shows the game (the read models follow the stream)."""
    async with asyncio.timeout(20):
        while True:
            listed = await http.get("/v1/games", params={"limit": 200})
            assert listed.status_code == 200, listed.text
            if table.game_id in listed.text:
                return listed
            await asyncio.sleep(0.1)


async def test_no_one_but_the_games_platform_reads_its_platform_id(
    http: httpx.AsyncClient,
) -> None:
    table = await open_table(http, ACME, visibility="public")
    await table.step()
    readers: dict[str, dict[str, str]] = {
        "an anonymous watcher": {},
        "another platform": bearer(RIVAL),
        "a seat": bearer(table.tokens[0]),
    }
    for name, headers in readers.items():
        for path in (f"{table.url}/events", table.url):
            answer = await http.get(path, headers=headers)
            assert answer.status_code == 200, answer.text
            assert_no_platform(f"{path} to {name}", answer.text)
        assert_no_platform(
            f"the events stream to {name}", await created_frame(http, table, headers)
        )
    assert_no_platform("the public game list", (await listed_publicly(http, table)).text)

    # The platform itself still reads whose game it is.
    own = await http.get(f"{table.url}/events", headers=bearer(ACME))
    created = own.json()["events"][0]["event"]
    assert (created["type"], created["platform"]) == ("game_created", OWNER)
    streamed = json.loads(await created_frame(http, table, bearer(ACME)))
    assert streamed["platform"] == OWNER
