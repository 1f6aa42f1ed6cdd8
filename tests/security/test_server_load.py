"""Floods against the whole stack as ``spades up`` runs it (every service its own process):

- a server started as ``make run`` starts it (no platform keys, the default limits) under an
  anonymous flood of game creations and a burst of audits: the flood past the budget gets 429
  and creates nothing, and the audits past theirs are refused;
- a platform's server whose audit budget lets 100 concurrent audits of one game through: the
  report is computed once, and another game's actions are answered meanwhile about as fast as
  before (the median of each is printed: ``pytest -s``).
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from services.client import ApiError, SpadesClient
from services.gateway.commands import created_id
from services.gateway.limits import DEFAULT_LIMITS, parse_rate_limits
from tests.e2e.stack import Stack
from tests.security.tenants import ACME, KEYS, Table, bearer, open_table

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

AUDITS = 100
GENEROUS = "platform=100000/s,seat=100000/s,anonymous=100000/s,audit=100000/s"
COMPUTED = re.compile(r"^spades_audits_computed_total ([0-9.]+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """``spades up`` with nothing set: no platform keys, the default limits."""
    running = Stack(tmp_path_factory.mktemp("local"), rate_limit=None)
    running.start()
    yield running
    status, left = running.terminate()
    assert (status, left) == (0, []), running.log_tail()


@pytest.fixture(scope="module")
def platform_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("platform"), api_keys=KEYS, rate_limit=GENEROUS)
    running.start()
    yield running
    status, left = running.terminate()
    assert (status, left) == (0, []), running.log_tail()


async def timed(call: Any) -> float:
    start = time.perf_counter()
    answer = await call
    assert answer.status_code == 200, answer.text
    return (time.perf_counter() - start) * 1000


async def actions_while(table: Table, busy: asyncio.Future[Any] | None, least: int) -> list[float]:
    """Milliseconds of each of the table's actions, made one after another: ``least`` of them,
    and more while ``busy`` is not done."""
    times: list[float] = []
    while len(times) < least or (busy is not None and not busy.done()):
        state = await table.state()
        if state["status"] == "finished":
            break
        seat = int(state["passes_due"][0] if state["phase"] == "pass" else state["turn"])
        view = await table.view(seat)
        legal = [a for a in view["legal"] if a["type"] != "look"] or view["legal"]
        action = legal[0]
        if action["type"] == "pass":
            action = {"type": "pass", "cards": view["hand"][: action["count"]]}
        times.append(
            await timed(
                table.http.post(
                    f"{table.url}/actions", json=action, headers=bearer(table.tokens[seat])
                )
            )
        )
    return times


async def test_the_defaults_protect_a_server_started_as_make_run_does(local: Stack) -> None:
    rates = parse_rate_limits("")
    assert rates is not None
    anonymous, audit = rates["anonymous"], rates["audit"]
    assert f"anonymous={anonymous.count}/s" in DEFAULT_LIMITS
    flood = anonymous.count + 30
    keys = [str(uuid.uuid4()) for _ in range(flood)]
    body = {"rules": {"preset": "solo"}}
    async with httpx.AsyncClient(base_url=local.base_url, timeout=30) as http:
        start = time.perf_counter()
        answers = await asyncio.gather(
            *(http.post("/v1/games", json=body, headers={"Idempotency-Key": k}) for k in keys)
        )
        elapsed = time.perf_counter() - start
    created = [k for k, a in zip(keys, answers, strict=True) if a.status_code == 201]
    refused = [k for k, a in zip(keys, answers, strict=True) if a.status_code == 429]
    assert len(created) + len(refused) == flood
    print(f"\n{flood} anonymous creations at once: {len(created)} made, {len(refused)} refused 429")
    assert anonymous.count <= len(created) <= anonymous.count + anonymous.per_s * elapsed + 1
    assert all(a.headers["retry-after"].isdigit() for a in answers if a.status_code == 429)
    # the refused creations made nothing (looked up by the ids they would have had)
    secret = (local.data_dir / "secret.key").read_bytes()
    async with SpadesClient(local.base_url) as client:  # waits out 429s as Retry-After says
        for key in refused:
            with pytest.raises(ApiError) as missing:
                await client.state(created_id("game", secret, None, key))
            assert missing.value.code == "game_not_found"
        for key in created[:5]:
            assert (await client.state(created_id("game", secret, None, key))).version == 1

        # audits: a burst from one caller gets its small budget, the rest 429 at once
        game = await client.create_game({"preset": "solo", "max_hands": 1})
        path = f"/v1/games/{game.game_id}/audit"
        async with httpx.AsyncClient(base_url=local.base_url, timeout=60) as http:
            start = time.perf_counter()
            burst = await asyncio.gather(*(http.get(path) for _ in range(AUDITS)))
            elapsed = time.perf_counter() - start
    statuses = [a.status_code for a in burst]
    assert set(statuses) == {200, 429}
    assert audit.count <= statuses.count(200) <= audit.count + audit.per_s * elapsed + 1


async def test_concurrent_audits_compute_once_and_do_not_starve_actions(
    platform_server: Stack,
) -> None:
    async with httpx.AsyncClient(base_url=platform_server.base_url, timeout=120) as http:
        audited = await open_table(http, ACME)
        # three hands of history to replay: the whole game, or its first three and the fourth
        # dealt when the sides are level after them (a tie on top plays on; every seat bids nil)
        await audited.play_hands(3)
        state = await audited.state()
        seen = await http.get(
            f"{audited.url}/scoreboard",
            params={"min_version": state["version"]},
            headers=bearer(ACME),
        )
        assert seen.status_code == 200  # the read models the audit compares are caught up
        quiet_table = await open_table(http, ACME)
        busy_table = await open_table(http, ACME)
        quiet = await actions_while(quiet_table, None, 30)

        before = await computed(http)
        path = f"{audited.url}/audit"
        start = time.perf_counter()
        audits = asyncio.gather(*(http.get(path, headers=bearer(ACME)) for _ in range(AUDITS)))
        during = await actions_while(busy_table, audits, 20)
        reports = await audits
        burst_ms = (time.perf_counter() - start) * 1000
        after = await computed(http)

    assert [r.status_code for r in reports] == [200] * AUDITS
    assert all(r.json() == reports[0].json() for r in reports)
    assert reports[0].json()["ok"]
    assert after - before == 1  # one report for the hundred
    quiet_ms, during_ms = statistics.median(quiet), statistics.median(during)
    print(  # the figures the report quotes
        f"\naction p50 {quiet_ms:.1f} ms quiet, {during_ms:.1f} ms during {AUDITS} concurrent "
        f"audits of a {state['version']}-event game ({len(during)} actions in {burst_ms:.0f} ms)"
    )
    assert during_ms < max(5 * quiet_ms, quiet_ms + 100), (quiet_ms, during_ms)


async def computed(http: httpx.AsyncClient) -> float:
    metrics = await http.get("/metrics")
    found = COMPUTED.search(metrics.text)
    assert found is not None, metrics.text[:500]
    return float(found[1])
