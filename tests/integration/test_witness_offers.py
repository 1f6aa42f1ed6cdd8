"""The log offering its checkpoints to a witness (:mod:`services.projections.witnesses`), on a
real read-model database (SQLite and PostgreSQL) and the real witness app (C2SP
``tlog-witness``, in process): it offers from the size the witness holds (a 409 names it), keeps
only a cosignature the witness's key made, stops at a fork the witness refuses, and offers again
after a wait that doubles, without holding anything else up."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from services.projections.witnesses import FIRST_RETRY_S, Witnessing
from services.runtime.settings import WitnessAddress, parse_witnesses
from services.store.audit_log import Cosigned, cosigned, cosigned_head
from services.store.database import Store, upsert
from services.store.schema import log_checkpoints, log_cosigned, log_nodes
from services.transparency.merkle import complete_nodes
from services.transparency.note import COSIGNATURE, Signer, open_note
from services.witness.app import witness_app
from services.witness.state import WitnessState
from tests.unit.operator_log import OperatorLog

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.integration.conftest_projections"]

ORIGIN = "spades.test/offered-log"
KEY = Signer.generate(ORIGIN)
WITNESS = Signer.generate("witness.test", COSIGNATURE)
URL = "http://witness.test"
ADDRESS = WitnessAddress(URL, WITNESS.verifier)


def log_of(count: int, prefix: bytes = b"hand") -> OperatorLog:
    return OperatorLog([prefix + b" %d" % n for n in range(count)], KEY, ORIGIN, 0)


async def stored(store: Store, log: OperatorLog) -> None:
    """The log as the log model leaves it in the database: its nodes and latest checkpoint."""
    tree, head = log.tree, log.head()
    nodes = [
        {"partition": 0, "level": level, "position": position, "hash": tree.node(level, position)}
        for level, position in complete_nodes(0, tree.size)
    ]
    checkpoint = {
        "partition": 0,
        "size": head.size,
        "root": head.root,
        "checkpoint": head.checkpoint,
        "note": head.note,
        "verifier": head.verifier,
    }
    async with store.writing() as conn:
        await upsert(conn, log_nodes, nodes, keys=["partition", "level", "position"])
        await upsert(conn, log_checkpoints, [checkpoint], keys=["partition"])


async def kept(store: Store) -> list[Cosigned]:
    async with store.reading() as conn:
        return await cosigned(conn, 0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def witness_client(tmp_path: Path) -> httpx.AsyncClient:
    """The witness (``spades witness serve``'s app) over HTTP in process, witnessing the log."""
    app = witness_app(WITNESS, [OperatorLog([], KEY, ORIGIN, 0).signer.verifier], state(tmp_path))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))


def state(tmp_path: Path) -> WitnessState:
    return WitnessState(tmp_path / "witness")


def witnessing(store: Store, clock: Callable[[], float] | None = None) -> Witnessing:
    return Witnessing(store, [ADDRESS], lambda: [0], retry_s=4.0, clock=clock or Clock())


async def test_a_growing_log_is_cosigned_from_the_size_the_witness_holds(
    store: Store, tmp_path: Path
) -> None:
    offers = witnessing(store)
    async with witness_client(tmp_path) as http:
        await offers.offer_all(http)  # an empty log: nothing to offer
        assert await kept(store) == []
        for size in (3, 7):
            await stored(store, log_of(size))
            await offers.offer_all(http)
            (row,) = await kept(store)
            assert (row.witness, row.size, row.root) == (
                WITNESS.verifier.text(),
                size,
                log_of(size).tree.root(),
            )
            opened = open_note(row.note, [log_of(size).signer.verifier, WITNESS.verifier])
            assert opened.cosigned_at == {"witness.test": row.cosigned_at}
            assert opened.signed_by == (f"{ORIGIN}/0",)

        # Our record of it lost (a database restored from before): the witness's 409 names 7.
        async with store.writing() as conn:
            await conn.execute(sa.delete(log_cosigned))
        await stored(store, log_of(9))
        await offers.offer_all(http)
        (row,) = await kept(store)
        assert row.size == 9
    assert state(tmp_path).load()[f"{ORIGIN}/0"].size == 9


