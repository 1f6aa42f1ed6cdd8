"""The ``hand.scored`` webhook's wait for its receipt is bounded: a hand the log does not hold
in time goes without one, after the wait and no later; where no worker keeps the log nothing is
waited for; other webhooks are never touched; where the log has witnesses, the receipt waits for a
cosignature within the same bound. Real SQLite."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from contracts.audit_log import Receipt
from contracts.log_entries import HandEnd, entry_bytes
from services.store import positions
from services.store.database import Store, open_store
from services.store.migrations import migrate
from services.store.receipts import witness_cosigned
from services.transparency.note import Signer
from services.webhooks.receipts import Receipts
from tests.unit.operator_log import OperatorLog

pytestmark = pytest.mark.integration

SCORED = msgspec.json.encode(
    {"type": "hand.scored", "data": {"game_id": "g-1", "hand": 1, "receipt": None}}
)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'read_models.db'}")
    await migrate(opened)
    yield opened
    await opened.close()


async def keep_the_log(store: Store) -> None:
    """As a projection worker that has read some of partition 0 leaves it."""
    async with store.writing() as conn:
        await positions.ensure(conn, ["log"], 0)
        await positions.advance(conn, ["log"], 0, 5, "0" * 64)


async def test_a_hand_the_log_does_not_hold_in_time_goes_without_a_receipt(store: Store) -> None:
    await keep_the_log(store)
    receipts = Receipts(store, wait_s=0.3)
    started = time.time()
    assert await receipts.added(SCORED, recorded_at=started) == SCORED
    assert 0.3 <= time.time() - started < 2.0, "waited the bound, and no more"
    late = time.time() - 60  # recorded long ago (a retry): no more waiting
    started = time.time()
    assert await receipts.added(SCORED, recorded_at=late) == SCORED
    assert time.time() - started < 0.2


async def test_nothing_is_waited_for_without_a_log_nor_for_other_webhooks(store: Store) -> None:
    receipts = Receipts(store, wait_s=30)
    started = time.time()
    assert await receipts.added(SCORED, recorded_at=started) == SCORED  # no worker keeps it
    await keep_the_log(store)
    turn = msgspec.json.encode({"type": "game.turn", "data": {"game_id": "g-1", "hand": 1}})
    assert await receipts.added(turn, recorded_at=started) == turn
    assert time.time() - started < 1.0


def a_receipt(cosigned: bool) -> Receipt:
    """Hand 1 of g-1's receipt, as the service builds it, its checkpoint cosigned or not."""
    entry = HandEnd(
        game_id="g-1",
        hand=1,
        version=60,
        chain="00" * 32,
        dealt_version=None,
        dealt_chain=None,
        commitment=None,
        seed=None,
        bids=(3, 3, 3, 3),
        tricks=(3, 3, 3, 4),
        points=(60, 70),
        scores=(60, 70),
        bags=(0, 1),
    )
    log = OperatorLog([entry_bytes(entry)], Signer.generate("spades.test/log"))
    receipt = msgspec.convert(log.receipt("g-1", 1), Receipt)
    if not cosigned:
        return receipt
    cosignature = "\u2014 witness.test AAAA\n"  # only counted here, not checked
    return msgspec.structs.replace(receipt, checkpoint=receipt.checkpoint + cosignature)


async def test_where_the_log_has_witnesses_the_receipt_waits_for_a_cosignature(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log signs a hand's checkpoint first and a witness cosigns it a moment later: with
    witnesses, the webhook's receipt is the cosigned one when it comes within the wait, and the
    bare one past it (never none, once the log holds the hand)."""
    await keep_the_log(store)
    asked = 0

    async def cosigned_on_the_third_ask(_store: Store, game_id: str, hand: int) -> Receipt:
        nonlocal asked
        asked += 1
        return a_receipt(cosigned=asked >= 3)

    monkeypatch.setattr("services.webhooks.receipts.hand_receipt", cosigned_on_the_third_ask)
    sent = await Receipts(store, wait_s=5, witnessed=True).added(SCORED, time.time())
    receipt = msgspec.json.decode(sent)["data"]["receipt"]
    assert (asked, witness_cosigned(msgspec.convert(receipt, Receipt))) == (3, True)

    asked = -1000  # never cosigned within the wait: the bare receipt, after it
    started = time.time()
    sent = await Receipts(store, wait_s=0.3, witnessed=True).added(SCORED, started)
    receipt = msgspec.convert(msgspec.json.decode(sent)["data"]["receipt"], Receipt)
    assert not witness_cosigned(receipt)
    assert time.time() - started >= 0.3

    asked = 0  # without witnesses, the first receipt the log holds
    sent = await Receipts(store, wait_s=5).added(SCORED, time.time())
    assert asked == 1
