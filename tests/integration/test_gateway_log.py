"""The audit log over HTTP, on a real stack (engine, projection workers with a log key, a
gateway): a hand played through the API gets a receipt a client checks offline with nothing
but the published key; the proofs verify; what lies beyond the log is a problem, never a 500."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from contracts.log_entries import HandEnd, read_entry
from contracts.wire import read_commit
from domain.shuffle import commitment
from services.projections.model import Delivered
from services.projections.registry import READ_MODELS
from services.runtime.nats_server import EmbeddedNats
from services.store import positions
from services.store.audit_log import latest_checkpoint
from services.store.database import open_store
from services.transparency.checkpoint import Checkpoint
from services.transparency.merkle import leaf_hash, verify_consistency, verify_inclusion
from services.transparency.note import Signer, Verifier, open_note
from tests.integration import stack
from tests.integration.support import EngineProcess

pytest.register_assert_rewrite("tests.integration.test_gateway")
from tests.integration.test_gateway import (  # noqa: E402
    ServedGateway,
    assert_problem,
    gateway_settings,
    open_table,
)

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import random_logs  # noqa: E402

pytestmark = pytest.mark.integration

ORIGIN = "spades.test/http-log"
KEY = Signer.generate(ORIGIN)
WITHIN_S = 30.0

engine = stack.engine
data_dir = stack.data_dir


projections = stack.projections_keeping_the_log(KEY, ORIGIN)


gateway = stack.served_gateway(log_origin=ORIGIN)


@pytest.fixture
async def client(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=10) as http:
        yield http


async def receipt_of(client: httpx.AsyncClient, url: str, hand: int) -> dict[str, Any]:
    """The hand's receipt, once the log has it (it follows the stream a moment behind)."""
    deadline = time.monotonic() + WITHIN_S
    while True:
        response = await client.get(f"{url}/hands/{hand}/receipt")
        if response.status_code == 200:
            body: dict[str, Any] = response.json()
            return body
        assert_problem(response, 404, "hand_not_found")
        assert time.monotonic() < deadline, "no receipt in time"
        await asyncio.sleep(0.05)


def check_offline(receipt: dict[str, Any], key: Verifier) -> Checkpoint:
    """What a seat or a platform does with a receipt and the log's key, and nothing else."""
    checkpoint = Checkpoint.parse(open_note(receipt["checkpoint"], [key]).text)
    assert checkpoint.origin == receipt["origin"]
    assert checkpoint.size == receipt["tree_size"]
    entry = base64.b64decode(receipt["entry_bytes"])
    proof = [base64.b64decode(h) for h in receipt["inclusion_proof"]]
    verify_inclusion(
        leaf_hash(entry), receipt["leaf_index"], checkpoint.size, proof, checkpoint.root
    )
    leaf = read_entry(entry)
    assert isinstance(leaf, HandEnd)
    assert leaf.seed is not None
    assert commitment(bytes.fromhex(leaf.seed)) == leaf.commitment  # the deal kept its promise
    return checkpoint


async def test_a_receipt_is_checked_offline_with_the_published_key(
    client: httpx.AsyncClient,
) -> None:
    table = await open_table(client, {"preset": "partnership", "max_hands": 1})
    await table.play_hand(random.Random(31))
    assert (await table.public())["status"] == "finished"
    receipt = await receipt_of(client, table.url, 1)

    logs = (await client.get("/v1/log")).json()["logs"]
    published = logs[receipt["partition"]]
    assert published["origin"] == f"{ORIGIN}/{receipt['partition']}"
    key = Verifier.parse(published["verifier"])
    assert key.public == KEY.verifier.public
    checkpoint = check_offline(receipt, key)

    # The commitment the receipt names is the one the game published before the first bid.
    events = [e["event"] for e in await table.events()]
    dealt = next(e for e in events if e["type"] == "hand_dealt")
    assert receipt["deal"]["commitment"] == dealt["commitment"]
    assert receipt["entry"]["commitment"] == dealt["commitment"]
    first_bid = next(
        e["version"] for e in await table.events() if e["event"]["type"] == "bid_placed"
    )
    assert receipt["deal"]["version"] < first_bid
    assert receipt["entry"]["game_id"] == table.game_id
    assert "player" not in str(receipt["entry"])  # no name in the log

    # The latest checkpoint extends the receipt's; the inclusion proof route agrees.
    partition = receipt["partition"]
    latest = await client.get(f"/v1/log/{partition}/checkpoint")
    assert latest.status_code == 200
    assert latest.headers["content-type"].startswith("text/plain")
    now = Checkpoint.parse(open_note(latest.text, [key]).text)
    proof = (
        await client.get(
            f"/v1/log/{partition}/proofs/consistency",
            params={"old": checkpoint.size, "new": now.size},
        )
    ).json()
    verify_consistency(
        checkpoint.size,
        now.size,
        checkpoint.root,
        now.root,
        [base64.b64decode(h) for h in proof["proof"]],
    )
    included = (
        await client.get(
            f"/v1/log/{partition}/proofs/inclusion",
            params={"index": receipt["leaf_index"], "size": now.size},
        )
    ).json()
    entry = base64.b64decode(receipt["entry_bytes"])
    assert base64.b64decode(included["leaf_hash"]) == leaf_hash(entry)
    path = [base64.b64decode(h) for h in included["proof"]]
    verify_inclusion(leaf_hash(entry), receipt["leaf_index"], now.size, path, now.root)
    assert hashlib.sha256(entry).digest() != leaf_hash(entry)  # RFC 6962's 0x00 prefix


