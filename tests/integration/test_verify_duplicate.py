"""``spades verify`` on a duplicate event's hands, on a real stack keeping the audit log: a
duplicate hand is scored without its seed (every table of the round holds the board), so a
player keeps the league's answer beside the receipts, and the board's revealed seed opens the
hand's commitment under the event's published root and deals the record's cards. Without the
league, or with a seed or cards not the board's, the hand is caught."""

from __future__ import annotations

import asyncio
import copy
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.transparency.note import Signer
from tests.integration import stack
from tests.integration.kept_folder import verify

pytestmark = pytest.mark.integration

ORIGIN = "spades.test/duplicate-log"
KEY = Signer.generate(ORIGIN)
WITHIN_S = 30.0
PLAYERS = [f"player {n}" for n in range(1, 9)]

engine = stack.engine
data_dir = stack.data_dir
gateway = stack.served_gateway(log_origin=ORIGIN)
http = stack.http
ok = stack.ok


projections = stack.projections_keeping_the_log(KEY, ORIGIN)


async def within(read: Any, done: Any) -> Any:
    """``read()``'s answer once ``done`` holds of it (the read models follow a moment behind)."""
    deadline = time.monotonic() + WITHIN_S
    while True:
        answer = await read()
        if done(answer):
            return answer
        assert time.monotonic() < deadline, answer
        await asyncio.sleep(0.1)


@pytest.fixture(scope="module")
def kept(gateway: str) -> dict[str, Any]:
    """A duplicate event of one round of one board, played by bots: the league's answer once
    the round is over, a hand record with its receipt from each table, and the log's key."""
    return asyncio.run(_played(gateway))


async def _played(gateway: str) -> dict[str, Any]:
    body = {
        "name": "Verified duplicate",
        "rules": {"preset": "partnership"},
        "players": PLAYERS,
        "rounds": 1,
        "format": "duplicate",
        "boards_per_round": 1,
        "visibility": "public",
    }
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as client:
        league_id = ok(await client.post("/v1/leagues", json=body), 201)["league_id"]
        started = ok(await client.post(f"/v1/leagues/{league_id}/rounds"), 201)
        await stack.play_tables(gateway, started["tables"])
        url = f"/v1/leagues/{league_id}"
        league = await within(lambda: client.get(url), lambda r: r.json()["revealed"])
        records = {}
        for table in started["tables"]:
            hand = f"/v1/games/{table['game_id']}/hands/1"
            answer = await within(lambda h=hand: client.get(h), _with_receipt)
            records[f"hand-{table['game_id']}.json"] = answer.json()
        key = ok(await client.get("/v1/log"))["logs"][0]["verifier"]
    return {"league": league.json(), "records": records, "key": key}


def _with_receipt(answer: httpx.Response) -> bool:
    return answer.status_code == 200 and answer.json()["receipt"] is not None


def caught(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["check"], f["detail"]) for f in report["findings"] if not f["warning"]]


def test_a_duplicate_hand_with_its_leagues_answer_holds(
    kept: dict[str, Any], tmp_path: Path
) -> None:
    records = kept["records"]
    assert all(record["deal"]["seed"] is None for record in records.values())  # the board's
    code, report = verify(
        tmp_path / "kept", {"league.json": kept["league"], **records}, kept["key"]
    )
    assert (code, caught(report)) == (0, []), report
    assert report["receipts"] == len(records) == 2


def test_without_its_league_a_duplicate_hand_is_caught_and_told_what_to_keep(
    kept: dict[str, Any], tmp_path: Path
) -> None:
    code, report = verify(tmp_path / "bare", kept["records"], kept["key"])
    assert code == 1
    found = caught(report)
    assert found
    assert all(check == "deal" for check, _ in found), found
    assert all("keep the league's answer" in detail for _, detail in found)


def test_a_seed_or_cards_not_the_boards_are_caught(kept: dict[str, Any], tmp_path: Path) -> None:
    # the league's answer with another seed revealed for the board: it does not open it
    forged = copy.deepcopy(kept["league"])
    forged["revealed"][0]["seed"] = "ab" * 32
    code, report = verify(
        tmp_path / "seed", {"league.json": forged, **kept["records"]}, kept["key"]
    )
    assert code == 1
    assert any(check == "deal" and "board 1" in detail for check, detail in caught(report))
    # a record whose seats hold other cards than the board dealt them (two seats swapped)
    name, record = next(iter(kept["records"].items()))
    swapped = copy.deepcopy(record)
    hands = swapped["deal"]["hands"]
    hands[0], hands[1] = hands[1], hands[0]
    code, report = verify(
        tmp_path / "cards", {"league.json": kept["league"], name: swapped}, kept["key"]
    )
    assert code == 1
    assert (
        "deal",
        "league "
        + kept["league"]["league_id"]
        + ": board 1: the table's hands are not the board's",
    ) in caught(report)
