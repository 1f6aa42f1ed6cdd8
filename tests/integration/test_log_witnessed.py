"""The audit log with a witness, on a real stack (engine, a projections process whose log has a
key and ``SPADES_LOG_WITNESSES``, a gateway, and ``spades witness serve`` as its own process):
receipts carry the witness's cosignature; the witness down stops nothing (receipts come without
it, then with it once the witness is back); ``spades verify --witness`` names the receipt that
lacks a cosignature or carries a forged one; and the Python client, reconnecting with what it
kept, catches a log rewritten behind it.

The modules' tests share one stack and run in order: the last one rewrites the log."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from contracts.log_entries import HandEnd, entry_bytes, read_entry
from services.cli.main import app
from services.client.api import ForkError, LogWatch, SpadesClient
from services.client.sse import parse_server_sent_events
from services.projections.audit_log import log_origin
from services.runtime.nats_server import EmbeddedNats
from services.store.database import open_store
from services.store.schema import log_checkpoints, log_leaves, log_nodes
from services.transparency.merkle import complete_nodes
from services.transparency.note import COSIGNATURE, Signer, open_note
from tests.integration import stack
from tests.integration.support import EngineProcess, ProjectionsProcess
from tests.unit.operator_log import OperatorLog

pytest.register_assert_rewrite("tests.integration.test_gateway", "tests.integration.test_witness")
from tests.integration.test_gateway import (  # noqa: E402
    ServedGateway,
    Table,
    gateway_settings,
    open_table,
)
from tests.integration.test_witness import Witness  # noqa: E402

pytestmark = pytest.mark.integration

ORIGIN = "spades.test/witnessed-log"
KEY = Signer.generate(ORIGIN)
LOG_KEY = Signer(log_origin(ORIGIN, 0), KEY.kind, KEY.private).verifier
"""Partition 0's log key: the one game stream of the shared server has one partition."""
WITHIN_S = 60.0

engine = stack.engine
data_dir = stack.data_dir
runner = CliRunner()


@pytest.fixture(scope="module")
def witness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Witness]:
    running = Witness(tmp_path_factory.mktemp("witness"), LOG_KEY)
    running.start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def projections(
    shared_nats: EmbeddedNats, data_dir: Path, witness: Witness
) -> Iterator[ProjectionsProcess]:
    env = {
        "SPADES_DATA_DIR": str(data_dir),
        "SPADES_LOG_KEY": KEY.text(),
        "SPADES_LOG_ORIGIN": ORIGIN,
        "SPADES_LOG_WITNESSES": f"http://127.0.0.1:{witness.port} {witness.verifier.text()}",
        "SPADES_LOG_WITNESS_RETRY_S": "1",
        "SPADES_LOG_WITNESS_TIMEOUT_S": "2",
    }
    process = ProjectionsProcess(shared_nats.url, data_dir, env=env)
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def settings(shared_nats: EmbeddedNats, data_dir: Path, witness: Witness) -> Any:
    witnesses = f"http://127.0.0.1:{witness.port} {witness.verifier.text()}"
    return gateway_settings(
        shared_nats.url,
        data_dir,
        log_origin=ORIGIN,
        log_witnesses=witnesses,
        stream_receipt_wait_s=WITHIN_S,  # a loaded machine's log may lag the default 10 s
    )


@pytest.fixture(scope="module")
def gateway(settings: Any, engine: EngineProcess, projections: ProjectionsProcess) -> Iterator[str]:
    with ServedGateway(settings) as served:
        yield served.url


@pytest.fixture
async def client(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=10) as http:
        yield http


def cosigned_at(receipt: dict[str, Any], witness: Witness) -> int | None:
    """The time the witness's valid cosignature on the receipt's checkpoint gives (None: the
    checkpoint carries none); the log's signature must hold too."""
    opened = open_note(receipt["checkpoint"], [LOG_KEY, witness.verifier])
    assert opened.signed_by == (LOG_KEY.name,)
    return opened.cosigned_at.get(witness.verifier.name)


async def receipt_when(
    client: httpx.AsyncClient, table: Table, hand: int, cosigned: bool | None, witness: Witness
) -> dict[str, Any]:
    """The hand's receipt once the log holds it and, unless ``cosigned`` is None, once it
    carries the witness's cosignature (True) or while it does not (False)."""
    deadline = time.monotonic() + WITHIN_S
    while True:
        response = await client.get(f"{table.url}/hands/{hand}/receipt")
        if response.status_code == 200:
            receipt: dict[str, Any] = response.json()
            if cosigned is None or (cosigned_at(receipt, witness) is not None) == cosigned:
                return receipt
        else:
            assert response.status_code == 404, response.text
        assert time.monotonic() < deadline, f"no receipt of hand {hand} (cosigned: {cosigned})"
        await asyncio.sleep(0.1)


