"""Where webhooks may go: http(s) URLs only, and never to a loopback, link-local, private,
multicast, unspecified or otherwise non-public address unless the deployment allows it."""

from __future__ import annotations

import ipaddress

import pytest

from services.runtime.webhook_addresses import (
    AddressPolicy,
    AddressRefused,
    InvalidUrl,
    Unresolvable,
    checked_url,
    refusal,
)
from services.webhooks.schedule import Schedule


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/hook", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("javascript:alert(1)", "http:// or https://"),
        ("https://user:secret@example.com/hook", "no user or password"),
        ("https://", "names a host"),
        ("not a url at all", "http:// or https://"),
        ("https://example.com/" + "x" * 2100, "at most 2048"),
    ],
)
def test_a_url_that_is_not_plain_http_or_https_is_refused(url: str, reason: str) -> None:
    with pytest.raises(InvalidUrl, match=reason):
        checked_url(url)


def test_http_and_https_urls_with_ports_paths_and_queries_are_taken() -> None:
    assert checked_url("https://hooks.example.com/spades?x=1").host == "hooks.example.com"
    assert checked_url("http://hooks.example.com:8080/a").port == 8080


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.9.9.9", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("100.64.0.1", "special-purpose"),
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
        ("2002:a00:1::1", "private"),
        ("64:ff9b::7f00:1", "loopback"),  # NAT64 of 127.0.0.1
        ("64:ff9b:1::a00:1", "reserved"),  # local-use NAT64
        ("2001::1", "Teredo"),
        ("192.0.0.8", "special-purpose"),
        ("192.0.0.9", "special-purpose"),
        ("192.88.99.1", "special-purpose"),
        ("::127.0.0.1", "reserved"),
        ("240.0.0.1", "reserved"),
    ],
)
def test_addresses_inside_a_network_are_refused(address: str, kind: str) -> None:
    reason = refusal(ipaddress.ip_address(address))
    assert reason is not None
    assert kind in reason


@pytest.mark.parametrize(
    "address",
    ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "2002:808:808::1", "64:ff9b::808:808"],
)
def test_public_addresses_are_allowed(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


async def test_a_loopback_name_is_refused_unless_private_addresses_are_allowed() -> None:
    with pytest.raises(AddressRefused, match="not a public one") as refused:
        await AddressPolicy().addresses("localhost", 80)
    assert "loopback" in refused.value.reason  # for the server's log, not the caller
    assert "loopback" not in str(refused.value)
    with pytest.raises(AddressRefused, match="not a public one"):
        await AddressPolicy().addresses("[::1]", 80)
    allowed = await AddressPolicy(allow_private=True).addresses("localhost", 80)
    assert allowed
    assert all(address.is_loopback for address in allowed)


async def test_a_name_that_does_not_resolve_is_told_apart_from_a_refused_one() -> None:
    with pytest.raises(Unresolvable, match="does not resolve"):
        await AddressPolicy(allow_private=True).addresses("no-such-host.invalid", 443)


def test_the_schedule_reads_seconds_minutes_and_hours() -> None:
    schedule = Schedule.parse("5s, 5m,30m,2h,0.5,250ms")
    assert schedule.waits == (5.0, 300.0, 1800.0, 7200.0, 0.5, 0.25)
    assert schedule.tries == 7


@pytest.mark.parametrize("text", ["", "5x", "soon", ",", "-1s", ",".join(["1s"] * 33)])
def test_a_schedule_that_is_not_a_list_of_waits_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="wait"):
        Schedule.parse(text)


def test_each_wait_is_drawn_with_full_jitter_and_the_schedule_ends() -> None:
    import random

    schedule = Schedule.parse("5s,5m,2h")
    draw = random.Random(7)
    for failures, most in enumerate(schedule.waits, start=1):
        waits = [schedule.wait_after(failures, draw) for _ in range(200)]
        assert all(wait is not None and 0.0 <= wait <= most for wait in waits)
        assert min(w for w in waits if w is not None) < most * 0.1, "down to nearly nothing"
        assert max(w for w in waits if w is not None) > most * 0.9, "up to the listed wait"
    assert schedule.wait_after(4, draw) is None
    assert Schedule.parse("5s,5m,30m,2h,5h,10h,10h").span_s == pytest.approx(27.6 * 3600, rel=0.01)
