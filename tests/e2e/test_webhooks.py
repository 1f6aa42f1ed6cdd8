"""Webhooks through the whole stack (``spades up``): the worker it starts delivers a game's
events, signed, and a receiver that hangs does not slow the game: actions are timed while every
delivery waits on it, against the same games with nobody to deliver to."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Iterator

import httpx
import pytest

from benchmarks.e2e import ActionClock, percentile_ms
from benchmarks.webhook_receiver import HANG, Receiver, always
from contracts.webhooks import EVENT_TYPES
from services.bots.runner import play_games
from services.bots.strategy import Bot
from services.client import SpadesClient, verify_webhook
from services.client.webhooks import WebhookClient
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

KEY = "webhooks-e2e-key"
GAMES = 4
RULES = {"preset": "two-player", "max_hands": 1}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = Stack(
        tmp_path_factory.mktemp("webhooks-stack"),
        api_keys=f"acme:{KEY}",
        env={
            "SPADES_WEBHOOK_ALLOW_PRIVATE": "1",
            "SPADES_WEBHOOK_SCHEDULE": "0.2s,0.2s,0.2s",
            "SPADES_WEBHOOK_TIMEOUT_S": "30",
        },
    )
    running.start()
    yield running
    status, left = running.terminate()
    assert status == 0, running.log_tail()
    assert not left, f"still running after SIGTERM: {left}"


def test_spades_up_runs_the_webhooks_worker_as_a_process_of_its_own(stack: Stack) -> None:
    commands = [process.command for process in stack.children()]
    assert any(command.endswith("serve webhooks") for command in commands), commands


async def test_a_games_events_reach_the_platforms_receiver_signed(stack: Stack) -> None:
    with Receiver() as receiver:
        async with SpadesClient(stack.base_url, api_key=KEY) as client:
            endpoint = await WebhookClient(client).create(receiver.url, EVENT_TYPES)
            [game] = await play_games(client, RULES, 1, Bot)
            received = await asyncio.to_thread(
                receiver.wait_for,
                lambda got: any(r.type == "game.finished" for r in got),
                60.0,
            )
            await WebhookClient(client).delete(endpoint.id)
    assert received[0].type == "game.created"
    assert {r.json["data"]["game_id"] for r in received} == {game.game_id}
    for request in received:
        verify_webhook(endpoint.secret, request.headers, request.body)


async def timed_games(stack: Stack) -> list[float]:
    """Play the games, and the latency of every action (seconds)."""
    clock = ActionClock(httpx.AsyncHTTPTransport())
    async with SpadesClient(stack.base_url, api_key=KEY, transport=clock) as client:
        await play_games(client, RULES, GAMES, Bot, concurrency=GAMES)
    return clock.latencies


async def test_a_receiver_that_hangs_does_not_delay_game_actions(stack: Stack) -> None:
    baseline = await timed_games(stack)  # no endpoint: nothing to deliver

    with Receiver(always(HANG)) as receiver:
        async with SpadesClient(stack.base_url, api_key=KEY) as client:
            endpoint = await WebhookClient(client).create(receiver.url, EVENT_TYPES)
            hanging = await timed_games(stack)
            held = list(receiver.received)
            log = await WebhookClient(client).deliveries(endpoint.id, limit=500)
            await WebhookClient(client).delete(endpoint.id)
        receiver.release()

    figures = {
        "baseline p50 ms": percentile_ms(baseline, 50),
        "baseline p99 ms": percentile_ms(baseline, 99),
        "hanging p50 ms": percentile_ms(hanging, 50),
        "hanging p99 ms": percentile_ms(hanging, 99),
        "hanging max ms": round(max(hanging) * 1000, 1),
        "actions": len(hanging),
        "deliveries held open": len(held),
    }
    print(f"\naction latency while the receiver hangs: {figures}")
    assert len(held) >= GAMES, "every game's first delivery was waiting on the receiver"
    assert all(r.answered == HANG for r in held)
    assert not any(d.status == "delivered" for d in log.deliveries)
    assert len(log.deliveries) > 10 * GAMES, "the games' events were recorded meanwhile"
    # Generous: the machine is shared. Deliveries wait 30 s for an answer; actions do not.
    assert percentile_ms(hanging, 99) < max(1000.0, 3 * percentile_ms(baseline, 99))
    assert statistics.median(hanging) < max(0.25, 3 * statistics.median(baseline))
