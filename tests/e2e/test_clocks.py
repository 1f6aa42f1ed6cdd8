"""Clocks through the whole stack (``spades up``): it runs the timer worker, and a table whose
players never act is played out through the API by the service, each move marked timed out."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

KEY = "clocks-e2e-key"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("clocks-stack"), api_keys=f"acme:{KEY}")
    running.start()
    yield running
    status, left = running.terminate()
    assert status == 0, running.log_tail()
    assert not left, f"still running after SIGTERM: {left}"


def test_spades_up_runs_the_timer_worker_as_a_process_of_its_own(stack: Stack) -> None:
    commands = [process.command for process in stack.children()]
    assert any(command.endswith("serve timers") for command in commands), commands


async def test_a_table_nobody_touches_is_played_out_through_the_stack(stack: Stack) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=stack.base_url, headers=headers, timeout=30) as http:
        body = {
            "rules": {"preset": "two-player", "max_hands": 1},
            "clock": {"turn_s": 0.05, "on_timeout": "auto"},
        }
        created = await http.post("/v1/games", json=body)
        assert created.status_code == 201, created.text
        url = f"/v1/games/{created.json()['game_id']}"
        for seat in (0, 1):
            taken = await http.post(f"{url}/seats", json={"player": f"p{seat}", "seat": seat})
            assert taken.status_code == 201, taken.text
        async with http.stream("GET", f"{url}/events/stream") as stream:
            async for line in stream.aiter_lines():
                if line == "event: game_ended":
                    break
        events = (await http.get(f"{url}/events", params={"limit": 1000})).json()["events"]
    kinds = [record["event"]["type"] for record in events]
    moves = sum(kind in ("card_drawn", "bid_placed", "card_played") for kind in kinds)
    assert kinds[-1] == "game_ended"
    assert moves > 0
    assert kinds.count("timed_out") > 0
    # Each timeout is followed by the move the service made (a look may come between).
    for at, kind in enumerate(kinds):
        if kind == "timed_out":
            after = [k for k in kinds[at + 1 :] if k != "hand_looked"]
            assert after[0] in ("card_drawn", "bid_placed", "card_played"), kinds[at : at + 4]
