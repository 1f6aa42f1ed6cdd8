"""The operator as the attacker (issue 31, item 5): a game played through the API on a real
stack whose projection worker keeps the audit log; a player keeps what the service hands out
(each hand's record with its receipt, a consistency proof from each receipt's tree to the next).
Then the operator, who holds the log's entries and its signing key, makes each of its moves with
everything it can recompute redone (the tree, the signed checkpoint, the receipts and records it
hands out from then on, by the service's own code), and ``spades verify`` catches each from what
the players hold, naming the hand and what disagrees."""

from __future__ import annotations

import asyncio
import copy
import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import sqlalchemy as sa

from contracts.log_entries import GameEnd, HandEnd, LogEntry, entry_bytes, read_entry
from domain.shuffle import table_entropies
from services.runtime.nats_server import EmbeddedNats
from services.store.database import open_store
from services.store.schema import log_leaves
from services.transparency.note import Signer
from tests.integration import stack
from tests.integration.kept_folder import verify
from tests.integration.support import EngineProcess, ProjectionsProcess
from tests.unit.operator_log import OperatorLog

pytest.register_assert_rewrite("tests.integration.test_gateway")
from tests.integration.test_gateway import (  # noqa: E402
    ServedGateway,
    Table,
    gateway_settings,
    open_table,
)

pytestmark = pytest.mark.integration

ORIGIN = "spades.test/operator-log"
KEY = Signer.generate(ORIGIN)
HANDS = 3
WITHIN_S = 30.0
Documents = dict[str, Any]

engine = stack.engine
data_dir = stack.data_dir


projections = stack.projections_keeping_the_log(KEY, ORIGIN)


@pytest.fixture(scope="module")
def settings(shared_nats: EmbeddedNats, data_dir: Path) -> Any:
    return gateway_settings(shared_nats.url, data_dir, log_origin=ORIGIN)


@pytest.fixture(scope="module")
def gateway(settings: Any, engine: EngineProcess, projections: ProjectionsProcess) -> Iterator[str]:
    with ServedGateway(settings) as served:
        yield served.url


@dataclass
class Kept:
    """What the service handed out of one finished game, and the log's entries behind it."""

    game_id: str
    key: str
    """The log's verifier key, as ``GET /v1/log`` lists it."""
    partition: int
    documents: Documents
    """The player's folder: ``hand-N.json`` (a record with its receipt), ``proof-N.json``."""
    hands: int
    """The game's hands: :data:`HANDS`, or more when the sides were level after them."""
    entries: list[bytes]
    """The operator's: every leaf of the log, in order."""

    def operator(self) -> OperatorLog:
        return OperatorLog(self.entries, KEY, ORIGIN, self.partition)

    def index(self, hand: int | None) -> int:
        """The leaf of the game's hand ``hand`` (None: its end)."""
        for index, data in enumerate(self.entries):
            entry = read_entry(data)
            if entry.game_id == self.game_id and (
                isinstance(entry, GameEnd) if hand is None else getattr(entry, "hand", 0) == hand
            ):
                return index
        raise LookupError(hand)


async def record_of(client: httpx.AsyncClient, table: Table, hand: int) -> dict[str, Any]:
    """The hand's record once it carries its receipt (the log follows a moment behind)."""
    deadline = time.monotonic() + WITHIN_S
    while True:
        response = await client.get(f"{table.url}/hands/{hand}")
        if response.status_code == 200 and response.json()["receipt"] is not None:
            record: dict[str, Any] = response.json()
            return record
        assert time.monotonic() < deadline, "no receipt in time"
        await asyncio.sleep(0.05)


async def entropies_seen(table: Table) -> list[str]:
    """The entropies every hand is shuffled with, from the game's events a seat saw."""
    events = [item["event"] for item in await table.events(0)]
    created = next(e for e in events if e["type"] == "game_created")
    seats: dict[int, str] = {e["seat"]: e["entropy"] for e in events if e["type"] == "seat_taken"}
    return table_entropies(created["entropy"], [seats.get(s) for s in range(len(table.tokens))])


@pytest.fixture(scope="module")
def kept(gateway: str, settings: Any) -> Kept:
    """One game of three hands, played once for the module's operator moves."""
    return asyncio.run(played(gateway, settings))