async def played(client: httpx.AsyncClient, hands: int, seed: int) -> Table:
    table = await open_table(client, {"preset": "partnership", "max_hands": hands})
    rng = random.Random(seed)
    for _ in range(hands + 8):  # a tie after the last hand plays on
        await table.play_hand(rng)
        if (await table.public())["status"] == "finished":
            return table
    raise AssertionError("the game did not finish")


def verify(folder: Path, documents: dict[str, Any], *options: str) -> tuple[int, dict[str, Any]]:
    """``spades verify FOLDER --key <partition 0's key> OPTIONS --json``, as a player runs it."""
    folder.mkdir()
    for name, document in documents.items():
        (folder / name).write_text(json.dumps(document), encoding="utf-8")
    argv = ["verify", str(folder), "--key", LOG_KEY.text(), *options, "--json"]
    result = runner.invoke(app, argv)
    assert result.exit_code in (0, 1), result.output
    report: dict[str, Any] = json.loads(result.output)
    return result.exit_code, report


async def test_receipts_carry_the_witness_cosignature(
    client: httpx.AsyncClient, witness: Witness, tmp_path: Path
) -> None:
    table = await played(client, 2, seed=1)
    receipts = {hand: await receipt_when(client, table, hand, True, witness) for hand in (1, 2)}
    for receipt in receipts.values():
        seconds = cosigned_at(receipt, witness)
        assert seconds is not None
        assert abs(seconds - time.time()) < 120
    record = (await client.get(f"{table.url}/hands/2")).json()
    assert cosigned_at(record["receipt"], witness) is not None  # the record's, the same builder
    # What the witness cosigned is kept: its state names this log at the size cosigned.
    kept = json.loads((witness.state / "latest.json").read_text())
    assert kept[LOG_KEY.name]["size"] >= receipts[2]["tree_size"]

    documents = {f"hand-{hand}.json": receipt for hand, receipt in receipts.items()}
    sizes = sorted({receipt["tree_size"] for receipt in receipts.values()})
    if len(sizes) == 2:  # the witness cosigned between the two hands: a proof joins the trees
        partition = receipts[1]["partition"]
        joined = await client.get(
            f"/v1/log/{partition}/proofs/consistency", params={"old": sizes[0], "new": sizes[1]}
        )
        assert joined.status_code == 200, joined.text
        documents["joined.json"] = joined.json()
    code, report = verify(tmp_path / "kept", documents, "--witness", witness.verifier.text())
    assert (code, report["findings"]) == (0, []), report


async def test_a_stream_s_receipt_waits_for_the_witness_cosignature(
    client: httpx.AsyncClient, witness: Witness
) -> None:
    """Where the log has witnesses, the SSE ``receipt`` frame comes once a witness has cosigned
    the checkpoint (the log signs first, the witness a moment later): the first receipt a
    watcher gets is the one it can hold against the witness."""
    table = await open_table(client, {"preset": "partnership", "max_hands": 1})
    frames: list[Any] = []

    async def watch() -> None:
        async with client.stream("GET", f"{table.url}/events/stream") as response:
            assert response.status_code == 200
            async for frame in parse_server_sent_events(response.aiter_lines()):
                frames.append(frame)
                if frame.event in ("receipt", "end"):
                    return

    watching = asyncio.create_task(watch())
    rng = random.Random(5)
    async with asyncio.timeout(WITHIN_S):
        while not watching.done():
            if (await table.public())["status"] != "finished":
                await table.play_hand(rng)
            else:
                await asyncio.sleep(0.1)
        await watching
    receipts = [frame.json() for frame in frames if frame.event == "receipt"]
    assert receipts, [frame.event for frame in frames]
    assert cosigned_at(receipts[0], witness) is not None


async def test_the_witness_down_stops_nothing_and_its_cosignature_comes_when_it_is_back(
    client: httpx.AsyncClient, witness: Witness, tmp_path: Path
) -> None:
    before = await played(client, 1, seed=2)
    cosigned = await receipt_when(client, before, 1, True, witness)
    witness.stop()
    try:
        table = await played(client, 1, seed=3)
        bare = await receipt_when(client, table, 1, None, witness)  # the log goes on
        assert cosigned_at(bare, witness) is None
        assert bare["tree_size"] > cosigned["tree_size"]
        # A hand the witness had cosigned a tree of keeps a cosigned checkpoint meanwhile.
        again = await receipt_when(client, before, 1, True, witness)
        assert cosigned["tree_size"] <= again["tree_size"] < bare["tree_size"]

        # `spades verify --witness` names the receipt without a cosignature, one carrying the
        # witness's line taken from another checkpoint (forged), and one cosigned by a key of
        # the witness's name that is not its key (none of the witness's).
        line = cosigned["checkpoint"].rstrip("\n").rsplit("\n", 1)[1] + "\n"
        forged = {**bare, "checkpoint": bare["checkpoint"] + line}
        impostor = Signer.generate(witness.verifier.name, COSIGNATURE)
        text = bare["checkpoint"].partition("\n\n")[0] + "\n"
        other = {**bare, "checkpoint": bare["checkpoint"] + impostor.cosign(text, 1_700_000_000)}
        documents = {
            "cosigned.json": cosigned,
            "bare.json": bare,
            "forged.json": forged,
            "impostor.json": other,
        }
        code, report = verify(tmp_path / "kept", documents, "--witness", witness.verifier.text())
        assert code == 1
        found = {(f["file"], f["check"]) for f in report["findings"] if not f["warning"]}
        assert found == {
            ("bare.json", "witness"),
            ("forged.json", "witness"),
            ("impostor.json", "witness"),
        }, report
        details = {f["file"]: f["detail"] for f in report["findings"] if not f["warning"]}
        assert "carries no cosignature of the witness" in details["bare.json"]
        assert "cosignature of its checkpoint is forged" in details["forged.json"]
        assert "carries no cosignature of the witness" in details["impostor.json"]
    finally:
        witness.start()
    back = await receipt_when(client, table, 1, True, witness)
    assert back["tree_size"] >= bare["tree_size"]
    opened = open_note(back["checkpoint"], [LOG_KEY, witness.verifier])
    assert set(opened.cosigned_at) == {witness.verifier.name}


