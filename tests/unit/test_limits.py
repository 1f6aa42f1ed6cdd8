"""Rate limits without a server: the setting's syntax, the token bucket, and the middleware's
answers (over an ASGI app that counts the requests it is let through)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from services.gateway.limits import Buckets, Rate, RateLimit, parse_rate_limits


def test_the_setting_reads_counts_per_unit_and_keeps_defaults() -> None:
    rates = parse_rate_limits("platform=5/m, audit=1/h")
    assert rates is not None
    assert rates["platform"] == Rate(5, 60)
    assert rates["audit"] == Rate(1, 3600)
    assert rates["anonymous"] == Rate(20, 1)  # left out: its default
    assert parse_rate_limits("off") is None
    assert parse_rate_limits("")["seat"] == Rate(20, 1)  # type: ignore[index]


@pytest.mark.parametrize("text", ["platform", "platform=5", "platform=0/s", "robots=5/s", "x=1/d"])
def test_a_setting_that_is_not_the_syntax_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="SPADES_RATE_LIMIT"):
        parse_rate_limits(text)


def test_a_bucket_bursts_its_count_then_keeps_to_its_rate() -> None:
    buckets = Buckets(Rate(3, 1))
    drawn = [buckets.draw("a", now=100.0) for _ in range(4)]
    assert [d.allowed for d in drawn] == [True, True, True, False]
    assert [d.remaining for d in drawn] == [2, 1, 0, 0]
    assert drawn[3].retry_after_s == 1
    assert buckets.draw("b", now=100.0).allowed  # another caller, another bucket
    assert not buckets.draw("a", now=100.2).allowed  # 0.6 of a request refilled
    assert buckets.draw("a", now=100.4).allowed  # 1.2: one more
    full = buckets.draw("a", now=200.0)
    assert (full.allowed, full.remaining, full.reset_s) == (True, 2, 1)


def test_a_slow_bucket_asks_to_wait_as_long_as_a_request_takes_to_come_back() -> None:
    buckets = Buckets(Rate(2, 60))
    buckets.draw("a", now=0.0)
    buckets.draw("a", now=0.0)
    refused = buckets.draw("a", now=0.0)
    assert (refused.allowed, refused.retry_after_s, refused.reset_s) == (False, 30, 60)


async def test_the_middleware_answers_429_with_the_ietf_fields() -> None:
    reached: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    def identify(scope: Scope) -> tuple[str, str]:
        return "platform", "acme"

    limited = RateLimit(app, {"platform": Rate(2, 1), "audit": Rate(1, 1)}, identify, lambda: 0.0)
    transport = httpx.ASGITransport(app=limited)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        answers = [await http.get("/v1/games") for _ in range(3)]
        health = await http.get("/healthz")
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[0].headers["ratelimit-policy"] == '"platform";q=2;w=1'
    assert answers[0].headers["ratelimit"] == '"platform";r=1;t=1'
    refused: Any = answers[2]
    assert refused.headers["retry-after"] == "1"
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "rate_limited"
    assert health.status_code == 200  # not the API: never limited
    assert reached == ["/v1/games", "/v1/games", "/healthz"]


async def test_an_audit_draws_on_the_audit_budget_too() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    limited = RateLimit(
        app,
        {"platform": Rate(10, 1), "audit": Rate(1, 1)},
        lambda _: ("platform", "acme"),
        lambda: 0.0,
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=limited), base_url="http://t"
    ) as h:
        first, second = [await h.get("/v1/games/g1/audit") for _ in range(2)]
        other = await h.get("/v1/games/g1")
    assert (first.status_code, second.status_code, other.status_code) == (200, 429, 200)
    assert '"audit";q=1;w=1' in second.headers["ratelimit-policy"]


def test_a_seat_earns_two_requests_for_every_event_its_game_records() -> None:
    buckets = Buckets(Rate(3, 1))
    drawn = [buckets.draw("g:0", now=0.0, progress=10) for _ in range(3)]
    assert [d.allowed for d in drawn] == [True, True, True]
    assert not buckets.draw("g:0", now=0.0, progress=10).allowed  # the game stood still
    moved = buckets.draw("g:0", now=0.0, progress=11)  # one event: a view and an action
    assert (moved.allowed, moved.remaining) == (True, 1)
    assert buckets.draw("g:0", now=0.0, progress=11).allowed
    assert not buckets.draw("g:0", now=0.0, progress=11).allowed
    assert buckets.draw("g:0", now=0.0, progress=500).remaining == 2  # never past its count


def test_a_view_and_an_action_a_move_never_run_dry_at_any_speed() -> None:
    buckets = Buckets(Rate(20, 1))
    version = 5
    for _move in range(10_000):  # all at one instant: no refill by time at all
        assert buckets.draw("g:1", now=0.0, progress=version).allowed  # the view
        assert buckets.draw("g:1", now=0.0, progress=version).allowed  # the action
        version += 1  # the action's event (the other seats' moves would add theirs)