async def played(gateway: str, settings: Any) -> Kept:
    rules = {"preset": "partnership", "max_hands": HANDS}
    async with httpx.AsyncClient(base_url=gateway, timeout=10) as client:
        table = await open_table(client, rules)
        rng = random.Random(31)
        documents: Documents = {}
        entropies = await entropies_seen(table)
        before: dict[str, Any] | None = None
        hand = 0
        # HANDS hands, or more while the sides are level after them (a tie on top plays on)
        while hand < HANDS or (await table.public())["status"] != "finished":
            hand += 1
            await table.play_hand(rng)
            record = await record_of(client, table, hand)
            # What a player keeps to check the deal as well: the rules and the entropies it saw.
            documents[f"hand-{hand}.json"] = {**record, "rules": rules, "entropies": entropies}
            receipt = record["receipt"]
            if before is not None and before["tree_size"] < receipt["tree_size"]:
                proof = await client.get(
                    f"/v1/log/{receipt['partition']}/proofs/consistency",
                    params={"old": before["tree_size"], "new": receipt["tree_size"]},
                )
                assert proof.status_code == 200, proof.text
                documents[f"proof-{hand}.json"] = proof.json()
            before = receipt
        assert (await table.public())["status"] == "finished"
        logs = (await client.get("/v1/log")).json()["logs"]
    partition = before["partition"] if before is not None else 0
    store = open_store(settings.read_model_database_url)
    try:
        query = (
            sa.select(log_leaves.c.entry)
            .where(log_leaves.c.partition == partition)
            .order_by(log_leaves.c.leaf_index)
        )
        async with store.reading() as conn:
            entries = [bytes(row[0]) for row in await conn.execute(query)]
    finally:
        await store.close()
    verifier = logs[partition]["verifier"]
    return Kept(table.game_id, verifier, partition, documents, hand, entries)


