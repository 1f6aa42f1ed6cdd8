"""The ``hand.scored`` webhook's wait for its receipt is bounded: a hand the log does not hold
in time goes without one, after the wait and no later; where no worker keeps the log nothing is
waited for; other webhooks are never touched. Real SQLite."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from services.store import positions
from services.store.database import Store, open_store
from services.store.migrations import migrate
from services.webhooks.receipts import Receipts

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