async def test_the_hand_record_carries_the_receipt_and_an_unfinished_hand_has_none(
    client: httpx.AsyncClient,
) -> None:
    """The hand's record holds the same receipt as its own route, checked offline with the
    published key; the hand being played has neither record nor receipt (nothing of an
    unfinished hand is in the log)."""
    table = await open_table(client, {"preset": "partnership", "max_hands": 2})
    await table.play_hand(random.Random(33))
    alone = await receipt_of(client, table.url, 1)
    record = (await client.get(f"{table.url}/hands/1")).json()
    receipt = record["receipt"]
    assert receipt is not None
    for field in ("game_id", "hand", "partition", "leaf_index", "entry_bytes", "deal"):
        assert receipt[field] == alone[field]
    assert receipt["tree_size"] >= alone["tree_size"]  # the log may have grown meanwhile
    published = (await client.get("/v1/log")).json()["logs"][receipt["partition"]]
    check_offline(receipt, Verifier.parse(published["verifier"]))
    assert receipt["entry"]["points"] == record["points"]
    assert (await table.public())["status"] == "playing"
    assert_problem(await client.get(f"{table.url}/hands/2"), 404, "hand_not_found")
    assert_problem(await client.get(f"{table.url}/hands/2/receipt"), 404, "hand_not_found")


async def test_what_lies_beyond_the_log_is_a_problem(client: httpx.AsyncClient) -> None:
    table = await open_table(client, {"preset": "partnership", "max_hands": 1})
    await table.play_hand(random.Random(32))
    receipt = await receipt_of(client, table.url, 1)
    partition, size = receipt["partition"], receipt["tree_size"]
    log = f"/v1/log/{partition}"
    far = size + 10**6
    inclusion = f"{log}/proofs/inclusion"
    consistency = f"{log}/proofs/consistency"
    assert_problem(await client.get(inclusion, params={"index": 0, "size": far}), 404, "not_found")
    # Numbers the schema allows but no tree answers are missing things, not malformed ones.
    assert_problem(await client.get(inclusion, params={"index": 3, "size": 3}), 404, "not_found")
    assert_problem(await client.get(consistency, params={"old": 1, "new": far}), 404, "not_found")
    assert_problem(await client.get(consistency, params={"old": 3, "new": 2}), 404, "not_found")
    huge = {"index": 2**62 + 1, "size": 3}  # beyond the schema's bound: the only 400s
    assert_problem(await client.get(inclusion, params=huge), 400, "malformed")
    assert_problem(await client.get(inclusion, params={"index": -1, "size": 3}), 400, "malformed")
    assert_problem(await client.get(consistency, params={"old": 0, "new": -1}), 400, "malformed")
    assert_problem(await client.get("/v1/log/999/checkpoint"), 404, "not_found")
    assert_problem(await client.get(f"{table.url}/hands/2/receipt"), 404, "hand_not_found")
    assert_problem(await client.get("/v1/games/nope/hands/1/receipt"), 404, "game_not_found")
    empty = await client.get(consistency, params={"old": size, "new": size})
    assert empty.status_code == 200
    assert empty.json()["proof"] == []


async def test_a_log_not_built_yet_or_without_a_key_answers_503(
    shared_nats: EmbeddedNats, engine: EngineProcess, tmp_path: Path
) -> None:
    """A gateway whose read-model database no projection worker has filled answers the log's
    routes 503 (not built yet); once the log is kept without a key (its model applied here as
    a keyless worker would: the module's workers hold the stream's partitions), the proofs
    answer but the signed checkpoint stays 503."""
    settings = gateway_settings(shared_nats.url, tmp_path)
    with ServedGateway(settings) as served:
        async with httpx.AsyncClient(base_url=served.url, timeout=10) as client:
            for path in ("/v1/log/0/checkpoint", "/v1/log/0/proofs/consistency"):
                response = await client.get(path, params={"old": 0, "new": 0})
                assert_problem(response, 503, "unavailable")
                assert response.headers["retry-after"]
            store = open_store(settings.read_model_database_url)
            try:
                games = random_logs(1, seed=36, prefix="keyless")
                batch = [
                    Delivered(sequence, read_commit(data), data)
                    for sequence, data in enumerate(games[0].payloads, start=1)
                ]
                async with store.writing() as conn:
                    assert await READ_MODELS["log"].apply(conn, batch) == {}
                    await positions.ensure(conn, ["log"], 0)
                    await positions.advance(conn, ["log"], 0, len(batch), "0" * 64)
                    head = await latest_checkpoint(conn, 0)
            finally:
                await store.close()
            assert head is not None
            assert head.note is None
            assert_problem(await client.get("/v1/log/0/checkpoint"), 503, "unavailable")
            proof = await client.get(
                "/v1/log/0/proofs/inclusion", params={"index": 0, "size": head.size}
            )
            assert proof.status_code == 200
            assert base64.b64decode(proof.json()["root"]) == head.root