def caught(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [finding for finding in report["findings"] if not finding["warning"]]


def edited(data: bytes, **changes: Any) -> bytes:
    entry: LogEntry = read_entry(data)
    return entry_bytes(msgspec.structs.replace(entry, **changes))


def shown(kept: Kept, log: OperatorLog, hand: int, **record_changes: Any) -> dict[str, Any]:
    """The hand's record as the operator hands it out now: with its receipt from ``log`` and
    the record's figures changed as its entry was."""
    record: dict[str, Any] = copy.deepcopy(kept.documents[f"hand-{hand}.json"])
    record.update(record_changes)
    record["receipt"] = log.receipt(kept.game_id, hand)
    return record


def test_the_honest_folder_holds_and_the_operator_recomputes_the_same_log(
    kept: Kept, tmp_path: Path
) -> None:
    code, report = verify(tmp_path / "kept", kept.documents, kept.key)
    assert (code, report["findings"]) == (0, []), report
    assert report["receipts"] == kept.hands
    last = kept.documents[f"hand-{kept.hands}.json"]["receipt"]
    recomputed = kept.operator().receipt(kept.game_id, kept.hands, last["tree_size"])
    assert json.loads(json.dumps(recomputed)) == last


def test_a_finished_hand_edited_is_caught(kept: Kept, tmp_path: Path) -> None:
    """Hand 2's points and scores rewritten, in its entry and its record, the tree and
    checkpoint signed again: the record shown now disagrees with the one kept."""
    log = kept.operator()
    at = kept.index(2)
    entry = read_entry(log.entries[at])
    assert isinstance(entry, HandEnd)
    points = (entry.points[0] + 100, entry.points[1] - 100)
    scores = (entry.scores[0] + 100, entry.scores[1] - 100)
    log.entries[at] = edited(log.entries[at], points=points, scores=scores)
    lie = shown(kept, log, 2, points=list(points), scores=list(scores))
    code, report = verify(tmp_path / "kept", {**kept.documents, "shown-2.json": lie}, kept.key)
    assert code == 1
    rewritten = [f for f in caught(report) if f["check"] == "rewritten"]
    assert [(f["file"], f["hand"]) for f in rewritten] == [("shown-2.json", 2)]
    assert "points" in rewritten[0]["detail"]
    assert "hand-2.json" in rewritten[0]["detail"]
    assert any(f["check"] == "fork" for f in caught(report))


def test_a_hand_deleted_is_caught(kept: Kept, tmp_path: Path) -> None:
    """Hand 2's leaf removed, the log signed again: hand 3 is now where hand 2 was."""
    log = kept.operator()
    del log.entries[kept.index(2)]
    lie = shown(kept, log, 3)
    code, report = verify(tmp_path / "kept", {**kept.documents, "shown-3.json": lie}, kept.key)
    assert code == 1
    details = [f["detail"] for f in caught(report) if f["check"] == "rewritten"]
    assert any(f"game {kept.game_id} hand 2 in hand-2.json" in d for d in details), details
    assert all(f["hand"] == 3 for f in caught(report) if f["check"] == "rewritten")


def test_two_hands_reordered_is_caught(kept: Kept, tmp_path: Path) -> None:
    log = kept.operator()
    two, three = kept.index(2), kept.index(3)
    log.entries[two], log.entries[three] = log.entries[three], log.entries[two]
    lies = {"shown-2.json": shown(kept, log, 2), "shown-3.json": shown(kept, log, 3)}
    code, report = verify(tmp_path / "kept", {**kept.documents, **lies}, kept.key)
    assert code == 1
    rewritten = {(f["file"], f["hand"]) for f in caught(report) if f["check"] == "rewritten"}
    assert {("shown-2.json", 2), ("shown-3.json", 3)} <= rewritten
    assert any(f["check"] == "fork" for f in caught(report))


def test_a_games_end_changed_is_caught(kept: Kept, tmp_path: Path) -> None:
    """The game's result rewritten (another winner, other final scores): it has no receipt of
    its own, but every tree that holds it is signed again, and the players' trees of that size
    have another head."""
    log = kept.operator()
    at = kept.index(None)
    end = read_entry(log.entries[at])
    assert isinstance(end, GameEnd)
    loser = next(unit for unit in range(len(end.scores)) if unit not in end.winners)
    log.entries[at] = edited(log.entries[at], winners=(loser,), scores=(999, 0))
    # After the game ended, the operator answers a hand's record from its rewritten log.
    lie = shown(kept, log, 1)
    code, report = verify(tmp_path / "kept", {**kept.documents, "shown-1.json": lie}, kept.key)
    assert code == 1
    (fork,) = [f for f in caught(report) if f["check"] == "fork"]
    size = kept.documents[f"hand-{kept.hands}.json"]["receipt"]["tree_size"]
    assert (fork["file"], fork["hand"]) == ("shown-1.json", 1)
    assert f"two different trees of size {size}" in fork["detail"]
    assert f"hand-{kept.hands}.json (game {kept.game_id} hand {kept.hands})" in fork["detail"]


def test_a_fork_between_two_players_is_caught_when_they_compare(kept: Kept, tmp_path: Path) -> None:
    """One player is shown the log as it is; another, hand 3 with other bids' points. Each
    folder holds alone; put together (two platforms comparing), the fork shows."""
    log = kept.operator()
    at = kept.index(kept.hands)
    entry = read_entry(log.entries[at])
    assert isinstance(entry, HandEnd)
    bags = tuple(b + 1 for b in entry.bags)
    log.entries[at] = edited(log.entries[at], bags=bags)
    other = {f"other-{kept.hands}.json": shown(kept, log, kept.hands, bags=list(bags))}
    assert verify(tmp_path / "other", other, kept.key)[0] == 0
    code, report = verify(tmp_path / "both", {**kept.documents, **other}, kept.key)
    assert code == 1
    checks = {(f["check"], f["file"], f["hand"]) for f in caught(report)}
    assert ("fork", f"other-{kept.hands}.json", kept.hands) in checks
    assert ("rewritten", f"other-{kept.hands}.json", kept.hands) in checks


def test_a_deal_not_derived_from_its_committed_seed_is_caught(kept: Kept, tmp_path: Path) -> None:
    """Hand 1 dealt from another deck than its committed seed derives: the operator shows that
    deck with the committed seed (the replay finds the deck is not the seed's), or reveals a
    seed of its choosing, logged and signed again (it does not open the commitment)."""
    record = copy.deepcopy(kept.documents["hand-1.json"])
    deck = record["deal"]["deck"]
    deck[0], deck[-1] = deck[-1], deck[0]
    code, report = verify(tmp_path / "deck", {"hand-1.json": record}, kept.key)
    assert code == 1
    replay = [f for f in caught(report) if f["check"] == "replay"]
    assert any("is not the deck its revealed seed derives" in f["detail"] for f in replay)
    assert {f["hand"] for f in replay} == {1}

    log = kept.operator()
    at = kept.index(1)
    chosen = "cd" * 32
    log.entries[at] = edited(log.entries[at], seed=chosen)
    lie = shown(kept, log, 1)
    lie["deal"]["seed"] = chosen
    code, report = verify(tmp_path / "seed", {"hand-1.json": lie}, kept.key)
    assert code == 1
    deal = [f for f in caught(report) if f["check"] == "deal"]
    assert [f["hand"] for f in deal] == [1]
    assert "the revealed seed hashes to" in deal[0]["detail"]
