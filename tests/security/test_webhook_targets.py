"""Webhook registrations aimed inside the network: an IPv6 address that carries a loopback or
private IPv4 one (6to4, NAT64), a Teredo tunnel, a block of IANA's special-purpose registry that
Python's ``ipaddress`` calls global. Each is a 403 ``forbidden``, and no refusal tells the caller
what a name resolves to."""

from __future__ import annotations

import httpx
import pytest

from tests.security.tenants import ACME, assert_problem, bearer

pytestmark = pytest.mark.integration

INSIDE = [
    "http://[2002:7f00:1::1]/",  # 6to4 of 127.0.0.1
    "http://[2002:a00:1::1]:8080/",  # 6to4 of 10.0.0.1
    "http://[64:ff9b::7f00:1]/",  # NAT64 of 127.0.0.1
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
    "http://[64:ff9b:1::a00:1]/",  # local-use NAT64
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",  # Teredo
    "http://192.0.0.8/",  # IETF protocol assignments
    "http://192.0.0.9/",
    "http://192.88.99.1/",  # the 6to4 relays' anycast
]


async def test_addresses_that_reach_inside_the_network_are_refused(
    http: httpx.AsyncClient,
) -> None:
    for url in INSIDE:
        answer = await http.post(
            "/v1/webhooks", json={"url": url, "events": ["game.turn"]}, headers=bearer(ACME)
        )
        assert_problem(answer, 403, "forbidden")
    listed = await http.get("/v1/webhooks", headers=bearer(ACME))
    assert listed.json() == {"webhooks": []}


async def test_a_refusal_does_not_tell_what_a_name_resolves_to(http: httpx.AsyncClient) -> None:
    answer = await http.post(
        "/v1/webhooks",
        json={"url": "http://localhost:9/", "events": ["game.turn"]},
        headers=bearer(ACME),
    )
    assert_problem(answer, 403, "forbidden")
    detail = answer.json()["detail"]
    assert "localhost" in detail
    for told in ("127.0.0.1", "::1", "loopback"):
        assert told not in detail, detail
