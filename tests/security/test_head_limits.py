"""A request's head, and the connections one address holds, are bounded by the gateway itself
(issue 29, finding 1): endless header lines are cut off at ``SPADES_MAX_HEADER_BYTES`` with a
431, a head sent a line at a time is answered 408 and closed after ``SPADES_HEADER_TIMEOUT_S``,
32 MB of headers are never answered 200, and connections past
``SPADES_MAX_CONNECTIONS_PER_ADDRESS`` are refused as they open. Each refusal is a problem
document with a FORMAT code."""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import EngineProcess, ProjectionsProcess
from tests.integration.test_gateway import ServedGateway, gateway_settings
from tests.security.raw_http import address, endless_head, read_answer, slow_head
from tests.security.tenants import KEYS

pytestmark = pytest.mark.integration

HEAD_TIMEOUT_S = 2.0
CONNECTIONS = 8


@pytest.fixture(scope="module")
def guarded(
    shared_nats: EmbeddedNats,
    engine: EngineProcess,
    projections: ProjectionsProcess,
    data_dir: Path,
) -> Iterator[str]:
    """A gateway with a short head timeout and few connections per address (its head bytes
    the default)."""
    settings = gateway_settings(
        shared_nats.url,
        data_dir,
        api_keys=KEYS,
        header_timeout_s=HEAD_TIMEOUT_S,
        max_connections_per_address=CONNECTIONS,
    )
    with ServedGateway(settings) as served:
        yield served.url


def rss_mb() -> float:
    """The process's peak resident memory (the gateway runs in it), in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_endless_header_lines_are_cut_off_at_the_cap(guarded: str) -> None:
    before = rss_mb()
    # four connections streaming header lines, each willing to send 64 MB
    results = await asyncio.gather(*(endless_head(guarded, 64 * 2**20) for _ in range(4)))
    grown = rss_mb() - before
    for sent, answer in results:
        assert answer.closed
        assert answer.status == 431, answer
        assert answer.problem()["code"] == "malformed"
        assert "32768 bytes" in answer.problem()["detail"]
        assert sent < 64 * 2**20, sent  # answered long before the head could end
    assert grown < 50, f"the gateway grew {grown:.0f} MB"
    cut = [sent // 1024 for sent, _ in results]
    print(f"\n4 endless heads: answered after {cut} KiB sent, +{grown:.1f} MB")


async def test_32_mb_of_headers_are_never_answered(guarded: str) -> None:
    sent, answer = await endless_head(guarded, 32 * 2**20)
    assert answer.status == 431, answer
    assert answer.closed
    assert sent < 32 * 2**20


async def test_a_head_within_the_cap_is_answered(guarded: str) -> None:
    headers = {f"x-pad-{n}": "a" * 1000 for n in range(20)}  # 20 KB of headers
    async with httpx.AsyncClient(base_url=guarded) as http:
        assert (await http.get("/healthz", headers=headers)).status_code == 200


async def test_slow_heads_are_closed_after_the_head_timeout(guarded: str) -> None:
    # 200 connections over a few addresses' budgets would be refused; loopback is one address,
    # so the slow ones are as many as it may hold, and each is closed at the timeout
    results = await asyncio.gather(*(slow_head(guarded, 0.5, 30) for _ in range(CONNECTIONS)))
    for took, answer in results:
        assert answer.closed
        assert answer.status == 408, answer
        assert answer.problem()["code"] == "malformed"
        assert HEAD_TIMEOUT_S - 0.2 <= took <= HEAD_TIMEOUT_S + 1.5, took
    # the slots are free again
    async with httpx.AsyncClient(base_url=guarded) as http:
        assert (await http.get("/healthz")).status_code == 200


async def test_a_connection_that_sends_nothing_is_closed(guarded: str) -> None:
    reader, writer = await asyncio.open_connection(*address(guarded))
    start = time.monotonic()
    answer = await read_answer(reader, HEAD_TIMEOUT_S + 3)
    writer.close()
    assert answer.closed
    assert answer.status == 408, answer
    assert time.monotonic() - start <= HEAD_TIMEOUT_S + 1.5


async def test_connections_past_the_cap_per_address_are_refused(guarded: str) -> None:
    held = [await asyncio.open_connection(*address(guarded)) for _ in range(CONNECTIONS)]
    try:
        reader, writer = await asyncio.open_connection(*address(guarded))
        answer = await read_answer(reader, 2)
        writer.close()
        assert answer.closed
        assert answer.status == 429, answer
        assert answer.problem()["code"] == "rate_limited"
        assert int(answer.headers["retry-after"]) >= 1, answer  # as every 429 says
    finally:
        for _, held_writer in held:
            held_writer.close()
    await asyncio.sleep(0.2)
    async with httpx.AsyncClient(base_url=guarded) as http:
        assert (await http.get("/healthz")).status_code == 200