async def test_the_client_catches_a_log_rewritten_behind_it_on_reconnect(
    gateway: str, client: httpx.AsyncClient, witness: Witness, settings: Any
) -> None:
    """The client keeps what it verified (a receipt's checkpoint, then the latest); the
    operator rewrites a finished hand in the log and signs again; the log grows on from there.
    A client reconnecting with what the first kept is refused the new checkpoint: the proof
    from the tree it knew does not hold. The witness, offered the same, refuses it too."""
    table = await played(client, 1, seed=4)
    await receipt_when(client, table, 1, True, witness)
    watch = LogWatch([LOG_KEY])
    async with SpadesClient(gateway, log=watch) as first:
        receipt = await first.hand_receipt(table.game_id, 1)
        known = watch.latest(0)
        assert known is not None
        assert known.checkpoint.size == receipt.tree_size
        latest = await first.log_checkpoint(0)  # proven to extend the receipt's (or it)
        assert latest.checkpoint.size >= receipt.tree_size
    kept = watch.kept()

    await rewritten(settings.read_model_database_url, table.game_id)
    later = await played(client, 1, seed=5)  # the log grows on from the rewritten tree
    await receipt_when(client, later, 1, None, witness)

    async with SpadesClient(gateway, log=LogWatch([LOG_KEY], kept)) as again:
        with pytest.raises(ForkError) as caught:
            await again.log_checkpoint(0)
    assert "does not extend" in str(caught.value)
    assert caught.value.known == kept[0]
    assert open_note(caught.value.shown, [LOG_KEY]).signed_by == (LOG_KEY.name,)

    deadline = time.monotonic() + WITHIN_S
    evidence = witness.state / "evidence.log"
    while not (evidence.exists() and "does not extend" in evidence.read_text()):
        assert time.monotonic() < deadline, "the witness kept no evidence of the rewrite"
        await asyncio.sleep(0.1)


async def rewritten(database_url: str, game_id: str) -> None:
    """The operator's move: the game's hand 1 rescored in its leaf, every node and the
    checkpoint of partition 0's log recomputed and signed with the log's key."""
    store = open_store(database_url)
    try:
        async with store.writing() as conn:
            query = (
                sa.select(log_leaves.c.leaf_index, log_leaves.c.entry)
                .where(log_leaves.c.partition == 0)
                .order_by(log_leaves.c.leaf_index)
            )
            rows = [(index, bytes(entry)) for index, entry in await conn.execute(query)]
            entries = [entry for _, entry in rows]
            ends = [(index, read_entry(data)) for index, data in rows]
            at, entry = next(
                (index, e) for index, e in ends if isinstance(e, HandEnd) and e.game_id == game_id
            )
            assert isinstance(entry, HandEnd)
            scores = (entry.scores[0] + 100, entry.scores[1])
            entries[at] = entry_bytes(msgspec.structs.replace(entry, scores=scores))
            log = OperatorLog(entries, KEY, ORIGIN, 0)
            tree = log.tree
            await conn.execute(
                log_leaves.update()
                .where((log_leaves.c.partition == 0) & (log_leaves.c.leaf_index == at))
                .values(entry=entries[at])
            )
            for level, position in complete_nodes(0, tree.size):
                await conn.execute(
                    log_nodes.update()
                    .where(
                        (log_nodes.c.partition == 0)
                        & (log_nodes.c.level == level)
                        & (log_nodes.c.position == position)
                    )
                    .values(hash=tree.node(level, position))
                )
            head = log.head()
            await conn.execute(
                log_checkpoints.update()
                .where(log_checkpoints.c.partition == 0)
                .values(size=head.size, root=head.root, checkpoint=head.checkpoint, note=head.note)
            )
    finally:
        await store.close()