async def test_a_witness_that_fails_is_offered_again_after_a_wait_that_doubles(
    store: Store, tmp_path: Path
) -> None:
    asked: list[str] = []

    def down(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        raise httpx.ConnectError("the witness is down", request=request)

    clock = Clock()
    offers = witnessing(store, clock)
    await stored(store, log_of(4))
    async with httpx.AsyncClient(transport=httpx.MockTransport(down)) as http:
        waits = []
        for _ in range(5):
            before = len(asked)
            await offers.offer_all(http)
            assert len(asked) == before + 1
            await offers.offer_all(http)  # within the wait: not asked
            assert len(asked) == before + 1
            wait = offers._failing[0, URL]
            waits.append(wait.wait_s)
            clock.now = wait.until
    assert waits == [FIRST_RETRY_S, 2 * FIRST_RETRY_S, 4.0, 4.0, 4.0]  # up to retry_s
    assert asked == [f"{URL}/add-checkpoint"] * 5
    assert await kept(store) == []
    async with witness_client(tmp_path) as http:  # back
        await offers.offer_all(http)
    assert [row.size for row in await kept(store)] == [4]
    assert offers._failing == {}


async def test_only_the_witness_keys_cosignature_is_kept(store: Store, tmp_path: Path) -> None:
    impostor = Signer.generate("witness.test", COSIGNATURE)
    log = log_of(5)
    text = log.head().checkpoint

    def forged(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=impostor.cosign(text, 1_700_000_000))

    await stored(store, log)
    offers = witnessing(store)
    async with httpx.AsyncClient(transport=httpx.MockTransport(forged)) as http:
        await offers.offer_all(http)
    assert await kept(store) == []
    assert (0, URL) in offers._failing


async def test_a_rewritten_log_is_refused_by_the_witness_and_nothing_is_kept(
    store: Store, tmp_path: Path
) -> None:
    offers = witnessing(store)
    async with witness_client(tmp_path) as http:
        await stored(store, log_of(3))
        await offers.offer_all(http)
        await stored(store, log_of(6, b"rewritten"))
        await offers.offer_all(http)
    assert [(row.size, row.root) for row in await kept(store)] == [(3, log_of(3).tree.root())]
    assert (0, URL) in offers._failing
    evidence = (tmp_path / "witness" / "evidence.log").read_text()
    assert "does not extend the one cosigned" in evidence


def test_a_receipt_shows_the_newest_cosigned_tree_that_holds_its_leaf_with_every_witness() -> None:
    log = log_of(9)
    other = Signer.generate("other.test", COSIGNATURE)

    def row(signer: Signer, size: int) -> Cosigned:
        head = log.head(size)
        assert head.note is not None
        note = head.note + signer.cosign(head.checkpoint, 1_700_000_000 + size)
        return Cosigned(0, signer.verifier.text(), size, head.root, note, 1_700_000_000 + size)

    latest = log.head()
    rows = [row(WITNESS, 6), row(other, 6), row(other, 8)]
    assert cosigned_head(latest, [row(WITNESS, 6)], 6) is None  # leaf 6 is not in the tree of 6
    chosen = cosigned_head(latest, rows, 7)
    assert chosen is not None
    assert (chosen.size, chosen.note) == (8, rows[2].note)
    both = cosigned_head(latest, rows[:2], 2)
    assert both is not None
    assert both.size == 6
    assert both.checkpoint == log.head(6).checkpoint
    assert both.note is not None
    opened = open_note(both.note, [log.signer.verifier, WITNESS.verifier, other.verifier])
    assert set(opened.cosigned_at) == {"witness.test", "other.test"}
    assert opened.signed_by == (f"{ORIGIN}/0",)


def test_the_witnesses_setting_is_read_and_a_wrong_one_refused() -> None:
    text = f"{URL} {WITNESS.verifier.text()}, https://w2.test/ {WITNESS.verifier.text()}"
    assert parse_witnesses(text) == [ADDRESS, WitnessAddress("https://w2.test", WITNESS.verifier)]
    assert parse_witnesses("") == []
    for wrong in (
        WITNESS.verifier.text(),  # no URL
        f"{URL} {KEY.verifier.text()}",  # a log's key
        f"{URL} witness.test+00000000+AAAA",
    ):
        with pytest.raises(ValueError, match="SPADES_LOG_WITNESSES"):
            parse_witnesses(wrong)


async def test_the_task_goes_on_after_a_round_that_failed(store: Store, tmp_path: Path) -> None:
    """``run``, as the projections process runs it: a round that fails (here the partitions
    held cannot be told) is logged, and the next one offers."""
    rounds = 0

    def held() -> list[int]:
        nonlocal rounds
        rounds += 1
        if rounds == 1:
            raise RuntimeError("the partitions held cannot be told")
        return [0]

    app = witness_app(WITNESS, [log_of(0).signer.verifier], state(tmp_path))
    await stored(store, log_of(3))
    offers = Witnessing(store, [ADDRESS], held, poll_s=0.01, transport=httpx.ASGITransport(app=app))
    running = asyncio.create_task(offers.run())
    try:
        deadline = time.monotonic() + 10
        while not await kept(store):
            assert time.monotonic() < deadline, "nothing cosigned"
            await asyncio.sleep(0.01)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    assert rounds >= 2
    assert [row.size for row in await kept(store)] == [3]
