"""The API client without a server: problem+json errors, 503 retries, server-sent events.

A mock transport answers in place of the gateway; the client's behaviour over real HTTP is the
end-to-end tests' business.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import msgspec
import pytest

from domain.cards import Card
from services.client import (
    ApiError,
    BidAction,
    Health,
    PassAction,
    Readiness,
    ServerSentEvent,
    SpadesClient,
    UnexpectedResponse,
    parse_server_sent_events,
)
from services.client.api import MAX_RETRY_AFTER_S, retry_after_seconds

GAME = "g1"


def problem(status: int, code: str, detail: str = "", **headers: str) -> httpx.Response:
    body = {"type": f"urn:spades:problem:{code}", "title": "t", "status": status}
    return httpx.Response(
        status,
        json={**body, "detail": detail, "code": code},
        headers={"Content-Type": "application/problem+json", **headers},
    )


def answering(
    handler: Callable[[httpx.Request], httpx.Response], seen: list[httpx.Request]
) -> SpadesClient:
    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    return SpadesClient("http://spades.test", transport=httpx.MockTransport(record), retries=2)


ACCEPTED = {
    "version": 7,
    "events": [{"version": 7, "event": {"type": "bid_placed", "seat": 0, "bid": 3}}],
}


async def test_an_error_answer_becomes_an_api_error_with_its_code() -> None:
    seen: list[httpx.Request] = []
    client = answering(lambda _: problem(409, "not_your_turn", "seat 2 is to bid"), seen)
    with pytest.raises(ApiError) as refused:
        await client.act(GAME, "tok", BidAction(3))
    assert (refused.value.status, refused.value.code) == (409, "not_your_turn")
    assert refused.value.detail == "seat 2 is to bid"
    assert refused.value.title == "t"
    assert msgspec.json.decode(seen[0].content) == {"type": "bid", "bid": 3}
    assert seen[0].headers["Authorization"] == "Bearer tok"


async def test_an_error_that_is_not_a_problem_keeps_its_status() -> None:
    client = answering(lambda _: httpx.Response(502, text="<html>bad gateway</html>"), [])
    with pytest.raises(ApiError) as refused:
        await client.state(GAME)
    assert (refused.value.status, refused.value.code) == (502, "http_502")


async def test_a_503_is_retried_with_the_same_key_after_retry_after() -> None:
    seen: list[httpx.Request] = []
    answers = iter(
        [problem(503, "unavailable", **{"Retry-After": "0"}), httpx.Response(200, json=ACCEPTED)]
    )
    client = answering(lambda _: next(answers), seen)

    result = await client.act(GAME, "tok", {"type": "bid", "bid": 3}, idempotency_key="k-1")

    assert result.version == 7
    assert [request.headers["Idempotency-Key"] for request in seen] == ["k-1", "k-1"]
    assert seen[0].content == seen[1].content


async def test_the_wait_between_tries_is_the_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []

    async def wait(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr("services.client.api.asyncio.sleep", wait)
    answers = iter(
        [
            problem(503, "unavailable", **{"Retry-After": "2"}),
            problem(503, "unavailable", **{"Retry-After": "3600"}),
            httpx.Response(200, json=ACCEPTED),
        ]
    )
    client = answering(lambda _: next(answers), [])
    await client.act(GAME, "tok", {"type": "look"}, idempotency_key="k-4")
    assert waits == [2.0, MAX_RETRY_AFTER_S]


async def test_retries_are_bounded() -> None:
    seen: list[httpx.Request] = []
    client = answering(lambda _: problem(503, "unavailable", **{"Retry-After": "0"}), seen)
    with pytest.raises(ApiError) as refused:
        await client.act(GAME, "tok", {"type": "look"}, idempotency_key="k-2")
    assert refused.value.code == "unavailable"
    assert refused.value.retry_after == 0
    assert len(seen) == 3  # the first try and two retries


async def test_an_action_without_a_key_is_not_retried() -> None:
    seen: list[httpx.Request] = []
    client = answering(lambda _: problem(503, "unavailable", **{"Retry-After": "0"}), seen)
    with pytest.raises(ApiError):
        await client.act(GAME, "tok", {"type": "look"})
    assert len(seen) == 1
    assert "Idempotency-Key" not in seen[0].headers


async def test_a_seat_or_a_game_asked_for_with_a_key_is_retried_with_it() -> None:
    seen: list[httpx.Request] = []
    answers = iter(
        [
            problem(503, "unavailable", **{"Retry-After": "0"}),
            httpx.Response(
                201,
                json={
                    "seat": 2,
                    "player": "ann",
                    "token": "t",
                    "expires_at": "2026-01-02T00:00:00Z",
                },
            ),
            problem(503, "unavailable", **{"Retry-After": "0"}),
            problem(422, "idempotency_key_reused"),
        ]
    )
    client = answering(lambda _: next(answers), seen)
    seat = await client.take_seat(GAME, "ann", idempotency_key="sit-1")
    assert seat.seat == 2
    with pytest.raises(ApiError) as refused:
        await client.create_game({"preset": "solo"}, idempotency_key="new-1")
    assert refused.value.code == "idempotency_key_reused"
    assert [request.headers["Idempotency-Key"] for request in seen] == [
        "sit-1",
        "sit-1",
        "new-1",
        "new-1",
    ]


async def test_a_seat_or_a_game_asked_for_without_a_key_is_not_retried() -> None:
    seen: list[httpx.Request] = []
    client = answering(lambda _: problem(503, "unavailable", **{"Retry-After": "0"}), seen)
    with pytest.raises(ApiError):
        await client.take_seat(GAME, "ann")
    with pytest.raises(ApiError):
        await client.create_game({"preset": "solo"})
    assert len(seen) == 2
    assert not any("Idempotency-Key" in request.headers for request in seen)


async def test_only_a_503_is_retried() -> None:
    seen: list[httpx.Request] = []
    client = answering(lambda _: problem(409, "conflict"), seen)
    with pytest.raises(ApiError):
        await client.act(GAME, "tok", {"type": "look"}, idempotency_key="k-3")
    assert len(seen) == 1


async def test_expected_version_and_typed_actions_travel_in_the_body() -> None:
    seen: list[httpx.Request] = []
    client = answering(lambda _: httpx.Response(200, json=ACCEPTED), seen)
    cards = [Card.TWO_OF_HEARTS, Card.THREE_OF_HEARTS]
    await client.act(GAME, "tok", PassAction(cards), expected_version=6)
    assert msgspec.json.decode(seen[0].content) == {
        "type": "pass",
        "cards": ["2H", "3H"],
        "expected_version": 6,
    }


async def test_a_body_of_the_wrong_shape_is_an_unexpected_response() -> None:
    client = answering(lambda _: httpx.Response(200, json={"version": "seven"}), [])
    with pytest.raises(UnexpectedResponse, match="Acted"):
        await client.act(GAME, "tok", {"type": "look"})


async def test_query_parameters_are_sent_only_when_given() -> None:
    seen: list[httpx.Request] = []
    client = answering(lambda _: httpx.Response(200, json={"games": [], "next_cursor": None}), seen)
    await client.games(status="finished", cursor="c2")
    assert dict(seen[0].url.params) == {"status": "finished", "cursor": "c2"}


def test_retry_after_is_seconds_or_a_date() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    waited = retry_after_seconds(later)
    assert waited is not None
    assert 55 <= waited <= 60


# --------------------------------------------------------------------------- server-sent events


async def lines_of(text: str) -> AsyncIterator[str]:
    for line in text.splitlines():
        yield line


async def parsed(text: str, *, comments: bool = False) -> list[ServerSentEvent]:
    return [event async for event in parse_server_sent_events(lines_of(text), comments=comments)]


async def test_events_have_their_type_id_and_data() -> None:
    text = 'event: state\ndata: {"version": 4}\nid: 4\n\nevent: bid_placed\ndata: {}\nid: 5\n\n'
    events = await parsed(text)
    assert [(e.event, e.id, e.data) for e in events] == [
        ("state", "4", '{"version": 4}'),
        ("bid_placed", "5", "{}"),
    ]
    assert events[0].json() == {"version": 4}


async def test_data_lines_join_and_an_event_without_a_type_is_a_message() -> None:
    events = await parsed("data: one\ndata:two\n\n")
    assert [(e.event, e.data) for e in events] == [("message", "one\ntwo")]


async def test_comments_are_keep_alives_and_skipped_unless_asked() -> None:
    text = ": keep-alive\n\nid: 9\ndata: x\n\n: keep-alive\n\n"
    assert [e.data for e in await parsed(text)] == ["x"]
    with_comments = await parsed(text, comments=True)
    assert [(e.comment, e.is_comment) for e in with_comments] == [
        ("keep-alive", True),
        (None, False),
        ("keep-alive", True),
    ]
    assert with_comments[2].id == "9", "the last event id stays set for a reconnect"


async def test_an_event_without_data_is_not_dispatched() -> None:
    assert await parsed("event: state\nid: 3\n\n") == []


async def test_a_stream_resumes_after_its_last_event_id() -> None:
    seen: list[httpx.Request] = []

    def stream(request: httpx.Request) -> httpx.Response:
        body = b"event: card_played\ndata: {}\nid: 12\n\n"
        return httpx.Response(200, content=body, headers={"Content-Type": "text/event-stream"})

    client = answering(stream, seen)
    events: list[Any] = [event async for event in client.stream(GAME, "tok", last_event_id=11)]
    assert [(e.event, e.id) for e in events] == [("card_played", "12")]
    assert seen[0].headers["Last-Event-ID"] == "11"
    assert seen[0].headers["Accept"] == "text/event-stream"
    assert seen[0].url.path == f"/v1/games/{GAME}/events/stream"


async def test_a_refused_stream_raises_its_problem() -> None:
    client = answering(lambda _: problem(403, "forbidden"), [])
    with pytest.raises(ApiError) as refused:
        async for _event in client.stream(GAME, "other-game-token"):
            pass
    assert refused.value.code == "forbidden"


async def test_readiness_is_asked_once_and_a_503_says_not_ready() -> None:
    seen: list[httpx.Request] = []
    answers = iter([problem(503, "unavailable", **{"Retry-After": "0"})])
    client = answering(lambda _: next(answers), seen)
    with pytest.raises(ApiError) as refused:
        await client.readyz()
    assert refused.value.status == 503
    assert len(seen) == 1, "readiness is a question, not something to wait for"
    answer = {"status": "ok", "projections": {"games": 0}}
    ready = answering(lambda _: httpx.Response(200, json=answer), [])
    assert await ready.readyz() == Readiness(status="ok", projections={"games": 0})
    assert await ready.healthz() == Health("ok")


async def test_the_platform_key_goes_with_every_request_without_a_seat_token() -> None:
    seen: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return problem(404, "game_not_found")

    client = SpadesClient(
        "http://spades.test",
        api_key="platform-key",
        transport=httpx.MockTransport(refuse),
        retries=0,
    )
    for call in (client.state(GAME), client.take_seat(GAME, "ann"), client.act(GAME, "tok", {})):
        with pytest.raises(ApiError):
            await call
    assert [r.headers["Authorization"] for r in seen] == [
        "Bearer platform-key",
        "Bearer platform-key",
        "Bearer tok",  # a seat's own request carries the seat's token, not the platform's key
    ]


async def test_reissuing_a_token_posts_the_substitute_and_reads_the_new_token() -> None:
    seen: list[httpx.Request] = []
    issued = {"seat": 2, "player": "sub", "token": "st2.new", "expires_at": "2026-01-02T00:00:00Z"}
    client = answering(lambda _: httpx.Response(200, json=issued), seen)
    seat = await client.reissue_token(GAME, 2, player="sub", idempotency_key="k")
    assert (seat.seat, seat.player, seat.token, seat.expires_at) == tuple(issued.values())
    assert seen[0].url.path == f"/v1/games/{GAME}/seats/2/token"
    assert msgspec.json.decode(seen[0].content) == {"player": "sub"}
    assert seen[0].headers["Idempotency-Key"] == "k"


async def test_a_429_is_retried_after_retry_after_even_without_a_key() -> None:
    """Nothing was done: the limit refuses a request before anything else."""
    seen: list[httpx.Request] = []
    answers = iter(
        [problem(429, "rate_limited", **{"Retry-After": "0"}), httpx.Response(200, json=ACCEPTED)]
    )
    client = answering(lambda _: next(answers), seen)
    result = await client.act(GAME, "tok", BidAction(3))
    assert result.version == 7
    assert len(seen) == 2
