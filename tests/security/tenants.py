"""Platforms, their tables, and the house's view of what an attack changed.

``acme`` holds two keys (a rotation), ``rival`` one. An attack is judged against the record:
the game's commits as JetStream holds them (an attack that reached the engine at all would
leave one, even a refusal) and the audit of the whole history.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from nats.aio.client import Client
from nats.aio.msg import Msg

from services.runtime.game_stream import StoredCommit
from tests.integration.support import history
from tests.integration.test_gateway import SIGNING_KEY, assert_problem, bearer

__all__ = ["SIGNING_KEY", "assert_problem", "bearer"]

ACME = "acme-key-1"
ACME_ROTATED = "acme-key-2"
RIVAL = "rival-key"
KEYS = f"acme:{ACME},acme:{ACME_ROTATED},rival:{RIVAL}"
PLATFORM_OF = {ACME: "acme", ACME_ROTATED: "acme", RIVAL: "rival"}
PARTNERSHIP = {"preset": "partnership", "max_hands": 3}
NAMES = ["ann", "bob", "cy", "dee"]


@dataclass
class Table:
    """A game of a platform, with the tokens its seats were given."""

    http: httpx.AsyncClient
    game_id: str
    owner: str
    """The platform key that created it."""
    tokens: dict[int, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"/v1/games/{self.game_id}"

    async def state(self) -> dict[str, Any]:
        answer = await self.http.get(self.url, headers=bearer(self.owner))
        assert answer.status_code == 200, answer.text
        state: dict[str, Any] = answer.json()
        return state

    async def view(self, seat: int) -> dict[str, Any]:
        answer = await self.http.get(f"{self.url}/view", headers=bearer(self.tokens[seat]))
        assert answer.status_code == 200, answer.text
        view: dict[str, Any] = answer.json()
        return view

    async def seat_to_act(self) -> int:
        state = await self.state()
        return int(state["passes_due"][0] if state["phase"] == "pass" else state["turn"])

    async def step(self) -> httpx.Response:
        """The seat to act makes its first legal move (a look only when nothing else is)."""
        seat = await self.seat_to_act()
        view = await self.view(seat)
        legal = [a for a in view["legal"] if a != {"type": "bid", "bid": "blind_nil"}]
        action = next((a for a in legal if a["type"] != "look"), legal[0])
        if action["type"] == "pass":
            action = {"type": "pass", "cards": view["hand"][: action["count"]]}
        answer = await self.http.post(
            f"{self.url}/actions", json=action, headers=bearer(self.tokens[seat])
        )
        assert answer.status_code == 200, answer.text
        return answer

    async def play_hands(self, hands: int) -> None:
        """Play until ``hands`` hands are scored (or the game ends)."""
        while True:
            state = await self.state()
            if state["status"] == "finished" or state["hand_number"] > hands:
                return
            await self.step()

    async def audit_ok(self) -> bool:
        answer = await self.http.get(f"{self.url}/audit", headers=bearer(self.owner))
        assert answer.status_code == 200, answer.text
        report = answer.json()
        assert report["ok"], report["problems"]
        return bool(report["ok"])


async def open_table(
    http: httpx.AsyncClient,
    owner: str,
    rules: dict[str, Any] | None = None,
    *,
    seated: int | None = None,
    **options: Any,
) -> Table:
    """A game of ``owner``'s platform with its first ``seated`` seats taken (all by default)."""
    body = {"rules": rules or PARTNERSHIP, "dealer": 0, **options}
    created = await http.post("/v1/games", json=body, headers=bearer(owner))
    assert created.status_code == 201, created.text
    table = Table(http, created.json()["game_id"], owner)
    count = created.json()["rules"]["players"] if seated is None else seated
    for seat in range(count):
        taken = await http.post(
            f"{table.url}/seats",
            json={"player": NAMES[seat % len(NAMES)], "seat": seat},
            headers=bearer(owner),
        )
        assert taken.status_code == 201, taken.text
        table.tokens[seat] = taken.json()["token"]
    return table


async def record(house: Client, game_id: str) -> list[tuple[int, str]]:
    """The game's commits as the stream holds them: sequence and command id of each."""
    commits: list[StoredCommit] = await history(house, game_id)
    return [(stored.sequence, stored.commit.command_id) for stored in commits]


async def unchanged(house: Client, table: Table, before: list[tuple[int, str]]) -> None:
    """Nothing reached the game's history since ``before``, and its audit is clean."""
    assert await record(house, table.game_id) == before
    assert await table.audit_ok()


def same_problem(one: httpx.Response, other: httpx.Response, ids: tuple[str, str]) -> None:
    """Two answers alike in every byte but the id each names (status, headers, body)."""
    mine, theirs = ids
    assert one.status_code == other.status_code
    assert one.headers["content-type"] == other.headers["content-type"]
    assert one.text.replace(mine, "<id>") == other.text.replace(theirs, "<id>")
    length = int(one.headers["content-length"]) - len(mine)
    assert length == int(other.headers["content-length"]) - len(theirs)


class CommandWatch:
    """Every command the gateways send to the engines while it is open."""

    def __init__(self) -> None:
        self.seen: list[Msg] = []
        self._arrived = asyncio.Condition()

    async def take(self, message: Msg) -> None:
        async with self._arrived:
            self.seen.append(message)
            self._arrived.notify_all()

    def subjects(self) -> list[str]:
        return [message.subject for message in self.seen]

    async def until(self, subject: str, timeout_s: float = 10.0) -> None:
        async with asyncio.timeout(timeout_s), self._arrived:
            await self._arrived.wait_for(lambda: subject in self.subjects())


@asynccontextmanager
async def watching_commands(house: Client) -> AsyncIterator[CommandWatch]:
    watch = CommandWatch()
    games = await house.subscribe("spades.commands.>", cb=watch.take)
    leagues = await house.subscribe("spades.league-commands.>", cb=watch.take)
    await house.flush()  # in place before the first request is sent
    try:
        yield watch
    finally:
        await games.unsubscribe()
        await leagues.unsubscribe()


async def sentinel(http: httpx.AsyncClient, watch: CommandWatch) -> str:
    """Send one command that does reach the engine and wait until the watch has it: every
    command the gateway sent before it has arrived by then (one connection keeps order)."""
    created = await http.post("/v1/games", json={"rules": {"preset": "solo"}}, headers=bearer(ACME))
    assert created.status_code == 201, created.text
    game_id: str = created.json()["game_id"]
    await watch.until(f"spades.commands.{game_id}")
    return game_id


TOKEN = re.compile(r"^st2\.[A-Za-z0-9_-]+\.[0-9]\.[0-9]+\.[0-9]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")
