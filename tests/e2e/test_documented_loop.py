"""The documented loop at full speed (docs/tour.md, "Finish the hand"; docs/api.md, "Limits"),
against ``spades up`` with the default rate limits: a client that asks for the view of the seat
the last answer named (``next``), sends one of its ``legal`` actions and goes on with the next
plays whole games without a single 429, and asks nothing beyond the view and the action."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

MAX_ACTIONS = 3000
"""No game of these rules needs more; beyond this the loop is stuck."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """``make run``'s server: no platform keys, the default rate limits."""
    running = Stack(tmp_path_factory.mktemp("documented-loop"), rate_limit=None)
    running.start()
    yield running
    status, left = running.terminate()
    assert status == 0, running.log_tail()
    assert not left, f"still running after SIGTERM: {left}"


def _move(view: dict[str, Any], chance: random.Random) -> dict[str, Any]:
    """The tour's choice, one of the legal actions that is not a look (at random: always the
    first may tie hand after hand); a pass or a discard due names that many cards of the seat's
    hand."""
    move: dict[str, Any] = chance.choice([a for a in view["legal"] if a["type"] != "look"])
    if move["type"] in ("pass", "discard"):
        return {"type": move["type"], "cards": view["hand"][: move["count"]]}
    return move


async def _play_the_documented_loop(http: httpx.AsyncClient, rules: dict[str, Any]) -> Counter[str]:
    """Create, sit, then view and act until ``next`` is null; the requests by kind."""
    asked: Counter[str] = Counter()
    chance = random.Random(str(rules))

    async def ask(kind: str, method: str, url: str, **kwargs: Any) -> httpx.Response:
        answer = await http.request(method, url, **kwargs)
        asked[kind] += 1
        assert answer.status_code != 429, f"{kind} refused: {answer.headers}, {asked}"
        assert answer.is_success, answer.text
        return answer

    game = (await ask("create", "POST", "/v1/games", json={"rules": rules})).json()
    url = f"/v1/games/{game['game_id']}"
    tokens = []
    for seat in range(len(game["seats"])):
        taken = await ask("seat", "POST", f"{url}/seats", json={"player": f"p{seat}"})
        tokens.append(taken.json()["token"])
    turn = (await ask("state", "GET", url)).json()["turn"]
    upcoming: dict[str, Any] | None = {"seat": turn}
    while upcoming is not None:
        assert sum(asked.values()) < 2 * MAX_ACTIONS, "the game never ended"
        auth = {"Authorization": f"Bearer {tokens[upcoming['seat']]}"}
        view = (await ask("view", "GET", f"{url}/view", headers=auth)).json()
        assert view["phase"] == upcoming.get("must", view["phase"]), (upcoming, view)
        acted = await ask("act", "POST", f"{url}/actions", headers=auth, json=_move(view, chance))
        upcoming = acted.json()["next"]
    assert (await ask("state", "GET", url)).json()["status"] == "finished"
    return asked


@pytest.mark.parametrize(
    "rules",
    [
        {"preset": "partnership", "max_hands": 1},  # the tour's own game
        {"preset": "two-player", "max_hands": 3},  # a seat acts every other move: its fastest
    ],
    ids=["partnership", "two-player"],
)
async def test_the_documented_loop_plays_a_whole_game_at_full_speed_without_a_429(
    stack: Stack, rules: dict[str, Any]
) -> None:
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=30) as http:
        started = time.monotonic()
        asked = await _play_the_documented_loop(http, rules)
        took = time.monotonic() - started
    actions = asked["act"]
    print(f"\n{rules['preset']}: {actions} actions in {took:.2f} s, {dict(asked)}")
    assert actions > 13  # a whole hand at least
    assert asked["view"] == actions  # one view an action: the answer names who acts next
