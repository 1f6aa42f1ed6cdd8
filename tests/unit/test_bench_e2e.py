"""What ``spades bench e2e`` measures on the client side: action latencies, the read models' lag
as ``/readyz`` tells it, and percentiles."""

from __future__ import annotations

import json

import httpx
import pytest

from benchmarks.e2e import ActionClock, LagSamples, percentile_ms
from services.client import SpadesClient

ACTIONS = "/v1/games/g1/actions"


def answer(request: httpx.Request) -> httpx.Response:
    if request.url.path == ACTIONS:
        accepted = json.loads(request.content)["type"] == "bid"
        return httpx.Response(200 if accepted else 409, json={"version": 1, "events": []})
    return httpx.Response(200, json={})


async def test_the_clock_times_every_action_posted_and_counts_the_refused() -> None:
    clock = ActionClock(httpx.MockTransport(answer))
    async with httpx.AsyncClient(transport=clock, base_url="http://spades") as http:
        await http.post(ACTIONS, json={"type": "bid", "bid": 3})
        await http.post(ACTIONS, json={"type": "play", "card": "AS"})
        await http.get("/v1/games/g1/view")
        await http.post("/v1/games", json={"rules": {}})

    assert len(clock.latencies) == 2
    assert all(latency >= 0 for latency in clock.latencies)
    assert clock.refused == 1
    assert clock.last_accepted_at > 0


def readiness(status: int, body: dict[str, object]) -> httpx.MockTransport:
    def respond(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/readyz"
        return httpx.Response(status, json=body)

    return httpx.MockTransport(respond)


@pytest.mark.parametrize(
    ("status", "body", "lag"),
    [
        (200, {"status": "ok", "projections": {"games": 3, "hands": 7, "players": 0}}, 7),
        (200, {"status": "ok", "projections": {}}, 0),
        (
            503,
            {
                "code": "unavailable",
                "detail": "read models behind the stream: games 1200, hands 1500",
            },
            1500,
        ),
        (503, {"code": "unavailable", "detail": "not connected to NATS"}, None),
    ],
)
async def test_a_lag_sample_is_the_largest_lag_readyz_tells(
    status: int, body: dict[str, object], lag: int | None
) -> None:
    samples = LagSamples()
    async with SpadesClient("http://spades", transport=readiness(status, body)) as client:
        assert await samples.take(client) == lag
    assert [taken for _, taken in samples.taken] == ([] if lag is None else [lag])


def test_percentiles_in_milliseconds() -> None:
    latencies = [n / 1000 for n in range(1, 101)]  # 1 ms .. 100 ms
    assert percentile_ms(latencies, 50) == pytest.approx(50.5)
    assert percentile_ms(latencies, 99) == pytest.approx(99.01)
    assert percentile_ms([0.004], 95) == 4.0
    assert percentile_ms([], 50) == 0.0
